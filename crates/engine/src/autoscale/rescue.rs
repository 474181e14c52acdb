//! Rescue: a replica that cannot start or keeps crashing because its volume is full. Such a
//! replica is grown even though its StatefulSet is not Ready (the one case where the Ready gate
//! of a resize does not apply).

use super::Reading;
use k8s_openapi::api::core::v1::{ContainerStatus, Pod};

/// What programs print when a write fails on a full disk (compared in lower case).
const FULL_DISK_WORDS: [&str; 3] = ["no space left on device", "enospc", "disk full"];

/// A volume this close to full counts as full: its free space is at most 1% or 1 MiB.
pub fn is_full(reading: &Reading) -> bool {
    let free = reading.capacity_bytes.saturating_sub(reading.used_bytes);
    free <= (reading.capacity_bytes / 100).max(1 << 20)
}

fn says_disk_full(message: Option<&str>) -> bool {
    message.is_some_and(|message| {
        let message = message.to_lowercase();
        FULL_DISK_WORDS.iter().any(|words| message.contains(words))
    })
}

/// A container whose last end (or current state) says the disk is full.
fn ended_on_full_disk(container: &ContainerStatus) -> bool {
    let terminated = [
        container
            .state
            .as_ref()
            .and_then(|state| state.terminated.as_ref()),
        container
            .last_state
            .as_ref()
            .and_then(|state| state.terminated.as_ref()),
    ];
    let waiting = container.state.as_ref().and_then(|state| state.waiting.as_ref());
    terminated
        .iter()
        .flatten()
        .any(|ended| says_disk_full(ended.message.as_deref()) || says_disk_full(ended.reason.as_deref()))
        || waiting.is_some_and(|waiting| says_disk_full(waiting.message.as_deref()))
}

/// A container that has ended since it started: restarted, or waiting to restart after a crash.
fn crashing(container: &ContainerStatus) -> bool {
    let back_off = container
        .state
        .as_ref()
        .and_then(|state| state.waiting.as_ref())
        .and_then(|waiting| waiting.reason.as_deref())
        == Some("CrashLoopBackOff");
    back_off || container.restart_count > 0 || ended_on_full_disk(container)
}

/// What a replica's pod says of its volume.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FullDisk {
    /// It does not crash on a full disk: it is Ready, a reading shows room, or one is awaited.
    No,
    /// It crashes and its volume is measured full: a rescue grows it.
    Crashing,
    /// A container ended saying the disk is full, and no reading of the volume exists: none of
    /// its containers runs, so the kubelet reports none. The words alone do not grow anything
    /// (the full file system may be another one): the volume is measured first.
    Unmeasured,
}

/// Whether `pod` (a replica, with its volume's last `reading` if known) cannot start or keeps
/// crashing because its volume is full: it is not Ready, and a container either ended saying the
/// disk is full (its termination message, which holds the end of its log with
/// `terminationMessagePolicy: FallbackToLogsOnError`) or keeps crashing while the volume is full.
/// A reading that shows room vetoes the words: another volume, or the container's own file system,
/// is the full one, and growing this volume would not help. The kubelet reports a pod's volumes
/// only while one of its containers runs: with one running, a missing reading is waited for;
/// with none (its only container crash-loops) the words ask for a measurement.
pub fn crashing_on_full_disk(pod: &Pod, reading: Option<&Reading>) -> FullDisk {
    let room = reading.is_some_and(|reading| !is_full(reading));
    if pod.metadata.deletion_timestamp.is_some() || crate::pods::ready(pod) || room {
        return FullDisk::No;
    }
    let Some(status) = pod.status.as_ref() else {
        return FullDisk::No;
    };
    let containers = status
        .init_container_statuses
        .iter()
        .flatten()
        .chain(status.container_statuses.iter().flatten());
    // A container runs, so the kubelet will report the volume: wait for that reading.
    let running = containers.clone().any(|container| {
        container
            .state
            .as_ref()
            .is_some_and(|state| state.running.is_some())
    });
    if reading.is_none() && running {
        return FullDisk::No;
    }
    match reading {
        // No container runs, so the kubelet reports none: the words ask for a measurement.
        None if containers.clone().any(ended_on_full_disk) => FullDisk::Unmeasured,
        None => FullDisk::No,
        // A full volume (one with room returned above); `crashing` counts the words too.
        Some(_) if containers.into_iter().any(crashing) => FullDisk::Crashing,
        Some(_) => FullDisk::No,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(json: serde_json::Value) -> Pod {
        serde_json::from_value(serde_json::json!({"metadata": {"name": "db-0"}, "status": json})).unwrap()
    }

    fn reading(used: u64, capacity: u64) -> Reading {
        Reading {
            replica: 0,
            used_bytes: used,
            capacity_bytes: capacity,
            inodes: None,
        }
    }

    const MI: u64 = 1 << 20;

    #[test]
    fn a_crash_that_says_the_disk_is_full_is_rescued_unless_this_volume_has_room() {
        let crashed = pod(serde_json::json!({
            "conditions": [{"type": "Ready", "status": "False"}],
            "containerStatuses": [{
                "name": "db", "image": "db", "imageID": "", "ready": false, "restartCount": 3,
                "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                "lastState": {"terminated": {"exitCode": 1, "reason": "Error",
                    "message": "FATAL: could not write to file \"pg_wal/xlogtemp.42\": No space left on device\n"}},
            }],
        }));
        assert_eq!(
            crashing_on_full_disk(&crashed, Some(&reading(995 * MI, 1000 * MI))),
            FullDisk::Crashing
        );
        // Another volume (or the container's own file system) was the full one.
        assert_eq!(
            crashing_on_full_disk(&crashed, Some(&reading(10 * MI, 1000 * MI))),
            FullDisk::No
        );
        assert_eq!(
            crashing_on_full_disk(&crashed, None),
            FullDisk::Unmeasured,
            "no reading: the words ask for a measurement, they grow nothing"
        );
    }

    #[test]
    fn a_crash_loop_on_a_full_volume_is_rescued_but_not_on_one_with_room() {
        let looping = pod(serde_json::json!({
            "conditions": [{"type": "Ready", "status": "False"}],
            "containerStatuses": [{
                "name": "db", "image": "db", "imageID": "", "ready": false, "restartCount": 5,
                "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}},
            }],
        }));
        assert_eq!(
            crashing_on_full_disk(&looping, Some(&reading(995 * MI, 1000 * MI))),
            FullDisk::Crashing
        );
        assert_eq!(
            crashing_on_full_disk(&looping, Some(&reading(500 * MI, 1000 * MI))),
            FullDisk::No
        );
        assert_eq!(crashing_on_full_disk(&looping, None), FullDisk::No);
    }

    #[test]
    fn without_a_reading_a_pod_with_a_running_container_waits_for_one() {
        // One container crashes saying so, another runs: the kubelet reports the volume soon.
        let half = pod(serde_json::json!({
            "conditions": [{"type": "Ready", "status": "False"}],
            "containerStatuses": [{
                "name": "db", "image": "db", "imageID": "", "ready": false, "restartCount": 2,
                "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                "lastState": {"terminated": {"exitCode": 1, "message": "No space left on device"}},
            }, {
                "name": "sidecar", "image": "s", "imageID": "", "ready": true, "restartCount": 0,
                "state": {"running": {}},
            }],
        }));
        assert_eq!(crashing_on_full_disk(&half, None), FullDisk::No);
        assert_eq!(
            crashing_on_full_disk(&half, Some(&reading(999 * MI, 1000 * MI))),
            FullDisk::Crashing
        );
    }

    #[test]
    fn a_ready_pod_is_never_rescued_even_if_it_once_ran_out_of_space() {
        let recovered = pod(serde_json::json!({
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{
                "name": "db", "image": "db", "imageID": "", "ready": true, "restartCount": 1,
                "state": {"running": {}},
                "lastState": {"terminated": {"exitCode": 1, "message": "write: No space left on device"}},
            }],
        }));
        assert_eq!(
            crashing_on_full_disk(&recovered, Some(&reading(999 * MI, 1000 * MI))),
            FullDisk::No
        );
    }

    #[test]
    fn a_pod_that_starts_for_the_first_time_is_not_a_crash() {
        let starting = pod(serde_json::json!({
            "conditions": [{"type": "Ready", "status": "False"}],
            "containerStatuses": [{
                "name": "db", "image": "db", "imageID": "", "ready": false, "restartCount": 0,
                "state": {"running": {}},
            }],
        }));
        assert_eq!(
            crashing_on_full_disk(&starting, Some(&reading(999 * MI, 1000 * MI))),
            FullDisk::No
        );
    }

    #[test]
    fn full_means_at_most_one_percent_or_one_mebibyte_free() {
        assert!(is_full(&reading(990 * MI, 1000 * MI)));
        assert!(!is_full(&reading(980 * MI, 1000 * MI)));
        assert!(is_full(&reading(99 * MI + 1, 100 * MI)));
    }
}
