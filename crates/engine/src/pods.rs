//! What every part of Ferry asks of a pod.

use k8s_openapi::api::core::v1::Pod;

/// The pod's `Ready` condition is `True`.
pub fn ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|status| status.conditions.as_ref())
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|condition| condition.type_ == "Ready" && condition.status == "True")
        })
}
