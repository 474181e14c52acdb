//! The resize controller's wiring: what wakes a VolumeResize (its StatefulSet, the pods, claims,
//! budgets and volumes a running resize waits on, a mover's result).

use super::result_watch::ResultWatch;
use super::wakes;
use crate::context::Context;
use crate::resize_cache::{GuardedResize, Resizes};
use crate::watches::touched_metadata;
use ferry_api::VolumeResize;
use futures::StreamExt;
use futures::channel::mpsc::UnboundedReceiver;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::core::PartialObjectMeta;
use kube::runtime::Controller;
use kube::runtime::reflector::ObjectRef;
use kube::{Api, Client, ResourceExt};
use std::sync::Arc;

/// Runs `controller` (made with the VolumeResize cache `ctx` reads) until its streams end.
pub fn run(
    controller: Controller<GuardedResize>,
    client: &Client,
    scope: Option<&str>,
    ctx: Arc<Context>,
    results_in: UnboundedReceiver<ObjectRef<GuardedResize>>,
    results: ResultWatch,
) -> impl std::future::Future<Output = ()> + use<> {
    let cache = ctx.resizes.clone();
    let stateful_sets = crate::watches::scoped::<PartialObjectMeta<StatefulSet>>(client, scope);
    let pods = crate::watches::scoped::<PartialObjectMeta<Pod>>(client, scope);
    let claims = crate::watches::scoped::<PartialObjectMeta<PersistentVolumeClaim>>(client, scope);
    let budgets = crate::watches::scoped::<PartialObjectMeta<PodDisruptionBudget>>(client, scope);
    // Only readable VolumeResizes are woken: an unreadable one names nothing Ferry could act on.
    // Pods, claims, budgets and volumes are watched by their metadata alone and kept in no store:
    // these watches map names, nothing more.
    let controller = controller
        .watches_stream(
            touched_metadata(stateful_sets),
            waking(&cache, stateful_set_wakes),
        )
        .watches_stream(touched_metadata(pods), waking(&cache, pod_wakes))
        .watches_stream(touched_metadata(claims), waking(&cache, claim_wakes))
        .watches_stream(touched_metadata(budgets), waking(&cache, budget_wakes))
        .watches_stream(
            touched_metadata(Api::<PartialObjectMeta<PersistentVolume>>::all(client.clone())),
            waking(&cache, volume_wakes),
        )
        // A mover's result in its log: the pass is over before the kubelet sees the exit.
        .reconcile_on(results_in)
        .shutdown_on_signal();
    controller
        .run(
            super::reconcile,
            super::error_policy,
            Arc::new(super::Resizing::from(ctx).with_result_watch(results)),
        )
        .for_each(|result| async move {
            match result {
                Ok((object, _)) => tracing::debug!(name = %object.name, "reconciled"),
                Err(error) => {
                    tracing::debug!(%error, "reconcile error (already handled by the error policy)")
                }
            }
        })
}

/// A watch's mapper: the reconcile requests of the readable VolumeResizes `wakes` names.
fn waking<K: 'static>(
    cache: &Resizes,
    wakes: fn(&[&VolumeResize], &K) -> Vec<ObjectRef<VolumeResize>>,
) -> impl Fn(K) -> Vec<ObjectRef<GuardedResize>> + Send + Sync + 'static {
    let cache = cache.clone();
    move |object: K| cache.with_readable(|resizes| guarded(wakes(resizes, &object)))
}

/// A StatefulSet change wakes the VolumeResizes that name it (e.g. replicas became Ready).
fn stateful_set_wakes(
    resizes: &[&VolumeResize],
    sts: &PartialObjectMeta<StatefulSet>,
) -> Vec<ObjectRef<VolumeResize>> {
    let namespace = sts.namespace();
    resizes
        .iter()
        .filter(|resize| resize.namespace() == namespace && resize.spec.stateful_set_name == sts.name_any())
        .map(|resize| ObjectRef::from_obj(*resize))
        .collect()
}

/// A pod a running resize waits for (a replica, a mover) wakes it at once.
fn pod_wakes(resizes: &[&VolumeResize], pod: &PartialObjectMeta<Pod>) -> Vec<ObjectRef<VolumeResize>> {
    let namespace = pod.namespace();
    let mover_of = wakes::mover_owner(pod.labels());
    wakes::for_pod(resizes, namespace.as_deref(), &pod.name_any(), mover_of)
}

/// So does a claim it waits for.
fn claim_wakes(
    resizes: &[&VolumeResize],
    claim: &PartialObjectMeta<PersistentVolumeClaim>,
) -> Vec<ObjectRef<VolumeResize>> {
    wakes::for_claim(resizes, claim.namespace().as_deref(), &claim.name_any())
}

/// A budget over its replicas may let a stop go ahead.
fn budget_wakes(
    resizes: &[&VolumeResize],
    budget: &PartialObjectMeta<PodDisruptionBudget>,
) -> Vec<ObjectRef<VolumeResize>> {
    wakes::for_budget(resizes, budget.namespace().as_deref())
}

/// Volumes are cluster-scoped: the swap waits for one to be reserved for its claim.
fn volume_wakes(
    resizes: &[&VolumeResize],
    volume: &PartialObjectMeta<PersistentVolume>,
) -> Vec<ObjectRef<VolumeResize>> {
    wakes::for_volume(resizes, &volume.name_any())
}

/// Reconcile requests for the controller, whose objects are guarded VolumeResizes (the same kind,
/// group and version: only the Rust type differs).
fn guarded(resizes: Vec<ObjectRef<VolumeResize>>) -> Vec<ObjectRef<GuardedResize>> {
    resizes
        .into_iter()
        .map(|resize| resize.into_kind_unchecked(()))
        .collect()
}
