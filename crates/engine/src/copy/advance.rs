//! The copy going forward for the replicas of a batch, row by row: target claim, warm copy while
//! the replica serves, stopping it (quorum, budgets), the final sync once its pod is gone, and the
//! swap once that sync has succeeded.

use super::*;

pub(super) fn advance(
    ctx: &CopyContext,
    mut status: VolumeResizeStatus,
    observed: &Observed,
    batch: &[i32],
    rows: &[usize],
    who: &str,
    now: &Time,
) -> Decision {
    let pod_running = |replica: i32| {
        observed
            .pods
            .get(&ctx.pod(replica))
            .is_some_and(|pod| !pod.deleting)
    };
    let replica_running = batch.iter().any(|&replica| pod_running(replica));
    // Mover pods already at work count against the concurrency limit.
    let mut mover_slots = ctx.concurrency.saturating_sub(
        observed
            .movers
            .values()
            .filter(|m| matches!(m.phase, MoverPhase::Waiting | MoverPhase::Running))
            .count(),
    );
    // A standby final mover per row of the batch, all at once: only where they fit the limit.
    let standby = !ctx.offline && rows.len() <= ctx.concurrency;
    let mut actions = Vec::new();
    // The running replicas can be stopped once all their rows have a target and a finished warm copy
    // (rows of replicas already stopped do not hold this back).
    let mut ready_to_stop = true;
    let mut summary = String::new();
    for &i in rows {
        let row = status.plan[i].clone();
        // Already on its new volume; the batch waits for its other rows.
        if swapped(&row, observed) {
            continue;
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
            let copied = absorb_result(&mut status.plan[i], final_mover.and_then(|m| m.result.as_deref()));
            // Counted once, when the swap begins (the step is recorded before acting).
            if !swapping && let Some(copied) = copied {
                let row = &mut status.plan[i];
                row.bytes_copied = Some(row.bytes_copied.unwrap_or(0) + copied);
            }
            status.plan[i].step = Some(RowStep::Swapping);
            actions.extend(swap(ctx, &status.plan[i], observed, now));
            summary = format!("swapping volumes of {who}");
            continue;
        }
        if !observed.claims.contains_key(&temp) {
            // Never a claim of no size: a row without a target size is rolled back
            // (`reason_to_roll_back`) before it gets here.
            let Some(bytes) = row.target_bytes() else {
                ready_to_stop = false;
                continue;
            };
            actions.push(ResizeAction::CreateTargetClaim {
                claim: temp,
                source_claim: row.claim_name.clone(),
                bytes,
                storage_class: row.target_storage_class.clone(),
            });
            status.plan[i].step = Some(RowStep::CreatingTarget);
            ready_to_stop = false;
            summary = format!("creating the new volumes of {who}");
            continue;
        }
        let replica_present = !replica_absent;
        if let Some(mover) = final_mover {
            if replica_absent {
                // The replica's pod is gone: nothing writes to the source any more.
                if mover.awaiting_go {
                    actions.push(ResizeAction::StartFinalPass {
                        pod: final_name,
                        uid: mover.uid.clone(),
                    });
                }
                absorb_progress(&mut status.plan[i], mover);
                status.plan[i].step = Some(RowStep::FinalSync);
                summary = format!("final sync of {who} (stopped)");
                continue;
            }
            ready_to_stop &= mover.awaiting_go && mover.phase == MoverPhase::Running;
            if !mover.awaiting_go {
                // Its pass began (or ended) while a pod of the replica exists: the copy may lack
                // that pod's writes. Another final mover makes the pass once it is gone.
                actions.push(mover.delete(&final_name));
                summary = format!("a pod of {who} came back during its final sync; starting it again");
            } else if mover.phase != MoverPhase::Running {
                summary = format!("starting the final mover of {who} before stopping it");
            }
            continue;
        }
        let warm = ctx.mover(&row, Pass::Warm);
        let warm_mover = observed.movers.get(&warm);
        if ctx.warm_copy && pod_running(row.replica) {
            let warm_pending = match warm_mover.map(|m| &m.phase) {
                None if mover_slots == 0 => true,
                None => {
                    mover_slots -= 1;
                    actions.push(ResizeAction::StartMover {
                        pod: warm.clone(),
                        source: row.claim_name.clone(),
                        target: temp.clone(),
                        pass: Pass::Warm,
                        capabilities: capabilities::of_row(&row),
                    });
                    status.plan[i].step = Some(RowStep::WarmCopy);
                    true
                }
                Some(MoverPhase::Succeeded) => {
                    let result = warm_mover.and_then(|m| m.result.as_deref());
                    let copied = absorb_result(&mut status.plan[i], result);
                    status.plan[i].bytes_copied = copied;
                    false
                }
                Some(_) => {
                    if let Some(mover) = warm_mover {
                        absorb_progress(&mut status.plan[i], mover);
                    }
                    status.plan[i].step = Some(RowStep::WarmCopy);
                    true
                }
            };
            if warm_pending {
                ready_to_stop = false;
                summary = format!("warm copy of {who} while serving");
                continue;
            }
        }
        // The final mover: started on standby while a pod of the replica still exists, so its pod's
        // start is not downtime; it begins its pass on its go, once that pod is gone. Where every
        // row's standby cannot run at once (offline, or fewer mover slots than rows) it starts
        // only once the replica is gone, as a standby would hold a slot another row needs.
        if replica_present && !standby {
            if !pod_running(row.replica) {
                // A Terminating pod's application may still write during its grace period.
                status.plan[i].step = Some(RowStep::StoppingReplica);
                summary = format!("waiting for {who} to stop before the final sync");
            }
            continue;
        }
        if mover_slots == 0 {
            ready_to_stop = false;
            continue;
        }
        mover_slots -= 1;
        if let Some(mover) = warm_mover {
            actions.push(mover.delete(&warm));
        }
        actions.push(ResizeAction::StartMover {
            pod: final_name,
            source: row.claim_name.clone(),
            target: temp,
            pass: Pass::Final,
            capabilities: capabilities::of_row(&row),
        });
        if replica_present {
            ready_to_stop = false;
            status.plan[i].step = Some(RowStep::StoppingReplica);
            summary = format!("starting the final mover of {who} before stopping it");
        } else {
            status.plan[i].step = Some(RowStep::FinalSync);
            summary = format!("final sync of {who} (stopped)");
        }
    }
    if ready_to_stop && replica_running {
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
            unready_others(ctx, &status, observed, batch)
        } else {
            Vec::new()
        };
        let listed = unready.iter().map(i32::to_string).collect::<Vec<_>>().join(", ");
        if sts.is_none() && !unready.is_empty() {
            // Taken off, but another replica went down before this one stopped (the StatefulSet
            // controller was replacing it, or it crashed): nothing would bring it back, and a budget
            // would refuse this stop for good. The way back: the StatefulSet again, then the gate.
            summary = format!(
                "replica(s) {listed} went down before {who} was stopped; re-creating the StatefulSet so they come back first"
            );
            actions.push(ResizeAction::RecreateStatefulSet);
        } else if not_yet_down && !unready.is_empty() {
            summary = format!("waiting for replica(s) {listed} to be Ready before stopping {who}");
        } else if !ctx.offline && sts.is_some_and(|sts| sts.rolling_out && !sts.deleting) {
            summary = format!("waiting for the StatefulSet's rolling update to finish before stopping {who}");
        } else {
            summary = if !ctx.offline && not_yet_down && observed.budget_blocks() {
                format!("{who}: {}", crate::action::WAITING_FOR_BUDGET)
            } else {
                format!("stopping {who} for the final sync")
            };
            actions.extend(stop_replica(ctx, &mut status, observed, batch, rows, now));
        }
    }
    decide(status, actions, &summary)
}
