//! A rescue's measurement. A replica whose pod says its disk is full while the kubelet reports
//! nothing of its volume (none of its containers runs) has its volume measured before anything
//! grows: a read-only usage pod on its node (`ferry-mover usage`, which reports the file system as
//! `statvfs` sees it). Its result stands as that replica's reading while it is fresh; then the pod
//! goes, and a crash that still says so is measured again.

use std::collections::BTreeMap;

use super::Reading;
use super::action::AutoscaleAction;
use crate::names;
use ferry_mover_report::UsageResult;
use k8s_openapi::api::core::v1::{Pod, Toleration};

/// How long a measurement stands for its replica's reading (seconds).
pub const FRESH_SECONDS: i64 = 600;

/// How long a usage pod may take before it is given up (deleted, and made again if still
/// needed): one that cannot mount its claim (`ReadWriteOncePod`) would wait for ever.
pub const TIMEOUT_SECONDS: i64 = 300;

/// One usage pod an autoscaler runs on one replica's claim.
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    pub replica: i32,
    pub pod: String,
    pub state: Measured,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Measured {
    /// Made at `since` (Unix seconds), not ended yet.
    Running { since: i64 },
    /// Ended with the volume's reading at `at` (Unix seconds).
    Done { reading: Reading, at: i64 },
    /// Ended without one, and why.
    Failed { why: String },
}

/// The name of the usage pod of `claim` made by the autoscaler with UID `autoscaler_uid`.
pub fn pod_name(claim: &str, autoscaler_uid: &str) -> String {
    let short: String = autoscaler_uid
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(8)
        .collect();
    names::usage_pod(claim, &format!("{short}-rescue"))
}

/// What `pod` (a usage pod of this autoscaler) tells of the claim it measured; `claims` maps
/// claim names to replicas. `None` for a pod of a claim not among them.
pub fn of_pod(pod: &Pod, claims: &BTreeMap<String, i32>, now: i64) -> Option<Measurement> {
    let spec = pod.spec.as_ref()?;
    let claim = spec
        .volumes
        .iter()
        .flatten()
        .find_map(|volume| volume.persistent_volume_claim.as_ref())?
        .claim_name
        .clone();
    let replica = *claims.get(&claim)?;
    let name = pod.metadata.name.clone().unwrap_or_default();
    let status = pod.status.as_ref();
    let phase = status.and_then(|status| status.phase.as_deref());
    let ended = status
        .and_then(|status| status.container_statuses.as_ref())
        .and_then(|statuses| statuses.first())
        .and_then(|container| container.state.as_ref())
        .and_then(|state| state.terminated.as_ref());
    let since = pod
        .metadata
        .creation_timestamp
        .as_ref()
        .map_or(now, |made| made.0.as_second());
    let state = match (phase, ended) {
        (Some("Succeeded"), Some(ended)) => {
            let at = ended.finished_at.as_ref().map_or(now, |at| at.0.as_second());
            let result = ended
                .message
                .as_deref()
                .and_then(|text| serde_json::from_str::<UsageResult>(text).ok());
            match result.and_then(|result| result.file_system) {
                Some(fs) => Measured::Done {
                    reading: Reading {
                        replica,
                        used_bytes: fs.used_bytes,
                        capacity_bytes: fs.capacity_bytes,
                        inodes: None,
                    },
                    at,
                },
                None => Measured::Failed {
                    why: "its result names no file system (a mover image older than this Ferry)".into(),
                },
            }
        }
        (Some("Failed"), ended) => Measured::Failed {
            why: ended
                .and_then(|ended| ended.message.clone())
                .unwrap_or_else(|| "it failed".into()),
        },
        _ => Measured::Running { since },
    };
    Some(Measurement {
        replica,
        pod: name,
        state,
    })
}

/// The readings fresh measurements give the replicas the usage source did not report.
pub fn readings(measurements: &[Measurement], reported: &[Reading], now: i64) -> Vec<Reading> {
    measurements
        .iter()
        .filter(|m| !reported.iter().any(|r| r.replica == m.replica))
        .filter_map(|m| match &m.state {
            Measured::Done { reading, at } if now - at <= FRESH_SECONDS => Some(*reading),
            _ => None,
        })
        .collect()
}

/// Where a replica's usage pod goes: its claim, the node its pod runs on (the volume is attached
/// there), and the tolerations of the StatefulSet's pods.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub claim: String,
    pub node: Option<String>,
    pub tolerations: Vec<Toleration>,
    /// The non-root user they run as, if they name one ([`crate::pods::run_as`]).
    pub run_as: Option<crate::pods::RunAs>,
}

/// Every usage pod deleted: a resize took over (a grow made now, or one at work), and a finished
/// usage pod still holds its claim against deletion, which a copy's swap needs.
pub fn remove_all(measurements: &[Measurement]) -> Vec<AutoscaleAction> {
    measurements
        .iter()
        .map(|m| AutoscaleAction::DeleteMeasurement { pod: m.pod.clone() })
        .collect()
}

/// The usage pods to make (a replica to measure, `targets`, that has none) and to delete (stale,
/// failed, timed out: a crash that still says so is measured again by a new one).
pub fn actions(
    autoscaler_uid: &str,
    measurements: &[Measurement],
    targets: &BTreeMap<i32, Target>,
    now: i64,
) -> Vec<AutoscaleAction> {
    let mut actions = Vec::new();
    let mut standing = Vec::new();
    for m in measurements {
        let over = match &m.state {
            Measured::Running { since } => now - since > TIMEOUT_SECONDS,
            Measured::Done { at, .. } => now - at > FRESH_SECONDS,
            Measured::Failed { .. } => true,
        };
        if over {
            actions.push(AutoscaleAction::DeleteMeasurement { pod: m.pod.clone() });
        } else {
            standing.push(m.replica);
        }
    }
    for (replica, target) in targets {
        if standing.contains(replica) {
            continue;
        }
        // A pod not placed yet holds no volume attached anywhere: nothing to measure beside it.
        let Some(node) = target.node.clone() else {
            continue;
        };
        let pod = pod_name(&target.claim, autoscaler_uid);
        // One of the same name still there (deleted above, going): made once it has gone.
        if measurements.iter().any(|m| m.pod == pod) {
            continue;
        }
        actions.push(AutoscaleAction::MeasureVolume {
            pod,
            claim: target.claim.clone(),
            node,
            tolerations: target.tolerations.clone(),
            run_as: target.run_as.clone(),
        });
    }
    actions
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 10_000;

    fn target(node: Option<&str>) -> Target {
        Target {
            claim: "data-db-0".into(),
            node: node.map(String::from),
            tolerations: Vec::new(),
            run_as: Some(crate::pods::RunAs {
                user: 999,
                ..Default::default()
            }),
        }
    }

    fn measured(state: Measured) -> Measurement {
        Measurement {
            replica: 0,
            pod: pod_name("data-db-0", "0f3c9a7e-1111"),
            state,
        }
    }

    fn reading(used: u64) -> Reading {
        Reading {
            replica: 0,
            used_bytes: used,
            capacity_bytes: 1000,
            inodes: None,
        }
    }

    #[test]
    fn a_replica_to_measure_gets_one_usage_pod_on_its_node_and_no_second_while_it_runs() {
        let targets = BTreeMap::from([(0, target(Some("node-a")))]);
        let made = actions("0f3c9a7e-1111", &[], &targets, NOW);
        assert_eq!(
            made,
            vec![AutoscaleAction::MeasureVolume {
                pod: "data-db-0-ferry-0f3c9a7e-rescue-usage".into(),
                claim: "data-db-0".into(),
                node: "node-a".into(),
                tolerations: Vec::new(),
                run_as: Some(crate::pods::RunAs {
                    user: 999,
                    ..Default::default()
                }),
            }]
        );
        let running = measured(Measured::Running { since: NOW - 10 });
        assert!(actions("0f3c9a7e-1111", &[running], &targets, NOW).is_empty());
        let unplaced = BTreeMap::from([(0, target(None))]);
        assert!(actions("0f3c9a7e-1111", &[], &unplaced, NOW).is_empty());
    }

    #[test]
    fn stale_failed_and_stuck_measurements_go_and_a_fresh_one_stands() {
        let targets = BTreeMap::from([(0, target(Some("node-a")))]);
        let pod = measured(Measured::Running { since: 0 }).pod;
        for state in [
            Measured::Running {
                since: NOW - TIMEOUT_SECONDS - 1,
            },
            Measured::Done {
                reading: reading(1),
                at: NOW - FRESH_SECONDS - 1,
            },
            Measured::Failed { why: "x".into() },
        ] {
            let made = actions("0f3c9a7e-1111", &[measured(state)], &targets, NOW);
            assert_eq!(
                made,
                vec![AutoscaleAction::DeleteMeasurement { pod: pod.clone() }],
                "deleted now, made again once gone"
            );
        }
        let fresh = measured(Measured::Done {
            reading: reading(1),
            at: NOW - 5,
        });
        assert!(actions("0f3c9a7e-1111", &[fresh], &targets, NOW).is_empty());
    }

    #[test]
    fn a_fresh_measurement_stands_for_a_replica_the_usage_source_does_not_report() {
        let fresh = measured(Measured::Done {
            reading: reading(990),
            at: NOW - 5,
        });
        assert_eq!(
            readings(std::slice::from_ref(&fresh), &[], NOW),
            vec![reading(990)]
        );
        assert!(
            readings(std::slice::from_ref(&fresh), &[reading(10)], NOW).is_empty(),
            "the kubelet's first"
        );
        assert!(
            readings(&[fresh], &[], NOW + FRESH_SECONDS + 10).is_empty(),
            "stale"
        );
    }

    #[test]
    fn a_usage_pod_is_read_from_its_termination_message() {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "m", "creationTimestamp": "1970-01-01T02:46:00Z"},
            "spec": {"containers": [], "volumes": [{"name": "source", "persistentVolumeClaim": {"claimName": "data-db-0"}}]},
            "status": {"phase": "Succeeded", "containerStatuses": [{
                "name": "usage", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
                "state": {"terminated": {"exitCode": 0, "finishedAt": "1970-01-01T02:46:30Z",
                    "message": "{\"bytes\":4096,\"inodes\":2,\"fileSystem\":{\"capacityBytes\":1000,\"usedBytes\":990}}"}},
            }]},
        }))
        .unwrap();
        let claims = BTreeMap::from([("data-db-0".to_string(), 0)]);
        let read = of_pod(&pod, &claims, NOW).unwrap();
        assert_eq!(
            read.state,
            Measured::Done {
                reading: reading(990),
                at: 9990
            }
        );
        assert!(of_pod(&pod, &BTreeMap::new(), NOW).is_none(), "another volume's");
    }
}
