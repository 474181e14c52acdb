//! The migration plan as text: one block per StatefulSet that moves (a row per replica claim),
//! then those refused and the claims left alone, each with why, then the totals. Pure.

use super::{ClaimMove, Estimate, MigrationPlan, SetMove};
use crate::format;
use crate::style::{DIM, NONE, RED, Style, YELLOW};
use crate::table::Table;
use ferry_api::quantity::human_bytes;
use std::fmt::Write;
use std::time::Duration;

pub fn plan_text(plan: &MigrationPlan, rate_given: bool, style: Style) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Plan: StorageClass {} -> {} (a plan only: nothing was created or changed)",
        style.bold(&plan.from_class),
        style.bold(&plan.to_class)
    );
    let source = if rate_given {
        "given with --rate"
    } else {
        "measured on a dev machine's disk, docs/benchmarks.md; set yours with --rate"
    };
    let _ = writeln!(
        out,
        "Estimates at {} ({source}); copy time only, replicas in turn.",
        format::rate(plan.bytes_per_second)
    );
    for note in &plan.notes {
        let _ = writeln!(out, "{}", style.paint(DIM, &format!("note: {note}")));
    }
    if plan.stateful_sets.is_empty() && plan.refused.is_empty() {
        let _ = writeln!(
            out,
            "\nNo selected StatefulSet has a volume claim template on {}.",
            plan.from_class
        );
    }
    for set in &plan.stateful_sets {
        set_text(&mut out, set, style);
    }
    if !plan.refused.is_empty() {
        let _ = writeln!(out, "\n{}", style.paint(RED, "Refused (would not be moved):"));
        for refusal in &plan.refused {
            for reason in &refusal.reasons {
                let _ = writeln!(
                    out,
                    "  StatefulSet {}/{}: {reason}",
                    refusal.namespace, refusal.name
                );
            }
        }
    }
    if !plan.not_handled.is_empty() {
        let _ = writeln!(out, "\nNot handled (claims on {}):", plan.from_class);
        for claim in &plan.not_handled {
            let _ = writeln!(out, "  {}/{}: {}", claim.namespace, claim.claim, claim.reason);
        }
    }
    totals_text(&mut out, plan);
    out
}

fn set_text(out: &mut String, set: &SetMove, style: Style) {
    let stays = if set.staying_templates.is_empty() {
        String::new()
    } else {
        let names: Vec<String> = (set.staying_templates.iter())
            .map(|t| {
                format!(
                    "{} ({})",
                    t.name,
                    t.storage_class.as_deref().unwrap_or("no class")
                )
            })
            .collect();
        format!("; stays: {}", names.join(", "))
    };
    let _ = writeln!(
        out,
        "\nStatefulSet {} ({} replica{}): moves {}{stays}",
        style.bold(&format!("{}/{}", set.namespace, set.name)),
        set.replicas,
        if set.replicas == 1 { "" } else { "s" },
        set.moving_templates.join(", ")
    );
    for warning in &set.warnings {
        let _ = writeln!(out, "  {}", style.paint(YELLOW, &format!("warning: {warning}")));
    }
    if set.claims.is_empty() {
        let _ = writeln!(out, "  no replica: only its templates change");
        return;
    }
    let mut table = Table::new(["REPLICA", "CLAIM", "SIZE", "IN USE", "ESTIMATE"]);
    for claim in &set.claims {
        table.row(claim_row(claim));
    }
    out.push_str(&table.render_indented(style, "  "));
    let _ = writeln!(out, "  estimated: {}", estimate_text(set.estimate));
}

fn claim_row(claim: &ClaimMove) -> Vec<(String, crate::style::Paint)> {
    let estimate = match &claim.note {
        Some(note) => format!("- ({note})"),
        None => estimate_text(claim.estimate),
    };
    vec![
        (claim.replica.to_string(), NONE),
        (claim.claim.clone(), NONE),
        (claim.size_bytes.map_or("unknown".into(), human_bytes), NONE),
        (claim.bytes_in_use.map_or("unknown".into(), human_bytes), NONE),
        (estimate, NONE),
    ]
}

/// `~3m20s`, `at most 3m20s` (its data in use not known: its size counted), or `unknown`.
pub fn estimate_text(estimate: Estimate) -> String {
    match estimate.seconds {
        None => "unknown".into(),
        Some(seconds) => {
            let time = format::duration(Duration::from_secs(seconds));
            if estimate.upper_bound {
                format!("at most {time}")
            } else {
                format!("~{time}")
            }
        }
    }
}

fn totals_text(out: &mut String, plan: &MigrationPlan) {
    let totals = &plan.totals;
    let in_use = match (totals.bytes_in_use, totals.claims_in_use_unknown) {
        (bytes, 0) => format!("{} in use", human_bytes(bytes)),
        (0, unknown) => format!("data in use unknown on {unknown} (their size counted)"),
        (bytes, unknown) => format!(
            "{} in use, unknown on {unknown} more (their size counted)",
            human_bytes(bytes)
        ),
    };
    let _ = writeln!(
        out,
        "\nTotal: {} StatefulSet(s) to move, {} claim(s), {in_use}; {} refused, {} claim(s) not handled.",
        totals.stateful_sets,
        totals.claims,
        plan.refused.len(),
        plan.not_handled.len()
    );
    let _ = writeln!(
        out,
        "Estimated copy time, one StatefulSet at a time: {}.",
        estimate_text(totals.estimate)
    );
}
