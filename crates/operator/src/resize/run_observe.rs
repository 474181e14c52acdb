//! Reading the state a running resize acts on: the StatefulSet, its claims and pods, the backup.

use crate::Error;
use crate::context::Context;
use ferry_api::{VolumeResize, parse_bytes};
use ferry_engine::run_state::{RunClaim, RunObserved, RunPod, RunStatefulSet};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod};
use kube::api::ListParams;
use kube::{Api, ResourceExt};

/// Deterministic name of the ConfigMap holding a resize's StatefulSet backup.
pub fn backup_name(resize: &VolumeResize) -> String {
    format!("ferry-{}-backup", resize.name_any())
}

pub async fn observe_run(
    ctx: &Context,
    resize: &VolumeResize,
    namespace: &str,
) -> Result<(RunObserved, Option<StatefulSet>), Error> {
    let sts_name = &resize.spec.stateful_set_name;
    let stateful_set = Api::<StatefulSet>::namespaced(ctx.client.clone(), namespace)
        .get_opt(sts_name)
        .await?;
    let backup_exists = Api::<ConfigMap>::namespaced(ctx.client.clone(), namespace)
        .get_opt(&backup_name(resize))
        .await?
        .is_some();
    let plan = resize
        .status
        .as_ref()
        .map(|s| s.plan.as_slice())
        .unwrap_or_default();
    let claims = Api::<PersistentVolumeClaim>::namespaced(ctx.client.clone(), namespace)
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|claim| plan.iter().any(|row| row.claim_name == claim.name_any()))
        .map(|claim| (claim.name_any(), run_claim(&claim)))
        .collect();
    let pod_names: Vec<String> = plan
        .iter()
        .map(|row| format!("{sts_name}-{}", row.replica))
        .collect();
    let pods = Api::<Pod>::namespaced(ctx.client.clone(), namespace)
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|pod| pod_names.contains(&pod.name_any()))
        .map(|pod| (pod.name_any(), run_pod(&pod)))
        .collect();
    let observed = RunObserved {
        stateful_set: stateful_set.as_ref().map(run_stateful_set),
        backup_exists,
        claims,
        pods,
    };
    Ok((observed, stateful_set))
}

fn storage(
    map: Option<&std::collections::BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>,
) -> u64 {
    map.and_then(|m| m.get("storage"))
        .and_then(|q| parse_bytes(&q.0).ok())
        .unwrap_or(0)
}

fn run_claim(claim: &PersistentVolumeClaim) -> RunClaim {
    let status = claim.status.as_ref();
    RunClaim {
        requested_bytes: storage(
            claim
                .spec
                .as_ref()
                .and_then(|s| s.resources.as_ref())
                .and_then(|r| r.requests.as_ref()),
        ),
        capacity_bytes: storage(status.and_then(|s| s.capacity.as_ref())),
        file_system_resize_pending: status
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|conditions| {
                conditions
                    .iter()
                    .any(|c| c.type_ == "FileSystemResizePending" && c.status == "True")
            }),
    }
}

fn run_pod(pod: &Pod) -> RunPod {
    let ready = pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
        });
    RunPod {
        uid: pod.uid().unwrap_or_default(),
        ready,
        deleting: pod.metadata.deletion_timestamp.is_some(),
    }
}

fn run_stateful_set(sts: &StatefulSet) -> RunStatefulSet {
    let spec = sts.spec.as_ref();
    RunStatefulSet {
        deleting: sts.metadata.deletion_timestamp.is_some(),
        template_sizes: spec
            .and_then(|s| s.volume_claim_templates.as_ref())
            .into_iter()
            .flatten()
            .map(|t| {
                (
                    t.name_any(),
                    storage(
                        t.spec
                            .as_ref()
                            .and_then(|s| s.resources.as_ref())
                            .and_then(|r| r.requests.as_ref()),
                    ),
                )
            })
            .collect(),
        replicas: spec.and_then(|s| s.replicas).unwrap_or(1),
        ready_replicas: sts.status.as_ref().and_then(|s| s.ready_replicas).unwrap_or(0),
    }
}
