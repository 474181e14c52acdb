//! The ExtendedStatefulSet controller's wiring: what wakes an ExtendedStatefulSet.

use crate::context::Context;
use crate::features::Feature;
use crate::watches::{controller, scoped, touched_metadata, touched_metadata_with};
use ferry_api::ExtendedStatefulSet;
use futures::StreamExt;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use std::sync::Arc;

/// The ExtendedStatefulSet controller: its StatefulSets and the ConfigMaps and Secrets it
/// references (marked, so only those are watched) wake it.
pub fn run(
    client: &Client,
    scope: Option<&str>,
    ctx: Arc<Context>,
) -> impl std::future::Future<Output = ()> + use<> {
    let extended = scoped::<ExtendedStatefulSet>(client, scope);
    let stateful_sets = scoped::<PartialObjectMeta<StatefulSet>>(client, scope);
    let maps = scoped::<PartialObjectMeta<ConfigMap>>(client, scope);
    let secrets = scoped::<PartialObjectMeta<Secret>>(client, scope);
    let referenced = watcher::Config::default()
        .any_semantic()
        .labels(super::config::LABEL_REFERENCED);
    fn users_of<K: kube::Resource + ResourceExt>(object: &K) -> Vec<ObjectRef<ExtendedStatefulSet>> {
        let namespace = object.namespace().unwrap_or_default();
        super::config::users(object)
            .into_iter()
            .map(|name| ObjectRef::new(&name).within(&namespace))
            .collect()
    }
    let controller = controller(extended, watcher::Config::default().any_semantic())
        .owns_stream(touched_metadata(stateful_sets));
    // Switched off, referenced ConfigMaps and Secrets are never watched (the permission is not
    // granted).
    let controller = if ctx.features.enabled(Feature::ConfigMapReferences) {
        controller.watches_stream(
            touched_metadata_with(maps, referenced.clone()),
            |map: PartialObjectMeta<ConfigMap>| users_of(&map),
        )
    } else {
        controller
    };
    let controller = if ctx.features.enabled(Feature::SecretReferences) {
        controller.watches_stream(
            touched_metadata_with(secrets, referenced),
            |secret: PartialObjectMeta<Secret>| users_of(&secret),
        )
    } else {
        controller
    };
    controller
        .shutdown_on_signal()
        .run(super::reconcile, super::error_policy, ctx)
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::debug!(%error, "ExtendedStatefulSet: reconcile error (handled by the error policy)");
            }
        })
}
