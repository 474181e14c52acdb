//! The trigger decision carried out, and told.

use crate::context::Context;
use crate::events::{self, Notice};
use crate::{Error, writes};
use ferry_engine::trigger::Decision;
use k8s_openapi::api::apps::v1::StatefulSet;
use kube::api::Patch;
use kube::{Api, Resource, ResourceExt};

/// The StatefulSet's annotations first (refused with 409 if it changed since it was read: decide
/// again), then the VolumeResize.
pub async fn apply(
    ctx: &Context,
    sts: &StatefulSet,
    namespace: &str,
    decision: &Decision,
) -> Result<(), Error> {
    let name = sts.name_any();
    let stateful_sets = Api::<StatefulSet>::namespaced(ctx.client.clone(), namespace);
    if !decision.annotations.is_empty() {
        // Refused (409) if the StatefulSet changed since it was read: decide again.
        let patch = writes::with_uid_precondition(
            serde_json::json!({
                "metadata": {
                    "resourceVersion": sts.resource_version(),
                    "annotations": decision.annotations,
                },
            }),
            sts.uid().as_deref(),
        );
        stateful_sets
            .patch(&name, &writes::patch(), &Patch::Merge(&patch))
            .await?;
    }
    if let Some(create) = &decision.create {
        let origin = crate::resize_create::Origin {
            trigger: create.trigger,
            stateful_set: &name,
            asked_by: None,
            annotations: Default::default(),
        };
        // One already there is the same request, made by an earlier pass that did not record it.
        if crate::resize_create::create_resize(
            &ctx.client,
            namespace,
            &create.name,
            create.spec.clone(),
            &origin,
        )
        .await?
            == crate::resize_create::Created::New
        {
            tracing::info!(stateful_set = %name, resize = %create.name, trigger = create.trigger, "VolumeResize created for a request");
        }
    }
    Ok(())
}

/// The decision's notices as Events on the StatefulSet, once what they tell of is written.
pub async fn publish(ctx: &Context, sts: &StatefulSet, decision: &Decision) {
    let reference = sts.object_ref(&());
    for notice in &decision.notices {
        events::publish(
            &ctx.recorder,
            &Notice {
                warning: notice.warning,
                reason: notice.reason,
                action: "Resize",
                note: notice.message.clone(),
            },
            std::slice::from_ref(&reference),
        )
        .await;
    }
}
