//! The StatefulSet controller for triggers (and the seed's autoresize opt-in, see
//! `autoscale::defaults`): reads a StatefulSet's request (an edit the webhook
//! kept aside, annotations, drift), decides with `ferry_engine::trigger::decide`, and writes the
//! decision: the StatefulSet's annotations first (guarded by its resourceVersion, so a request
//! changed meanwhile is never overwritten), then the VolumeResize, then the Events.

mod apply;
pub mod controller;
mod observe;

use crate::Error;
use crate::context::Context;
use ferry_api::names::{
    ANNOTATION_REQUESTED_TEMPLATES, ANNOTATION_RESIZE_BY, ANNOTATION_RESIZE_PREFIX, ANNOTATION_RESIZE_STATUS,
    ANNOTATION_STORAGE_CLASS_PREFIX, ANNOTATION_SYNC_CLAIMS, SEED_ANNOTATION_AUTO_SCALED,
    SEED_ANNOTATION_RESIZE_PREFIX,
};
use ferry_engine::trigger::decide;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::ListParams;
use kube::core::PartialObjectMeta;
use kube::runtime::controller::Action;
use kube::runtime::watcher;
use kube::{Api, Resource, ResourceExt};
pub use observe::templates_of;
use std::sync::Arc;
use std::time::Duration;

/// Drift has no event of its own when claims change by hand: look again now and then.
const RECHECK: Duration = Duration::from_secs(300);
const STALE_RETRY: Duration = Duration::from_millis(200);

/// Whether an annotation is one the triggers read or write.
fn read_by_triggers(key: &str) -> bool {
    key == ANNOTATION_REQUESTED_TEMPLATES
        || key == ANNOTATION_RESIZE_BY
        || key == ANNOTATION_RESIZE_STATUS
        || key == ANNOTATION_SYNC_CLAIMS
        || key == SEED_ANNOTATION_AUTO_SCALED
        || key.starts_with(ANNOTATION_RESIZE_PREFIX)
        || key.starts_with(ANNOTATION_STORAGE_CLASS_PREFIX)
        || key.starts_with(SEED_ANNOTATION_RESIZE_PREFIX)
}

/// Whether the StatefulSet carries anything the triggers read or write.
fn concerns_triggers(sts: &impl ResourceExt) -> bool {
    sts.annotations().keys().any(|key| read_by_triggers(key))
}

/// What the controller keeps of each StatefulSet's metadata: its identity and the annotations the
/// triggers read, nothing else (labels, owners, managed fields, `last-applied-configuration`). A
/// cluster's StatefulSets are all kept, so each byte counts 20,000 times; the reconcile of one that
/// carries a request reads it whole.
pub fn keep_what_triggers_read(sts: &mut PartialObjectMeta<StatefulSet>) {
    let meta = std::mem::take(&mut sts.metadata);
    let annotations: std::collections::BTreeMap<String, String> = meta
        .annotations
        .unwrap_or_default()
        .into_iter()
        .filter(|(key, _)| read_by_triggers(key))
        .collect();
    sts.metadata = ObjectMeta {
        name: meta.name,
        namespace: meta.namespace,
        uid: meta.uid,
        resource_version: meta.resource_version,
        deletion_timestamp: meta.deletion_timestamp,
        annotations: (!annotations.is_empty()).then_some(annotations),
        ..ObjectMeta::default()
    };
}

/// What the controller sees of the StatefulSet watch: only those that carry a request. The others
/// (most of a cluster's) are neither kept nor reconciled; one that stops carrying a request leaves
/// the store as if it were deleted. A restart with 20,000 StatefulSets then queues a handful of
/// reconciles instead of 20,000.
pub fn only_requests(
    event: watcher::Event<PartialObjectMeta<StatefulSet>>,
) -> Option<watcher::Event<PartialObjectMeta<StatefulSet>>> {
    use watcher::Event;
    match event {
        Event::Apply(sts) if !concerns_triggers(&sts) => Some(Event::Delete(sts)),
        Event::InitApply(sts) if !concerns_triggers(&sts) => None,
        other => Some(other),
    }
}

/// Reconciles one StatefulSet, known by its metadata (the controller keeps no more of the
/// thousands a cluster has); one that carries a request is read whole from the API server.
pub async fn reconcile(
    meta: Arc<PartialObjectMeta<StatefulSet>>,
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    if !concerns_triggers(meta.as_ref()) || meta.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let namespace = meta.namespace().unwrap_or_default();
    let Some(sts) = Api::<StatefulSet>::namespaced(ctx.client.clone(), &namespace)
        .get_opt(&meta.name_any())
        .await?
    else {
        // Gone since the event: its deletion is the next event.
        return Ok(Action::await_change());
    };
    if !concerns_triggers(&sts) || sts.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    match reconcile_inner(&sts, &ctx).await {
        Err(error) if error.is_stale_read() => Ok(Action::requeue(STALE_RETRY)),
        other => other,
    }
}

async fn reconcile_inner(sts: &StatefulSet, ctx: &Context) -> Result<Action, Error> {
    let namespace = sts.namespace().ok_or_else(|| Error::NotNamespaced {
        kind: "StatefulSet",
        name: sts.name_any(),
    })?;
    // The seed's `auto-scaled` opt-in makes a VolumeAutoscaler: not where autoscaling is off.
    if ctx.features.enabled(crate::features::Feature::Autoscale) {
        crate::autoscale::defaults::reconcile(ctx, sts, &namespace).await?;
    }
    if !ctx.features.enabled(crate::features::Feature::Triggers) {
        return Ok(triggers_off(ctx, sts).await);
    }
    let claims = Api::<PersistentVolumeClaim>::namespaced(ctx.client.clone(), &namespace)
        .list(&ListParams::default())
        .await?
        .items;
    let subject = observe::subject(sts, &claims);
    let resizes = ctx
        .resizes
        .with_readable(|all| observe::resizes_of(all, &namespace, &subject.name));
    let mut decision = decide(&subject, &resizes);
    if decision.create.is_some() {
        // The cache hands out only the VolumeResizes this Ferry can read, and an unreadable one may
        // be at work on this StatefulSet (a newer Ferry's). Before making a resize, ask the API
        // server: one naming this StatefulSet makes the request wait, as a readable one would.
        let listing = crate::listing::list(&ctx.client, &namespace).await?;
        let unreadable = observe::unreadable_of(&listing, &subject.name);
        if !unreadable.is_empty() {
            decision = decide(&subject, &[resizes, unreadable].concat());
        }
    }
    apply::apply(ctx, sts, &namespace, &decision).await?;
    apply::publish(ctx, sts, &decision).await;
    Ok(Action::requeue(RECHECK))
}

/// Triggers switched off: a StatefulSet asking for a resize by annotation is told, once per change
/// of it, that nothing will act, instead of waiting for a resize that never comes.
async fn triggers_off(ctx: &Context, sts: &StatefulSet) -> Action {
    let asks = sts.annotations().keys().any(|key| {
        key.starts_with(ANNOTATION_RESIZE_PREFIX)
            || key.starts_with(ANNOTATION_STORAGE_CLASS_PREFIX)
            || key.starts_with(SEED_ANNOTATION_RESIZE_PREFIX)
    });
    if asks {
        let notice = crate::events::Notice {
            warning: true,
            reason: "TriggersSwitchedOff",
            action: "Resize",
            note: "this Ferry installation has triggers switched off (features.triggers: false), so resize annotations and claim template edits are not carried out: create a VolumeResize instead".to_string(),
        };
        crate::events::publish(&ctx.recorder, &notice, &[sts.object_ref(&())]).await;
    }
    Action::await_change()
}

pub fn error_policy(sts: Arc<PartialObjectMeta<StatefulSet>>, error: &Error, _ctx: Arc<Context>) -> Action {
    tracing::warn!(stateful_set = %sts.name_any(), %error, "StatefulSet requests: retrying");
    Action::requeue(Duration::from_secs(5))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta(name: &str, annotations: serde_json::Value) -> PartialObjectMeta<StatefulSet> {
        serde_json::from_value(json!({
            "apiVersion": "meta.k8s.io/v1",
            "kind": "PartialObjectMetadata",
            "metadata": {"name": name, "namespace": "ns", "annotations": annotations},
        }))
        .unwrap()
    }

    #[test]
    fn only_stateful_sets_that_carry_a_request_reach_the_store() {
        use watcher::Event;
        let plain = || meta("plain", json!({"team": "a"}));
        let asking = || meta("asking", json!({"ferry.dev/resize.data": "2Gi"}));
        let name = |event: Option<Event<PartialObjectMeta<StatefulSet>>>| match event {
            Some(Event::Apply(sts)) => format!("apply {}", sts.name_any()),
            Some(Event::InitApply(sts)) => format!("init-apply {}", sts.name_any()),
            Some(Event::Delete(sts)) => format!("delete {}", sts.name_any()),
            Some(Event::Init) => "init".into(),
            Some(Event::InitDone) => "init-done".into(),
            None => "dropped".into(),
        };
        assert_eq!(name(only_requests(Event::InitApply(plain()))), "dropped");
        assert_eq!(
            name(only_requests(Event::InitApply(asking()))),
            "init-apply asking"
        );
        assert_eq!(name(only_requests(Event::Apply(asking()))), "apply asking");
        // A request withdrawn: the StatefulSet leaves the store.
        assert_eq!(name(only_requests(Event::Apply(plain()))), "delete plain");
        assert_eq!(name(only_requests(Event::Delete(asking()))), "delete asking");
        assert_eq!(name(only_requests(Event::Init)), "init");
        assert_eq!(name(only_requests(Event::InitDone)), "init-done");
    }

    #[test]
    fn a_kept_stateful_set_is_its_identity_and_the_annotations_triggers_read() {
        let mut sts: PartialObjectMeta<StatefulSet> = serde_json::from_value(json!({
            "apiVersion": "meta.k8s.io/v1",
            "kind": "PartialObjectMetadata",
            "metadata": {
                "name": "db", "namespace": "ns", "uid": "u1", "resourceVersion": "7",
                "labels": {"app": "db"},
                "annotations": {
                    "kubectl.kubernetes.io/last-applied-configuration": "{\"a very\": \"long manifest\"}",
                    "ferry.dev/resize.data": "2Gi",
                },
                "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "x", "uid": "o"}],
                "managedFields": [{"manager": "kubectl", "operation": "Apply"}],
            },
        }))
        .unwrap();
        keep_what_triggers_read(&mut sts);
        assert_eq!(
            serde_json::to_value(&sts.metadata).unwrap(),
            json!({
                "name": "db", "namespace": "ns", "uid": "u1", "resourceVersion": "7",
                "annotations": {"ferry.dev/resize.data": "2Gi"},
            })
        );
        assert!(concerns_triggers(&sts));

        let mut plain: PartialObjectMeta<StatefulSet> = serde_json::from_value(json!({
            "apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
            "metadata": {"name": "web", "namespace": "ns", "annotations": {"team": "a"}},
        }))
        .unwrap();
        keep_what_triggers_read(&mut plain);
        assert_eq!(plain.metadata.annotations, None);
        assert!(!concerns_triggers(&plain));
    }
}
