//! What the operator's VolumeResize gauges show: how many resizes are in flight, by namespace and
//! phase, and how far each replica's copy has got. Pure: the operator reads these off its
//! VolumeResize cache at every scrape, so a finished or deleted resize leaves no series behind.

use ferry_api::{ChosenStrategy, VolumeResize};
use std::collections::BTreeMap;

/// VolumeResizes not yet finished (a resize with no status yet is Pending), counted by (namespace,
/// phase). Pairs with no resize are absent, not zero.
pub fn in_flight<'a>(
    resizes: impl IntoIterator<Item = &'a VolumeResize>,
) -> BTreeMap<(String, &'static str), u64> {
    let mut counts = BTreeMap::new();
    for resize in resizes {
        let phase = resize.phase();
        if phase.is_terminal() {
            continue;
        }
        let namespace = resize.metadata.namespace.clone().unwrap_or_default();
        *counts.entry((namespace, phase.as_str())).or_insert(0) += 1;
    }
    counts
}

/// One copied volume of one replica: the bytes its mover has gone through and the bytes there are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyProgress {
    pub replica: i32,
    pub volume: String,
    pub done_bytes: u64,
    pub size_bytes: u64,
}

/// The copy rows of an unfinished resize whose size is known (measured, or reported by a mover),
/// with the bytes done so far (0 before the first progress line). A finished resize has none.
pub fn copy_progress(resize: &VolumeResize) -> Vec<CopyProgress> {
    if resize.phase().is_terminal() {
        return Vec::new();
    }
    let Some(status) = &resize.status else {
        return Vec::new();
    };
    status
        .plan
        .iter()
        .filter(|row| row.strategy == Some(ChosenStrategy::Copy))
        .filter_map(|row| {
            Some(CopyProgress {
                replica: row.replica,
                volume: row.volume.clone(),
                done_bytes: row.bytes_done.unwrap_or(0),
                size_bytes: row.bytes_total?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn resize(namespace: &str, status: serde_json::Value) -> VolumeResize {
        serde_json::from_value(json!({
            "apiVersion": "ferry.dev/v1alpha1", "kind": "VolumeResize",
            "metadata": {"name": "r", "namespace": namespace},
            "spec": {"statefulSetName": "db", "volumes": [{"name": "data", "size": "2Gi"}]},
            "status": status,
        }))
        .unwrap()
    }

    fn row(replica: i32, strategy: &str, done: Option<u64>, total: Option<u64>) -> serde_json::Value {
        json!({
            "replica": replica, "volume": "data", "claimName": format!("data-db-{replica}"),
            "targetSize": "2Gi", "strategy": strategy, "bytesDone": done, "bytesTotal": total,
        })
    }

    #[test]
    fn unfinished_resizes_are_counted_by_namespace_and_phase() {
        let resizes = [
            resize("a", json!({})),
            resize("a", json!({"phase": "Running"})),
            resize("a", json!({"phase": "Running"})),
            resize("b", json!({"phase": "RollingBack"})),
            resize("b", json!({"phase": "Succeeded"})),
            resize("b", json!({"phase": "Failed"})),
        ];
        let counts = in_flight(&resizes);
        assert_eq!(
            counts.into_iter().collect::<Vec<_>>(),
            vec![
                (("a".to_string(), "Pending"), 1),
                (("a".to_string(), "Running"), 2),
                (("b".to_string(), "RollingBack"), 1),
            ]
        );
    }

    #[test]
    fn copy_rows_with_a_known_size_report_their_progress() {
        let running = resize(
            "a",
            json!({"phase": "Running", "plan": [
                row(0, "Copy", Some(5), Some(10)),
                row(1, "Copy", None, Some(8)),
                row(2, "Copy", None, None),
                row(3, "InPlace", None, None),
            ]}),
        );
        assert_eq!(
            copy_progress(&running),
            vec![
                CopyProgress {
                    replica: 0,
                    volume: "data".into(),
                    done_bytes: 5,
                    size_bytes: 10
                },
                CopyProgress {
                    replica: 1,
                    volume: "data".into(),
                    done_bytes: 0,
                    size_bytes: 8
                },
            ]
        );
    }

    #[test]
    fn a_finished_resize_reports_no_progress() {
        let done = resize(
            "a",
            json!({"phase": "Succeeded", "plan": [row(0, "Copy", Some(10), Some(10))]}),
        );
        assert!(copy_progress(&done).is_empty());
        assert!(copy_progress(&resize("a", json!({}))).is_empty());
    }
}
