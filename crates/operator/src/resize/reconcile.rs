//! One reconcile of a VolumeResize: observe → precheck (pure) → write status and Events.

use super::observe;
use crate::Error;
use crate::context::Context;
use crate::events::{Notice, publish};
use crate::metrics::{CategoryLabels, OutcomeLabels, ReasonLabels};
use ferry_api::names::FIELD_MANAGER;
use ferry_api::{Phase, VolumeResize, VolumeResizeStatus, condition::PRECHECKED};
use ferry_engine::{Verdict, precheck, status::after_precheck};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::{Api, Resource, ResourceExt};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often a waiting VolumeResize looks again (changes to its StatefulSet also wake it).
const WAIT_RECHECK: Duration = Duration::from_secs(10);

pub async fn reconcile(resize: Arc<VolumeResize>, ctx: Arc<Context>) -> Result<Action, Error> {
    let started = Instant::now();
    let result = reconcile_inner(&resize, &ctx).await;
    ctx.metrics
        .reconcile_duration
        .observe(started.elapsed().as_secs_f64());
    let outcome = if result.is_ok() { "ok" } else { "error" };
    ctx.metrics
        .reconciles
        .get_or_create(&OutcomeLabels {
            outcome: outcome.into(),
        })
        .inc();
    result
}

async fn reconcile_inner(resize: &VolumeResize, ctx: &Context) -> Result<Action, Error> {
    let namespace = resize.namespace().ok_or_else(|| Error::NotNamespaced {
        kind: "VolumeResize",
        name: resize.name_any(),
    })?;
    let generation = resize.metadata.generation;
    let previous = resize.status.as_ref();
    let current_generation = previous.and_then(|s| s.observed_generation) == generation;
    // Past its prechecks for this spec, a resize holds the StatefulSet; later steps take it from here.
    if current_generation && resize.phase() != Phase::Pending {
        return Ok(Action::await_change());
    }

    let observation = observe(ctx, resize, &namespace).await?;
    let check = precheck(&resize.spec, &observation.observed);
    let now = Time(k8s_openapi::jiff::Timestamp::now());
    let status = after_precheck(previous, &check, resize.spec.dry_run, generation, &now);

    if previous != Some(&status) {
        write_status(ctx, resize, &namespace, &status).await?;
        announce(ctx, resize, previous, &status, observation.stateful_set).await;
    }
    Ok(match check.verdict {
        Verdict::Wait { .. } => Action::requeue(WAIT_RECHECK),
        Verdict::Passed | Verdict::NothingToDo | Verdict::Reject { .. } => Action::await_change(),
    })
}

async fn write_status(
    ctx: &Context,
    resize: &VolumeResize,
    namespace: &str,
    status: &VolumeResizeStatus,
) -> Result<(), Error> {
    let api: Api<VolumeResize> = Api::namespaced(ctx.client.clone(), namespace);
    let patch = json!({
        "apiVersion": VolumeResize::api_version(&()),
        "kind": VolumeResize::kind(&()),
        "status": status,
    });
    api.patch_status(
        &resize.name_any(),
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&patch),
    )
    .await?;
    Ok(())
}

/// An Event on the VolumeResize, and on the StatefulSet when it exists, when the precheck verdict
/// changes (not on every reconcile).
async fn announce(
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
    publish(ctx, &notice, &objects).await;
}

/// Transient errors retry with a pause; permanent ones wait for the object to change. Either way the
/// error is logged and counted, never swallowed.
pub fn error_policy(resize: Arc<VolumeResize>, error: &Error, ctx: Arc<Context>) -> Action {
    tracing::warn!(name = %resize.name_any(), namespace = ?resize.namespace(), category = error.category(), %error, "reconcile failed");
    ctx.metrics
        .errors
        .get_or_create(&CategoryLabels {
            category: error.category().into(),
        })
        .inc();
    if error.is_permanent() {
        Action::await_change()
    } else {
        Action::requeue(Duration::from_secs(5))
    }
}
