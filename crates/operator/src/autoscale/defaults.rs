//! The seed operator's `resize-statefulset-operator/auto-scaled: "true"`: the StatefulSet gets a
//! default `VolumeAutoscaler` (`<sts>-auto-scaled`, see `ferry_engine::autoscale::seed`), owned by
//! it, with an Event naming it. Made once: edits to it are the user's and are kept. Any other value
//! of the annotation removes it.

use crate::context::Context;
use crate::events::{self, Notice};
use crate::{Error, writes};
use ferry_api::VolumeAutoscaler;
use ferry_api::names::{
    LABEL_DEFAULT_AUTOSCALER_FOR, LABEL_MANAGED_BY, MANAGED_BY_VALUE, SEED_ANNOTATION_AUTO_SCALED,
};
use ferry_engine::autoscale::seed::{default_autoscaler_name, default_spec, opted_in};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{DeleteParams, Patch};
use kube::{Api, Resource, ResourceExt};

fn owner(sts: &StatefulSet) -> Option<OwnerReference> {
    Some(OwnerReference {
        api_version: "apps/v1".to_string(),
        kind: "StatefulSet".to_string(),
        name: sts.name_any(),
        uid: sts.uid()?,
        controller: Some(false),
        block_owner_deletion: Some(false),
    })
}

/// Brings the default autoscaler of `sts` in line with its seed annotation (if it has one).
pub async fn reconcile(ctx: &Context, sts: &StatefulSet, namespace: &str) -> Result<(), Error> {
    let Some(value) = sts.annotations().get(SEED_ANNOTATION_AUTO_SCALED) else {
        return Ok(());
    };
    let sts_name = sts.name_any();
    let name = default_autoscaler_name(&sts_name);
    let api = Api::<VolumeAutoscaler>::namespaced(ctx.client.clone(), namespace);
    let existing = api.get_opt(&name).await?;
    let ours = existing.as_ref().is_some_and(|vas| {
        vas.labels().get(LABEL_DEFAULT_AUTOSCALER_FOR).map(String::as_str) == Some(sts_name.as_str())
    });
    if !opted_in(value) {
        if ours {
            api.delete(&name, &DeleteParams::default()).await?;
            tracing::info!(stateful_set = %sts_name, autoscaler = %name, "default autoscaler removed (seed annotation not \"true\")");
        }
        return Ok(());
    }
    let reference = sts.object_ref(&());
    match existing {
        // Ferry re-creates a StatefulSet it resizes (a new UID): the autoscaler follows it.
        Some(vas) if ours => {
            let uid = sts.uid();
            let owned = vas
                .owner_references()
                .iter()
                .any(|owner| Some(&owner.uid) == uid.as_ref());
            if !owned && let Some(owner) = owner(sts) {
                let patch = serde_json::json!({"metadata": {"ownerReferences": [owner]}});
                api.patch(&name, &writes::patch(), &Patch::Merge(&patch)).await?;
            }
        }
        // A VolumeAutoscaler of the user's under that name: theirs wins.
        Some(_) => {}
        None => create_default(ctx, sts, &api, &name, &reference).await?,
    }
    Ok(())
}

/// The default autoscaler the seed annotation stands for, made (and told of), or why not (an
/// Event; nothing made).
async fn create_default(
    ctx: &Context,
    sts: &StatefulSet,
    api: &Api<VolumeAutoscaler>,
    name: &str,
    reference: &ObjectReference,
) -> Result<(), Error> {
    let sts_name = sts.name_any();
    let namespace = sts.namespace();
    let spec = match default_spec(sts) {
        Ok(spec) => spec,
        Err(message) => {
            let notice = Notice {
                warning: true,
                reason: "DefaultAutoscalerInvalid",
                action: "Autoscale",
                note: format!("{SEED_ANNOTATION_AUTO_SCALED}: {message}"),
            };
            events::publish(&ctx.recorder, &notice, std::slice::from_ref(reference)).await;
            return Ok(());
        }
    };
    let max_sizes: Vec<String> = spec
        .volumes
        .iter()
        .map(|volume| format!("{} up to {}", volume.name, volume.max_size))
        .collect();
    let mut vas = VolumeAutoscaler::new(name, spec);
    vas.metadata.namespace = namespace;
    vas.metadata.labels = Some(
        [
            (LABEL_DEFAULT_AUTOSCALER_FOR.to_string(), sts_name.clone()),
            (LABEL_MANAGED_BY.to_string(), MANAGED_BY_VALUE.to_string()),
        ]
        .into(),
    );
    vas.metadata.owner_references = owner(sts).map(|owner| vec![owner]);
    match api.create(&writes::create(), &vas).await {
        Ok(_) => {
            let notice = Notice {
                warning: false,
                reason: "DefaultAutoscaler",
                action: "Autoscale",
                note: format!(
                    "{SEED_ANNOTATION_AUTO_SCALED}: \"true\" stands for VolumeAutoscaler {name} (threshold 80%, +20%, cooldown 1h; {}); edit it to change the policy",
                    max_sizes.join(", ")
                ),
            };
            events::publish(&ctx.recorder, &notice, std::slice::from_ref(reference)).await;
        }
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        Err(error) => return Err(error.into()),
    }
    Ok(())
}
