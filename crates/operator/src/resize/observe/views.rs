//! What the planners see of Kubernetes objects: pure conversions into the engine's views.

use ferry_api::names::ANNOTATION_BIND_NUDGE;
use ferry_api::parse_bytes;
use ferry_api::quantity::requested_storage;
use ferry_engine::resize::{ClaimView, NodeResize, PodView, StatefulSetView, TemplateView, VolumeView};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{
    PersistentVolume, PersistentVolumeClaim, PersistentVolumeClaimCondition, Pod,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::ResourceExt;

pub(super) fn bytes(quantity: Option<&Quantity>) -> Option<u64> {
    quantity.and_then(|q| parse_bytes(&q.0).ok())
}

/// The StatefulSet as the planners see it (`foreign` is judged once the backup is read).
pub(super) fn stateful_set_view(sts: &StatefulSet) -> StatefulSetView {
    let spec = sts.spec.as_ref();
    let pod_spec = spec.and_then(|s| s.template.spec.as_ref());
    let templates = spec
        .and_then(|s| s.volume_claim_templates.as_ref())
        .into_iter()
        .flatten()
        .map(|template| {
            let claim_spec = template.spec.as_ref();
            let view = TemplateView {
                size_bytes: bytes(requested_storage(claim_spec)),
                storage_class: claim_spec.and_then(|s| s.storage_class_name.clone()),
                raw_block: claim_spec.and_then(|s| s.volume_mode.as_deref()) == Some("Block"),
                read_write_once_pod: claim_spec
                    .and_then(|s| s.access_modes.as_ref())
                    .is_some_and(|modes| modes.iter().any(|m| m == "ReadWriteOncePod")),
                attributes_class: claim_spec.and_then(|s| s.volume_attributes_class_name.clone()),
            };
            (template.name_any(), view)
        })
        .collect();
    StatefulSetView {
        name: sts.name_any(),
        replicas: crate::ordinals::replicas(sts),
        first_ordinal: crate::ordinals::first_ordinal(sts),
        ready_replicas: sts.status.as_ref().and_then(|s| s.ready_replicas).unwrap_or(0),
        templates,
        deleting: sts.metadata.deletion_timestamp.is_some(),
        rolling_out: super::rolling_update::rolling_out(sts),
        foreign: false,
        pod_node_selector: pod_spec.and_then(|s| s.node_selector.clone()).unwrap_or_default(),
        pod_tolerations: pod_spec.and_then(|s| s.tolerations.clone()).unwrap_or_default(),
        run_as: pod_spec.and_then(ferry_engine::pods::run_as),
    }
}

pub(super) fn claim_view(claim: &PersistentVolumeClaim) -> ClaimView {
    let spec = claim.spec.as_ref();
    let status = claim.status.as_ref();
    let capacity = status
        .and_then(|s| s.capacity.as_ref())
        .and_then(|c| c.get("storage"));
    let conditions = status.and_then(|s| s.conditions.as_deref()).unwrap_or_default();
    ClaimView {
        uid: claim.uid().unwrap_or_default(),
        storage_class: spec.and_then(|s| s.storage_class_name.clone()),
        attributes_class: spec.and_then(|s| s.volume_attributes_class_name.clone()),
        current_attributes_class: status.and_then(|s| s.current_volume_attributes_class_name.clone()),
        modification_infeasible: modification_infeasible(spec, status, conditions),
        requested_bytes: bytes(requested_storage(spec)).unwrap_or(0),
        capacity_bytes: bytes(capacity).unwrap_or(0),
        volume_name: spec.and_then(|s| s.volume_name.clone()),
        deleting: claim.metadata.deletion_timestamp.is_some(),
        node_resize: node_resize(status, conditions),
        expansion_refused_in_use: expansion_refused_in_use(conditions),
        expansion_infeasible: expansion_infeasible(status, conditions),
        bound: status.and_then(|s| s.phase.as_deref()) == Some("Bound"),
        created: claim.metadata.creation_timestamp.clone(),
        nudged: claim.annotations().contains_key(ANNOTATION_BIND_NUDGE),
        // Read from Events, only for a pending clone (`clone_failures`).
        provisioning_failed: None,
    }
}

/// The node side of a claim's growth: `FileSystemResizePending` (set by the external-resizer or
/// the in-tree expander) and the kubelet's `NodeResizeError`. Only an error that says the file
/// system cannot grow while mounted (the CSI spec's FAILED_PRECONDITION) or that the kubelet will not
/// retry (`NodeResizeInfeasible`) needs a new pod at once. Any other error (a node plugin restarting
/// answers `Unavailable`) is retried by the kubelet, so it stays pending within the grace period:
/// restarting then cost a replica's downtime for nothing (seen with the CSI driver killed).
fn node_resize(
    status: Option<&k8s_openapi::api::core::v1::PersistentVolumeClaimStatus>,
    conditions: &[PersistentVolumeClaimCondition],
) -> NodeResize {
    let holds = |kind: &str| holding(conditions, kind);
    let Some(pending) = holds("FileSystemResizePending") else {
        return NodeResize::Idle;
    };
    let grows_only_unmounted = holds("NodeResizeError")
        .and_then(|c| c.message.as_deref())
        .is_some_and(|message| message.contains("code = FailedPrecondition"));
    let not_retried = status
        .and_then(|s| s.allocated_resource_statuses.as_ref())
        .and_then(|s| s.get("storage"))
        .is_some_and(|state| state == "NodeResizeInfeasible");
    if grows_only_unmounted || not_retried {
        NodeResize::Failed
    } else {
        NodeResize::Pending {
            since: pending.last_transition_time.clone(),
        }
    }
}

/// The external-resizer's `ControllerResizeError` carrying the driver's FAILED_PRECONDITION ("the
/// volume is in use and the plugin doesn't support online expansion", CSI spec), and no
/// `FileSystemResizePending` yet (the resizer keeps the old error once the volume has grown).
fn expansion_refused_in_use(conditions: &[PersistentVolumeClaimCondition]) -> bool {
    let holds = |kind: &str| holding(conditions, kind);
    holds("FileSystemResizePending").is_none()
        && holds("ControllerResizeError")
            .and_then(|c| c.message.as_deref())
            .is_some_and(|message| message.contains("code = FailedPrecondition"))
}

/// Why a claim's growth cannot succeed: its resize status (KEP-1790) says infeasible; the words are
/// the resize error's condition (the driver's own message), else the status itself.
fn expansion_infeasible(
    status: Option<&k8s_openapi::api::core::v1::PersistentVolumeClaimStatus>,
    conditions: &[PersistentVolumeClaimCondition],
) -> Option<String> {
    let state = status?.allocated_resource_statuses.as_ref()?.get("storage")?;
    let error = match state.as_str() {
        "ControllerResizeInfeasible" => "ControllerResizeError",
        "NodeResizeInfeasible" => "NodeResizeError",
        _ => return None,
    };
    let words = holding(conditions, error).and_then(|c| c.message.clone());
    Some(match words {
        Some(words) => format!("{state}: {words}"),
        None => state.clone(),
    })
}

/// Why the driver cannot give the claim's volume the attributes class its spec names: its
/// `modifyVolumeStatus` says `Infeasible` for that very class; the words are the external-resizer's
/// `ModifyVolumeError` condition (the driver's own message), else the status itself.
fn modification_infeasible(
    spec: Option<&k8s_openapi::api::core::v1::PersistentVolumeClaimSpec>,
    status: Option<&k8s_openapi::api::core::v1::PersistentVolumeClaimStatus>,
    conditions: &[PersistentVolumeClaimCondition],
) -> Option<String> {
    let modify = status?.modify_volume_status.as_ref()?;
    let asked = spec?.volume_attributes_class_name.as_deref();
    if modify.status != "Infeasible" || modify.target_volume_attributes_class_name.as_deref() != asked {
        return None;
    }
    let words = holding(conditions, "ModifyVolumeError").and_then(|c| c.message.clone());
    Some(match words {
        Some(words) => format!("Infeasible: {words}"),
        None => "Infeasible".to_string(),
    })
}

/// The claim's condition of this type, when it holds (status True).
fn holding<'a>(
    conditions: &'a [PersistentVolumeClaimCondition],
    kind: &str,
) -> Option<&'a PersistentVolumeClaimCondition> {
    conditions.iter().find(|c| c.type_ == kind && c.status == "True")
}

pub(super) fn pod_view(pod: &Pod) -> PodView {
    PodView {
        uid: pod.uid().unwrap_or_default(),
        ready: ferry_engine::pods::ready(pod),
        deleting: pod.metadata.deletion_timestamp.is_some(),
    }
}

pub(super) fn volume_view(volume: &PersistentVolume) -> VolumeView {
    let spec = volume.spec.as_ref();
    let claim = spec.and_then(|s| s.claim_ref.as_ref());
    VolumeView {
        uid: volume.uid().unwrap_or_default(),
        reclaim_policy: spec
            .and_then(|s| s.persistent_volume_reclaim_policy.clone())
            .unwrap_or_default(),
        claim_name: claim.and_then(|c| c.name.clone()),
        claim_uid: claim.and_then(|c| c.uid.clone()),
        phase: volume
            .status
            .as_ref()
            .and_then(|s| s.phase.clone())
            .unwrap_or_default(),
        attributes_class: spec.and_then(|s| s.volume_attributes_class_name.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::PersistentVolumeClaimStatus;

    fn condition(kind: &str, message: &str) -> PersistentVolumeClaimCondition {
        PersistentVolumeClaimCondition {
            type_: kind.into(),
            status: "True".into(),
            message: Some(message.into()),
            ..Default::default()
        }
    }

    fn pending_with(error: &str) -> Vec<PersistentVolumeClaimCondition> {
        vec![
            condition("FileSystemResizePending", "waiting for the node"),
            condition("NodeResizeError", error),
        ]
    }

    /// The kubelet's words when the node plugin refuses a mounted volume (CSI FAILED_PRECONDITION).
    #[test]
    fn a_node_plugin_that_grows_only_unmounted_needs_a_new_pod() {
        let conditions = pending_with(
            "failed to expand pvc with Expander.NodeExpand failed to expand the volume : rpc error: \
             code = FailedPrecondition desc = the file system grows only while unmounted",
        );
        assert_eq!(node_resize(None, &conditions), NodeResize::Failed);
    }

    /// The kubelet's words when the node plugin was killed mid-call: it retries, so the growth stays
    /// pending (the grace period still ends it with a new pod if the plugin never answers).
    #[test]
    fn a_node_plugin_that_was_away_is_waited_for() {
        for error in [
            "failed to expand pvc with Expander.NodeExpand failed to expand the volume : rpc error: \
             code = Unavailable desc = error reading from server: EOF",
            "failed to expand pvc with Expander.NodeExpand failed to check if node supports \
             expansion : rpc error: code = Unavailable desc = connection refused",
        ] {
            assert!(
                matches!(
                    node_resize(None, &pending_with(error)),
                    NodeResize::Pending { .. }
                ),
                "{error}"
            );
        }
    }

    #[test]
    fn a_node_resize_the_kubelet_will_not_retry_needs_a_new_pod() {
        let status = PersistentVolumeClaimStatus {
            allocated_resource_statuses: Some(
                [("storage".to_string(), "NodeResizeInfeasible".to_string())].into(),
            ),
            ..Default::default()
        };
        let conditions = pending_with("failed to expand pvc with rpc error: code = OutOfRange");
        assert_eq!(node_resize(Some(&status), &conditions), NodeResize::Failed);
    }

    #[test]
    fn no_pending_resize_is_idle() {
        assert_eq!(node_resize(None, &[]), NodeResize::Idle);
    }
}
