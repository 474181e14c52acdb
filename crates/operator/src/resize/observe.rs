//! Reading what one VolumeResize depends on into the engine's one model ([`Observed`]), as far as
//! the engine's [`Scope`] for its state says: prechecks read the request's world, a run the objects
//! it acts on, retention the volumes it kept.

mod clone_failures;
mod dry_run_usage;
mod owner;
mod rolling_update;
mod run;
mod views;

use super::Resizing;
use crate::Error;
use crate::context::Context;
use ferry_api::{Phase, VolumeResize};
use ferry_engine::resize::{NodeView, Observed, PeerResize, Scope, StorageClassView, VolumeView};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::{CSIDriver, StorageClass, VolumeAttributesClass};
use kube::api::ListParams;
use kube::{Api, ResourceExt};
pub(super) use run::claimed_in;
use run::{fetch_run, read_run};
use std::collections::BTreeMap;
use views::{claim_view, stateful_set_view, volume_view};

/// The engine's view, plus the StatefulSet itself (backed up before it is touched; named in Events).
pub struct Observation {
    pub observed: Observed,
    pub stateful_set: Option<StatefulSet>,
}

pub async fn observe(
    ctx: &Resizing,
    resize: &VolumeResize,
    namespace: &str,
    scope: Scope,
) -> Result<Observation, Error> {
    let mut observed = Observed {
        mover_images: ctx.resize.mover_images(),
        ..Observed::default()
    };
    if scope == Scope::Retention {
        observed.volumes = retained_volumes(ctx, resize, namespace).await?;
    }
    if matches!(scope, Scope::Retention | Scope::Nothing) {
        return Ok(Observation {
            observed,
            stateful_set: None,
        });
    }
    let sets = Api::<StatefulSet>::namespaced(ctx.client.clone(), namespace);
    let read_set = async {
        sets.get_opt(&resize.spec.stateful_set_name)
            .await
            .map_err(Error::from)
    };
    if scope == Scope::Run {
        let (stateful_set, reads) = futures::try_join!(read_set, fetch_run(ctx, resize, namespace))?;
        observed.stateful_set = stateful_set.as_ref().map(stateful_set_view);
        read_run(
            ctx,
            resize,
            namespace,
            stateful_set.as_ref(),
            reads,
            &mut observed,
        )
        .await?;
        observed.owner = owner::read_owner(
            ctx,
            namespace,
            stateful_set.as_ref(),
            resize.status.as_ref(),
            true,
        )
        .await?;
        return Ok(Observation {
            observed,
            stateful_set,
        });
    }
    let stateful_set = read_set.await?;
    observed.stateful_set = stateful_set.as_ref().map(stateful_set_view);
    read_request(ctx, resize, namespace, stateful_set.as_ref(), &mut observed).await?;
    observed.owner = owner::read_owner(
        ctx,
        namespace,
        stateful_set.as_ref(),
        resize.status.as_ref(),
        false,
    )
    .await?;
    Ok(Observation {
        observed,
        stateful_set,
    })
}

/// The old volumes a finished resize retained that still exist and are still of its namespace (a
/// name that now belongs to a PV of another namespace counts as gone: never touched).
async fn retained_volumes(
    ctx: &Context,
    resize: &VolumeResize,
    namespace: &str,
) -> Result<BTreeMap<String, VolumeView>, Error> {
    let volumes = Api::<PersistentVolume>::all(ctx.client.clone());
    let mut found = BTreeMap::new();
    let retained = resize
        .status
        .as_ref()
        .map(|s| s.created_objects.retained_volumes.as_slice())
        .unwrap_or_default();
    for name in retained {
        if let Some(volume) = volumes.get_opt(name).await?
            && claimed_in(&volume, namespace)
        {
            found.insert(name.clone(), volume_view(&volume));
        }
    }
    Ok(found)
}

/// What prechecks read: StorageClasses, every claim of the namespace, the replicas' nodes, the other
/// VolumeResizes on the StatefulSet.
async fn read_request(
    ctx: &Context,
    resize: &VolumeResize,
    namespace: &str,
    stateful_set: Option<&StatefulSet>,
    observed: &mut Observed,
) -> Result<(), Error> {
    observed.storage_classes = storage_classes(ctx).await?;
    // Only a request for clones needs to know the CSI drivers.
    if resize.spec.warm_copy_method == ferry_api::WarmCopyMethod::Clone {
        observed.csi_drivers = Api::<CSIDriver>::all(ctx.client.clone())
            .list(&ListParams::default())
            .await?
            .items
            .into_iter()
            .map(|driver| driver.name_any())
            .collect();
    }
    if names_attributes_classes(resize, stateful_set) {
        observed.attributes_classes = Api::<VolumeAttributesClass>::all(ctx.client.clone())
            .list(&ListParams::default())
            .await?
            .items
            .into_iter()
            .map(|class| (class.name_any(), class.driver_name))
            .collect();
    }
    if let Some(sts) = stateful_set {
        observed.claims = Api::<PersistentVolumeClaim>::namespaced(ctx.client.clone(), namespace)
            .list(&ListParams::default())
            .await?
            .items
            .into_iter()
            .map(|claim| (claim.name_any(), claim_view(&claim)))
            .collect();
        // Only a move to other nodes chooses among them.
        if resize.spec.placement.is_some() {
            observed.nodes = Api::<Node>::all(ctx.client.clone())
                .list(&ListParams::default())
                .await?
                .items
                .iter()
                .map(|node| (node.name_any(), NodeView::of(node)))
                .collect();
        }
        observed.replica_nodes = replica_nodes(ctx, sts, namespace, &observed.nodes).await?;
        // The API server stops a claim write past these half-way: the prechecks refuse first.
        observed.quotas = super::limits::quotas(&ctx.client, namespace).await?;
        observed.claim_limits = super::limits::claim_limits(&ctx.client, namespace).await?;
        observed.pod_security = super::limits::pod_security(&ctx.client, namespace).await?;
        if resize.spec.dry_run && ctx.reads_usage() {
            let nodes = observed
                .replica_nodes
                .values()
                .map(|node| node.name.as_str())
                .collect();
            observed.data_in_use = dry_run_usage::data_in_use(ctx, namespace, nodes).await;
        }
    }
    observed.peers = peers(ctx, resize, namespace);
    observed.queue_key = queue_key(resize);
    Ok(())
}

/// Every StorageClass, reduced to what the prechecks read.
async fn storage_classes(ctx: &Context) -> Result<BTreeMap<String, StorageClassView>, Error> {
    let classes = Api::<StorageClass>::all(ctx.client.clone())
        .list(&ListParams::default())
        .await?
        .items;
    // One default, chosen as the API server does (several may be annotated).
    let default = ferry_engine::storage_classes::default_class(&classes);
    Ok(classes
        .into_iter()
        .map(|class| {
            let view = StorageClassView {
                provisioner: class.provisioner.clone(),
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
                waits_for_first_consumer: class.volume_binding_mode.as_deref()
                    == Some("WaitForFirstConsumer"),
                is_default: class.metadata.name.is_some() && class.metadata.name == default,
            };
            (class.name_any(), view)
        })
        .collect())
}

/// Whether the request or one of the StatefulSet's templates names a VolumeAttributesClass: only
/// then are they read (a cluster whose VolumeResizes never name one needs no permission for them).
fn names_attributes_classes(resize: &VolumeResize, stateful_set: Option<&StatefulSet>) -> bool {
    let asked = resize
        .spec
        .volumes
        .iter()
        .any(|volume| volume.volume_attributes_class_name.is_some());
    let templated = stateful_set
        .and_then(|sts| sts.spec.as_ref())
        .and_then(|spec| spec.volume_claim_templates.as_ref())
        .into_iter()
        .flatten()
        .any(|template| {
            template
                .spec
                .as_ref()
                .is_some_and(|spec| spec.volume_attributes_class_name.is_some())
        });
    asked || templated
}

/// The node each of the StatefulSet's pods runs on, by ordinal (from `listed` when the nodes were
/// listed already).
async fn replica_nodes(
    ctx: &Context,
    sts: &StatefulSet,
    namespace: &str,
    listed: &BTreeMap<String, NodeView>,
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
        if let Some(node) = listed.get(&node_name) {
            placed.insert(ordinal, node.clone());
        } else if let Some(node) = nodes.get_opt(&node_name).await? {
            placed.insert(ordinal, NodeView::of(&node));
        }
    }
    Ok(placed)
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
    ctx.resizes.with_readable(|resizes| {
        resizes
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
    })
}
