//! The VolumeAutoscaler controller's wiring: what wakes an autoscaler besides its interval.

use super::{Autoscaling, Summaries};
use crate::context::Context;
use crate::watches::{controller, scoped, touched_metadata};
use ferry_api::names::LABEL_AUTOSCALER_UID;
use ferry_api::{VolumeAutoscaler, VolumeResize};
use futures::StreamExt;
use k8s_openapi::api::apps::v1::StatefulSet;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use std::sync::Arc;
use std::time::Duration;

/// The VolumeAutoscaler controller: each autoscaler is read again every interval (usage has no
/// watch), at once when its StatefulSets or the VolumeResizes it made change.
pub fn run(
    client: &Client,
    scope: Option<&str>,
    interval: Duration,
    ctx: Arc<Context>,
) -> impl std::future::Future<Output = ()> + use<> {
    let autoscalers = scoped::<VolumeAutoscaler>(client, scope);
    let stateful_sets = scoped::<PartialObjectMeta<StatefulSet>>(client, scope);
    // Metadata only: the label it maps by is read even off a VolumeResize this Ferry cannot parse.
    let resizes = scoped::<PartialObjectMeta<VolumeResize>>(client, scope);
    let scaling = Arc::new(Autoscaling {
        ctx,
        summaries: Summaries::new(client.clone(), interval),
        interval,
    });
    let controller = controller(autoscalers, watcher::Config::default().any_semantic());
    let store = controller.store();
    controller
        .watches_stream(touched_metadata(stateful_sets), {
            let store = store.clone();
            move |sts: PartialObjectMeta<StatefulSet>| {
                let namespace = sts.namespace();
                let name = sts.name_any();
                store
                    .state()
                    .iter()
                    .filter(|vas| {
                        vas.namespace() == namespace
                            && vas
                                .spec
                                .stateful_set_name
                                .as_ref()
                                .is_none_or(|named| *named == name)
                    })
                    .map(|vas| ObjectRef::from_obj(vas.as_ref()))
                    .collect::<Vec<_>>()
            }
        })
        .watches_stream(touched_metadata(resizes), {
            let store = store.clone();
            move |resize: PartialObjectMeta<VolumeResize>| {
                let uid = resize.labels().get(LABEL_AUTOSCALER_UID).cloned();
                store
                    .state()
                    .iter()
                    .filter(|vas| uid.is_some() && vas.uid() == uid)
                    .map(|vas| ObjectRef::from_obj(vas.as_ref()))
                    .collect::<Vec<_>>()
            }
        })
        .shutdown_on_signal()
        .run(super::reconcile, super::error_policy, scaling)
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::debug!(%error, "VolumeAutoscaler: reconcile error (handled by the error policy)");
            }
        })
}
