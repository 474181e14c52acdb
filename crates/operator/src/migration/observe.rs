//! What a migration looks at, read fresh each pass: the StatefulSets its selector picks, every
//! claim of the namespace, the StorageClasses (which is the default, whether the target exists),
//! and the namespace's VolumeResizes (its own by their label; the others for the StatefulSets
//! they hold).

use crate::Error;
use crate::context::Context;
use ferry_api::names::LABEL_MIGRATION_UID;
use ferry_api::quantity::requested_storage;
use ferry_api::{VolumeMigration, VolumeResize, parse_bytes};
use ferry_engine::migration::{ClaimView, Observed, ResizeView, SetView, TemplateView};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::ListParams;
use kube::core::Selector;
use kube::{Api, ResourceExt};

pub async fn observe(
    ctx: &Context,
    migration: &VolumeMigration,
    namespace: &str,
    uid: &str,
) -> Result<Observed, Error> {
    let client = &ctx.client;
    let mut observed = Observed::default();
    let params = match migration.spec.selector.clone().map(Selector::try_from) {
        None => ListParams::default(),
        Some(Ok(selector)) => ListParams::default().labels_from(&selector),
        Some(Err(error)) => {
            observed.unreadable = Some(format!("spec.selector: {error}"));
            return Ok(observed);
        }
    };
    let sets = Api::<StatefulSet>::namespaced(client.clone(), namespace)
        .list(&params)
        .await?;
    observed.stateful_sets = sets.items.iter().map(set_view).collect();
    let claims = Api::<PersistentVolumeClaim>::namespaced(client.clone(), namespace)
        .list(&ListParams::default())
        .await?;
    observed.claims = claims.items.iter().map(claim_view).collect();
    let classes = Api::<StorageClass>::all(client.clone())
        .list(&ListParams::default())
        .await?;
    observed.default_class = ferry_engine::storage_classes::default_class(&classes.items);
    observed.target_class_exists =
        (classes.items.iter()).any(|c| c.name_any() == migration.spec.to_storage_class_name);
    let resizes = Api::<VolumeResize>::namespaced(client.clone(), namespace)
        .list(&ListParams::default())
        .await?;
    for resize in &resizes.items {
        if resize.labels().get(LABEL_MIGRATION_UID).map(String::as_str) == Some(uid) {
            observed.resizes.insert(resize.name_any(), resize_view(resize));
        } else if !resize
            .status
            .as_ref()
            .and_then(|s| s.phase)
            .is_some_and(|p| p.is_terminal())
        {
            observed
                .held_by_others
                .insert(resize.spec.stateful_set_name.clone(), resize.name_any());
        }
    }
    Ok(observed)
}

fn set_view(sts: &StatefulSet) -> SetView {
    let templates = sts.spec.as_ref().and_then(|s| s.volume_claim_templates.as_ref());
    let status = sts.status.as_ref();
    SetView {
        name: sts.name_any(),
        first_ordinal: ferry_engine::ordinals::first_ordinal(sts),
        replicas: sts.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1),
        ready_replicas: status.and_then(|s| s.ready_replicas).unwrap_or(0),
        templates: (templates.into_iter().flatten())
            .map(|t| TemplateView {
                name: t.name_any(),
                class: t.spec.as_ref().and_then(|s| s.storage_class_name.clone()),
                request_bytes: requested_storage(t.spec.as_ref())
                    .and_then(|q| parse_bytes(&q.0).ok())
                    .unwrap_or(0),
            })
            .collect(),
    }
}

fn claim_view(claim: &PersistentVolumeClaim) -> ClaimView {
    ClaimView {
        name: claim.name_any(),
        class: claim.spec.as_ref().and_then(|s| s.storage_class_name.clone()),
        bytes: ferry_api::quantity::claim_size_bytes(claim).unwrap_or(0),
    }
}

fn resize_view(resize: &VolumeResize) -> ResizeView {
    let status = resize.status.as_ref();
    let rows = status.map(|s| s.plan.as_slice()).unwrap_or_default();
    let copied: u64 = rows.iter().filter_map(|r| r.bytes_copied).sum();
    ResizeView {
        stateful_set: resize.spec.stateful_set_name.clone(),
        phase: status.and_then(|s| s.phase),
        message: status.and_then(|s| s.message.clone()),
        bytes_copied: (copied > 0).then_some(copied),
        max_downtime_milliseconds: (rows.iter())
            .filter_map(|r| r.downtime_milliseconds)
            .max()
            .and_then(|ms| u64::try_from(ms).ok()),
    }
}
