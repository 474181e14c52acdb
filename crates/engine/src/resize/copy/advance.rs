//! The copy going forward for the replicas of a batch, row by row: target claim, warm copy while
//! the replica serves, stopping it (quorum, budgets), the final sync once its pod is gone, and the
//! swap once that sync has succeeded.

use super::*;
use crate::resize::action::PullFrom;

/// What the rows of a batch share while each is advanced: the mover slots left, whether the
/// replicas may be stopped, what the step is doing, and the actions so far.
struct BatchStep {
    mover_slots: usize,
    /// Every row's final mover may wait on standby at once.
    standby: bool,
    /// Every row has a target and a finished warm copy (rows of replicas already stopped do not
    /// hold this back).
    ready_to_stop: bool,
    summary: String,
    actions: Vec<ResizeAction>,
    /// The batch's replicas, as the summary names them.
    who: String,
}

pub(super) fn advance(
    ctx: &CopyContext,
    mut status: VolumeResizeStatus,
    observed: &Observed,
    batch: &[i32],
    rows: &[usize],
    who: &str,
    now: &Time,
) -> Decision {
    let replica_running = batch.iter().any(|&replica| pod_running(ctx, observed, replica));
    let mut step = BatchStep {
        // Mover pods already at work count against the concurrency limit.
        mover_slots: ctx.concurrency.saturating_sub(
            observed
                .movers
                .values()
                // A serving mover waits on the movers it serves: counted, it could take the slot
                // they need.
                .filter(|m| !m.serving && matches!(m.phase, MoverPhase::Waiting | MoverPhase::Running))
                .count(),
        ),
        // A standby final mover per row of the batch, all at once: only where they fit the limit.
        standby: !ctx.offline && rows.len() <= ctx.concurrency,
        ready_to_stop: true,
        summary: String::new(),
        actions: Vec::new(),
        who: who.to_string(),
    };
    for &i in rows {
        advance_row(ctx, &mut status, i, observed, &mut step, now);
    }
    if step.ready_to_stop && replica_running {
        let retain = retain_before_stop(&status, rows, observed);
        if retain.is_empty() {
            stop_batch(ctx, &mut status, observed, batch, rows, now, &mut step);
        } else {
            step.actions.extend(retain);
        }
    }
    decide(status, step.actions, &step.summary)
}

/// Both volumes of each row set to Retain before the replica stops, once their own policies are
/// recorded (a rollback gives them back): the swap after the final pass then begins with its
/// deletes, not with a round of its own in the replica's downtime.
fn retain_before_stop(status: &VolumeResizeStatus, rows: &[usize], observed: &Observed) -> Vec<ResizeAction> {
    let mut actions = Vec::new();
    for row in rows.iter().map(|&i| &status.plan[i]) {
        if row.original_reclaim_policy.is_none() || row.target_reclaim_policy.is_none() {
            continue;
        }
        for volume in [&row.source_volume, &row.target_volume].into_iter().flatten() {
            actions.extend(observed.set_reclaim_policy(volume, RETAIN));
        }
    }
    actions
}

/// A pod of the replica exists and is not going away.
fn pod_running(ctx: &CopyContext, observed: &Observed, replica: i32) -> bool {
    observed
        .pods
        .get(&ctx.pod(replica))
        .is_some_and(|pod| !pod.deleting)
}

/// One row's next step: swap once its final sync succeeded, else its target claim, its final mover
/// (on standby or at work), its warm copy, or a final mover started.
fn advance_row(
    ctx: &CopyContext,
    status: &mut VolumeResizeStatus,
    i: usize,
    observed: &Observed,
    step: &mut BatchStep,
    now: &Time,
) {
    let who = step.who.clone();
    let row = status.plan[i].clone();
    // Already on its new volume; the batch waits for its other rows.
    if swapped(&row, observed) {
        return;
    }
    let temp = ctx.temp_claim(&row);
    let final_name = ctx.mover(&row, Pass::Final);
    let final_mover = observed.movers.get(&final_name);
    // A standby that exited without its go never made the final pass.
    let final_done = final_mover.is_some_and(|m| m.exited_ok() && !m.awaiting_go);
    // Once the swap has begun (recorded in status before acting) it only goes forward: the mover
    // pods it removes no longer show that the final sync succeeded.
    let swapping = row.step == Some(RowStep::Swapping);
    // A pod that started on the old claim after the final sync would write what the copy lacks.
    let replica_absent = !observed.pods.contains_key(&ctx.pod(row.replica));
    if (final_done && replica_absent) || swapping {
        let result = final_mover.and_then(|m| m.result.as_deref());
        let copied = absorb_result(&mut status.plan[i], result);
        // Counted once, when the swap begins (the step is recorded before acting).
        if !swapping && let Some(copied) = copied {
            count_final_pass(&mut status.plan[i], copied, result);
        }
        status.plan[i].step = Some(RowStep::Swapping);
        step.actions.extend(swap(ctx, &status.plan[i], observed, now));
        step.summary = format!("swapping volumes of {who}");
        return;
    }
    if clone_held_back(ctx, &mut status.plan[i], observed, step, now) {
        return;
    }
    if !observed.claims.contains_key(&temp) {
        step.ready_to_stop = false;
        // Never a claim of no size: a row without a target size is rolled back
        // (`reason_to_roll_back`) before it gets here.
        let Some(bytes) = row.target_bytes() else {
            return;
        };
        step.actions.push(ResizeAction::CreateTargetClaim {
            claim: temp,
            source_claim: row.claim_name.clone(),
            bytes,
            storage_class: row.target_storage_class.clone(),
            attributes_class: row.target_attributes_class.clone(),
            clone_of: (row.cloned == Some(true)).then(|| row.claim_name.clone()),
            node: row.target_node.clone(),
        });
        status.plan[i].step = Some(RowStep::CreatingTarget);
        step.summary = format!("creating the new volumes of {who}");
        return;
    }
    if let Some(mover) = final_mover {
        final_mover_at(ctx, &mut status.plan[i], mover, replica_absent, step);
        return;
    }
    let Some(from) = pulls_from(ctx, &mut status.plan[i], observed, step) else {
        return;
    };
    // A clone is the warm copy: the final mover's start (on standby) has it made.
    if ctx.warm_copy
        && row.cloned != Some(true)
        && pod_running(ctx, observed, row.replica)
        && warm_copy_pending(ctx, &mut status.plan[i], observed, step, from.clone())
    {
        step.ready_to_stop = false;
        step.summary = format!("warm copy of {who} while serving");
        return;
    }
    start_final_mover(ctx, &mut status.plan[i], observed, !replica_absent, step, from);
}

/// Where the row's next mover reads the old volume: `Some(None)` beside it, `Some(address)` from
/// its serving mover on another node; `None` while that one starts (the row waits).
fn pulls_from(
    ctx: &CopyContext,
    row: &mut VolumePlan,
    observed: &Observed,
    step: &mut BatchStep,
) -> Option<Option<PullFrom>> {
    match super::remote::source(ctx, row, observed, &mut step.actions) {
        super::remote::Source::Local => Some(None),
        super::remote::Source::Serving(address) => Some(Some(address)),
        super::remote::Source::Starting => {
            step.ready_to_stop = false;
            row.step = Some(RowStep::WarmCopy);
            step.summary = format!(
                "starting the mover serving the old volumes of {} to their new node",
                step.who
            );
            None
        }
    }
}

/// A clone the driver does not make is given up for the mover (before any stop: the standby mover
/// waiting on it never runs), and its claim is gone before another is made. Whether that holds the
/// row back now.
fn clone_held_back(
    ctx: &CopyContext,
    row: &mut VolumePlan,
    observed: &Observed,
    step: &mut BatchStep,
    now: &Time,
) -> bool {
    let who = step.who.clone();
    if observed
        .claims
        .get(&ctx.temp_claim(row))
        .is_some_and(|claim| claim.deleting)
    {
        step.ready_to_stop = false;
        step.summary = format!("waiting for the given-up clone of {who} to go");
        return true;
    }
    let refused = (row.cloned == Some(true))
        .then(|| super::clone::refused(ctx, row, observed, now))
        .flatten();
    let Some(why) = refused else {
        return false;
    };
    step.actions
        .extend(super::clone::give_up(ctx, row, observed, why));
    step.ready_to_stop = false;
    step.summary = format!("giving up the clone of {who} for the mover");
    true
}

/// A row whose final mover exists: its go once the replica's pod is gone; while a pod of the
/// replica exists, a standby that already began its pass is started again.
fn final_mover_at(
    ctx: &CopyContext,
    row: &mut VolumePlan,
    mover: &MoverView,
    replica_absent: bool,
    step: &mut BatchStep,
) {
    let who = &step.who;
    let final_name = &ctx.mover(row, Pass::Final);
    // A standby tracking changes is armed once it has caught up and watches; one that does not,
    // once it runs.
    let armed = mover.armed || !ctx.track_changes;
    if replica_absent {
        // The replica's pod is gone: nothing writes to the source any more.
        if mover.awaiting_go {
            step.actions.push(ResizeAction::StartFinalPass {
                pod: final_name.to_string(),
                uid: mover.uid.clone(),
            });
        }
        absorb_progress(row, mover);
        row.step = Some(RowStep::FinalSync);
        step.summary = format!("final sync of {who} (stopped)");
        return;
    }
    // Stopped before its standby is armed, the replica's downtime would hold the catch-up pass.
    // Stopped while the stream its go comes by still opens, the go would wait for the kubelet to
    // show the mover its annotation.
    step.ready_to_stop &=
        mover.awaiting_go && mover.phase == MoverPhase::Running && armed && !mover.go_stream_opening;
    if !mover.awaiting_go {
        // Its pass began (or ended) while a pod of the replica exists: the copy may lack that
        // pod's writes. Another final mover makes the pass once it is gone.
        step.actions.push(mover.delete(final_name));
        step.summary = format!("a pod of {who} came back during its final sync; starting it again");
    } else if mover.phase != MoverPhase::Running {
        step.summary = format!("starting the final mover of {who} before stopping it");
    } else if !armed {
        step.summary = format!("the final mover of {who} catches up with its source before the stop");
    } else if mover.go_stream_opening {
        step.summary = format!("opening the stream the final mover of {who} gets its go by");
    }
}

/// The warm copy of a serving replica's row: started where a mover slot is free, followed while it
/// runs, absorbed once it succeeded. Whether it is still to come or at work.
fn warm_copy_pending(
    ctx: &CopyContext,
    row: &mut VolumePlan,
    observed: &Observed,
    step: &mut BatchStep,
    from: Option<PullFrom>,
) -> bool {
    let warm = ctx.mover(row, Pass::Warm);
    let warm_mover = observed.movers.get(&warm);
    match warm_mover.map(|m| &m.phase) {
        None if step.mover_slots == 0 => true,
        None => {
            step.mover_slots -= 1;
            step.actions.push(ResizeAction::StartMover {
                pod: warm,
                source: row.claim_name.clone(),
                target: ctx.temp_claim(row),
                pass: Pass::Warm,
                capabilities: capabilities::of_row(row),
                cloned_at: None,
                track_changes: false,
                from,
            });
            row.step = Some(RowStep::WarmCopy);
            true
        }
        Some(MoverPhase::Succeeded) => warm_pass_repeated(row, warm_mover, &warm, step),
        Some(_) => {
            if let Some(mover) = warm_mover {
                absorb_progress(row, mover);
            }
            row.step = Some(RowStep::WarmCopy);
            true
        }
    }
}

/// A warm pass that succeeded, counted once (its time, its bytes); whether another follows it
/// ([`super::converge`]): then this mover goes, and a new one of the same name makes the next.
fn warm_pass_repeated(
    row: &mut VolumePlan,
    mover: Option<&MoverView>,
    name: &str,
    step: &mut BatchStep,
) -> bool {
    let Some(mover) = mover else {
        return false;
    };
    if row.warm_mover_counted.as_deref() != Some(mover.uid.as_str()) {
        let result = mover.result.as_deref();
        let took = result_milliseconds(result).unwrap_or(0);
        let copied = absorb_result(row, result).unwrap_or(0);
        row.bytes_copied = Some(row.bytes_copied.unwrap_or(0) + copied);
        row.warm_pass_milliseconds.get_or_insert_with(Vec::new).push(took);
        row.warm_mover_counted = Some(mover.uid.clone());
    }
    let passes = row.warm_pass_milliseconds.as_deref().unwrap_or_default();
    if !super::converge::another_warm_pass(passes) {
        return false;
    }
    step.actions.push(mover.delete(name));
    row.step = Some(RowStep::WarmCopy);
    true
}

/// The final mover: started on standby while a pod of the replica still exists, so its pod's start
/// is not downtime; it begins its pass on its go, once that pod is gone. Where every row's standby
/// cannot run at once (offline, or fewer mover slots than rows) it starts only once the replica is
/// gone, as a standby would hold a slot another row needs.
fn start_final_mover(
    ctx: &CopyContext,
    row: &mut VolumePlan,
    observed: &Observed,
    replica_present: bool,
    step: &mut BatchStep,
    from: Option<PullFrom>,
) {
    let who = step.who.clone();
    if replica_present && !step.standby {
        if !pod_running(ctx, observed, row.replica) {
            // A Terminating pod's application may still write during its grace period.
            row.step = Some(RowStep::StoppingReplica);
            step.summary = format!("waiting for {who} to stop before the final sync");
        }
        return;
    }
    if step.mover_slots == 0 {
        step.ready_to_stop = false;
        return;
    }
    step.mover_slots -= 1;
    let warm = ctx.mover(row, Pass::Warm);
    if let Some(mover) = observed.movers.get(&warm) {
        step.actions.push(mover.delete(&warm));
    }
    // A clone's files keep the source's inode times: when it was made tells the final pass which
    // of them may have changed since.
    let cloned_at = (row.cloned == Some(true))
        .then(|| observed.claims.get(&ctx.temp_claim(row))?.created.as_ref())
        .flatten()
        .map(|created| created.0.as_second());
    step.actions.push(ResizeAction::StartMover {
        pod: ctx.mover(row, Pass::Final),
        source: row.claim_name.clone(),
        target: ctx.temp_claim(row),
        pass: Pass::Final,
        capabilities: capabilities::of_row(row),
        cloned_at,
        // A replica already going writes little more: one walk is the whole pass. A copy from
        // another node watches nothing itself: its serving mover tracks the changes
        // (`PullFrom::tracked`), and its standby pulls them while it waits.
        track_changes: ctx.track_changes && from.is_none() && pod_running(ctx, observed, row.replica),
        from,
    });
    if replica_present {
        step.ready_to_stop = false;
        row.step = Some(RowStep::StoppingReplica);
        step.summary = format!("starting the final mover of {who} before stopping it");
    } else {
        row.step = Some(RowStep::FinalSync);
        step.summary = format!("final sync of {who} (stopped)");
    }
}

/// Every row is ready for the stop: the batch's replicas are stopped, once the budget, a rolling
/// update and the other replicas' readiness allow it.
fn stop_batch(
    ctx: &CopyContext,
    status: &mut VolumeResizeStatus,
    observed: &Observed,
    batch: &[i32],
    rows: &[usize],
    now: &Time,
    step: &mut BatchStep,
) {
    let who = step.who.clone();
    for &i in rows {
        if !swap_begun(&status.plan[i], observed) {
            status.plan[i].step = Some(RowStep::StoppingReplica);
        }
    }
    // Before the first step down (the StatefulSet still there): the budget, no rolling update
    // under way, and every other replica Ready, so a stop never leaves fewer serving than the
    // application expects.
    let sts = observed.stateful_set.as_ref();
    let not_yet_down = sts.is_some_and(|sts| !sts.deleting);
    // Stopping replicas that serve nothing already (crash-looping, not Ready) costs no
    // availability: the gate is for taking a serving one down.
    let serving = observed.replicas_down(ctx.sts_name, batch.iter().copied()).len() < batch.len();
    let unready = if ctx.quorum && serving {
        unready_others(ctx, status, observed, batch)
    } else {
        Vec::new()
    };
    let listed = unready.iter().map(i32::to_string).collect::<Vec<_>>().join(", ");
    if sts.is_none() && !unready.is_empty() {
        // Taken off, but another replica went down before this one stopped (the StatefulSet
        // controller was replacing it, or it crashed): nothing would bring it back, and a budget
        // would refuse this stop for good. The way back: the StatefulSet again, then the gate.
        step.summary = format!(
            "replica(s) {listed} went down before {who} was stopped; re-creating the StatefulSet so they come back first"
        );
        step.actions.push(ResizeAction::RecreateStatefulSet);
    } else if not_yet_down && !unready.is_empty() {
        step.summary = format!("waiting for replica(s) {listed} to be Ready before stopping {who}");
    } else if !ctx.offline && sts.is_some_and(|sts| sts.rolling_out && !sts.deleting) {
        step.summary =
            format!("waiting for the StatefulSet's rolling update to finish before stopping {who}");
    } else {
        step.summary = if !ctx.offline && not_yet_down && observed.budget_blocks() {
            format!("{who}: {}", crate::resize::action::WAITING_FOR_BUDGET)
        } else {
            format!("stopping {who} for the final sync")
        };
        step.actions
            .extend(stop_replica(ctx, status, observed, batch, rows, now));
    }
}
