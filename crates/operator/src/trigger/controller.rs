//! The trigger controller's wiring: which StatefulSets it keeps, and what wakes one.

use crate::context::Context;
use crate::resize_cache::GuardedResize;
use crate::watch_backoff::backing_off;
use crate::watches::{controller_for_stream, scoped};
use futures::StreamExt;
use k8s_openapi::api::apps::v1::StatefulSet;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{self, ObjectRef, reflector};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use std::sync::Arc;

/// The StatefulSet controller that turns requests (a template edit, annotations, drift) into
/// VolumeResizes; a VolumeResize's change wakes the StatefulSet it names.
pub fn run(
    client: &Client,
    scope: Option<&str>,
    ctx: Arc<Context>,
) -> impl std::future::Future<Output = ()> + use<> {
    let stateful_sets = scoped::<PartialObjectMeta<StatefulSet>>(client, scope);
    // Guarded, so that one unreadable VolumeResize does not stall this watch; it names no
    // StatefulSet to wake.
    let resizes = scoped::<GuardedResize>(client, scope);
    // Only the StatefulSets that carry a request are kept, reduced to their name and the
    // annotations the triggers read; the reconcile reads the whole object.
    let (store, writer) = reflector::store();
    let stateful_sets = reflector(
        writer,
        backing_off(watcher(stateful_sets, watcher::Config::default()))
            // Dropped first, so only the kept ones are slimmed.
            .filter_map(|event| std::future::ready(event.map(super::only_requests).transpose()))
            .modify(super::keep_what_triggers_read),
    )
    .applied_objects();
    let resizes = backing_off(watcher(resizes, watcher::Config::default().any_semantic())).touched_objects();
    controller_for_stream(stateful_sets, store)
        .watches_stream(resizes, |object: GuardedResize| {
            let resize = object.0.ok()?;
            let namespace = resize.namespace();
            Some(
                ObjectRef::<PartialObjectMeta<StatefulSet>>::new(&resize.spec.stateful_set_name)
                    .within(namespace.as_deref().unwrap_or_default()),
            )
        })
        .shutdown_on_signal()
        .run(super::reconcile, super::error_policy, ctx)
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::debug!(%error, "StatefulSet requests: reconcile error (handled by the error policy)");
            }
        })
}
