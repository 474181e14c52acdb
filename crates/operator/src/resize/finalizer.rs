//! The resize's finalizer: its safe-point stop. Deletion waits on it once a run changes the
//! cluster; a deleted resize lets go only at a safe point (the engine's `Decision::LetGo`), handing
//! over what it retained. Custom, not kube's `finalizer()` helper: the stop is part of the plan.

use super::Resizing;
use super::hold;
use super::observe::claimed_in;
use crate::Error;
use crate::context::Context;
use crate::events::{Notice, publish};
use ferry_api::VolumeResize;
use ferry_api::names::{ANNOTATION_RETAINED_FROM, FINALIZER, LABEL_RETAINED};
use k8s_openapi::api::core::v1::PersistentVolume;
use kube::api::Patch;
use kube::runtime::controller::Action;
use kube::{Api, Resource, ResourceExt};
use serde_json::json;

pub(super) fn has_finalizer(resize: &VolumeResize) -> bool {
    resize.finalizers().iter().any(|f| f == FINALIZER)
}

pub(super) async fn set_finalizer(
    ctx: &Context,
    resize: &VolumeResize,
    namespace: &str,
    present: bool,
) -> Result<(), Error> {
    let mut finalizers: Vec<String> = resize
        .finalizers()
        .iter()
        .filter(|f| *f != FINALIZER)
        .cloned()
        .collect();
    if present {
        finalizers.push(FINALIZER.to_string());
    }
    // The resourceVersion makes this a compare-and-swap: never drop someone else's finalizer.
    let patch = json!({"metadata": {"finalizers": finalizers, "resourceVersion": resize.resource_version()}});
    Api::<VolumeResize>::namespaced(ctx.client.clone(), namespace)
        .patch(&resize.name_any(), &crate::writes::patch(), &Patch::Merge(patch))
        .await?;
    Ok(())
}

/// A deleted VolumeResize at a safe point (a replica entirely on its new volume or entirely back on
/// its old one, the StatefulSet present) lets go: what it retained is handed over, its hold and
/// its finalizer go.
pub(super) async fn let_go(ctx: &Resizing, resize: &VolumeResize, namespace: &str) -> Result<Action, Error> {
    hand_over_retained(ctx, resize, namespace).await?;
    hold::release(ctx, resize, namespace).await?;
    ctx.read_floors.forget(namespace, &resize.name_any());
    set_finalizer(ctx, resize, namespace, false).await?;
    Ok(Action::await_change())
}

/// A deleted resize no longer expires the old volumes it retained: they stay (Retain: nothing is
/// lost), labelled so they can be found, and an Event names them.
async fn hand_over_retained(ctx: &Context, resize: &VolumeResize, namespace: &str) -> Result<(), Error> {
    let retained = resize
        .status
        .as_ref()
        .map(|s| s.created_objects.retained_volumes.clone())
        .unwrap_or_default();
    let volumes = Api::<PersistentVolume>::all(ctx.client.clone());
    let mut kept = Vec::new();
    for name in retained {
        let Some(volume) = volumes.get_opt(&name).await? else {
            continue;
        };
        if !claimed_in(&volume, namespace) {
            continue;
        }
        let from = format!("{namespace}/{}", resize.name_any());
        let patch = crate::writes::with_uid_precondition(
            json!({"metadata": {
                "labels": {LABEL_RETAINED: "true"},
                "annotations": {ANNOTATION_RETAINED_FROM: from},
            }}),
            volume.uid().as_deref(),
        );
        volumes
            .patch(&name, &crate::writes::patch(), &Patch::Merge(patch))
            .await?;
        kept.push(name);
    }
    if !kept.is_empty() {
        let notice = Notice {
            warning: false,
            reason: "OldVolumesKept",
            action: "Delete",
            note: format!(
                "deleted before its retention was up: old volumes {} stay (reclaim policy Retain, label {LABEL_RETAINED}=true); delete them once they are no longer needed",
                kept.join(", ")
            ),
        };
        publish(&ctx.recorder, &notice, &[resize.object_ref(&())]).await;
    }
    Ok(())
}
