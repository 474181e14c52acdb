//! How a standby final mover that tracks changes tells the kubelet it is armed: it creates a file
//! once its catch-up pass has ended (`--ready-file`), and a readiness probe running
//! `ferry-mover ready` on it turns the pod Ready. The engine stops the replica only then
//! (`MoverView::armed`), so the catch-up pass is never downtime.

use k8s_openapi::api::core::v1::{EmptyDirVolumeSource, ExecAction, Probe, Volume, VolumeMount};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// Where the ready file lives: a small memory-backed volume (the root file system is read-only,
/// and the target must hold only the copy).
const READY_DIR: &str = "/ready";
const READY_FILE: &str = "/ready/armed";
const READY_VOLUME: &str = "ready";

/// The mover's arguments that track changes and create the ready file.
pub fn command_args() -> [String; 3] {
    [
        "--track-changes".to_string(),
        "--ready-file".to_string(),
        READY_FILE.to_string(),
    ]
}

/// The volume holding the ready file.
pub fn volume() -> Volume {
    Volume {
        name: READY_VOLUME.to_string(),
        empty_dir: Some(EmptyDirVolumeSource {
            medium: Some("Memory".to_string()),
            size_limit: Some(Quantity("1Mi".to_string())),
        }),
        ..Volume::default()
    }
}

pub fn mount() -> VolumeMount {
    VolumeMount {
        name: READY_VOLUME.to_string(),
        mount_path: READY_DIR.to_string(),
        ..VolumeMount::default()
    }
}

/// Ready once the ready file exists, checked every second: the replica's stop waits on it, so a
/// slower probe would only keep the replica serving longer, never stop it sooner.
pub fn readiness_probe() -> Probe {
    Probe {
        exec: Some(ExecAction {
            command: Some(
                ["ferry-mover", "ready", READY_FILE]
                    .into_iter()
                    .map(String::from)
                    .collect(),
            ),
        }),
        period_seconds: Some(1),
        timeout_seconds: Some(1),
        success_threshold: Some(1),
        failure_threshold: Some(1),
        ..Probe::default()
    }
}
