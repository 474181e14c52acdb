//! The Grafana dashboard the Helm chart ships (deploy/helm/ferry/dashboards/ferry.json) against a
//! /metrics page: the series every query of the dashboard names, and the series a page declares.
//! Shared by the operator's unit tests (against `Metrics::default()`) and the end-to-end endpoints
//! test (against a running operator's page), so a renamed or removed metric fails both.

use std::collections::BTreeSet;

/// Where the chart's dashboard lives, from the operator's package directory (which cargo sets as
/// `CARGO_MANIFEST_DIR` when it runs a test; read at run time so a new checkout rebuilds nothing).
pub fn dashboard_path() -> std::path::PathBuf {
    let package = std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| ".".into(), std::path::PathBuf::from);
    package.join("../../deploy/helm/ferry/dashboards/ferry.json")
}

/// The dashboard, parsed.
pub fn load() -> Result<serde_json::Value, String> {
    let path = dashboard_path();
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Every PromQL query of the dashboard: each `expr` of the panels' targets (rows' nested panels
/// included) and each query variable's query.
pub fn queries(dashboard: &serde_json::Value) -> Vec<String> {
    let mut found = Vec::new();
    collect_exprs(dashboard, &mut found);
    let variables = dashboard["templating"]["list"].as_array().into_iter().flatten();
    for variable in variables.filter(|v| v["type"] == "query") {
        let query = &variable["query"];
        if let Some(text) = query.as_str().or_else(|| query["query"].as_str()) {
            found.push(text.to_string());
        }
    }
    found
}

fn collect_exprs(value: &serde_json::Value, found: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, inner) in map {
                match (key.as_str(), inner.as_str()) {
                    ("expr", Some(expr)) => found.push(expr.to_string()),
                    _ => collect_exprs(inner, found),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|item| collect_exprs(item, found)),
        _ => {}
    }
}

/// The `ferry_…` series names a query uses (selectors, and names inside `{__name__=~"a|b"}`).
pub fn series_names<'a>(queries: impl IntoIterator<Item = &'a String>) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for query in queries {
        let words = query.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'));
        names.extend(
            words
                .filter(|word| word.starts_with("ferry_"))
                .map(str::to_string),
        );
    }
    names
}

/// The series names a text exposition declares with its `# TYPE` lines: a counter `x` is scraped
/// as `x_total`, a histogram as `x_bucket`, `x_sum` and `x_count`, a gauge as `x`.
pub fn declared_series(exposition: &str) -> BTreeSet<String> {
    let mut series = BTreeSet::new();
    for line in exposition.lines() {
        let mut words = line.split_whitespace();
        let (Some("#"), Some("TYPE"), Some(name), Some(kind)) =
            (words.next(), words.next(), words.next(), words.next())
        else {
            continue;
        };
        match kind {
            "counter" => {
                series.insert(format!("{name}_total"));
            }
            "histogram" => {
                for suffix in ["_bucket", "_sum", "_count"] {
                    series.insert(format!("{name}{suffix}"));
                }
            }
            _ => {
                series.insert(name.to_string());
            }
        }
    }
    series
}

/// The series the dashboard queries that the exposition does not declare.
pub fn missing(queried: &BTreeSet<String>, exposition: &str) -> Vec<String> {
    queried
        .difference(&declared_series(exposition))
        .cloned()
        .collect()
}
