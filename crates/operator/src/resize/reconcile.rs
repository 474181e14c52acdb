//! One reconcile of a VolumeResize: observe → precheck (pure) → write status and Events.

use super::Resizing;
use super::execute::execute;
use super::hold::{self, Hold};
use super::observe::observe;
use super::refusals::REFUSED_RETRY_MAX;
use super::run_observe::claimed_in;
use super::status_write::write_status;
use crate::Error;
use crate::context::Context;
use crate::events::{Notice, publish};
use crate::metrics::{CategoryLabels, OutcomeLabels, ReasonLabels, StepLabels};
use ferry_api::ChosenStrategy;
use ferry_api::names::FIELD_MANAGER;
use ferry_api::names::FINALIZER;
use ferry_api::names::{ANNOTATION_RETAINED_FROM, ANNOTATION_ROLLBACK_REQUESTED, LABEL_RETAINED};
use ferry_api::quantity::format_bytes;
use ferry_api::{Phase, VolumeResize, VolumeResizeStatus, condition::PRECHECKED};
use ferry_engine::resize::Verdict;
use ferry_engine::resize::action::{ResizeAction, waves};
use ferry_engine::resize::plan::{Decision, Input, Prechecked, plan, scope};
use ferry_engine::resize::retention::RetentionDecision;
use ferry_engine::resize::route::Facts;
use ferry_engine::resize::run::Decision as RunDecision;
use ferry_engine::resize::step_timing::FinishedStep;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::core::v1::PersistentVolume;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::{Api, Resource, ResourceExt};
use serde_json::json;
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
    let result = match super::intake::intake(&object) {
        // Written by another Ferry, or under an edited CRD: say so on it, touch nothing, and wait
        // for it to change (no requeue, so one Event per change, not a loop).
        super::intake::Intake::Unreadable(notice) => {
            tracing::warn!(name = %object.name_any(), namespace = ?object.namespace(), note = %notice.note, "VolumeResize cannot be read; left alone");
            publish(&ctx.recorder, &notice, &[object.object_ref(&())]).await;
            Ok(Action::await_change())
        }
        super::intake::Intake::Readable(resize) => match reconcile_inner(resize, &ctx).await {
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

/// Guard → observe → plan → write status → act → report. What happens is the engine's decision
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
    };
    let observation = observe(ctx, resize, &namespace, scope(&input.facts)).await?;
    let stateful_set = observation.stateful_set;
    match plan(&input, observation.observed) {
        Decision::Prechecked(prechecked) => {
            apply_precheck(ctx, resize, &namespace, &input, prechecked, stateful_set).await
        }
        Decision::Run { step, finished_steps } => {
            apply_run(ctx, resize, &namespace, step, finished_steps, stateful_set).await
        }
        Decision::Retention(decision) => apply_retention(ctx, resize, &namespace, decision).await,
        Decision::LetGo => let_go(ctx, resize, &namespace).await,
        Decision::Idle => Ok(Action::await_change()),
    }
}

/// Prechecks decided: passing is not enough to start, the StatefulSet's hold must be this
/// resize's; then the status is written and a changed verdict announced.
async fn apply_precheck(
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
        announce(ctx, resize, previous, &prechecked.status, sts_ref).await;
    }
    Ok(match prechecked.check.verdict {
        Verdict::Wait { .. } => Action::requeue(WAIT_RECHECK),
        Verdict::Passed | Verdict::NothingToDo | Verdict::Reject { .. } => Action::await_change(),
    })
}

/// Old volumes kept after a copy are released to their provisioner when `retainOldVolumes` is up.
async fn apply_retention(
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
        let note = format!(
            "retention is up: releasing old volumes {}",
            previous.created_objects.retained_volumes.join(", ")
        );
        let notice = Notice {
            warning: false,
            reason: "ReleasingOldVolumes",
            action: "Retention",
            note,
        };
        publish(&ctx.recorder, &notice, &[resize.object_ref(&())]).await;
    }
    Ok(match decision.recheck_in {
        Some(seconds) => Action::requeue(Duration::from_secs(seconds.clamp(1, 3600) as u64)),
        None => Action::await_change(),
    })
}

/// Metrics for what a status change finished: copied rows (bytes, downtime) and whole resizes.
fn count_progress(ctx: &Context, before: &VolumeResizeStatus, after: &VolumeResizeStatus) {
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
}

fn has_finalizer(resize: &VolumeResize) -> bool {
    resize.finalizers().iter().any(|f| f == FINALIZER)
}

async fn set_finalizer(
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
async fn let_go(ctx: &Resizing, resize: &VolumeResize, namespace: &str) -> Result<Action, Error> {
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

/// One step of a run: status written first (a crash after it repeats only idempotent actions),
/// the finalizer before the first change, then the actions, then Events and metrics.
async fn apply_run(
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
        count_progress(ctx, status, &decision.status);
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
    let objects: Vec<ObjectReference> = std::iter::once(resize.object_ref(&()))
        .chain(stateful_set.as_ref().map(|sts| sts.object_ref(&())))
        .collect();
    if decision.status.phase == Some(Phase::RollingBack) && status.phase != Some(Phase::RollingBack) {
        let notice = Notice {
            warning: true,
            reason: "RollingBack",
            action: "Resize",
            note: decision.summary.clone(),
        };
        publish(&ctx.recorder, &notice, &objects).await;
    }
    // Before the first change to the cluster, make sure deletion waits for a safe point.
    if !decision.actions.is_empty() && !has_finalizer(resize) {
        set_finalizer(ctx, &current, namespace, true).await?;
    }
    // In order; within a wave side by side (a swap's two claim deletes: one round trip, not two).
    for wave in waves(&decision.actions) {
        for action in wave {
            tracing::info!(name = %resize.name_any(), namespace, reason = action_reason(action), "{}", describe(action));
        }
        futures::future::try_join_all(
            wave.iter()
                .map(|action| execute(ctx, resize, namespace, stateful_set.as_ref(), action)),
        )
        .await?;
    }
    let notices = action_notices(&decision.actions);
    futures::future::join_all(
        notices
            .iter()
            .map(|notice| publish(&ctx.recorder, notice, &objects)),
    )
    .await;
    if decision.status.phase.is_some_and(Phase::is_terminal) {
        hold::release(ctx, resize, namespace).await?;
        ctx.read_floors.forget(namespace, &resize.name_any());
        if status.phase != decision.status.phase {
            let failed = decision.status.phase == Some(Phase::Failed);
            let notice = Notice {
                warning: failed,
                reason: if failed { "RolledBack" } else { "Succeeded" },
                action: "Resize",
                note: decision.summary.clone(),
            };
            publish(&ctx.recorder, &notice, &objects).await;
        }
        return Ok(Action::await_change());
    }
    Ok(Action::requeue(RUN_RECHECK))
}

/// One Event per kind of action, its note every action of that kind (the recorder folds
/// same-reason Events into one series anyway).
fn action_notices(actions: &[ResizeAction]) -> Vec<Notice<'static>> {
    let mut notes: Vec<(&'static str, Vec<String>)> = Vec::new();
    for action in actions {
        match notes
            .iter_mut()
            .find(|(reason, _)| *reason == action_reason(action))
        {
            Some((_, lines)) => lines.push(describe(action)),
            None => notes.push((action_reason(action), vec![describe(action)])),
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

fn action_reason(action: &ResizeAction) -> &'static str {
    match action {
        ResizeAction::BackupStatefulSet => "BackedUp",
        ResizeAction::ExpandClaim { .. } => "ExpandingVolume",
        ResizeAction::ModifyClaim { .. } => "ModifyingVolume",
        ResizeAction::EvictPod { .. } => "RestartingPod",
        ResizeAction::OrphanDeleteStatefulSet => "ReplacingStatefulSet",
        ResizeAction::RecreateStatefulSet => "RecreatingStatefulSet",
        ResizeAction::RestoreStatefulSet => "RestoringStatefulSet",
        ResizeAction::CreateTargetClaim { .. } => "CreatingVolume",
        ResizeAction::StartMover { .. } => "Copying",
        ResizeAction::MeasureUsage { .. } => "MeasuringUsage",
        ResizeAction::DeleteMover { .. } => "MoverRemoved",
        ResizeAction::StartFinalPass { .. } => "FinalSync",
        ResizeAction::SetReclaimPolicy { .. } => "ReclaimPolicySet",
        ResizeAction::DeleteClaim { .. } => "SwappingVolume",
        ResizeAction::ReserveVolume { .. } => "SwappingVolume",
        ResizeAction::BindClaim { .. } => "SwappingVolume",
        ResizeAction::NudgeClaim { .. } => "SwappingVolume",
    }
}

fn describe(action: &ResizeAction) -> String {
    match action {
        ResizeAction::BackupStatefulSet => "backed up the StatefulSet spec".into(),
        ResizeAction::ExpandClaim { claim, bytes } => {
            format!("requested {} for PVC {claim}", format_bytes(*bytes))
        }
        ResizeAction::ModifyClaim { claim, class } => match class {
            Some(class) => format!("setting VolumeAttributesClass {class} on PVC {claim}"),
            None => format!("taking back the VolumeAttributesClass of PVC {claim}, which never applied"),
        },
        ResizeAction::EvictPod { pod, .. } => {
            format!("deleting pod {pod}; it comes back on its resized or new volume")
        }
        ResizeAction::OrphanDeleteStatefulSet => {
            "deleting the StatefulSet with orphan propagation; pods keep running".into()
        }
        ResizeAction::RecreateStatefulSet => {
            "re-creating the StatefulSet with the new volume claim template".into()
        }
        ResizeAction::RestoreStatefulSet => "restoring the StatefulSet from its backup".into(),
        ResizeAction::CreateTargetClaim {
            claim,
            bytes,
            storage_class,
            clone_of,
            ..
        } => format!(
            "creating PVC {claim} ({}, StorageClass {}){}",
            format_bytes(*bytes),
            storage_class.as_deref().unwrap_or("default"),
            clone_of
                .as_ref()
                .map(|source| format!(" as a clone of {source}"))
                .unwrap_or_default()
        ),
        ResizeAction::StartMover {
            pod,
            source,
            target,
            pass,
            ..
        } => {
            format!("{pass:?} copy of PVC {source} to {target} in mover pod {pod}")
        }
        ResizeAction::MeasureUsage { pod, claim } => {
            format!("measuring the data in use on PVC {claim} in pod {pod}")
        }
        ResizeAction::DeleteMover { pod, .. } => format!("removed mover pod {pod}"),
        ResizeAction::StartFinalPass { pod, .. } => {
            format!("the replica's pod is gone: final pass of mover pod {pod} begins")
        }
        ResizeAction::SetReclaimPolicy { volume, policy, .. } => {
            format!("PV {volume}: reclaim policy {policy}")
        }
        ResizeAction::DeleteClaim { claim, .. } => format!("deleting PVC {claim} (its PV is retained)"),
        ResizeAction::ReserveVolume { volume, claim, .. } => format!("reserving PV {volume} for PVC {claim}"),
        ResizeAction::NudgeClaim { claim, .. } => {
            format!("PVC {claim} is still not bound; asking the PV controller to look at it again")
        }
        ResizeAction::BindClaim { claim, volume, .. } => {
            format!("re-creating PVC {claim} bound to PV {volume}")
        }
    }
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
    publish(&ctx.recorder, &notice, &objects).await;
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
            tokio::spawn(report(
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
        tokio::spawn(report(
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

/// A Warning Event with `reason` on the VolumeResize and `note` in its status message.
async fn report(resize: Arc<VolumeResize>, ctx: Arc<Context>, reason: &'static str, note: String) {
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

#[cfg(test)]
#[path = "write_order_tests.rs"]
mod write_order_tests;
