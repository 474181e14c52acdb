//! The report as a table (largest saving first), JSON, YAML or CSV.

use super::{Report, ReportRow};
use crate::args::ReportFormat;
use crate::exit::CliError;
use crate::style::Style;
use crate::table::Table;

pub fn render(report: &Report, format: Option<ReportFormat>, style: Style) -> Result<String, CliError> {
    let failed = |what: &str, e: String| CliError::Failed(format!("cannot render {what}: {e}"));
    match format {
        Some(ReportFormat::Json) => serde_json::to_string_pretty(report)
            .map(|s| s + "\n")
            .map_err(|e| failed("JSON", e.to_string())),
        Some(ReportFormat::Yaml) => yaml_serde::to_string(report).map_err(|e| failed("YAML", e.to_string())),
        Some(ReportFormat::Csv) => Ok(csv(report)),
        None => Ok(text(report, style)),
    }
}

fn size(bytes: Option<u64>) -> String {
    bytes.map_or_else(|| "-".to_string(), ferry_api::format_bytes)
}

fn money(amount: Option<f64>) -> String {
    amount.map_or_else(|| "-".to_string(), |a| format!("{a:.2}"))
}

fn text(report: &Report, style: Style) -> String {
    if report.volumes.is_empty() {
        return "No StatefulSet volumes in scope.\n".to_string();
    }
    let mut table = Table::new([
        "NAMESPACE",
        "STATEFULSET",
        "CLAIM",
        "CLASS",
        "SIZE",
        "USED",
        "RECOMMENDED",
        "SAVING/MONTH",
    ]);
    for row in &report.volumes {
        table.plain_row([
            row.namespace.clone(),
            row.stateful_set.clone(),
            row.claim.clone(),
            row.storage_class.clone().unwrap_or_else(|| "-".into()),
            size(row.size_bytes),
            row.used_bytes
                .map_or_else(|| "-".to_string(), ferry_api::human_bytes),
            size(row.recommended_bytes),
            money(row.saving_per_month),
        ]);
    }
    let mut out = table.render(style);
    out.push_str(&format!(
        "\nIn all: {} given, {} used, {} recommended (at most {} % full); {:.2} a month to save.\n",
        ferry_api::human_bytes(report.total_size_bytes),
        ferry_api::human_bytes(report.total_used_bytes),
        ferry_api::human_bytes(report.total_recommended_bytes),
        report.fill_percent,
        report.total_saving_per_month,
    ));
    for note in &report.notes {
        out.push_str(&format!("Note: {note}\n"));
    }
    out
}

/// One header line, then a line per volume; sizes in bytes, empty where unknown.
fn csv(report: &Report) -> String {
    let mut out = String::from(
        "namespace,statefulSet,claim,storageClass,sizeBytes,usedBytes,recommendedBytes,pricePerGiBMonth,savingPerMonth\n",
    );
    let number = |n: Option<u64>| n.map(|n| n.to_string()).unwrap_or_default();
    let amount = |a: Option<f64>| a.map(|a| format!("{a:.4}")).unwrap_or_default();
    for ReportRow {
        namespace,
        stateful_set,
        claim,
        storage_class,
        size_bytes,
        used_bytes,
        recommended_bytes,
        price_per_gib_month,
        saving_per_month,
    } in &report.volumes
    {
        // Kubernetes names have no comma or quote: nothing to escape.
        out.push_str(&format!(
            "{namespace},{stateful_set},{claim},{},{},{},{},{},{}\n",
            storage_class.as_deref().unwrap_or_default(),
            number(*size_bytes),
            number(*used_bytes),
            number(*recommended_bytes),
            amount(*price_per_gib_month),
            amount(*saving_per_month),
        ));
    }
    out
}
