//! Reading everything one VolumeResize depends on, reduced to the engine's plain view.

use crate::Error;
use crate::context::Context;
use ferry_api::quantity::requested_storage;
use ferry_api::{Phase, VolumeResize, parse_bytes};
use ferry_engine::{
    ClaimView, NodeView, Observed, PeerResize, StatefulSetView, StorageClassView, TemplateView,
};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::ListParams;
use kube::{Api, Resource, ResourceExt};
use std::collections::BTreeMap;

const DEFAULT_CLASS_ANNOTATION: &str = "storageclass.kubernetes.io/is-default-class";

/// The engine's view, plus a reference to the StatefulSet for Events when it exists.
pub struct Observation {
    pub observed: Observed,
    pub stateful_set: Option<ObjectReference>,
}

pub async fn observe(ctx: &Context, resize: &VolumeResize, namespace: &str) -> Result<Observation, Error> {
    let sts_name = &resize.spec.stateful_set_name;
    let stateful_set = Api::<StatefulSet>::namespaced(ctx.client.clone(), namespace)
        .get_opt(sts_name)
        .await?;
    let storage_classes = Api::<StorageClass>::all(ctx.client.clone())
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .map(|class| {
            let view = StorageClassView {
                allowed_topologies: class
                    .allowed_topologies
                    .iter()
                    .flatten()
                    .map(|term| {
                        term.match_label_expressions
                            .iter()
                            .flatten()
                            .map(|e| (e.key.clone(), e.values.clone()))
                            .collect()
                    })
                    .collect(),
                allow_expansion: class.allow_volume_expansion.unwrap_or(false),
                is_default: class
                    .annotations()
                    .get(DEFAULT_CLASS_ANNOTATION)
                    .map(String::as_str)
                    == Some("true"),
            };
            (class.name_any(), view)
        })
        .collect();
    let claims = match &stateful_set {
        Some(_) => Api::<PersistentVolumeClaim>::namespaced(ctx.client.clone(), namespace)
            .list(&ListParams::default())
            .await?
            .items
            .into_iter()
            .map(|claim| (claim.name_any(), claim_view(&claim)))
            .collect(),
        None => Default::default(),
    };
    let replica_nodes = match &stateful_set {
        Some(sts) => replica_nodes(ctx, sts, namespace).await?,
        None => Default::default(),
    };
    let observed = Observed {
        replica_nodes,
        stateful_set: stateful_set.as_ref().map(stateful_set_view),
        storage_classes,
        claims,
        peers: peers(ctx, resize, namespace),
        queue_key: queue_key(resize),
    };
    Ok(Observation {
        observed,
        stateful_set: stateful_set.map(|sts| sts.object_ref(&())),
    })
}

/// The node (name and labels) each of the StatefulSet's pods runs on, by ordinal.
async fn replica_nodes(
    ctx: &Context,
    sts: &StatefulSet,
    namespace: &str,
) -> Result<BTreeMap<i32, NodeView>, Error> {
    let prefix = format!("{}-", sts.name_any());
    let nodes = Api::<Node>::all(ctx.client.clone());
    let mut placed = BTreeMap::new();
    let pods = Api::<Pod>::namespaced(ctx.client.clone(), namespace)
        .list(&ListParams::default())
        .await?;
    for pod in pods.items {
        let Some(ordinal) = pod
            .name_any()
            .strip_prefix(&prefix)
            .and_then(|o| o.parse::<i32>().ok())
        else {
            continue;
        };
        let Some(node_name) = pod.spec.as_ref().and_then(|s| s.node_name.clone()) else {
            continue;
        };
        if let Some(node) = nodes.get_opt(&node_name).await? {
            placed.insert(
                ordinal,
                NodeView {
                    name: node_name,
                    labels: node.labels().clone(),
                },
            );
        }
    }
    Ok(placed)
}

fn bytes(quantity: Option<&Quantity>) -> Option<u64> {
    quantity.and_then(|q| parse_bytes(&q.0).ok())
}

fn stateful_set_view(sts: &StatefulSet) -> StatefulSetView {
    let spec = sts.spec.as_ref();
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
            };
            (template.name_any(), view)
        })
        .collect();
    StatefulSetView {
        name: sts.name_any(),
        replicas: spec.and_then(|s| s.replicas).unwrap_or(1),
        first_ordinal: spec
            .and_then(|s| s.ordinals.as_ref())
            .and_then(|o| o.start)
            .unwrap_or(0),
        ready_replicas: sts.status.as_ref().and_then(|s| s.ready_replicas).unwrap_or(0),
        templates,
    }
}

fn claim_view(claim: &PersistentVolumeClaim) -> ClaimView {
    let capacity = claim
        .status
        .as_ref()
        .and_then(|s| s.capacity.as_ref())
        .and_then(|c| c.get("storage"));
    ClaimView {
        size_bytes: bytes(capacity).or_else(|| bytes(requested_storage(claim.spec.as_ref()))),
        storage_class: claim.spec.as_ref().and_then(|s| s.storage_class_name.clone()),
    }
}

fn queue_key(resize: &VolumeResize) -> (i64, String) {
    let created = resize
        .metadata
        .creation_timestamp
        .as_ref()
        .map(|t| t.0.as_second())
        .unwrap_or(i64::MAX);
    (created, resize.name_any())
}

/// Unfinished VolumeResizes on the same StatefulSet, from the controller's cache.
fn peers(ctx: &Context, resize: &VolumeResize, namespace: &str) -> Vec<PeerResize> {
    ctx.resizes
        .state()
        .iter()
        .filter(|other| {
            other.namespace().as_deref() == Some(namespace)
                && other.uid() != resize.uid()
                && other.spec.stateful_set_name == resize.spec.stateful_set_name
                && !other.phase().is_terminal()
                // One being deleted still holds its place: it stops at a safe point first.
                && (other.metadata.deletion_timestamp.is_none()
                    || matches!(other.phase(), Phase::Running | Phase::RollingBack))
        })
        .map(|other| PeerResize {
            name: other.name_any(),
            queue_key: queue_key(other),
            holds_stateful_set: matches!(
                other.phase(),
                Phase::Planning | Phase::Running | Phase::Paused | Phase::RollingBack
            ),
        })
        .collect()
}
