//! What the resize controller tells, after the status that is its record: Events on the
//! VolumeResize (and its StatefulSet), metrics, and a failed request's words in the status message.
//! Nothing here decides; the words of an action are the engine's (`ResizeAction::describe`).

use crate::context::Context;
use crate::events::{Notice, publish};
use crate::metrics::{OutcomeLabels, ReasonLabels, StepLabels};
use ferry_api::names::FIELD_MANAGER;
use ferry_api::{ChosenStrategy, Phase, VolumeResize, VolumeResizeStatus, condition::PRECHECKED};
use ferry_engine::resize::action::ResizeAction;
use ferry_engine::resize::run::Decision as RunDecision;
use ferry_engine::resize::step_timing::FinishedStep;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::{Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};
use serde_json::json;
use std::sync::Arc;

/// The objects a run's Events go on: the VolumeResize, and its StatefulSet while it exists.
pub(super) fn objects(resize: &VolumeResize, stateful_set: Option<&StatefulSet>) -> Vec<ObjectReference> {
    std::iter::once(resize.object_ref(&()))
        .chain(stateful_set.map(|sts| sts.object_ref(&())))
        .collect()
}

/// Metrics for what a status change finished: copied rows (bytes, downtime), steps and whole
/// resizes.
pub(super) fn count(
    ctx: &Context,
    before: &VolumeResizeStatus,
    after: &VolumeResizeStatus,
    finished_steps: Vec<FinishedStep>,
) {
    for row in &after.plan {
        let was_done = before
            .plan
            .iter()
            .any(|old| old.claim_name == row.claim_name && old.finished_at.is_some());
        if was_done || row.finished_at.is_none() || row.strategy != Some(ChosenStrategy::Copy) {
            continue;
        }
        ctx.metrics
            .copied_bytes
            .inc_by(row.bytes_copied.or(row.bytes_done).unwrap_or(0));
        let downtime = (row.downtime_milliseconds.map(|ms| ms as f64 / 1000.0))
            .or(row.downtime_seconds.map(|seconds| seconds as f64));
        if let Some(seconds) = downtime {
            ctx.metrics.replica_downtime.observe(seconds);
        }
    }
    if after.phase != before.phase
        && let Some(phase) = after.phase.filter(|p| p.is_terminal())
    {
        let outcome = if phase == Phase::Succeeded {
            "succeeded"
        } else {
            "failed"
        };
        ctx.metrics
            .resizes
            .get_or_create(&OutcomeLabels {
                outcome: outcome.into(),
            })
            .inc();
    }
    for step in finished_steps {
        let labels = StepLabels {
            step: step.step.as_str().to_string(),
        };
        ctx.metrics
            .step_duration
            .get_or_create(&labels)
            .observe(step.seconds);
    }
}

/// A run turned to rolling back: a Warning saying why.
pub(super) async fn rolling_back(ctx: &Context, decision: &RunDecision, objects: &[ObjectReference]) {
    let notice = Notice {
        warning: true,
        reason: "RollingBack",
        action: "Resize",
        note: decision.summary.clone(),
    };
    publish(&ctx.recorder, &notice, objects).await;
}

/// The actions carried out: one Event per kind of action, its note every action of that kind
/// (the recorder folds same-reason Events into one series anyway).
pub(super) async fn actions(ctx: &Context, actions: &[ResizeAction], objects: &[ObjectReference]) {
    let notices = action_notices(actions);
    futures::future::join_all(
        notices
            .iter()
            .map(|notice| publish(&ctx.recorder, notice, objects)),
    )
    .await;
}

fn action_notices(actions: &[ResizeAction]) -> Vec<Notice<'static>> {
    let mut notes: Vec<(&'static str, Vec<String>)> = Vec::new();
    for action in actions {
        match notes.iter_mut().find(|(reason, _)| *reason == action.reason()) {
            Some((_, lines)) => lines.push(action.describe()),
            None => notes.push((action.reason(), vec![action.describe()])),
        }
    }
    notes
        .into_iter()
        .map(|(reason, lines)| Notice {
            warning: false,
            reason,
            action: "Resize",
            note: lines.join("; "),
        })
        .collect()
}

/// A run ended: succeeded, or failed (rolled back).
pub(super) async fn ended(ctx: &Context, decision: &RunDecision, objects: &[ObjectReference]) {
    let failed = decision.status.phase == Some(Phase::Failed);
    let notice = Notice {
        warning: failed,
        reason: if failed { "RolledBack" } else { "Succeeded" },
        action: "Resize",
        note: decision.summary.clone(),
    };
    publish(&ctx.recorder, &notice, objects).await;
}

/// Retention is up: the old volumes `status` kept are released.
pub(super) async fn releasing(ctx: &Context, resize: &VolumeResize, status: &VolumeResizeStatus) {
    let note = format!(
        "retention is up: releasing old volumes {}",
        status.created_objects.retained_volumes.join(", ")
    );
    let notice = Notice {
        warning: false,
        reason: "ReleasingOldVolumes",
        action: "Retention",
        note,
    };
    publish(&ctx.recorder, &notice, &[resize.object_ref(&())]).await;
}

/// An Event on the VolumeResize, and on the StatefulSet when it exists, when the precheck verdict
/// changes (not on every reconcile).
pub(super) async fn announce(
    ctx: &Context,
    resize: &VolumeResize,
    previous: Option<&VolumeResizeStatus>,
    status: &VolumeResizeStatus,
    stateful_set: Option<ObjectReference>,
) {
    let verdict = |s: &VolumeResizeStatus| {
        s.conditions
            .iter()
            .find(|c| c.type_ == PRECHECKED)
            .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
    };
    let Some((state, reason, message)) = verdict(status) else {
        return;
    };
    if previous.and_then(verdict) == Some((state.clone(), reason.clone(), message.clone())) {
        return;
    }
    ctx.metrics
        .prechecks
        .get_or_create(&ReasonLabels {
            reason: reason.clone(),
        })
        .inc();
    let notice = Notice {
        warning: state != "True",
        reason: &reason,
        action: "Precheck",
        note: format!("VolumeResize {}: {message}", resize.name_any()),
    };
    let objects: Vec<ObjectReference> = std::iter::once(resize.object_ref(&()))
        .chain(stateful_set)
        .collect();
    publish(&ctx.recorder, &notice, &objects).await;
}

/// A Warning Event with `reason` on the VolumeResize and `note` in its status message.
pub(super) async fn failure(
    resize: Arc<VolumeResize>,
    ctx: Arc<Context>,
    reason: &'static str,
    note: String,
) {
    let notice = Notice {
        warning: true,
        reason,
        action: "Reconcile",
        note: note.clone(),
    };
    publish(&ctx.recorder, &notice, &[resize.object_ref(&())]).await;
    let Some(namespace) = resize.namespace() else {
        return;
    };
    let patch = json!({"status": {"message": note}});
    if let Err(error) = Api::<VolumeResize>::namespaced(ctx.client.clone(), &namespace)
        .patch_status(
            &resize.name_any(),
            &PatchParams::apply(FIELD_MANAGER),
            &Patch::Merge(&patch),
        )
        .await
    {
        tracing::warn!(%error, "could not report the failed request in the status");
    }
}
