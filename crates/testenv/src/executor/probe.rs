//! A container's exec readiness probe, run as a kubelet runs it: the pod is Running but not Ready
//! until the probe's command (its paths mapped as the container's are) exits 0, tried every
//! `periodSeconds`. Only exec probes, and only until the first success: a standby final mover's
//! probe (its ready file) never fails again once it passed.

use super::{Executor, is_running, mounts, status};
use k8s_openapi::api::core::v1::{Container, Pod};
use kube::{Api, ResourceExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

/// The probe's command as it runs here, and how often.
#[derive(Debug, PartialEq)]
pub struct ReadinessProbe {
    argv: Vec<String>,
    period: Duration,
}

/// The container's exec readiness probe, if it has one.
pub fn of(
    container: &Container,
    mounts: &[(String, PathBuf)],
    mover_bin: Option<&Path>,
) -> Option<ReadinessProbe> {
    let probe = container.readiness_probe.as_ref()?;
    let command = probe.exec.as_ref()?.command.as_ref()?;
    let mut argv: Vec<String> = command.iter().map(|a| mounts::rewrite(a, mounts)).collect();
    argv.first()?;
    super::local_mover(&mut argv, mover_bin);
    let seconds = probe.period_seconds.unwrap_or(10).max(1);
    Some(ReadinessProbe {
        argv,
        period: Duration::from_secs(seconds.unsigned_abs().into()),
    })
}

/// Tries the probe every period while the pod's process runs; marks the pod Ready at its first
/// success (only while the pod is still Running: its end, if recorded first, stays).
pub async fn until_ready(probe: ReadinessProbe, executor: Arc<Executor>, pods: Api<Pod>, pod: Arc<Pod>) {
    let uid = pod.uid().unwrap_or_default();
    loop {
        tokio::time::sleep(probe.period).await;
        if !is_running(&executor, &uid) {
            return;
        }
        let passed = tokio::process::Command::new(&probe.argv[0])
            .args(&probe.argv[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .status()
            .await
            .is_ok_and(|exit| exit.success());
        if !passed {
            continue;
        }
        match status::ready(&pods, &pod).await {
            Ok(()) => return,
            Err(error) => {
                // The pod ended meanwhile (its phase is no longer Running), or the API server is
                // briefly away: tried again while the process runs.
                tracing::debug!(%error, pod = %pod.name_any(), "could not mark the pod Ready");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_exec_probe_runs_the_local_mover_on_the_mapped_paths() {
        let container: Container = serde_json::from_value(json!({
            "name": "mover",
            "readinessProbe": {"exec": {"command": ["ferry-mover", "ready", "/ready/armed"]}, "periodSeconds": 1},
        }))
        .unwrap();
        let mounts = [("/ready".to_string(), PathBuf::from("/w/uid/volumes/ready"))];
        assert_eq!(
            of(&container, &mounts, Some(Path::new("/bin/mover"))),
            Some(ReadinessProbe {
                argv: vec![
                    "/bin/mover".into(),
                    "ready".into(),
                    "/w/uid/volumes/ready/armed".into()
                ],
                period: Duration::from_secs(1),
            })
        );
        let plain: Container = serde_json::from_value(json!({"name": "mover"})).unwrap();
        assert_eq!(of(&plain, &mounts, None), None);
    }
}
