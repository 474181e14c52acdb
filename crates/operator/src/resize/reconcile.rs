//! One reconcile of a VolumeResize, the pipeline only: guard → observe → plan → write the status
//! → apply → report. Each step is its module's (`guard`, `observe`, `status_write`, `apply`,
//! `report`, `finalizer`); what happens is the engine's decision alone.
//!
//! Status safety: this wing writes its intent first. The status (the plan and each row's step) is
//! written, as a compare-and-swap on the resourceVersion read, before any action: a crash after it
//! repeats only idempotent actions, and a reconcile that read a stale copy is refused before it
//! acts. The autoscaler and the ExtendedStatefulSet controller act first and write after (see
//! their reconciles): what they do is recorded by the objects they make (a VolumeResize's name, a
//! StatefulSet's spec), which the next pass reads back, so a lost status costs them nothing more.

use super::Resizing;
use super::apply::{apply, execute};
use super::finalizer::{has_finalizer, let_go, set_finalizer};
use super::guard::{Guarded, guard};
use super::hold::{self, Hold};
use super::observe::observe;
use super::refusals::REFUSED_RETRY_MAX;
use super::report;
use super::status_write::write_status;
use crate::Error;
use crate::context::Context;
use crate::events::publish;
use crate::metrics::{CategoryLabels, OutcomeLabels};
use ferry_api::names::ANNOTATION_ROLLBACK_REQUESTED;
use ferry_api::{Phase, VolumeResize};
use ferry_engine::resize::Verdict;
use ferry_engine::resize::plan::{Decision, Input, Prechecked, plan, scope};
use ferry_engine::resize::retention::RetentionDecision;
use ferry_engine::resize::route::Facts;
use ferry_engine::resize::run::Decision as RunDecision;
use ferry_engine::resize::step_timing::FinishedStep;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::runtime::controller::Action;
use kube::{Api, Resource, ResourceExt};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often a waiting VolumeResize looks again (changes to its StatefulSet also wake it).
const WAIT_RECHECK: Duration = Duration::from_secs(10);
/// How often a running resize looks at the claims and pods it waits for.
const RUN_RECHECK: Duration = Duration::from_secs(2);
/// How soon a reconcile that read a stale VolumeResize tries again (its watch event is on its way).
const STALE_RETRY: Duration = Duration::from_millis(200);

pub async fn reconcile(
    object: Arc<crate::resize_cache::GuardedResize>,
    ctx: Arc<Resizing>,
) -> Result<Action, Error> {
    let started = Instant::now();
    let result = match guard(&object) {
        // Written by another Ferry, or under an edited CRD: say so on it, touch nothing, and wait
        // for it to change (no requeue, so one Event per change, not a loop).
        Guarded::Unreadable(notice) => {
            tracing::warn!(name = %object.name_any(), namespace = ?object.namespace(), note = %notice.note, "VolumeResize cannot be read; left alone");
            publish(&ctx.recorder, &notice, &[object.object_ref(&())]).await;
            Ok(Action::await_change())
        }
        Guarded::Readable(resize) => match reconcile_inner(resize, &ctx).await {
            // Read from a cache that lagged behind the last status write: nothing was done (the
            // status is written before acting); decide again from the current object.
            Err(error) if error.is_stale_read() => {
                tracing::debug!(name = %resize.name_any(), "VolumeResize changed since it was read; reading it from the API server");
                again_from_the_api(resize, &ctx).await
            }
            other => other,
        },
    };
    ctx.metrics
        .reconcile_duration
        .observe(started.elapsed().as_secs_f64());
    if result.is_ok() {
        ctx.refusals.cleared(&key_of(&object));
    }
    let outcome = if result.is_ok() { "ok" } else { "error" };
    ctx.metrics
        .reconciles
        .get_or_create(&OutcomeLabels {
            outcome: outcome.into(),
        })
        .inc();
    result
}

/// The reconcile once more, with the VolumeResize read from the API server instead of the cache.
/// Waiting for the watch is not enough: after an API server restart the watches failed for about
/// 30 s ("too old resource version", the new watch cache younger than the version they resumed
/// from), and a copy stood still for all of it, rereading its stale copy. A second stale read, or
/// an object this Ferry cannot parse (the guarded cache reports it), waits for the watch.
async fn again_from_the_api(resize: &VolumeResize, ctx: &Resizing) -> Result<Action, Error> {
    let namespace = resize.namespace().unwrap_or_default();
    let api = Api::<VolumeResize>::namespaced(ctx.client.clone(), &namespace);
    let current = match api.get_opt(&resize.name_any()).await {
        Ok(Some(current)) => current,
        Ok(None) => return Ok(Action::await_change()),
        Err(kube::Error::SerdeError(_)) => return Ok(Action::requeue(STALE_RETRY)),
        Err(error) => return Err(error.into()),
    };
    match reconcile_inner(&current, ctx).await {
        Err(error) if error.is_stale_read() => Ok(Action::requeue(STALE_RETRY)),
        other => other,
    }
}

/// Guard → observe → plan → (per decision) write status → apply → report. What happens is the engine's decision
/// alone ([`ferry_engine::resize::plan`]); this only reads what it looks at and carries it out.
async fn reconcile_inner(resize: &VolumeResize, ctx: &Resizing) -> Result<Action, Error> {
    let namespace = resize.namespace().ok_or_else(|| Error::NotNamespaced {
        kind: "VolumeResize",
        name: resize.name_any(),
    })?;
    let name = resize.name_any();
    let uid = resize.uid().unwrap_or_default();
    let now = Time(k8s_openapi::jiff::Timestamp::now());
    let input = Input {
        facts: Facts {
            status: resize.status.as_ref(),
            generation: resize.metadata.generation,
            deleting: resize.metadata.deletion_timestamp.is_some(),
            has_finalizer: has_finalizer(resize),
            rollback_requested: resize
                .annotations()
                .get(ANNOTATION_ROLLBACK_REQUESTED)
                .is_some_and(|v| v == "true"),
        },
        spec: &resize.spec,
        name: &name,
        uid: &uid,
        now: &now,
        default_timeout_seconds: ctx.resize.default_timeout_seconds,
    };
    let observation = observe(ctx, resize, &namespace, scope(&input.facts)).await?;
    let stateful_set = observation.stateful_set;
    match plan(&input, observation.observed) {
        Decision::Prechecked(prechecked) => {
            on_prechecked(ctx, resize, &namespace, &input, prechecked, stateful_set).await
        }
        Decision::Run { step, finished_steps } => {
            on_run(ctx, resize, &namespace, step, finished_steps, stateful_set).await
        }
        Decision::Retention(decision) => on_retention(ctx, resize, &namespace, decision).await,
        Decision::LetGo => let_go(ctx, resize, &namespace).await,
        Decision::Idle => Ok(Action::await_change()),
    }
}

/// Prechecks decided: passing is not enough to start, the StatefulSet's hold must be this
/// resize's; then the status is written and a changed verdict announced.
async fn on_prechecked(
    ctx: &Context,
    resize: &VolumeResize,
    namespace: &str,
    input: &Input<'_>,
    mut prechecked: Prechecked,
    stateful_set: Option<StatefulSet>,
) -> Result<Action, Error> {
    if prechecked.needs_hold
        && let Hold::Theirs(holder) = hold::acquire(ctx, resize, namespace).await?
    {
        prechecked = prechecked.held_by(&holder, input);
    }
    let previous = resize.status.as_ref();
    if previous != Some(&prechecked.status) {
        write_status(ctx, resize, namespace, &prechecked.status).await?;
        let sts_ref = stateful_set.map(|sts| sts.object_ref(&()));
        report::announce(ctx, resize, previous, &prechecked.status, sts_ref).await;
    }
    Ok(match prechecked.check.verdict {
        Verdict::Wait { .. } => Action::requeue(WAIT_RECHECK),
        Verdict::Passed | Verdict::NothingToDo | Verdict::Reject { .. } => Action::await_change(),
    })
}

/// Old volumes kept after a copy are released to their provisioner when `retainOldVolumes` is up.
async fn on_retention(
    ctx: &Resizing,
    resize: &VolumeResize,
    namespace: &str,
    decision: RetentionDecision,
) -> Result<Action, Error> {
    let previous = resize.status.clone().unwrap_or_default();
    if decision.status != previous {
        write_status(ctx, resize, namespace, &decision.status).await?;
    }
    for action in &decision.actions {
        execute(ctx, resize, namespace, None, action).await?;
    }
    if !decision.actions.is_empty() {
        report::releasing(ctx, resize, &previous).await;
    }
    Ok(match decision.recheck_in {
        Some(seconds) => Action::requeue(Duration::from_secs(seconds.clamp(1, 3600) as u64)),
        None => Action::await_change(),
    })
}

/// One step of a run: status written first (a crash after it repeats only idempotent actions),
/// the finalizer before the first change, then the actions, then Events and metrics.
async fn on_run(
    ctx: &Resizing,
    resize: &VolumeResize,
    namespace: &str,
    decision: RunDecision,
    finished_steps: Vec<FinishedStep>,
    stateful_set: Option<StatefulSet>,
) -> Result<Action, Error> {
    let status = &resize.status.clone().unwrap_or_default();
    // The object as the finalizer patch must see it: after the status write, not before (else
    // that compare-and-swap fails with a conflict on every first action).
    let mut current = resize.clone();
    if &decision.status != status {
        current.metadata.resource_version = write_status(ctx, resize, namespace, &decision.status).await?;
        report::count(ctx, status, &decision.status, finished_steps);
    }
    let objects = report::objects(resize, stateful_set.as_ref());
    if decision.status.phase == Some(Phase::RollingBack) && status.phase != Some(Phase::RollingBack) {
        report::rolling_back(ctx, &decision, &objects).await;
    }
    // Before the first change to the cluster, make sure deletion waits for a safe point.
    if !decision.actions.is_empty() && !has_finalizer(resize) {
        set_finalizer(ctx, &current, namespace, true).await?;
    }
    apply(ctx, resize, namespace, stateful_set.as_ref(), &decision.actions).await?;
    report::actions(ctx, &decision.actions, &objects).await;
    if decision.status.phase.is_some_and(Phase::is_terminal) {
        hold::release(ctx, resize, namespace).await?;
        ctx.read_floors.forget(namespace, &resize.name_any());
        if status.phase != decision.status.phase {
            report::ended(ctx, &decision, &objects).await;
        }
        return Ok(Action::await_change());
    }
    Ok(Action::requeue(RUN_RECHECK))
}

/// Transient errors retry with a pause; permanent ones wait for the object to change. Either way the
/// error is logged and counted, never swallowed.
pub fn error_policy(
    object: Arc<crate::resize_cache::GuardedResize>,
    error: &Error,
    ctx: Arc<Resizing>,
) -> Action {
    tracing::warn!(name = %object.name_any(), namespace = ?object.namespace(), category = %error.category(), %error, "reconcile failed");
    ctx.metrics
        .errors
        .get_or_create(&CategoryLabels {
            category: error.category().into(),
        })
        .inc();
    if let Some(refusal) = error.refusal() {
        // The API server said no (Pod Security, a quota, RBAC, validation): retrying as fast as
        // for a passing fault only spams it; say so where the user looks, and retry slowly.
        let retry = ctx.refusals.refused(&key_of(&object));
        // The same words at every retry: a changed status would wake this resize at once.
        let note = format!(
            "the API server refused a request; retrying, backing off to every {} s: {refusal}",
            REFUSED_RETRY_MAX.as_secs()
        );
        // Only a readable VolumeResize is reconciled, so only one can have failed.
        if let Ok(resize) = &object.0 {
            tokio::spawn(report::failure(
                Arc::new(resize.clone()),
                ctx.shared.clone(),
                "RequestRefused",
                note,
            ));
        }
        return Action::requeue(retry);
    }
    if error.is_permanent() {
        return Action::await_change();
    }
    if let Some(fault) = error.transient_fault()
        && let Ok(resize) = &object.0
    {
        // Not fatal: nothing was done past the status written before the action, which is
        // repeated as it is. The user sees why the resize stands still.
        let note = format!(
            "a request failed on the API server's side; retrying every {} s: {fault}",
            TRANSIENT_RETRY.as_secs()
        );
        tokio::spawn(report::failure(
            Arc::new(resize.clone()),
            ctx.shared.clone(),
            "RetryingAfterError",
            note,
        ));
    }
    Action::requeue(TRANSIENT_RETRY)
}

/// How soon a reconcile that failed on a passing fault (a 5xx, a lost connection) tries again.
const TRANSIENT_RETRY: Duration = Duration::from_secs(5);

/// `namespace/name` of a VolumeResize as the watch delivered it.
fn key_of(object: &crate::resize_cache::GuardedResize) -> String {
    format!("{}/{}", object.namespace().unwrap_or_default(), object.name_any())
}

#[cfg(test)]
#[path = "write_order_tests.rs"]
mod write_order_tests;
