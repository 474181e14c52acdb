//! The autoscaler plan's actions, carried out: each grow becomes an ordinary VolumeResize.

use crate::Error;
use crate::context::Context;
use crate::resize_create::{Origin, create_resize};
use ferry_api::VolumeAutoscaler;
use ferry_api::names::LABEL_AUTOSCALER_UID;
use ferry_engine::autoscale::plan::AutoscaleAction;
use ferry_engine::autoscale::situation::TRIGGER_AUTOSCALE;
use kube::ResourceExt;

pub async fn apply(
    ctx: &Context,
    autoscaler: &VolumeAutoscaler,
    namespace: &str,
    actions: &[AutoscaleAction],
) -> Result<(), Error> {
    let uid = autoscaler.uid().unwrap_or_default();
    for action in actions {
        match action {
            // One already there under the same name is this same grow.
            AutoscaleAction::CreateVolumeResize {
                stateful_set,
                name,
                spec,
            } => {
                let origin = Origin {
                    trigger: TRIGGER_AUTOSCALE,
                    stateful_set,
                    asked_by: Some((LABEL_AUTOSCALER_UID, &uid)),
                };
                create_resize(&ctx.client, namespace, name, spec.as_ref().clone(), &origin).await?;
            }
        }
    }
    Ok(())
}
