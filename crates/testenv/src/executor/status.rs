//! Pod status as a kubelet writes it.

use crate::Error;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

pub fn now() -> Time {
    Time(k8s_openapi::jiff::Timestamp::now())
}

fn conditions(ready: bool, now: &Time) -> Value {
    let status = if ready { "True" } else { "False" };
    json!([
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
        {"type": "Initialized", "status": "True", "lastTransitionTime": now},
        {"type": "ContainersReady", "status": status, "lastTransitionTime": now},
        {"type": "Ready", "status": status, "lastTransitionTime": now},
    ])
}

fn container_name(pod: &Pod) -> (String, String) {
    pod.spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .map(|c| (c.name.clone(), c.image.clone().unwrap_or_default()))
        .unwrap_or_default()
}

/// Records the start: Running, and Ready unless a readiness probe has yet to pass (`probe`).
pub async fn started(pods: &Api<Pod>, pod: &Pod, at: &Time, ready: bool) -> Result<(), Error> {
    let (name, image) = container_name(pod);
    let patch = json!({"status": {
        "phase": "Running",
        "startTime": at,
        "hostIP": "10.0.0.2",
        "podIP": "10.244.0.2",
        "conditions": conditions(ready, at),
        "containerStatuses": [{
            "name": name, "image": image, "imageID": "", "ready": ready, "started": true, "restartCount": 0,
            "state": {"running": {"startedAt": at}},
        }],
    }});
    pods.patch_status(&pod.name_any(), &PatchParams::default(), &Patch::Merge(patch))
        .await?;
    Ok(())
}

/// Marks a Running pod Ready (its readiness probe passed). The patch tests the phase first, so a pod
/// whose end was recorded meanwhile is left as it is (the patch fails).
pub async fn ready(pods: &Api<Pod>, pod: &Pod) -> Result<(), Error> {
    let patch: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/status/phase", "value": "Running"},
        {"op": "replace", "path": "/status/conditions", "value": conditions(true, &now())},
        {"op": "replace", "path": "/status/containerStatuses/0/ready", "value": true},
    ]))
    .map_err(|e| Error::Setup(format!("readiness patch: {e}")))?;
    pods.patch_status(
        &pod.name_any(),
        &PatchParams::default(),
        &Patch::Json::<()>(patch),
    )
    .await?;
    Ok(())
}

/// Records the end: Succeeded on exit code 0, else Failed, with the termination message.
pub async fn finish(
    pods: &Api<Pod>,
    pod: &Pod,
    started: Option<&Time>,
    code: i32,
    message: &str,
) -> Result<(), Error> {
    let (name, image) = container_name(pod);
    let finished = now();
    let started = started.cloned().unwrap_or_else(|| finished.clone());
    let phase = if code == 0 { "Succeeded" } else { "Failed" };
    let reason = if code == 0 { "Completed" } else { "Error" };
    let patch = json!({"status": {
        "phase": phase,
        "startTime": started,
        "conditions": conditions(false, &finished),
        "containerStatuses": [{
            "name": name, "image": image, "imageID": "", "ready": false, "started": false, "restartCount": 0,
            "state": {"terminated": {
                "exitCode": code, "reason": reason, "message": message,
                "startedAt": started, "finishedAt": finished,
            }},
        }],
    }});
    match pods
        .patch_status(&pod.name_any(), &PatchParams::default(), &Patch::Merge(patch))
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(error) => Err(error.into()),
    }
}
