//! The resize controller's wiring: what wakes a VolumeResize (its StatefulSet, the pods, claims,
//! budgets and volumes a running resize waits on, a mover's result).

use super::result_watch::ResultWatch;
use crate::context::Context;
use crate::resize_cache::GuardedResize;
use crate::run::touched_metadata;
use crate::triggers;
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
    let stateful_sets = crate::run::scoped::<PartialObjectMeta<StatefulSet>>(client, scope);
    let pods = crate::run::scoped::<PartialObjectMeta<Pod>>(client, scope);
    let claims = crate::run::scoped::<PartialObjectMeta<PersistentVolumeClaim>>(client, scope);
    let budgets = crate::run::scoped::<PartialObjectMeta<PodDisruptionBudget>>(client, scope);
    // A StatefulSet change wakes the VolumeResizes that name it (e.g. replicas became Ready).
    // Only readable ones: an unreadable one names no StatefulSet Ferry could act on.
    let controller = controller
        .watches_stream(touched_metadata(stateful_sets), {
            let cache = cache.clone();
            move |sts: PartialObjectMeta<StatefulSet>| {
                let namespace = sts.namespace();
                cache.with_readable(|resizes| {
                    guarded(
                        resizes
                            .iter()
                            .filter(|resize| {
                                resize.namespace() == namespace
                                    && resize.spec.stateful_set_name == sts.name_any()
                            })
                            .map(|resize| ObjectRef::from_obj(*resize))
                            .collect(),
                    )
                })
            }
        })
        // Pods and claims a running resize waits for wake it at once (no store is kept for them,
        // and only their metadata is read: these watches map names, nothing more).
        .watches_stream(touched_metadata(pods), {
            let cache = cache.clone();
            move |pod: PartialObjectMeta<Pod>| {
                let namespace = pod.namespace();
                cache.with_readable(|resizes| {
                    guarded(triggers::for_pod(
                        resizes,
                        namespace.as_deref(),
                        &pod.name_any(),
                        triggers::mover_owner(pod.labels()),
                    ))
                })
            }
        })
        .watches_stream(touched_metadata(claims), {
            let cache = cache.clone();
            move |claim: PartialObjectMeta<PersistentVolumeClaim>| {
                let namespace = claim.namespace();
                cache.with_readable(|resizes| {
                    guarded(triggers::for_claim(
                        resizes,
                        namespace.as_deref(),
                        &claim.name_any(),
                    ))
                })
            }
        })
        .watches_stream(touched_metadata(budgets), {
            let cache = cache.clone();
            move |budget: PartialObjectMeta<PodDisruptionBudget>| {
                let namespace = budget.namespace();
                cache.with_readable(|resizes| guarded(triggers::for_budget(resizes, namespace.as_deref())))
            }
        })
        // Volumes are cluster-scoped: the swap waits for one to be reserved for its claim.
        .watches_stream(
            touched_metadata(Api::<PartialObjectMeta<PersistentVolume>>::all(client.clone())),
            {
                let cache = cache.clone();
                move |volume: PartialObjectMeta<PersistentVolume>| {
                    cache.with_readable(|resizes| guarded(triggers::for_volume(resizes, &volume.name_any())))
                }
            },
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

/// Reconcile requests for the controller, whose objects are guarded VolumeResizes (the same kind,
/// group and version: only the Rust type differs).
fn guarded(resizes: Vec<ObjectRef<VolumeResize>>) -> Vec<ObjectRef<GuardedResize>> {
    resizes
        .into_iter()
        .map(|resize| resize.into_kind_unchecked(()))
        .collect()
}
