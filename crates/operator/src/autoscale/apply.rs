//! The autoscaler plan's actions, carried out: each grow becomes an ordinary VolumeResize; a
//! rescue's measurement is a read-only usage pod on the crashing replica's node.

use crate::Error;
use crate::context::Context;
use crate::resize::apply::objects::{self, Owner};
use crate::resize::limits::quota_resources;
use crate::resize_create::{Origin, create_resize};
use crate::writes::{ignore_conflict, ignore_gone};
use ferry_api::names::LABEL_AUTOSCALER_UID;
use ferry_api::{MoverSettings, VolumeAutoscaler};
use ferry_engine::autoscale::plan::AutoscaleAction;
use ferry_engine::autoscale::situation::TRIGGER_AUTOSCALE;
use k8s_openapi::api::core::v1::{Pod, Toleration};
use kube::api::DeleteParams;
use kube::{Api, ResourceExt};

pub async fn apply(
    ctx: &Context,
    autoscaler: &VolumeAutoscaler,
    namespace: &str,
    actions: &[AutoscaleAction],
) -> Result<(), Error> {
    let uid = autoscaler.uid().unwrap_or_default();
    let pods = Api::<Pod>::namespaced(ctx.client.clone(), namespace);
    for action in actions {
        match action {
            // One already there under the same name is this same grow.
            AutoscaleAction::CreateVolumeResize {
                stateful_set,
                name,
                spec,
                annotations,
            } => {
                let origin = Origin {
                    trigger: TRIGGER_AUTOSCALE,
                    stateful_set,
                    asked_by: Some((LABEL_AUTOSCALER_UID, &uid)),
                    annotations: annotations.clone(),
                };
                create_resize(&ctx.client, namespace, name, spec.as_ref().clone(), &origin).await?;
            }
            AutoscaleAction::MeasureVolume {
                pod,
                claim,
                node,
                tolerations,
                run_as,
            } => {
                let placement = placement(ctx, namespace, tolerations, run_as.as_ref()).await?;
                let mut measure =
                    objects::usage_pod(&Owner::of_autoscaler(autoscaler), pod, &placement, claim);
                // Beside the crashing replica: its volume is attached to that node.
                if let Some(spec) = measure.spec.as_mut() {
                    spec.node_name = Some(node.clone());
                }
                ignore_conflict(pods.create(&crate::writes::create(), &measure).await)?;
            }
            AutoscaleAction::DeleteMeasurement { pod } => {
                ignore_gone(pods.delete(pod, &DeleteParams::default()).await.map(|_| ()))?;
            }
        }
    }
    Ok(())
}

/// A usage pod's image, tolerations and resources: the operator's mover defaults, with what the
/// namespace's quotas make every pod declare; where Pod Security `restricted` admits no root pod,
/// run as the StatefulSet's own user (`run_as`), as the resize's pods are.
async fn placement(
    ctx: &Context,
    namespace: &str,
    tolerations: &[Toleration],
    run_as: Option<&ferry_engine::pods::RunAs>,
) -> Result<objects::Placement, Error> {
    let constrained = quota_resources(&ctx.client, namespace).await?;
    let mut placement = objects::placement(
        &MoverSettings::default(),
        &ctx.resize.mover_image,
        tolerations.to_vec(),
        &ctx.resize.mover_image_pull_secrets,
        objects::quota_resources::filled_for_quotas(ctx.resize.mover_resources.clone(), &constrained),
    );
    placement.run_as =
        crate::resize::limits::run_as_where_restricted(&ctx.client, namespace, run_as.cloned()).await?;
    Ok(placement)
}
