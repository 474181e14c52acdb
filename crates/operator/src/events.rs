//! Kubernetes Events on the VolumeResize and its StatefulSet.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType, Recorder};

#[derive(Debug)]
pub struct Notice<'a> {
    pub warning: bool,
    pub reason: &'a str,
    pub action: &'a str,
    pub note: String,
}

/// Publishes the notice on every object given. Events are best effort: a failure is logged, never
/// allowed to fail the reconcile.
pub async fn publish(recorder: &Recorder, notice: &Notice<'_>, objects: &[ObjectReference]) {
    let event = Event {
        type_: if notice.warning {
            EventType::Warning
        } else {
            EventType::Normal
        },
        reason: notice.reason.to_string(),
        note: Some(notice.note.chars().take(1000).collect()),
        action: notice.action.to_string(),
        secondary: None,
    };
    // Side by side: a reconcile in a replica's downtime waits for one round trip, not one per object.
    let results =
        futures::future::join_all(objects.iter().map(|object| recorder.publish(&event, object))).await;
    for error in results.into_iter().filter_map(Result::err) {
        tracing::warn!(%error, reason = notice.reason, "could not publish event");
    }
}
