//! The owner's steps around a run: before the run's first step, its pause switch is set (and what
//! it was is recorded first); once the run has ended, as Succeeded or Failed, what the
//! StatefulSet's templates now say is written into the owner, its switch is put back, and the run
//! ends only when the owner has acted on its new spec without undoing it. Until then the run's
//! phase is held where it was, so nothing reads it as finished.

use crate::owners::{OwnerKind, OwnerReading, TemplateWrite, read_owner};
use crate::resize::action::{OwnerPatch, ResizeAction};
use crate::resize::observed::{Observed, StatefulSetView};
use crate::resize::run::Decision;
use ferry_api::condition::REASON_OWNER_DID_NOT_ACT;
use ferry_api::quantity::format_bytes;
use ferry_api::{OwnerStatus, OwnerStep, Phase, RunEnded, VolumeResizeStatus, parse_bytes};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::Value;

/// The time now and how long the owner may take to act (the run's `timeoutSeconds`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock<'a> {
    pub now: &'a Time,
    pub limit_seconds: i64,
}

/// What comes before the run's own planner.
#[derive(Debug)]
pub(crate) enum Before {
    /// The owner first: this decision, not the run's.
    Act(Decision),
    /// The run goes on, with this status.
    Go(VolumeResizeStatus),
}

/// The owner Ferry acts through, if there is one.
fn active(status: &VolumeResizeStatus) -> Option<&OwnerStatus> {
    status.owner.as_ref().filter(|owner| !owner.ignored)
}

/// The owner as read now, through its table entry.
struct Sight<'a> {
    entry: &'a OwnerKind,
    object: &'a Value,
    reading: OwnerReading,
}

fn sight<'a>(observed: &'a Observed, sts: &StatefulSetView) -> Result<Sight<'a>, String> {
    let owner = observed
        .owner
        .as_ref()
        .ok_or("the StatefulSet has no owner any more")?;
    let entry = owner
        .entry
        .as_ref()
        .ok_or_else(|| format!("Ferry's owners' table no longer has {}", owner.kind))?;
    let object = owner
        .object
        .as_ref()
        .ok_or_else(|| format!("{} {:?} is gone", owner.kind, owner.name))?;
    let templates: Vec<&str> = sts.templates.keys().map(String::as_str).collect();
    let reading = read_owner(entry, object, &sts.name, &templates)?;
    Ok(Sight {
        entry,
        object,
        reading,
    })
}

fn who(owner: &OwnerStatus) -> String {
    format!("{}/{}", owner.kind, owner.name)
}

fn act(status: VolumeResizeStatus, actions: Vec<ResizeAction>, message: String) -> Decision {
    let mut status = status;
    status.message = Some(message.clone());
    Decision {
        status,
        actions,
        summary: message,
    }
}

fn patch(what: OwnerPatch, owner: &OwnerStatus, ops: &[Value]) -> ResizeAction {
    ResizeAction::PatchOwner {
        what,
        owner: who(owner),
        patch: Value::Array(ops.to_vec()).to_string(),
    }
}

/// A rollback on request of a finished run starts the owner's cycle again: it is paused before
/// the StatefulSet goes back to its old templates, and takes them after, as it took the new ones.
pub(crate) fn again_for_rollback(status: &VolumeResizeStatus) -> Option<VolumeResizeStatus> {
    let finished = matches!(status.phase, Some(Phase::Succeeded | Phase::Failed));
    let owner = active(status)?;
    (finished && owner.step == Some(OwnerStep::Confirmed)).then(|| {
        let mut again = status.clone();
        if let Some(owner) = again.owner.as_mut() {
            owner.step = None;
            owner.since = None;
            owner.pause_before = None;
            owner.paused_already = false;
            owner.run_ended = None;
        }
        again
    })
}

/// The run's own end as recorded when the owner's steps began, standing for its planner from then
/// on: once Ferry writes into the owner and lets it go, the StatefulSet is the owner's again, and a
/// planner that re-made it (or re-wrote its templates) would fight an owner that re-makes it.
pub(crate) fn recorded_end(status: &VolumeResizeStatus) -> Option<Decision> {
    let owner = active(status)?;
    let ended = owner.run_ended.as_ref()?;
    if !matches!(
        owner.step,
        Some(OwnerStep::Writing | OwnerStep::Releasing | OwnerStep::Confirming)
    ) {
        return None;
    }
    let mut run = status.clone();
    run.phase = Some(ended.phase);
    run.finished_at = Some(ended.at.clone());
    Some(act(run, vec![], ended.message.clone()))
}

/// Before the run's planner: the owner paused (or proven to need no pause).
pub(crate) fn before_run(status: &VolumeResizeStatus, observed: &Observed, clock: Clock) -> Before {
    let Some(owner) = active(status) else {
        return Before::Go(status.clone());
    };
    if !matches!(owner.step, None | Some(OwnerStep::Pausing)) {
        return Before::Go(status.clone());
    }
    let mut next = status.clone();
    let Some(sts) = &observed.stateful_set else {
        // Not there to read the owner by: the run's planner says what that means.
        return Before::Go(next);
    };
    let sight = match sight(observed, sts) {
        Ok(sight) => sight,
        Err(why) => {
            let message = format!("cannot pause the StatefulSet's owner {}: {why}", who(owner));
            return Before::Act(act(next, vec![], message));
        }
    };
    let Some(pause) = &sight.entry.pause else {
        set_step(&mut next, OwnerStep::Paused, clock);
        return Before::Go(next);
    };
    let now = sight.reading.pause_now(sight.object);
    if now == Some(&pause.value) {
        if let Some(recorded) = next.owner.as_mut() {
            // Paused before Ferry came: left paused when it is done.
            recorded.paused_already |= recorded.step.is_none();
        }
        set_step(&mut next, OwnerStep::Paused, clock);
        return Before::Go(next);
    }
    let ops = match sight.reading.pause_ops(sight.object, Some(&pause.value)) {
        Ok(ops) => ops,
        Err(why) => return Before::Act(act(next, vec![], format!("cannot pause {}: {why}", who(owner)))),
    };
    if let Some(recorded) = next.owner.as_mut()
        && recorded.step.is_none()
    {
        recorded.pause_before = now.map(Value::to_string);
        set_step(&mut next, OwnerStep::Pausing, clock);
    }
    let action = patch(OwnerPatch::Pause, owner, &ops);
    let message = format!(
        "pausing the StatefulSet's owner {} before its volumes change",
        who(owner)
    );
    Before::Act(act(next, vec![action], message))
}

/// Moves the owner to `step`, its clock restarted if the step is new.
fn set_step(status: &mut VolumeResizeStatus, step: OwnerStep, clock: Clock) {
    if let Some(owner) = status.owner.as_mut()
        && owner.step != Some(step)
    {
        owner.step = Some(step);
        owner.since = Some(clock.now.clone());
    }
}

/// After the run's planner: a run that has ended writes into its owner, lets it go and waits for it
/// to take the result before it ends too.
pub(crate) fn after_run(
    before: &VolumeResizeStatus,
    step: Decision,
    observed: &Observed,
    clock: Clock,
) -> Decision {
    let Some(owner) = active(&step.status).cloned() else {
        return step;
    };
    let ended = matches!(step.status.phase, Some(Phase::Succeeded | Phase::Failed));
    if !ended || owner.step == Some(OwnerStep::Confirmed) {
        return step;
    }
    let summary = step.summary.clone();
    let mut held = step.status.clone();
    held.phase = before.phase;
    held.finished_at = before.finished_at.clone();
    // The run's end, recorded (again, while the owner is still paused: the planner's view is the
    // newest) so that from the first write into the owner on the planner is not asked again.
    if step.actions.is_empty()
        && let Some(recorded) = held.owner.as_mut()
        && let Some(phase) = step.status.phase
    {
        recorded.run_ended = Some(RunEnded {
            phase,
            message: step.status.message.clone().unwrap_or_default(),
            at: step
                .status
                .finished_at
                .clone()
                .unwrap_or_else(|| clock.now.clone()),
        });
    }
    if !step.actions.is_empty() {
        // The run's own last actions first.
        return Decision {
            status: held,
            actions: step.actions,
            summary,
        };
    }
    let Some(sts) = observed.stateful_set.as_ref().filter(|sts| !sts.deleting) else {
        let message = format!(
            "waiting for the StatefulSet before writing its volumes into {}",
            who(&owner)
        );
        return act(held, vec![], message);
    };
    let sight = match sight(observed, sts) {
        Ok(sight) => sight,
        Err(why) => return act(held, vec![], format!("cannot write into {}: {why}", who(&owner))),
    };
    let writes = writes_of(sts, &sight.reading);
    let write_ops = match sight.reading.write_ops(sight.object, &writes) {
        Ok(ops) => ops,
        Err(why) => return act(held, vec![], format!("cannot write into {}: {why}", who(&owner))),
    };
    let step_now = owner.step.unwrap_or(OwnerStep::Paused);
    // Written only while the owner is still paused: once let go, what its StatefulSet says is the
    // owner's doing, to be judged (confirm), never written back into it.
    let still_paused = matches!(step_now, OwnerStep::Paused | OwnerStep::Writing);
    if still_paused && !write_ops.is_empty() {
        set_step(&mut held, OwnerStep::Writing, clock);
        let message = format!(
            "writing the StatefulSet's volume sizes and classes into {}",
            who(&owner)
        );
        return act(held, vec![patch(OwnerPatch::Write, &owner, &write_ops)], message);
    }
    if step_now != OwnerStep::Confirming {
        if let Some(releasing) = release(&mut held, &owner, &sight, clock) {
            return releasing;
        }
        set_step(&mut held, OwnerStep::Confirming, clock);
    }
    confirm(step, held, &owner, &sight, sts, write_ops.is_empty(), clock)
}

/// The owner's pause switch put back as it was, if Ferry set it and it is not yet: the decision
/// that does it (or says why it cannot).
fn release(
    held: &mut VolumeResizeStatus,
    owner: &OwnerStatus,
    sight: &Sight,
    clock: Clock,
) -> Option<Decision> {
    if sight.entry.pause.is_none() || owner.paused_already {
        return None;
    }
    // What it was (absent: the switch is removed).
    let before = owner
        .pause_before
        .as_deref()
        .map(|before| serde_json::from_str::<Value>(before).unwrap_or(Value::Null))
        .filter(|before| !before.is_null());
    match sight.reading.pause_ops(sight.object, before.as_ref()) {
        Ok(ops) if ops.is_empty() => None,
        Ok(ops) => {
            set_step(held, OwnerStep::Releasing, clock);
            let message = format!("letting {} act again", who(owner));
            Some(act(
                held.clone(),
                vec![patch(OwnerPatch::Release, owner, &ops)],
                message,
            ))
        }
        Err(why) => Some(act(
            held.clone(),
            vec![],
            format!("cannot let {} act again: {why}", who(owner)),
        )),
    }
}

/// The run ends once the owner has acted on its resource's generation and its StatefulSet still
/// has the templates Ferry wrote into it; it fails if the owner undid them.
fn confirm(
    step: Decision,
    held: VolumeResizeStatus,
    owner: &OwnerStatus,
    sight: &Sight,
    sts: &StatefulSetView,
    templates_match: bool,
    clock: Clock,
) -> Decision {
    if sts.foreign || !templates_match {
        let failed = ended_with(step.status, held.owner, Phase::Failed);
        let message = format!(
            "{} changed the StatefulSet's volume claim templates back after Ferry let it act again; the volumes keep their new size and class",
            who(owner)
        );
        return act(failed, vec![], message);
    }
    let generation = sight
        .object
        .pointer("/metadata/generation")
        .and_then(Value::as_i64);
    let acted = match &sight.reading.observed_generation {
        None => true,
        Some(_) => sight.reading.observed_generation(sight.object) >= generation && generation.is_some(),
    };
    let since = held
        .owner
        .as_ref()
        .and_then(|owner| owner.since.as_ref())
        .map(|since| since.0.as_second());
    if !acted && let Some(took) = crate::resize::timeout::overrun(since, clock.limit_seconds, clock.now) {
        let mut failed = ended_with(step.status, held.owner, Phase::Failed);
        let message = format!(
            "{} did not act on its new spec (generation {}) within {took} s (timeoutSeconds {}): is its operator running? The volumes have their new size and class, and the owner says so",
            who(owner),
            generation.unwrap_or_default(),
            clock.limit_seconds
        );
        crate::resize::timeout::timed_out(&mut failed, REASON_OWNER_DID_NOT_ACT, &message, clock.now);
        return act(failed, vec![], message);
    }
    if !acted {
        let message = format!(
            "waiting for {} to act on its new spec (generation {})",
            who(owner),
            generation.unwrap_or_default()
        );
        return act(held, vec![], message);
    }
    let phase = step.status.phase.unwrap_or(Phase::Succeeded);
    let mut done = ended_with(step.status, held.owner, phase);
    set_step(&mut done, OwnerStep::Confirmed, clock);
    let message = format!(
        "{}; {} took the new volume sizes",
        done.message.clone().unwrap_or_default(),
        who(owner)
    );
    act(done, vec![], message)
}

/// The run's own final status, ending as `phase`, with the owner's record as the owner's steps left
/// it.
fn ended_with(run: VolumeResizeStatus, owner: Option<OwnerStatus>, phase: Phase) -> VolumeResizeStatus {
    VolumeResizeStatus {
        owner,
        phase: Some(phase),
        ..run
    }
}

/// What the StatefulSet's templates say now, for each the owner keeps; a size the owner already
/// states as the same quantity is left as it writes it.
fn writes_of(sts: &StatefulSetView, reading: &OwnerReading) -> Vec<TemplateWrite> {
    reading
        .volumes
        .iter()
        .filter_map(|(name, kept)| {
            let template = sts.templates.get(name)?;
            let bytes = template.size_bytes?;
            let size = match &kept.size_now {
                Some(now) if parse_bytes(now).ok() == Some(bytes) => now.clone(),
                _ => format_bytes(bytes),
            };
            Some(TemplateWrite {
                template: name.clone(),
                size,
                storage_class: template.storage_class.clone(),
                attributes_class: template.attributes_class.clone(),
            })
        })
        .collect()
}
