//! `kubectl ferry watch`: live progress per replica and volume. Progress bars on a terminal; plain
//! lines (one per change) otherwise.

use crate::exit::{CliError, ExitCode};
use crate::kube_io::Cluster;
use crate::render;
use crate::style::Style;
use ferry_api::{VolumePlan, VolumeResize};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::BTreeMap;
use std::time::Duration;

/// Position and length of a row's bar: bytes when known, else 0/1 or 1/1 once finished.
pub fn bar_position(row: &VolumePlan) -> (u64, u64) {
    match row.bytes_total {
        Some(total) if total > 0 => (row.bytes_done.unwrap_or(0).min(total), total),
        _ => (u64::from(row.finished_at.is_some()), 1),
    }
}

/// The text after a row's bar: everything in [`render::row_line`] but the claim name.
pub fn bar_message(row: &VolumePlan) -> String {
    let line = render::row_line(row);
    line.strip_prefix(&row.claim_name)
        .map(|rest| rest.trim_start().to_string())
        .unwrap_or(line)
}

/// Lines to print in plain mode: those that changed since `seen`, which is updated.
pub fn changed_lines(
    resize: &VolumeResize,
    seen: &mut BTreeMap<String, String>,
    style: Style,
) -> Vec<String> {
    let mut out = Vec::new();
    let headline = render::headline(resize, style);
    if seen.get("") != Some(&headline) {
        seen.insert(String::new(), headline.clone());
        out.push(headline);
    }
    if let Some(status) = &resize.status {
        for row in &status.plan {
            let line = render::row_line(row);
            if seen.get(&row.claim_name) != Some(&line) {
                seen.insert(row.claim_name.clone(), line.clone());
                out.push(format!("  {line}"));
            }
        }
    }
    out
}

pub async fn watch(
    cluster: &Cluster,
    name: &str,
    interval: Duration,
    style: Style,
    terminal: bool,
) -> Result<ExitCode, CliError> {
    if terminal {
        watch_bars(cluster, name, interval, style).await
    } else {
        watch_plain(cluster, name, interval, style).await
    }
}

async fn watch_plain(
    cluster: &Cluster,
    name: &str,
    interval: Duration,
    style: Style,
) -> Result<ExitCode, CliError> {
    let mut seen = BTreeMap::new();
    loop {
        let resize = cluster.get_resize(name).await?;
        for line in changed_lines(&resize, &mut seen, style) {
            crate::outln!("{line}");
        }
        if resize.phase().is_terminal() {
            return Ok(ExitCode::for_phase(resize.phase()));
        }
        tokio::time::sleep(interval).await;
    }
}

async fn watch_bars(
    cluster: &Cluster,
    name: &str,
    interval: Duration,
    style: Style,
) -> Result<ExitCode, CliError> {
    let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stdout());
    let header = multi.add(ProgressBar::new_spinner());
    header.set_style(
        ProgressStyle::with_template("{spinner} {msg}").unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    header.enable_steady_tick(Duration::from_millis(200));
    let template = if style.color {
        "  {prefix:<24} [{bar:30.cyan/blue}] {msg}"
    } else {
        "  {prefix:<24} [{bar:30}] {msg}"
    };
    let bar_style = ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    let mut bars: BTreeMap<String, ProgressBar> = BTreeMap::new();
    let result = loop {
        let resize = match cluster.get_resize(name).await {
            Ok(resize) => resize,
            Err(error) => break Err(error),
        };
        header.set_message(render::headline(&resize, style));
        if let Some(status) = &resize.status {
            for row in &status.plan {
                let bar = bars.entry(row.claim_name.clone()).or_insert_with(|| {
                    let bar = multi.add(ProgressBar::new(1));
                    bar.set_style(bar_style.clone());
                    bar.set_prefix(row.claim_name.clone());
                    bar
                });
                let (position, length) = bar_position(row);
                bar.set_length(length);
                bar.set_position(position);
                bar.set_message(bar_message(row));
            }
        }
        if resize.phase().is_terminal() {
            break Ok(resize);
        }
        tokio::time::sleep(interval).await;
    };
    for bar in bars.values() {
        bar.abandon();
    }
    header.finish_and_clear();
    let resize = result?;
    crate::outln!("{}", render::headline(&resize, style));
    Ok(ExitCode::for_phase(resize.phase()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(done: Option<u64>, total: Option<u64>, finished: bool) -> VolumePlan {
        VolumePlan {
            claim_name: "data-db-0".into(),
            bytes_done: done,
            bytes_total: total,
            finished_at: finished.then_some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                jiff::Timestamp::UNIX_EPOCH,
            )),
            ..Default::default()
        }
    }

    #[test]
    fn bars_follow_bytes_or_completion() {
        assert_eq!(bar_position(&row(Some(5), Some(10), false)), (5, 10));
        assert_eq!(bar_position(&row(Some(50), Some(10), false)), (10, 10));
        assert_eq!(bar_position(&row(None, None, false)), (0, 1));
        assert_eq!(bar_position(&row(None, None, true)), (1, 1));
        assert_eq!(bar_message(&row(None, None, true)), "-  Done");
    }

    #[test]
    fn plain_mode_prints_only_changes() {
        let mut resize: VolumeResize = serde_json::from_value(json!({
            "apiVersion": "ferry.dev/v1alpha1", "kind": "VolumeResize",
            "metadata": {"name": "grow"},
            "spec": {"statefulSetName": "db", "volumes": [{"name": "data", "size": "2Gi"}]},
            "status": {"phase": "Running", "plan": [
                {"replica": 0, "volume": "data", "claimName": "data-db-0", "targetSize": "2Gi", "step": "WarmCopy",
                 "bytesDone": 1, "bytesTotal": 4}]},
        }))
        .unwrap();
        let mut seen = BTreeMap::new();
        let first = changed_lines(&resize, &mut seen, Style::PLAIN);
        assert_eq!(
            first,
            ["grow: Running", "  data-db-0  -  WarmCopy  1 B/4 B (25%)"]
        );
        assert!(changed_lines(&resize, &mut seen, Style::PLAIN).is_empty());
        if let Some(status) = resize.status.as_mut() {
            status.plan[0].bytes_done = Some(2);
        }
        assert_eq!(
            changed_lines(&resize, &mut seen, Style::PLAIN),
            ["  data-db-0  -  WarmCopy  2 B/4 B (50%)"]
        );
    }
}
