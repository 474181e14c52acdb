//! Text for `list`, `status`, `plan`, `describe` and plain-text `watch`, from API objects. No I/O.

use crate::format;
use crate::rate::Rate;
use crate::style::{self, CYAN, DIM, GREEN, NONE, Paint, RED, Style, YELLOW};
use crate::table::Table;
use ferry_api::listed::{ListedResize, UnreadableResize};
use ferry_api::quantity::human_bytes;
use ferry_api::{
    ChosenStrategy, Mode, Phase, Strategy, Verify, VolumePlan, VolumeResize, VolumeResizeSpec,
    VolumeResizeStatus,
};
use jiff::Timestamp;
use kube::ResourceExt;
use kube::api::ObjectMeta;
use std::fmt::Write;
use std::time::Duration;

/// One Event about a VolumeResize, as `describe` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventLine {
    pub type_: String,
    pub reason: String,
    pub age_seconds: Option<i64>,
    pub count: i32,
    pub message: String,
}

fn phase_cell(resize: &VolumeResize) -> (String, Paint) {
    let phase = resize.phase();
    let mut text = phase.as_str().to_string();
    if resize.spec.dry_run {
        text.push_str(" (dry run)");
    }
    (text, style::phase_color(phase))
}

fn age_of(resize: &VolumeResize, now: Timestamp) -> String {
    age_of_meta(&resize.metadata, now)
}

fn age_of_meta(metadata: &ObjectMeta, now: Timestamp) -> String {
    metadata
        .creation_timestamp
        .as_ref()
        .map(|t| format::age(format::seconds_between(t.0, now)))
        .unwrap_or_else(|| "-".into())
}

fn progress(resize: &VolumeResize) -> String {
    resize
        .status
        .as_ref()
        .and_then(|s| s.progress.clone())
        .unwrap_or_else(|| "-".into())
}

fn message(resize: &VolumeResize) -> String {
    resize
        .status
        .as_ref()
        .and_then(|s| s.message.clone())
        .unwrap_or_default()
}

fn volumes_summary(resize: &VolumeResize) -> String {
    resize
        .spec
        .volumes
        .iter()
        .map(|v| match &v.storage_class_name {
            Some(class) => format!("{}={}@{class}", v.name, v.size),
            None => format!("{}={}", v.name, v.size),
        })
        .collect::<Vec<_>>()
        .join(",")
}

pub fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Rolling => "Rolling",
        Mode::Offline => "Offline",
    }
}

pub fn strategy_name(strategy: Strategy) -> &'static str {
    match strategy {
        Strategy::Auto => "Auto",
        Strategy::InPlace => "InPlace",
        Strategy::Copy => "Copy",
    }
}

pub fn verify_name(verify: Verify) -> &'static str {
    match verify {
        Verify::None => "None",
        Verify::Metadata => "Metadata",
        Verify::Checksum => "Checksum",
    }
}

fn chosen_name(strategy: Option<ChosenStrategy>) -> &'static str {
    match strategy {
        Some(ChosenStrategy::InPlace) => "InPlace",
        Some(ChosenStrategy::Copy) => "Copy",
        None => "-",
    }
}

/// `kubectl ferry list`.
/// Why a VolumeResize cannot be shown: a warning line of `list`, and the error of a command that
/// names it.
pub fn unreadable_message(unreadable: &UnreadableResize) -> String {
    let name = unreadable.name();
    let namespace = unreadable.namespace().unwrap_or_default();
    format!(
        "VolumeResize {name:?} in namespace {namespace:?} cannot be read by kubectl-ferry {}: {}; \
         it was probably written by another version of Ferry (see it with: kubectl get volumeresize \
         {name} -n {namespace} -o yaml)",
        env!("CARGO_PKG_VERSION"),
        unreadable.error
    )
}

/// The `list` row of a VolumeResize this kubectl-ferry cannot read: its name, the StatefulSet if
/// that can still be read (else `?`), phase `Unreadable`, and in wide output `unreadable: <error>`.
fn unreadable_row(
    unreadable: &UnreadableResize,
    now: Timestamp,
    all_namespaces: bool,
    wide: bool,
) -> Vec<(String, Paint)> {
    let mut row = Vec::new();
    if all_namespaces {
        row.push((unreadable.namespace().unwrap_or_default(), NONE));
    }
    row.push((unreadable.name(), NONE));
    row.push((unreadable.stateful_set().unwrap_or_else(|| "?".into()), NONE));
    row.push(("Unreadable".into(), RED));
    row.push(("-".into(), NONE));
    row.push((age_of_meta(&unreadable.object.metadata, now), NONE));
    if wide {
        row.extend(["-", "-", "-"].map(|cell| (cell.to_string(), NONE)));
        row.push((format!("unreadable: {}", unreadable.error), NONE));
    }
    row
}

pub fn list_table(
    items: &[ListedResize],
    now: Timestamp,
    all_namespaces: bool,
    wide: bool,
    style: Style,
) -> String {
    let mut header = Vec::new();
    if all_namespaces {
        header.push("NAMESPACE");
    }
    header.extend(["NAME", "STATEFULSET", "PHASE", "PROGRESS", "AGE"]);
    if wide {
        header.extend(["VOLUMES", "MODE", "STRATEGY", "MESSAGE"]);
    }
    let mut table = Table::new(header);
    for item in items {
        let resize = match item {
            ListedResize::Readable(resize) => resize,
            ListedResize::Unreadable(unreadable) => {
                table.row(unreadable_row(unreadable, now, all_namespaces, wide));
                continue;
            }
        };
        let mut row = Vec::new();
        if all_namespaces {
            row.push((resize.namespace().unwrap_or_default(), NONE));
        }
        row.push((resize.name_any(), NONE));
        row.push((resize.spec.stateful_set_name.clone(), NONE));
        row.push(phase_cell(resize));
        row.push((progress(resize), NONE));
        row.push((age_of(resize, now), NONE));
        if wide {
            row.push((volumes_summary(resize), NONE));
            row.push((mode_name(resize.spec.mode).into(), NONE));
            row.push((strategy_name(resize.spec.strategy).into(), NONE));
            row.push((message(resize), NONE));
        }
        table.row(row);
    }
    table.render(style)
}

/// One line of progress for one replica × volume, for `status` and plain `watch`.
pub fn row_line(row: &VolumePlan) -> String {
    let mut parts = vec![row.claim_name.clone()];
    parts.push(chosen_name(row.strategy).to_string());
    let step = match (&row.step, &row.finished_at) {
        (Some(step), _) => step.as_str(),
        (None, Some(_)) => "Done",
        (None, None) => "Waiting",
    };
    parts.push(step.to_string());
    if let Some(bytes) = format::bytes_progress(row.bytes_done, row.bytes_total) {
        parts.push(bytes);
    }
    if let (Some(done), Some(total)) = (row.files_done, row.files_total) {
        parts.push(format!("{done}/{total} files"));
    }
    if row.finished_at.is_none() {
        if let Some(rate) = row.bytes_per_second.filter(|r| *r > 0) {
            parts.push(format::rate(rate));
        }
        if let (Some(total), Some(eta)) = (
            row.bytes_total,
            format::eta(
                row.bytes_done.unwrap_or(0),
                row.bytes_total.unwrap_or(0),
                row.bytes_per_second,
            ),
        ) && total > 0
        {
            parts.push(format!("ETA {}", format::duration(eta)));
        }
    }
    if let Some(message) = &row.message {
        parts.push(format!("({message})"));
    }
    parts.join("  ")
}

/// Headline of a resize: `grow-x: Running 1/3 — message`.
pub fn headline(resize: &VolumeResize, style: Style) -> String {
    let (phase, color) = phase_cell(resize);
    let mut line = format!("{}: {}", resize.name_any(), style.paint(color, &phase));
    let progress = progress(resize);
    if progress != "-" {
        let _ = write!(line, " {progress}");
    }
    let message = message(resize);
    if !message.is_empty() {
        let _ = write!(line, " - {message}");
    }
    line
}

/// `kubectl ferry status NAME`.
pub fn status_text(resize: &VolumeResize, style: Style) -> String {
    let mut out = headline(resize, style);
    out.push('\n');
    if let Some(status) = &resize.status {
        for row in &status.plan {
            let _ = writeln!(out, "  {}", row_line(row));
        }
    }
    out
}

/// Estimated copy time of one planned row at `rate` bytes/second: `Some(ZERO)` for in-place,
/// `None` when the data in use is not known.
pub fn row_estimate(row: &VolumePlan, assumed_rate: u64) -> Option<Duration> {
    match row.strategy {
        Some(ChosenStrategy::InPlace) => Some(Duration::ZERO),
        Some(ChosenStrategy::Copy) => {
            let rate = row.bytes_per_second.filter(|r| *r > 0).unwrap_or(assumed_rate);
            format::eta(row.bytes_done.unwrap_or(0), row.bytes_total?, Some(rate))
        }
        None => None,
    }
}

fn arrow(from: Option<&str>, to: Option<&str>) -> String {
    match (from, to) {
        (Some(from), Some(to)) if from == to => format!("{from} (unchanged)"),
        (from, Some(to)) => format!("{} -> {to}", from.unwrap_or("?")),
        (Some(from), None) => format!("{from} (unchanged)"),
        (None, None) => "-".into(),
    }
}

/// A row's StorageClass, from → to, and its VolumeAttributesClass when it has or gets one.
fn classes(row: &VolumePlan) -> String {
    let class_to = row
        .target_storage_class
        .as_deref()
        .or(row.current_storage_class.as_deref());
    let storage = arrow(row.current_storage_class.as_deref(), class_to);
    let (from, to) = (
        row.current_attributes_class.as_deref(),
        row.target_attributes_class.as_deref(),
    );
    if from.is_none() && to.is_none() {
        return storage;
    }
    format!(
        "{storage}; attributes {}",
        arrow(from.or(Some("none")), to.or(from))
    )
}

/// What a resize does with the StatefulSet's owner (docs/owned-statefulsets.md): the fields it
/// pauses and writes, one per line.
fn owner_text(owner: &ferry_api::OwnerStatus) -> String {
    let who = format!("{}/{} ({})", owner.kind, owner.name, owner.api_version);
    if owner.ignored {
        return format!(
            "Owned by {who}: resized as if nobody owned it (ownerPolicy: Ignore); its operator may undo the change."
        );
    }
    let mut out = format!("Owned by {who}, resized through it:");
    match &owner.pause_switch {
        Some(switch) => {
            let _ = write!(
                out,
                "\n  paused while the volumes change: {} = {}",
                switch.path, switch.value
            );
        }
        None => out
            .push_str("\n  not paused (it has no pause switch): confirmed afterwards not to undo the change"),
    }
    for field in &owner.writes {
        let _ = write!(out, "\n  then written: {} = {}", field.path, field.value);
    }
    out.push_str("\n  then let go; the resize ends once it has acted on its new spec.");
    out
}

/// `kubectl ferry plan`: per replica × volume what would happen.
pub fn plan_text(resize: &VolumeResize, rate: Rate, style: Style) -> String {
    let mut out = String::new();
    let spec = &resize.spec;
    let _ = writeln!(
        out,
        "Plan for StatefulSet {} ({} mode, strategy {}, verify {}, warm copy {}):",
        style.bold(&spec.stateful_set_name),
        mode_name(spec.mode),
        strategy_name(spec.strategy),
        verify_name(spec.verify),
        if spec.warm_copy { "on" } else { "off" },
    );
    if let Some(owner) = resize.status.as_ref().and_then(|s| s.owner.as_ref()) {
        let _ = writeln!(out, "{}", owner_text(owner));
    }
    let phase = resize.phase();
    if phase == Phase::Failed {
        let _ = writeln!(out, "{} {}", style.paint(RED, "Cannot resize:"), message(resize));
        return out;
    }
    let rows = resize
        .status
        .as_ref()
        .map(|s| s.plan.as_slice())
        .unwrap_or_default();
    if rows.is_empty() {
        let text = message(resize);
        let _ = writeln!(
            out,
            "Nothing to change{}",
            if text.is_empty() {
                String::new()
            } else {
                format!(": {text}")
            }
        );
        return out;
    }
    let (table, total) = plan_table(rows, rate.bytes_per_second);
    out.push_str(&table.render(style));
    totals(&mut out, rows, total, rate);
    let text = message(resize);
    if !text.is_empty() {
        let _ = writeln!(out, "{}", style.paint(DIM, &text));
    }
    out
}

/// The plan's rows as a table, and the sum of their copy estimates (unknown if any is).
fn plan_table(rows: &[VolumePlan], assumed_rate: u64) -> (Table, Option<Duration>) {
    let mut table = Table::new([
        "REPLICA",
        "CLAIM",
        "STRATEGY",
        "SIZE",
        "STORAGECLASS",
        "DATA",
        "ESTIMATE",
    ]);
    let mut total = Some(Duration::ZERO);
    for row in rows {
        let estimate = row_estimate(row, assumed_rate);
        total = match (total, estimate) {
            (Some(t), Some(e)) => Some(t + e),
            _ => None,
        };
        let strategy_color = match row.strategy {
            Some(ChosenStrategy::InPlace) => GREEN,
            Some(ChosenStrategy::Copy) => YELLOW,
            None => NONE,
        };
        table.row(vec![
            (row.replica.to_string(), NONE),
            (row.claim_name.clone(), NONE),
            (chosen_name(row.strategy).into(), strategy_color),
            (arrow(row.current_size.as_deref(), Some(&row.target_size)), NONE),
            (classes(row), NONE),
            (
                row.bytes_total
                    .map(human_bytes)
                    .unwrap_or_else(|| "unknown".into()),
                NONE,
            ),
            (
                match (row.strategy, estimate) {
                    (Some(ChosenStrategy::InPlace), _) => "no copy".into(),
                    (_, Some(e)) => format!("~{}", format::duration(e)),
                    (_, None) => "unknown".into(),
                },
                NONE,
            ),
        ]);
    }
    (table, total)
}

/// How many claims grow in place and how many by copy, and how long the copies may take.
fn totals(out: &mut String, rows: &[VolumePlan], total: Option<Duration>, rate: Rate) {
    let copies = rows
        .iter()
        .filter(|r| r.strategy == Some(ChosenStrategy::Copy))
        .count();
    let _ = writeln!(
        out,
        "{} PVC(s): {} in place, {copies} by copy.",
        rows.len(),
        rows.len() - copies
    );
    match total {
        Some(total) if copies > 0 => {
            let source = match rate.measured_by {
                Some(copies) => format!("the median of {copies} finished copies in this namespace"),
                None => "assumed (--rate): no finished copy in this namespace to measure".to_string(),
            };
            let _ = writeln!(
                out,
                "Estimated copy time: ~{} (at {}, {source}; replicas in turn).",
                format::duration(total),
                format::rate(rate.bytes_per_second)
            );
        }
        Some(_) => {}
        None => {
            let _ = writeln!(
                out,
                "Estimated copy time: unknown (the operator did not report the data in use: it reads it from the kubelets, unless features.kubeletStats is off or a replica is not running; a run measures it itself before copying)."
            );
        }
    }
}

fn time_text(time: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>, now: Timestamp) -> String {
    match time {
        Some(t) => format!(
            "{} ({} ago)",
            t.0.strftime("%Y-%m-%dT%H:%M:%SZ"),
            format::age(format::seconds_between(t.0, now))
        ),
        None => "-".into(),
    }
}

/// `kubectl ferry describe NAME`.
pub fn describe_text(resize: &VolumeResize, events: &[EventLine], now: Timestamp, style: Style) -> String {
    let mut out = String::new();
    let spec = &resize.spec;
    let field = |out: &mut String, name: &str, value: &str| {
        let _ = writeln!(out, "{:<20}{value}", format!("{name}:"));
    };
    field(&mut out, "Name", &resize.name_any());
    field(&mut out, "Namespace", &resize.namespace().unwrap_or_default());
    field(
        &mut out,
        "Created",
        &time_text(resize.metadata.creation_timestamp.as_ref(), now),
    );
    field(&mut out, "StatefulSet", &spec.stateful_set_name);
    if let Some(owner) = resize.status.as_ref().and_then(|s| s.owner.as_ref()) {
        let step = match (owner.ignored, owner.step) {
            (true, _) => "ignored (ownerPolicy: Ignore)".to_string(),
            (false, Some(step)) => format!("{step:?}"),
            (false, None) => "not yet paused".to_string(),
        };
        field(
            &mut out,
            "Owner",
            &format!("{}/{}, {step}", owner.kind, owner.name),
        );
    }
    let (phase, color) = phase_cell(resize);
    field(&mut out, "Phase", &style.paint(color, &phase));
    field(&mut out, "Progress", &progress(resize));
    field(&mut out, "Message", &message(resize));
    let annotations = resize.annotations();
    if annotations
        .get(crate::ANNOTATION_ROLLBACK_REQUESTED)
        .map(String::as_str)
        == Some("true")
    {
        field(&mut out, "Rollback", "requested");
    }

    spec_section(&mut out, &resize.spec, style);
    let status = resize.status.clone().unwrap_or_default();
    if let Some(started) = &status.started_at {
        field(&mut out, "Started", &time_text(Some(started), now));
    }
    if let Some(finished) = &status.finished_at {
        field(&mut out, "Finished", &time_text(Some(finished), now));
    }

    plan_section(&mut out, &status, style);
    conditions_section(&mut out, &status, now, style);
    objects_section(&mut out, &status, style);
    events_section(&mut out, events, style);
    out
}

fn spec_section(out: &mut String, spec: &VolumeResizeSpec, style: Style) {
    let _ = writeln!(out, "{}", style.bold("Spec:"));
    let mut table = Table::new(["VOLUME", "SIZE", "STORAGECLASS"]);
    for volume in &spec.volumes {
        table.plain_row([
            volume.name.clone(),
            volume.size.clone(),
            volume
                .storage_class_name
                .clone()
                .unwrap_or_else(|| "(unchanged)".into()),
        ]);
    }
    out.push_str(&table.render_indented(style, "  "));
    let _ = writeln!(
        out,
        "  Strategy: {}  Mode: {}  Warm copy: {}  Verify: {}  Retain old volumes: {}  Dry run: {}  Force: {}",
        strategy_name(spec.strategy),
        mode_name(spec.mode),
        spec.warm_copy,
        verify_name(spec.verify),
        spec.retain_old_volumes.as_deref().unwrap_or("24h"),
        spec.dry_run,
        spec.force,
    );
    if let Some(timeout) = spec.timeout_seconds {
        let _ = writeln!(out, "  Step timeout: {timeout}s");
    }
}

fn plan_section(out: &mut String, status: &VolumeResizeStatus, style: Style) {
    let _ = writeln!(out, "{}", style.bold("Plan:"));
    if status.plan.is_empty() {
        let _ = writeln!(out, "  (not planned yet)");
    } else {
        let mut table = Table::new([
            "REPLICA",
            "CLAIM",
            "STRATEGY",
            "STEP",
            "SIZE",
            "STORAGECLASS",
            "PROGRESS",
            "RATE",
            "SOURCE PV",
            "TARGET PV",
        ]);
        for row in &status.plan {
            table.plain_row([
                row.replica.to_string(),
                row.claim_name.clone(),
                chosen_name(row.strategy).to_string(),
                match (row.step, &row.finished_at) {
                    (Some(step), _) => step.as_str(),
                    (None, Some(_)) => "Done",
                    (None, None) => "-",
                }
                .to_string(),
                arrow(row.current_size.as_deref(), Some(&row.target_size)),
                classes(row),
                format::bytes_progress(row.bytes_done, row.bytes_total).unwrap_or_else(|| "-".into()),
                row.bytes_per_second
                    .filter(|r| *r > 0)
                    .map(format::rate)
                    .unwrap_or_else(|| "-".into()),
                row.source_volume.clone().unwrap_or_else(|| "-".into()),
                row.target_volume.clone().unwrap_or_else(|| "-".into()),
            ]);
        }
        out.push_str(&table.render_indented(style, "  "));
        for row in status.plan.iter().filter(|r| r.message.is_some()) {
            let _ = writeln!(
                out,
                "  {}: {}",
                row.claim_name,
                row.message.as_deref().unwrap_or_default()
            );
        }
        for row in &status.plan {
            if let Some(line) = downtime_line(row) {
                let _ = writeln!(out, "  {}: {line}", row.claim_name);
            }
        }
    }
}

/// A copied replica's downtime and what it was made of, e.g. `down 3.18s (stopping the replica
/// 1.20s, final sync 0.40s, swap 0.30s, start until Ready 1.28s)`.
fn downtime_line(row: &VolumePlan) -> Option<String> {
    let seconds = |ms: i64| format!("{:.2}s", ms as f64 / 1000.0);
    let down = row.downtime_milliseconds?;
    let steps = row.downtime_steps.clone().unwrap_or_default();
    let parts: Vec<String> = [
        ("stopping the replica", steps.stopping_replica),
        ("final sync", steps.final_sync),
        ("swap", steps.swapping),
        ("start until Ready", steps.starting_replica),
    ]
    .into_iter()
    .filter_map(|(what, ms)| Some(format!("{what} {}", seconds(ms?))))
    .collect();
    Some(match parts.is_empty() {
        true => format!("down {}", seconds(down)),
        false => format!("down {} ({})", seconds(down), parts.join(", ")),
    })
}

fn conditions_section(out: &mut String, status: &VolumeResizeStatus, now: Timestamp, style: Style) {
    let _ = writeln!(out, "{}", style.bold("Conditions:"));
    if status.conditions.is_empty() {
        let _ = writeln!(out, "  (none)");
    } else {
        let mut table = Table::new(["TYPE", "STATUS", "REASON", "AGE", "MESSAGE"]);
        for condition in &status.conditions {
            let color = match condition.status.as_str() {
                "True" => GREEN,
                "False" => YELLOW,
                _ => NONE,
            };
            table.row(vec![
                (condition.type_.clone(), NONE),
                (condition.status.clone(), color),
                (condition.reason.clone(), NONE),
                (
                    format::age(format::seconds_between(condition.last_transition_time.0, now)),
                    NONE,
                ),
                (condition.message.clone(), NONE),
            ]);
        }
        out.push_str(&table.render_indented(style, "  "));
    }
}

fn objects_section(out: &mut String, status: &VolumeResizeStatus, style: Style) {
    let _ = writeln!(out, "{}", style.bold("Objects made:"));
    let made = &status.created_objects;
    if made.is_empty() {
        let _ = writeln!(out, "  (none)");
    } else {
        if let Some(config_map) = &made.backup_config_map {
            let _ = writeln!(out, "  backup ConfigMap: {config_map}");
        }
        for claim in &made.temporary_claims {
            let _ = writeln!(out, "  temporary PVC: {claim}");
        }
        for volume in &made.retained_volumes {
            let _ = writeln!(out, "  retained PV: {volume}");
        }
    }
}

fn events_section(out: &mut String, events: &[EventLine], style: Style) {
    let _ = writeln!(out, "{}", style.bold("Events:"));
    if events.is_empty() {
        let _ = writeln!(out, "  (none)");
    } else {
        let mut table = Table::new(["TYPE", "REASON", "AGE", "MESSAGE"]);
        for event in events {
            let color = if event.type_ == "Warning" { RED } else { CYAN };
            let age = event.age_seconds.map(format::age).unwrap_or_else(|| "-".into());
            let age = if event.count > 1 {
                format!("{age} (x{})", event.count)
            } else {
                age
            };
            table.row(vec![
                (event.type_.clone(), color),
                (event.reason.clone(), NONE),
                (age, NONE),
                (event.message.clone(), NONE),
            ]);
        }
        out.push_str(&table.render_indented(style, "  "));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferry_api::RowStep;
    use serde_json::json;

    fn resize(status: serde_json::Value) -> VolumeResize {
        serde_json::from_value(json!({
            "apiVersion": "ferry.dev/v1alpha1", "kind": "VolumeResize",
            "metadata": {"name": "grow", "namespace": "prod", "creationTimestamp": "2025-01-01T00:00:00Z"},
            "spec": {"statefulSetName": "db", "volumes": [{"name": "data", "size": "2Gi"}]},
            "status": status,
        }))
        .unwrap()
    }

    fn now() -> Timestamp {
        "2025-01-01T00:10:00Z".parse().unwrap()
    }

    /// The class column names the attributes class only for rows that have or get one.
    #[test]
    fn the_class_column_shows_the_attributes_class_where_there_is_one() {
        let row = |current: Option<&str>, target: Option<&str>| VolumePlan {
            current_storage_class: Some("block".into()),
            target_storage_class: Some("block".into()),
            current_attributes_class: current.map(Into::into),
            target_attributes_class: target.map(Into::into),
            ..VolumePlan::default()
        };
        assert_eq!(classes(&row(None, None)), "block (unchanged)");
        assert_eq!(
            classes(&row(Some("gold"), Some("platinum"))),
            "block (unchanged); attributes gold -> platinum"
        );
        assert_eq!(
            classes(&row(None, Some("gold"))),
            "block (unchanged); attributes none -> gold"
        );
        assert_eq!(
            classes(&row(Some("gold"), Some("gold"))),
            "block (unchanged); attributes gold (unchanged)"
        );
    }

    /// A VolumeResize with a row step only a newer Ferry knows, as listed.
    fn unreadable() -> ListedResize {
        ListedResize::from_object(
            serde_json::from_value(json!({
                "apiVersion": "ferry.dev/v1alpha1", "kind": "VolumeResize",
                "metadata": {"name": "future", "namespace": "prod", "creationTimestamp": "2025-01-01T00:05:00Z"},
                "spec": {"statefulSetName": "web", "volumes": [{"name": "data", "size": "2Gi"}]},
                "status": {"phase": "Running", "plan": [{"replica": 0, "volume": "data",
                    "claimName": "data-web-0", "targetSize": "2Gi", "step": "Teleporting"}]},
            }))
            .unwrap(),
        )
    }

    #[test]
    fn an_unreadable_resize_is_a_row_of_its_own_in_the_list() {
        let items = [
            ListedResize::Readable(Box::new(resize(json!({"phase": "Running", "progress": "1/3"})))),
            unreadable(),
        ];
        let out = list_table(&items, now(), false, false, Style::PLAIN);
        assert_eq!(
            out,
            "NAME     STATEFULSET   PHASE        PROGRESS   AGE\n\
             grow     db            Running      1/3        10m\n\
             future   web           Unreadable   -          5m\n"
        );
        let out = list_table(&items, now(), true, true, Style::PLAIN);
        let last = out.lines().last().unwrap_or_default();
        assert!(last.starts_with("prod        future"), "{out}");
        assert!(
            last.contains("unreadable: unknown variant `Teleporting`"),
            "{out}"
        );
    }

    #[test]
    fn the_unreadable_message_names_the_object_and_the_parse_error() {
        let ListedResize::Unreadable(unreadable) = unreadable() else {
            panic!("unreadable");
        };
        let message = unreadable_message(&unreadable);
        assert!(
            message.starts_with("VolumeResize \"future\" in namespace \"prod\" cannot be read"),
            "{message}"
        );
        assert!(message.contains("unknown variant `Teleporting`"), "{message}");
        assert!(
            message.contains("kubectl get volumeresize future -n prod -o yaml"),
            "{message}"
        );
    }

    #[test]
    fn list_plain_and_wide() {
        let items = [ListedResize::Readable(Box::new(resize(
            json!({"phase": "Running", "progress": "1/3"}),
        )))];
        let out = list_table(&items, now(), false, false, Style::PLAIN);
        assert_eq!(
            out,
            "NAME   STATEFULSET   PHASE     PROGRESS   AGE\ngrow   db            Running   1/3        10m\n"
        );
        let out = list_table(&items, now(), true, true, Style::PLAIN);
        assert!(out.starts_with("NAMESPACE   NAME"), "{out}");
        assert!(out.contains("data=2Gi") && out.contains("Rolling"), "{out}");
    }

    #[test]
    fn row_line_shows_rate_and_eta_while_running() {
        let row = VolumePlan {
            claim_name: "data-db-0".into(),
            strategy: Some(ChosenStrategy::Copy),
            step: Some(RowStep::WarmCopy),
            bytes_done: Some(512 << 20),
            bytes_total: Some(1 << 30),
            bytes_per_second: Some(64 << 20),
            files_done: Some(10),
            files_total: Some(20),
            ..Default::default()
        };
        assert_eq!(
            row_line(&row),
            "data-db-0  Copy  WarmCopy  512.0 MiB/1.0 GiB (50%)  10/20 files  64.0 MiB/s  ETA 8s"
        );
    }

    #[test]
    fn plan_shows_unknown_data_and_estimates() {
        let planned = resize(
            json!({"phase": "Succeeded", "message": "dry run: 2 PVCs", "plan": [
                {"replica": 0, "volume": "data", "claimName": "data-db-0", "strategy": "InPlace",
                 "currentSize": "1Gi", "targetSize": "2Gi", "currentStorageClass": "std"},
                {"replica": 1, "volume": "data", "claimName": "data-db-1", "strategy": "Copy",
                 "currentSize": "1Gi", "targetSize": "2Gi", "currentStorageClass": "std",
                 "targetStorageClass": "fast", "bytesTotal": 209715200u64},
            ]}),
        );
        let out = plan_text(&planned, Rate::assumed(100 << 20), Style::PLAIN);
        assert!(
            out.contains("data-db-0   InPlace    1Gi -> 2Gi   std (unchanged)   unknown     no copy"),
            "{out}"
        );
        assert!(
            out.contains("data-db-1   Copy       1Gi -> 2Gi   std -> fast       200.0 MiB   ~2s"),
            "{out}"
        );
        assert!(
            out.contains("Estimated copy time: ~2s (at 100.0 MiB/s, assumed (--rate)"),
            "{out}"
        );
        let measured = Rate {
            bytes_per_second: 50 << 20,
            measured_by: Some(4),
        };
        let out = plan_text(&planned, measured, Style::PLAIN);
        assert!(
            out.contains("~4s (at 50.0 MiB/s, the median of 4 finished copies in this namespace"),
            "{out}"
        );

        let unknown = resize(json!({"phase": "Succeeded", "plan": [
            {"replica": 0, "volume": "data", "claimName": "data-db-0", "strategy": "Copy", "targetSize": "2Gi"}]}));
        let out = plan_text(&unknown, Rate::assumed(100 << 20), Style::PLAIN);
        assert!(out.contains("unknown (the operator did not report"), "{out}");
    }

    #[test]
    fn plan_and_describe_say_what_happens_to_the_owner() {
        let owner = json!({"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus", "name": "k8s", "uid": "u"});
        let through = resize(json!({"phase": "Succeeded", "message": "dry run", "owner": owner}));
        let out = plan_text(&through, Rate::assumed(1), Style::PLAIN);
        assert!(
            out.contains(
                "Owned by Prometheus/k8s (monitoring.coreos.com/v1), resized through it:\n  not paused"
            ),
            "{out}"
        );
        let mut planned = owner.clone();
        planned["pauseSwitch"] = json!({"path": "/spec/paused", "value": "true"});
        planned["writes"] = json!([{"path": "/spec/storage/size", "value": "\"20Gi\""}]);
        let out = plan_text(
            &resize(json!({"phase": "Succeeded", "owner": planned})),
            Rate::assumed(1),
            Style::PLAIN,
        );
        assert!(
            out.contains(
                "  paused while the volumes change: /spec/paused = true\n  then written: /spec/storage/size = \"20Gi\"\n  then let go"
            ),
            "{out}"
        );
        let mut ignored = owner.clone();
        ignored["ignored"] = json!(true);
        let out = plan_text(
            &resize(json!({"phase": "Succeeded", "owner": ignored})),
            Rate::assumed(1),
            Style::PLAIN,
        );
        assert!(out.contains("resized as if nobody owned it"), "{out}");
        let mut confirmed = owner;
        confirmed["step"] = json!("Confirmed");
        let out = describe_text(
            &resize(json!({"phase": "Succeeded", "owner": confirmed})),
            &[],
            now(),
            Style::PLAIN,
        );
        assert!(
            out.contains("Owner:              Prometheus/k8s, Confirmed"),
            "{out}"
        );
    }

    #[test]
    fn plan_of_a_failed_request_says_why() {
        let failed = resize(json!({"phase": "Failed", "message": "no volume claim template \"x\""}));
        let out = plan_text(&failed, Rate::assumed(1), Style::PLAIN);
        assert!(out.contains("Cannot resize: no volume claim template"), "{out}");
    }

    #[test]
    fn describe_has_every_section() {
        let r = resize(json!({"phase": "Failed", "message": "boom",
            "conditions": [{"type": "Prechecked", "status": "False", "reason": "StatefulSetNotFound",
                            "message": "boom", "lastTransitionTime": "2025-01-01T00:05:00Z"}],
            "createdObjects": {"backupConfigMap": "grow-backup", "retainedVolumes": ["pv-1"]}}));
        let events = [EventLine {
            type_: "Warning".into(),
            reason: "StatefulSetNotFound".into(),
            age_seconds: Some(30),
            count: 2,
            message: "VolumeResize grow: boom".into(),
        }];
        let out = describe_text(&r, &events, now(), Style::PLAIN);
        for part in [
            "Name:               grow",
            "Phase:              Failed",
            "Spec:",
            "data     2Gi    (unchanged)",
            "Plan:",
            "(not planned yet)",
            "Prechecked   False    StatefulSetNotFound   5m    boom",
            "backup ConfigMap: grow-backup",
            "retained PV: pv-1",
            "Warning   StatefulSetNotFound   30s (x2)   VolumeResize grow: boom",
        ] {
            assert!(out.contains(part), "missing {part:?} in\n{out}");
        }
    }

    #[test]
    fn describe_says_what_a_copied_replica_was_down_for() {
        let r = resize(json!({"phase": "Succeeded", "plan": [
            {"replica": 0, "volume": "data", "claimName": "data-db-0", "strategy": "Copy", "targetSize": "2Gi",
             "downtimeMilliseconds": 3180, "downtimeSteps": {"stoppingReplica": 1200, "finalSync": 400,
             "swapping": 300, "startingReplica": 1280}},
            {"replica": 1, "volume": "data", "claimName": "data-db-1", "strategy": "Copy", "targetSize": "2Gi",
             "downtimeMilliseconds": 2000}]}));
        let out = describe_text(&r, &[], now(), Style::PLAIN);
        assert!(
            out.contains("data-db-0: down 3.18s (stopping the replica 1.20s, final sync 0.40s, swap 0.30s, start until Ready 1.28s)"),
            "{out}"
        );
        assert!(out.contains("data-db-1: down 2.00s\n"), "{out}");
    }

    #[test]
    fn headline_and_status() {
        let r = resize(
            json!({"phase": "Running", "progress": "1/2", "message": "copying", "plan": [
            {"replica": 0, "volume": "data", "claimName": "data-db-0", "strategy": "InPlace", "targetSize": "2Gi",
             "finishedAt": "2025-01-01T00:01:00Z"}]}),
        );
        assert_eq!(
            status_text(&r, Style::PLAIN),
            "grow: Running 1/2 - copying\n  data-db-0  InPlace  Done\n"
        );
    }
}
