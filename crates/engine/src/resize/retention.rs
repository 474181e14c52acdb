//! Expiry of the old volumes a copy retained (`retainOldVolumes`, default 24h): when the time is up,
//! their reclaim policy goes back to Delete, so their provisioner deletes them as it would have —
//! unless it was Retain before the resize: then it stays so, and Ferry lets go of it.

use crate::resize::action::ResizeAction;
use crate::volume_writes::VolumeWrite;
use ferry_api::VolumeResizeStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use std::collections::BTreeSet;

/// Default retention of old volumes.
pub const DEFAULT_RETENTION_SECONDS: i64 = 24 * 3600;

/// `Forever` → `None`; `24h`, `90m`, `1h30m`, `7d`, `45s` → seconds. Unparseable text (the API server
/// rejects it already) counts as the default.
pub fn retention_seconds(spec: Option<&str>) -> Option<i64> {
    let Some(text) = spec else {
        return Some(DEFAULT_RETENTION_SECONDS);
    };
    if text == "Forever" {
        return None;
    }
    Some(crate::duration::seconds(text).unwrap_or(DEFAULT_RETENTION_SECONDS))
}

/// The UID recorded for a volume the plan names (old or new side of a row).
fn recorded_uid(status: &VolumeResizeStatus, volume: &str) -> Option<String> {
    status.plan.iter().find_map(|row| {
        if row.source_volume.as_deref() == Some(volume) {
            row.source_volume_uid.clone()
        } else if row.target_volume.as_deref() == Some(volume) {
            row.target_volume_uid.clone()
        } else {
            None
        }
    })
}

/// What to do about retained volumes now.
#[derive(Debug, Clone, PartialEq)]
pub struct RetentionDecision {
    pub status: VolumeResizeStatus,
    pub actions: Vec<ResizeAction>,
    /// Seconds until the next look, when something is still retained.
    pub recheck_in: Option<i64>,
}

/// `existing` holds the names of the retained volumes that still exist.
pub fn plan_retention(
    previous: &VolumeResizeStatus,
    retain: Option<&str>,
    existing: &BTreeSet<String>,
    deleting_policy_set: &BTreeSet<String>,
    now: &Time,
) -> RetentionDecision {
    let mut status = previous.clone();
    // Volumes already gone are no longer retained.
    status
        .created_objects
        .retained_volumes
        .retain(|volume| existing.contains(volume));
    let (Some(seconds), Some(finished)) = (retention_seconds(retain), status.finished_at.clone()) else {
        return RetentionDecision {
            status,
            actions: vec![],
            recheck_in: None,
        };
    };
    if status.created_objects.retained_volumes.is_empty() {
        return RetentionDecision {
            status,
            actions: vec![],
            recheck_in: None,
        };
    }
    let remaining = finished.0.as_second() + seconds - now.0.as_second();
    if remaining > 0 {
        return RetentionDecision {
            status,
            actions: vec![],
            recheck_in: Some(remaining),
        };
    }
    // A volume whose policy was Retain before the resize stays as its owner wanted it: Ferry
    // stops tracking it instead of having it deleted.
    let originally_retained: Vec<String> = status
        .created_objects
        .retained_volumes
        .iter()
        .filter(|volume| {
            status.plan.iter().any(|row| {
                row.source_volume.as_deref() == Some(volume.as_str())
                    && row.original_reclaim_policy.as_deref() == Some("Retain")
            })
        })
        .cloned()
        .collect();
    status
        .created_objects
        .retained_volumes
        .retain(|volume| !originally_retained.contains(volume));
    let actions: Vec<ResizeAction> = status
        .created_objects
        .retained_volumes
        .iter()
        .filter(|volume| !deleting_policy_set.contains(*volume))
        .map(|volume| {
            ResizeAction::Volume(VolumeWrite::SetReclaimPolicy {
                volume: volume.clone(),
                uid: recorded_uid(&status, volume),
                policy: "Delete".into(),
            })
        })
        .collect();
    if status.created_objects.retained_volumes.is_empty() {
        return RetentionDecision {
            status,
            actions,
            recheck_in: None,
        };
    }
    // Look again soon: the volumes disappear once their provisioner has deleted them.
    RetentionDecision {
        status,
        actions,
        recheck_in: Some(5),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::Timestamp;

    fn at(seconds: i64) -> Time {
        Time(Timestamp::from_second(seconds).unwrap())
    }

    #[test]
    fn durations() {
        assert_eq!(retention_seconds(None), Some(86_400));
        assert_eq!(retention_seconds(Some("Forever")), None);
        assert_eq!(retention_seconds(Some("90m")), Some(5400));
        assert_eq!(retention_seconds(Some("1h30m")), Some(5400));
        assert_eq!(retention_seconds(Some("7d")), Some(7 * 86_400));
        assert_eq!(retention_seconds(Some("45s")), Some(45));
    }

    fn finished_with(volumes: &[&str]) -> VolumeResizeStatus {
        let mut status = VolumeResizeStatus {
            finished_at: Some(at(1000)),
            ..Default::default()
        };
        status.created_objects.retained_volumes = volumes.iter().map(|v| v.to_string()).collect();
        status
    }

    #[test]
    fn waits_until_expiry_then_releases_each_volume_once() {
        let status = finished_with(&["old-0", "old-1"]);
        let existing: BTreeSet<String> = ["old-0".into(), "old-1".into()].into();
        let early = plan_retention(&status, Some("60s"), &existing, &BTreeSet::new(), &at(1030));
        assert!(early.actions.is_empty());
        assert_eq!(early.recheck_in, Some(30));

        let due = plan_retention(
            &status,
            Some("60s"),
            &existing,
            &["old-1".to_string()].into(),
            &at(1060),
        );
        assert_eq!(
            due.actions,
            vec![ResizeAction::Volume(VolumeWrite::SetReclaimPolicy {
                volume: "old-0".into(),
                uid: None,
                policy: "Delete".into()
            })]
        );

        let gone = plan_retention(
            &status,
            Some("60s"),
            &BTreeSet::new(),
            &BTreeSet::new(),
            &at(1070),
        );
        assert!(gone.status.created_objects.retained_volumes.is_empty());
        assert_eq!(gone.recheck_in, None);
    }

    #[test]
    fn a_volume_that_was_retain_before_is_never_set_to_delete() {
        let mut status = finished_with(&["old-0", "old-1"]);
        for (volume, policy) in [("old-0", "Retain"), ("old-1", "Delete")] {
            status.plan.push(ferry_api::VolumePlan {
                source_volume: Some(volume.into()),
                original_reclaim_policy: Some(policy.into()),
                ..Default::default()
            });
        }
        let existing: BTreeSet<String> = ["old-0".into(), "old-1".into()].into();
        let due = plan_retention(&status, Some("60s"), &existing, &BTreeSet::new(), &at(1060));
        assert_eq!(
            due.actions,
            vec![ResizeAction::Volume(VolumeWrite::SetReclaimPolicy {
                volume: "old-1".into(),
                uid: None,
                policy: "Delete".into()
            })]
        );
        assert_eq!(
            due.status.created_objects.retained_volumes,
            vec!["old-1".to_string()]
        );
    }

    #[test]
    fn forever_keeps_them() {
        let status = finished_with(&["old-0"]);
        let existing: BTreeSet<String> = ["old-0".into()].into();
        let decision = plan_retention(
            &status,
            Some("Forever"),
            &existing,
            &BTreeSet::new(),
            &at(1_000_000),
        );
        assert!(decision.actions.is_empty());
        assert_eq!(decision.recheck_in, None);
    }
}
