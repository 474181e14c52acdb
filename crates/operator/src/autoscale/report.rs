//! What the autoscaler tells: its status (which remembers the grows, so it is written before the
//! Events), the Events, the metrics and the log.

use crate::Error;
use crate::context::Context;
use crate::events::{self, Notice};
use crate::metrics::{ReasonLabels, VolumeLabels};
use ferry_api::VolumeAutoscaler;
use ferry_api::names::FIELD_MANAGER;
use ferry_engine::autoscale::Reason;
use ferry_engine::autoscale::plan::{Decision, Observation, Outcome};
use ferry_engine::autoscale::record;
use kube::api::{Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};

pub async fn write_status(
    ctx: &Context,
    autoscaler: &VolumeAutoscaler,
    namespace: &str,
    decision: &Decision,
    now: i64,
) -> Result<(), Error> {
    let status = record::overall(
        autoscaler.status.as_ref(),
        decision.volumes.clone(),
        &decision.shrink_recommended,
        autoscaler.metadata.generation,
        now,
    );
    let patch = serde_json::json!({
        "apiVersion": "ferry.dev/v1alpha1",
        "kind": "VolumeAutoscaler",
        "status": status,
    });
    Api::<VolumeAutoscaler>::namespaced(ctx.client.clone(), namespace)
        .patch_status(
            &autoscaler.name_any(),
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&patch),
        )
        .await?;
    Ok(())
}

/// Each notice as an Event on the autoscaler and the StatefulSet it is about.
pub async fn publish(
    ctx: &Context,
    autoscaler: &VolumeAutoscaler,
    observation: &Observation,
    decision: &Decision,
) {
    let own = autoscaler.object_ref(&());
    let sets = observation.stateful_sets.as_deref().unwrap_or_default();
    for (notice, stateful_set) in &decision.notices {
        let mut objects = vec![own.clone()];
        let about = sets
            .iter()
            .find(|set| set.object.metadata.name.as_ref() == stateful_set.as_ref());
        objects.extend(about.map(|set| set.object.object_ref(&())));
        let event = Notice {
            warning: notice.warning,
            reason: notice.reason,
            action: "Autoscale",
            note: notice.message.clone(),
        };
        events::publish(&ctx.recorder, &event, &objects).await;
    }
}

/// The fullest replica's share per volume, the grows by reason and the skips by why; each grow
/// in the log.
pub fn count(ctx: &Context, autoscaler: &VolumeAutoscaler, namespace: &str, decision: &Decision) {
    let metrics = &ctx.metrics;
    for judged in &decision.judged {
        if let Some(ratio) = judged.fullest {
            let labels = VolumeLabels {
                namespace: namespace.to_string(),
                autoscaler: autoscaler.name_any(),
                stateful_set: judged.stateful_set.clone(),
                volume: judged.volume.clone(),
            };
            metrics.autoscale_usage_ratio.get_or_create(&labels).set(ratio);
        }
        let (sts, volume) = (&judged.stateful_set, &judged.volume);
        match &judged.outcome {
            Outcome::Resized {
                resize,
                reason,
                replicas,
            } => {
                if *reason == Reason::Shrink {
                    tracing::info!(stateful_set = %sts, %volume, ?replicas, %resize, "autoscale: shrinking by copy");
                } else if *reason == Reason::Rescue {
                    tracing::warn!(stateful_set = %sts, %volume, ?replicas, %resize,
                        "rescue: growing a full volume of a crashing replica; the Ready gate does not apply to this resize");
                } else {
                    tracing::info!(stateful_set = %sts, %volume, ?replicas, %resize, reason = reason.label(), "autoscale: growing");
                }
                let labels = ReasonLabels {
                    reason: reason.label().to_string(),
                };
                metrics.autoscale_resizes.get_or_create(&labels).inc();
            }
            Outcome::Skipped(why) => {
                let labels = ReasonLabels {
                    reason: why.to_string(),
                };
                metrics.autoscale_skipped.get_or_create(&labels).inc();
            }
        }
    }
}
