//! Copy (SPEC §2), Rolling: one replica at a time — target claim, warm copy while the replica runs,
//! stop the replica, final sync with verification, swap by PV re-binding (one copy of the data), start
//! the replica on its new volume and wait until it is Ready. A mover failure before the swap rolls the
//! replica back. Every stage is derived from what is observed, so a restarted operator resumes.

use crate::in_place::Decision;
use crate::names;
use crate::run_state::{MoverPhase, Pass, ResizeAction, RunMover, RunObserved, RunStatefulSet};
use crate::status::update_progress;
use ferry_api::{ChosenStrategy, Phase, VolumePlan, VolumeResizeStatus, parse_bytes};
use ferry_mover_report::{Progress, SyncResult, UsageResult};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

pub const STEP_CREATING_TARGET: &str = "CreatingTarget";
pub const STEP_WARM_COPY: &str = "WarmCopy";
pub const STEP_STOPPING_REPLICA: &str = "StoppingReplica";
pub const STEP_FINAL_SYNC: &str = "FinalSync";
pub const STEP_SWAPPING: &str = "Swapping";
pub const STEP_STARTING_REPLICA: &str = "StartingReplica";
pub const STEP_COPIED: &str = "Copied";
pub const STEP_ROLLED_BACK: &str = "RolledBack";
/// The data in use could not be measured (its pod failed or could not run): the resize fails
/// once the measuring pods are gone, and the claim is not measured again.
pub const STEP_MEASURING_FAILED: &str = "MeasuringFailed";
const RETAIN: &str = "Retain";
const PHASE_AVAILABLE: &str = "Available";

/// What the copy needs besides status and observation.
pub struct CopyContext<'a> {
    pub sts_name: &'a str,
    pub backup_name: &'a str,
    /// Short, stable suffix from the VolumeResize's UID, so names never collide with an older one.
    pub suffix: &'a str,
    pub warm_copy: bool,
    /// The VolumeResize is being deleted: finish a replica whose swap has begun, roll back one that
    /// is only partly copied, start no other.
    pub stopping: bool,
    /// Offline mode: every replica at once, the StatefulSet down, instead of one at a time.
    pub offline: bool,
    /// Mover pods that may run at once.
    pub concurrency: usize,
    /// Seconds a mover pod may be unable to run before it counts as failed.
    pub stuck_after_seconds: i64,
    /// `spec.timeoutSeconds`: the longest any step before the swap may take; past it the replica
    /// is rolled back. (The swap itself only goes forward.)
    pub step_timeout_seconds: Option<i64>,
    /// A replica is taken down only while every other one is Ready (Rolling, unless `force`).
    pub quorum: bool,
}

/// Name of the temporary claim a row copies to.
pub fn temp_claim_name(row: &VolumePlan, suffix: &str) -> String {
    names::temp_claim(&row.claim_name, suffix)
}

/// Name of the pod measuring the data in use on a row's claim.
pub fn usage_pod_name(row: &VolumePlan, suffix: &str) -> String {
    names::usage_pod(&row.claim_name, suffix)
}

/// A shrink must leave this much room over the data in use (file-system overhead, growth during
/// the copy).
pub const SHRINK_HEADROOM: f64 = 1.1;

/// Name of the mover pod making one pass of a row's copy.
pub fn mover_name(row: &VolumePlan, suffix: &str, pass: Pass) -> String {
    names::mover(&row.claim_name, suffix, pass)
}

impl CopyContext<'_> {
    pub fn temp_claim(&self, row: &VolumePlan) -> String {
        temp_claim_name(row, self.suffix)
    }

    pub fn mover(&self, row: &VolumePlan, pass: Pass) -> String {
        mover_name(row, self.suffix, pass)
    }

    fn pod(&self, replica: i32) -> String {
        names::pod(self.sts_name, replica)
    }
}

fn is_copy(row: &VolumePlan) -> bool {
    row.strategy == Some(ChosenStrategy::Copy)
}

pub fn plan_copy(
    ctx: &CopyContext,
    previous: &VolumeResizeStatus,
    observed: &RunObserved,
    now: &Time,
) -> Decision {
    let observed = &observed.pinned_to(&previous.plan);
    let mut status = previous.clone();
    status.started_at.get_or_insert_with(|| now.clone());
    if status.phase != Some(Phase::RollingBack) {
        status.phase = Some(Phase::Running);
    }
    if ctx.stopping {
        // Measuring pods go first; with no backup yet, nothing else was touched.
        let measuring = usage_leftovers(ctx, &status, observed);
        if !measuring.is_empty() {
            return decide(status, measuring, "removing the measuring pods before stopping");
        }
        if !observed.backup_exists {
            let message = "stopped because the VolumeResize was deleted; nothing was changed".to_string();
            return fail(status, vec![], message, now);
        }
    }
    // Before anything is touched: measure the data in use, and refuse a target that cannot hold it.
    if !ctx.stopping
        && let Some(decision) = measure_usage(ctx, &mut status, observed, now)
    {
        return decision;
    }
    status.created_objects.backup_config_map = Some(ctx.backup_name.to_string());
    if !observed.backup_exists {
        return decide(
            status,
            vec![ResizeAction::BackupStatefulSet],
            "backing up the StatefulSet spec",
        );
    }
    record_volumes(ctx, &mut status, observed);
    status.created_objects.temporary_claims = status
        .plan
        .iter()
        .filter(|row| is_copy(row) && row.finished_at.is_none())
        .map(|row| ctx.temp_claim(row))
        .collect();
    update_progress(&mut status);

    // The replicas handled now: the first unfinished one (Rolling) or all unfinished ones (Offline).
    let mut batch: Vec<i32> = status
        .plan
        .iter()
        .filter(|row| is_copy(row) && row.finished_at.is_none())
        .map(|row| row.replica)
        .collect();
    batch.sort_unstable();
    batch.dedup();
    if !ctx.offline {
        batch.truncate(1);
    }
    if batch.is_empty() && status.phase != Some(Phase::RollingBack) {
        return finish(status, observed, now);
    }
    let who = match batch.as_slice() {
        [one] => format!("replica {one}"),
        many => format!(
            "replicas {}",
            many.iter().map(i32::to_string).collect::<Vec<_>>().join(", ")
        ),
    };
    if status.phase == Some(Phase::RollingBack) {
        return roll_back(ctx, status, observed, &batch, now);
    }
    let rows: Vec<usize> = (0..status.plan.len())
        .filter(|&i| is_copy(&status.plan[i]) && batch.contains(&status.plan[i].replica))
        .collect();
    for &i in &rows {
        status.plan[i].started_at.get_or_insert_with(|| now.clone());
    }

    if ctx.stopping {
        let committed = rows.iter().any(|&i| {
            let row = &status.plan[i];
            swapped(row, observed)
                || matches!(
                    row.step.as_deref(),
                    Some(STEP_SWAPPING) | Some(STEP_STARTING_REPLICA)
                )
        });
        if !committed {
            let untouched = rows.iter().all(|&i| {
                let row = &status.plan[i];
                row.step.is_none() && !observed.claims.contains_key(&ctx.temp_claim(row))
            }) && observed.stateful_set.as_ref().is_some_and(|sts| !sts.deleting)
                && observed.movers.is_empty();
            if untouched {
                status.phase = Some(Phase::Failed);
                status.finished_at.get_or_insert_with(|| now.clone());
                let message = format!("stopped because the VolumeResize was deleted; {who} not started");
                status.message = Some(message.clone());
                return Decision {
                    status,
                    actions: vec![],
                    summary: message,
                };
            }
            status.phase = Some(Phase::RollingBack);
            status.message = Some(format!("the VolumeResize was deleted; rolling back {who}"));
            return roll_back(ctx, status, observed, &batch, now);
        }
    }

    let stale = undo_stale_swaps(ctx, &mut status, observed, &rows);
    if !stale.is_empty() {
        return decide(
            status,
            stale,
            &format!("{who} started again before its swap; its final sync must run again"),
        );
    }
    // Someone else re-created the StatefulSet while the replica was out: it serves from the old
    // claims with the old templates, so the replica's copy is undone (unless its swap began).
    let foreign = observed
        .stateful_set
        .as_ref()
        .is_some_and(|sts| sts.foreign && !sts.deleting);
    if foreign && !rows.iter().any(|&i| swap_begun(&status.plan[i], observed)) {
        status.phase = Some(Phase::RollingBack);
        status.message = Some(format!(
            "StatefulSet {} was re-created by someone else (a GitOps tool or a parent operator?) with its old volume claim templates while Ferry was resizing; rolling back {who}",
            ctx.sts_name
        ));
        return roll_back(ctx, status, observed, &batch, now);
    }
    if let Some(actions) = clear_for_swap(ctx, &status, observed, &rows) {
        return decide(
            status,
            actions,
            &format!("keeping the claims of {who} free for their swap"),
        );
    }

    // The replica runs on its new volumes: wait for it to be Ready, then the rows are done.
    if rows.iter().all(|&i| swapped(&status.plan[i], observed)) {
        return start_replica(ctx, status, observed, &batch, &rows, now);
    }

    // A failed (or hopelessly stuck) mover before the swap: undo this replica's copy.
    for &i in &rows {
        for pass in [Pass::Warm, Pass::Final] {
            if let Some(failure) = observed
                .movers
                .get(&ctx.mover(&status.plan[i], pass))
                .and_then(|m| m.failure(now, ctx.stuck_after_seconds))
            {
                let row = &mut status.plan[i];
                let reason = format!("mover for {} {failure}; rolling back {who}", row.claim_name);
                row.message = Some(reason.clone());
                status.phase = Some(Phase::RollingBack);
                status.message = Some(reason);
                return roll_back(ctx, status, observed, &batch, now);
            }
        }
    }

    // A step before the swap that outlasts `timeoutSeconds` (a mover that never ends, a replica
    // that never stops, a target that never binds) rolls the replica back.
    if let Some(limit) = ctx.step_timeout_seconds
        && let Some((claim, step, took)) = rows
            .iter()
            .map(|&i| &status.plan[i])
            .filter(|row| !swap_begun(row, observed))
            .find_map(|row| {
                let started = row.step_started_at.as_ref()?.0.as_second();
                let took = now.0.as_second() - started;
                (took > limit).then(|| (row.claim_name.clone(), row.step.clone().unwrap_or_default(), took))
            })
    {
        let reason = format!(
            "step {step} of {claim} took {took} s, more than timeoutSeconds ({limit} s); rolling back {who}"
        );
        status.phase = Some(Phase::RollingBack);
        status.message = Some(reason);
        return roll_back(ctx, status, observed, &batch, now);
    }

    // A claim deleted by someone else mid-copy (`kubectl delete pvc`, a retention policy): never
    // bind its name to a partial copy; stop and undo this replica's copy.
    if let Some(claim) = rows
        .iter()
        .map(|&i| &status.plan[i])
        .find(|row| deleted_by_someone_else(row, observed))
        .map(|row| row.claim_name.clone())
    {
        let reason = format!(
            "claim {claim} was deleted by someone else during the copy; stopped without swapping, rolling back {who}"
        );
        status.phase = Some(Phase::RollingBack);
        status.message = Some(reason);
        return roll_back(ctx, status, observed, &batch, now);
    }

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
    let mut actions = Vec::new();
    // The running replicas can be stopped once all their rows have a target and a finished warm copy
    // (rows of replicas already stopped do not hold this back).
    let mut ready_to_stop = true;
    let mut summary = String::new();
    for &i in &rows {
        let row = status.plan[i].clone();
        // Already on its new volume; the batch waits for its other rows.
        if swapped(&row, observed) {
            continue;
        }
        let temp = ctx.temp_claim(&row);
        let final_mover = observed.movers.get(&ctx.mover(&row, Pass::Final));
        let final_done = final_mover.is_some_and(|m| m.phase == MoverPhase::Succeeded);
        // Once the swap has begun (recorded in status before acting) it only goes forward: the mover
        // pods it removes no longer show that the final sync succeeded.
        let swapping = row.step.as_deref() == Some(STEP_SWAPPING);
        // A pod that started on the old claim after the final sync would write what the copy lacks.
        let replica_absent = !observed.pods.contains_key(&ctx.pod(row.replica));
        if (final_done && replica_absent) || swapping {
            let copied = absorb_result(&mut status.plan[i], final_mover.and_then(|m| m.result.as_deref()));
            // Counted once, when the swap begins (the step is recorded before acting).
            if !swapping && let Some(copied) = copied {
                let row = &mut status.plan[i];
                row.bytes_copied = Some(row.bytes_copied.unwrap_or(0) + copied);
            }
            status.plan[i].step = Some(STEP_SWAPPING.into());
            actions.extend(swap(ctx, &status.plan[i], observed, now));
            summary = format!("swapping volumes of {who}");
            continue;
        }
        if !observed.claims.contains_key(&temp) {
            let bytes = parse_bytes(&row.target_size).unwrap_or(0);
            actions.push(ResizeAction::CreateTargetClaim {
                claim: temp,
                source_claim: row.claim_name.clone(),
                bytes,
                storage_class: row.target_storage_class.clone(),
            });
            status.plan[i].step = Some(STEP_CREATING_TARGET.into());
            ready_to_stop = false;
            summary = format!("creating the new volumes of {who}");
            continue;
        }
        if let Some(mover) = final_mover {
            absorb_progress(&mut status.plan[i], mover);
            status.plan[i].step = Some(STEP_FINAL_SYNC.into());
            summary = format!("final sync of {who} (stopped)");
            continue;
        }
        if !pod_running(row.replica) {
            // A Terminating pod's application may still write during its grace period (a
            // checkpoint, a flush): the final pass starts only once the pod is gone.
            if observed.pods.contains_key(&ctx.pod(row.replica)) {
                status.plan[i].step = Some(STEP_STOPPING_REPLICA.into());
                summary = format!("waiting for {who} to stop before the final sync");
                continue;
            }
            if mover_slots == 0 {
                continue;
            }
            mover_slots -= 1;
            // The replica is stopped: the final pass copies what changed since the warm one.
            let warm = ctx.mover(&row, Pass::Warm);
            if observed.movers.contains_key(&warm) {
                actions.push(ResizeAction::DeleteMover { pod: warm });
            }
            actions.push(ResizeAction::StartMover {
                pod: ctx.mover(&row, Pass::Final),
                source: row.claim_name.clone(),
                target: temp,
                pass: Pass::Final,
            });
            status.plan[i].step = Some(STEP_FINAL_SYNC.into());
            summary = format!("final sync of {who} (stopped)");
            continue;
        }
        if ctx.warm_copy {
            let warm = ctx.mover(&row, Pass::Warm);
            match observed.movers.get(&warm).map(|m| &m.phase) {
                None if mover_slots == 0 => ready_to_stop = false,
                None => {
                    mover_slots -= 1;
                    actions.push(ResizeAction::StartMover {
                        pod: warm,
                        source: row.claim_name.clone(),
                        target: temp,
                        pass: Pass::Warm,
                    });
                    status.plan[i].step = Some(STEP_WARM_COPY.into());
                    ready_to_stop = false;
                }
                Some(MoverPhase::Succeeded) => {
                    let result = observed.movers.get(&warm).and_then(|m| m.result.as_deref());
                    let copied = absorb_result(&mut status.plan[i], result);
                    status.plan[i].bytes_copied = copied;
                }
                Some(_) => {
                    if let Some(mover) = observed.movers.get(&warm) {
                        absorb_progress(&mut status.plan[i], mover);
                    }
                    status.plan[i].step = Some(STEP_WARM_COPY.into());
                    ready_to_stop = false;
                }
            }
            if !ready_to_stop {
                summary = format!("warm copy of {who} while serving");
            }
        }
    }
    if ready_to_stop && replica_running {
        for &i in &rows {
            if !swap_begun(&status.plan[i], observed) {
                status.plan[i].step = Some(STEP_STOPPING_REPLICA.into());
            }
        }
        // Before the first step down (the StatefulSet still there): the budget, and every other
        // replica Ready, so a stop never leaves fewer serving than the application expects.
        let not_yet_down = observed.stateful_set.as_ref().is_some_and(|sts| !sts.deleting);
        let unready = if ctx.quorum && not_yet_down {
            unready_others(ctx, &status, observed, &batch)
        } else {
            Vec::new()
        };
        if !unready.is_empty() {
            summary = format!(
                "waiting for replica(s) {} to be Ready before stopping {who}",
                unready.iter().map(i32::to_string).collect::<Vec<_>>().join(", ")
            );
        } else {
            summary = if !ctx.offline && not_yet_down && observed.budget_blocks() {
                format!("{who}: {}", crate::run_state::WAITING_FOR_BUDGET)
            } else {
                format!("stopping {who} for the final sync")
            };
            actions.extend(stop_replica(ctx, &mut status, observed, &batch, &rows, now));
        }
    }
    decide(status, actions, &summary)
}

/// Replicas other than `batch` whose pod is missing, not Ready or going away.
pub fn unready_others(
    ctx: &CopyContext,
    status: &VolumeResizeStatus,
    observed: &RunObserved,
    batch: &[i32],
) -> Vec<i32> {
    let mut others: Vec<i32> = status
        .plan
        .iter()
        .filter(|row| is_copy(row) && !batch.contains(&row.replica))
        .map(|row| row.replica)
        .collect();
    others.sort_unstable();
    others.dedup();
    others.retain(|&replica| {
        !observed
            .pods
            .get(&ctx.pod(replica))
            .is_some_and(|pod| pod.ready && !pod.deleting)
    });
    others
}

/// The usage stage: one read-only pod per claim still unmeasured; when all are measured, their pods
/// are removed and every target is checked against the data it must hold. `None` when done.
fn measure_usage(
    ctx: &CopyContext,
    status: &mut VolumeResizeStatus,
    observed: &RunObserved,
    now: &Time,
) -> Option<Decision> {
    let mut actions = Vec::new();
    // Measuring pods are mover pods too: no more at once than `mover.concurrency`.
    let mut slots = ctx.concurrency.saturating_sub(
        observed
            .movers
            .values()
            .filter(|m| matches!(m.phase, MoverPhase::Waiting | MoverPhase::Running))
            .count(),
    );
    for row in status
        .plan
        .iter_mut()
        .filter(|row| is_copy(row) && row.finished_at.is_none())
    {
        if row.used_bytes.is_some() || row.step.as_deref() == Some(STEP_MEASURING_FAILED) {
            continue;
        }
        let pod = usage_pod_name(row, ctx.suffix);
        match observed.movers.get(&pod) {
            None if slots == 0 => {}
            None => {
                slots -= 1;
                actions.push(ResizeAction::MeasureUsage {
                    pod,
                    claim: row.claim_name.clone(),
                });
            }
            Some(mover) => match &mover.phase {
                MoverPhase::Succeeded => {
                    row.used_bytes = mover
                        .result
                        .as_deref()
                        .and_then(|r| serde_json::from_str::<UsageResult>(r).ok())
                        .map(|usage| usage.bytes);
                    row.bytes_total = row.used_bytes;
                }
                _ => {
                    if let Some(failure) = mover.failure(now, ctx.stuck_after_seconds) {
                        row.step = Some(STEP_MEASURING_FAILED.into());
                        row.message = Some(format!(
                            "could not measure the data in use on {}: mover {failure}",
                            row.claim_name
                        ));
                    }
                }
            },
        }
    }
    // A claim that could not be measured fails the resize (recorded, so it is not measured again),
    // once every measuring pod is gone; nothing else was touched.
    let failures: Vec<String> = status
        .plan
        .iter()
        .filter(|row| row.step.as_deref() == Some(STEP_MEASURING_FAILED))
        .filter_map(|row| row.message.clone())
        .collect();
    if !failures.is_empty() {
        let leftovers = usage_leftovers(ctx, status, observed);
        return Some(fail(status.clone(), leftovers, failures.join("; "), now));
    }
    let unmeasured = status
        .plan
        .iter()
        .any(|row| is_copy(row) && row.finished_at.is_none() && row.used_bytes.is_none());
    if unmeasured {
        return Some(decide(status.clone(), actions, "measuring the data in use"));
    }
    let leftovers = usage_leftovers(ctx, status, observed);
    let too_small: Vec<String> = status
        .plan
        .iter()
        .filter(|row| is_copy(row) && row.finished_at.is_none())
        .filter_map(|row| {
            let used = row.used_bytes?;
            let target = parse_bytes(&row.target_size).ok()?;
            let needed = (used as f64 * SHRINK_HEADROOM).ceil() as u64;
            (target < needed).then(|| {
                format!(
                    "{} holds {} of data; {} leaves no room (at least {} needed with {:.0}% headroom)",
                    row.claim_name,
                    ferry_api::quantity::human_bytes(used),
                    row.target_size,
                    ferry_api::quantity::human_bytes(needed),
                    (SHRINK_HEADROOM - 1.0) * 100.0
                )
            })
        })
        .collect();
    if !too_small.is_empty() {
        return Some(fail(status.clone(), leftovers, too_small.join("; "), now));
    }
    (!leftovers.is_empty()).then(|| decide(status.clone(), leftovers, "data in use measured"))
}

/// Deletions of the measuring pods that still exist.
fn usage_leftovers(
    ctx: &CopyContext,
    status: &VolumeResizeStatus,
    observed: &RunObserved,
) -> Vec<ResizeAction> {
    status
        .plan
        .iter()
        .map(|row| usage_pod_name(row, ctx.suffix))
        .filter(|pod| observed.movers.contains_key(pod))
        .map(|pod| ResizeAction::DeleteMover { pod })
        .collect()
}

/// Ends the resize as Failed before anything was changed (only Ferry's own pods are removed).
fn fail(mut status: VolumeResizeStatus, actions: Vec<ResizeAction>, message: String, now: &Time) -> Decision {
    if actions.is_empty() {
        status.phase = Some(Phase::Failed);
        status.finished_at.get_or_insert_with(|| now.clone());
    }
    status.message = Some(message.clone());
    Decision {
        status,
        actions,
        summary: message,
    }
}

/// Remembers which PV each side of a row is on, the first time it is seen.
fn record_volumes(ctx: &CopyContext, status: &mut VolumeResizeStatus, observed: &RunObserved) {
    for row in status
        .plan
        .iter_mut()
        .filter(|row| is_copy(row) && row.finished_at.is_none())
    {
        // Until the swap begins, the target is whatever the temporary claim is bound to now.
        let temp_bound = observed
            .claims
            .get(&ctx.temp_claim(row))
            .and_then(|c| c.volume_name.clone());
        if temp_bound.is_some() && temp_bound != row.target_volume && !swap_begun(row, observed) {
            row.target_volume = temp_bound;
            row.target_volume_uid = None;
        }
        if row.source_volume.is_none() {
            let bound = observed
                .claims
                .get(&row.claim_name)
                .and_then(|c| c.volume_name.clone());
            row.source_volume = bound.filter(|volume| Some(volume) != row.target_volume.as_ref());
        }
        for (name, uid) in [
            (&row.source_volume, &mut row.source_volume_uid),
            (&row.target_volume, &mut row.target_volume_uid),
        ] {
            if uid.is_none() {
                *uid = name.as_deref().and_then(|v| observed.volume_uid(v));
            }
        }
        // The new volume's own policy (its class's), as long as Ferry has not set it to Retain.
        if !swap_begun(row, observed) {
            row.target_reclaim_policy = row
                .target_volume
                .as_ref()
                .and_then(|v| observed.volumes.get(v))
                .map(|v| v.reclaim_policy.clone())
                .or(row.target_reclaim_policy.take());
        }
        if row.original_reclaim_policy.is_none() {
            row.original_reclaim_policy = row
                .source_volume
                .as_ref()
                .and_then(|v| observed.volumes.get(v))
                .map(|v| v.reclaim_policy.clone());
        }
    }
}

/// The original claim name is bound to the new volume (both sides of the binding done).
fn swapped(row: &VolumePlan, observed: &RunObserved) -> bool {
    row.target_volume
        .as_deref()
        .is_some_and(|target| observed.bound_to(&row.claim_name, target))
}

/// The original claim is gone or going although Ferry has not begun its swap: someone else deleted
/// it. Only Ferry's own recorded intent (step `Swapping`) may start a swap.
fn deleted_by_someone_else(row: &VolumePlan, observed: &RunObserved) -> bool {
    if matches!(
        row.step.as_deref(),
        Some(STEP_SWAPPING) | Some(STEP_STARTING_REPLICA)
    ) || swapped(row, observed)
    {
        return false;
    }
    match observed.claims.get(&row.claim_name) {
        None => row.source_volume.is_some(),
        Some(claim) => claim.deleting,
    }
}

/// Next actions of the PV re-binding swap for one row: its claim moves from the old to the new volume.
fn swap(ctx: &CopyContext, row: &VolumePlan, observed: &RunObserved, now: &Time) -> Vec<ResizeAction> {
    let (Some(source), Some(target)) = (row.source_volume.clone(), row.target_volume.clone()) else {
        return vec![];
    };
    let actions = swap_claim_to(
        ctx,
        row,
        &source,
        &target,
        &row.target_size,
        row.target_storage_class.clone(),
        observed,
    );
    if actions.is_empty() {
        return nudge_stalled_binding(row, &target, observed, now)
            .into_iter()
            .collect();
    }
    actions
}

/// How long a re-created claim may stay Pending before Ferry nudges the PV controller. Its binding
/// takes milliseconds, but a conflict between the controller's own workers (or a stale cache) leaves
/// the claim to the controller's periodic resync: 15 s by default.
pub const BIND_NUDGE_AFTER_SECONDS: i64 = 2;

/// One nudge for a claim re-created onto `volume` that is still not Bound a while later.
pub fn nudge_stalled_binding(
    row: &VolumePlan,
    volume: &str,
    observed: &RunObserved,
    now: &Time,
) -> Option<ResizeAction> {
    let claim = observed.claims.get(&row.claim_name)?;
    let waited = now.0.as_second() - claim.created.as_ref()?.0.as_second();
    (claim.volume_name.as_deref() == Some(volume)
        && !claim.bound
        && !claim.deleting
        && !claim.nudged
        && waited >= BIND_NUDGE_AFTER_SECONDS)
        .then(|| ResizeAction::NudgeClaim {
            claim: row.claim_name.clone(),
            uid: claim.uid.clone(),
        })
}

/// Moves a row's claim from volume `from` to volume `to` by PV re-binding, in safe order: both
/// volumes retained, mover pods gone, the claims deleted, `to` reserved for the claim's name, the
/// claim re-created bound to it with `size` and `class`. Used forwards by the copy and backwards by
/// a rollback on request.
pub fn swap_claim_to(
    ctx: &CopyContext,
    row: &VolumePlan,
    from: &str,
    to: &str,
    size: &str,
    class: Option<String>,
    observed: &RunObserved,
) -> Vec<ResizeAction> {
    let (source, target) = (from.to_string(), to.to_string());
    // Done: the claim is bound to `to` (deleting it again would undo the swap).
    if observed
        .claims
        .get(&row.claim_name)
        .and_then(|c| c.volume_name.as_deref())
        == Some(to)
    {
        return vec![];
    }
    let not_retained: Vec<ResizeAction> = [&source, &target]
        .into_iter()
        .filter(|v| {
            observed
                .volumes
                .get(*v)
                .is_some_and(|v| v.reclaim_policy != RETAIN)
        })
        .map(|v| ResizeAction::SetReclaimPolicy {
            volume: v.clone(),
            uid: observed.volume_uid(v),
            policy: RETAIN.into(),
        })
        .collect();
    if !not_retained.is_empty() {
        return not_retained;
    }
    // Movers and both claims go in one step: the claim name is free for as short a time as can be,
    // and a Terminating claim keeps any new pod off the old volume.
    let mut deletes: Vec<ResizeAction> = [Pass::Warm, Pass::Final]
        .into_iter()
        .map(|pass| ctx.mover(row, pass))
        .filter(|pod| observed.movers.contains_key(pod))
        .map(|pod| ResizeAction::DeleteMover { pod })
        .collect();
    for name in [ctx.temp_claim(row), row.claim_name.clone()] {
        if let Some(claim) = observed.claims.get(&name)
            && !claim.deleting
        {
            deletes.push(ResizeAction::DeleteClaim {
                claim: name,
                uid: claim.uid.clone(),
            });
        }
    }
    if observed.claims.contains_key(&ctx.temp_claim(row))
        || observed.claims.contains_key(&row.claim_name)
        || !deletes.is_empty()
    {
        return deletes;
    }
    let Some(volume) = observed.volumes.get(&target) else {
        return vec![];
    };
    let reserved =
        volume.claim_name.as_deref() == Some(row.claim_name.as_str()) && volume.claim_uid.is_none();
    if !reserved {
        return vec![ResizeAction::ReserveVolume {
            uid: observed.volume_uid(&target),
            volume: target,
            claim: row.claim_name.clone(),
        }];
    }
    // The PV controller marks a reserved volume Available once it has seen the reservation; a
    // claim created before that finds the old claimRef in its cache, fails to bind and waits for
    // the controller's next resync (15 s by default).
    if volume.phase != PHASE_AVAILABLE {
        return vec![];
    }
    vec![ResizeAction::BindClaim {
        claim: row.claim_name.clone(),
        template: row.volume.clone(),
        volume: target,
        bytes: parse_bytes(size).unwrap_or(0),
        storage_class: class,
    }]
}

fn stop_replica(
    ctx: &CopyContext,
    status: &mut VolumeResizeStatus,
    observed: &RunObserved,
    batch: &[i32],
    rows: &[usize],
    now: &Time,
) -> Vec<ResizeAction> {
    match &observed.stateful_set {
        Some(sts) if sts.deleting => vec![],
        // Taking a replica down starts here: Rolling respects PodDisruptionBudgets (Offline takes
        // every replica down by design).
        Some(_) if !ctx.offline && observed.budget_blocks() => vec![],
        Some(_) => vec![ResizeAction::OrphanDeleteStatefulSet],
        None => {
            let mut actions = Vec::new();
            for &replica in batch {
                let pod_name = ctx.pod(replica);
                if let Some(pod) = observed.pods.get(&pod_name).filter(|pod| !pod.deleting) {
                    for &i in rows {
                        if status.plan[i].replica == replica {
                            status.plan[i].restarted_pod = Some(pod.uid.clone());
                            status.plan[i].stopped_at.get_or_insert_with(|| now.clone());
                        }
                    }
                    actions.push(ResizeAction::RestartPod {
                        pod: pod_name,
                        uid: pod.uid.clone(),
                    });
                }
            }
            actions
        }
    }
}

fn start_replica(
    ctx: &CopyContext,
    mut status: VolumeResizeStatus,
    observed: &RunObserved,
    batch: &[i32],
    rows: &[usize],
    now: &Time,
) -> Decision {
    let who = batch.iter().map(i32::to_string).collect::<Vec<_>>().join(", ");
    for &i in rows {
        status.plan[i].step = Some(STEP_STARTING_REPLICA.into());
    }
    // The new volume gets back the reclaim policy the old one had.
    let mut actions: Vec<ResizeAction> = rows
        .iter()
        .filter_map(|&i| {
            let row = &status.plan[i];
            let target = row.target_volume.clone()?;
            let wanted = row
                .target_reclaim_policy
                .clone()
                .or_else(|| row.original_reclaim_policy.clone())?;
            (observed.volumes.get(&target)?.reclaim_policy != wanted).then_some(
                ResizeAction::SetReclaimPolicy {
                    uid: observed.volume_uid(&target),
                    volume: target,
                    policy: wanted,
                },
            )
        })
        .collect();
    match &observed.stateful_set {
        None => actions.push(ResizeAction::RecreateStatefulSet),
        Some(sts) if sts.deleting => {}
        Some(sts) if needs_replacing(sts, &status) => actions.push(ResizeAction::OrphanDeleteStatefulSet),
        Some(_) => {
            // Every replica of the batch is back: a new pod (not the one stopped), Ready.
            let back = batch.iter().all(|&replica| {
                let stopped = rows
                    .iter()
                    .find(|&&i| status.plan[i].replica == replica)
                    .and_then(|&i| status.plan[i].restarted_pod.clone());
                observed
                    .pods
                    .get(&ctx.pod(replica))
                    .is_some_and(|p| p.ready && !p.deleting && Some(&p.uid) != stopped.as_ref())
            });
            if back && actions.is_empty() {
                for &i in rows {
                    let row = &mut status.plan[i];
                    row.step = Some(STEP_COPIED.into());
                    row.finished_at = Some(now.clone());
                    row.downtime_seconds = row
                        .stopped_at
                        .as_ref()
                        .map(|t| now.0.as_second() - t.0.as_second());
                    if let Some(source) = &row.source_volume
                        && !status.created_objects.retained_volumes.contains(source)
                    {
                        status.created_objects.retained_volumes.push(source.clone());
                    }
                }
                update_progress(&mut status);
                return decide(
                    status,
                    vec![],
                    &format!("replica(s) {who} run on their new volumes"),
                );
            }
        }
    }
    decide(
        status,
        actions,
        &format!("starting replica(s) {who} on their new volumes"),
    )
}

/// Whether Ferry recorded its intent to swap this row (or the swap is done): from then on the row
/// only goes forward, so a rollback of its batch never leaves its claim missing or half-bound.
fn swap_begun(row: &VolumePlan, observed: &RunObserved) -> bool {
    matches!(
        row.step.as_deref(),
        Some(STEP_SWAPPING) | Some(STEP_STARTING_REPLICA) | Some(STEP_COPIED)
    ) || swapped(row, observed)
}

/// A pod started on the old claim after the final sync (someone else's StatefulSet) while the claim
/// is still whole: its writes are not in the copy, so the swap has not begun after all. The row
/// steps back and its movers go, so a new final sync runs once the replica is stopped again.
fn undo_stale_swaps(
    ctx: &CopyContext,
    status: &mut VolumeResizeStatus,
    observed: &RunObserved,
    rows: &[usize],
) -> Vec<ResizeAction> {
    let mut actions = Vec::new();
    for &i in rows {
        let row = &status.plan[i];
        let claim_whole = observed
            .claims
            .get(&row.claim_name)
            .is_some_and(|claim| !claim.deleting && claim.volume_name == row.source_volume);
        let pod_back = observed.pods.contains_key(&ctx.pod(row.replica));
        if row.step.as_deref() != Some(STEP_SWAPPING) || !claim_whole || !pod_back {
            continue;
        }
        for pass in [Pass::Warm, Pass::Final] {
            let pod = ctx.mover(row, pass);
            if observed.movers.contains_key(&pod) {
                actions.push(ResizeAction::DeleteMover { pod });
            }
        }
        // Its temporary claim already went with the swap: the copy it held (set to Retain for
        // the swap) is listed as retained, and the next temporary claim gets a volume of its own.
        if !observed.claims.contains_key(&ctx.temp_claim(row)) {
            let row = &mut status.plan[i];
            if let Some(old_target) = row.target_volume.take()
                && observed.volumes.contains_key(&old_target)
                && !status.created_objects.retained_volumes.contains(&old_target)
            {
                status.created_objects.retained_volumes.push(old_target);
            }
            status.plan[i].target_volume_uid = None;
        }
        status.plan[i].step = Some(STEP_STOPPING_REPLICA.into());
    }
    actions
}

/// Before and during a swap nothing may use the claim: a StatefulSet that appeared meanwhile (its
/// controller would provision an empty claim under the name being swapped) is orphan-deleted again,
/// and a pod it started is deleted. `None` when the way is clear (or no swap is under way).
fn clear_for_swap(
    ctx: &CopyContext,
    status: &VolumeResizeStatus,
    observed: &RunObserved,
    rows: &[usize],
) -> Option<Vec<ResizeAction>> {
    let mid_swap: Vec<&VolumePlan> = rows
        .iter()
        .map(|&i| &status.plan[i])
        .filter(|row| swap_begun(row, observed) && !swapped(row, observed))
        .collect();
    if mid_swap.is_empty() {
        return None;
    }
    match &observed.stateful_set {
        Some(sts) if sts.deleting => return Some(vec![]),
        Some(_) => return Some(vec![ResizeAction::OrphanDeleteStatefulSet]),
        None => {}
    }
    let mut waiting = false;
    let mut actions = Vec::new();
    for row in mid_swap {
        let name = ctx.pod(row.replica);
        match observed.pods.get(&name) {
            Some(pod) if pod.deleting => waiting = true,
            Some(pod) => actions.push(ResizeAction::RestartPod {
                pod: name,
                uid: pod.uid.clone(),
            }),
            None => {}
        }
    }
    actions.dedup();
    (waiting || !actions.is_empty()).then_some(actions)
}

/// The StatefulSet is not the one a finished copy must leave: someone else's, or one whose templates
/// lack the new size or class of a copied volume.
fn needs_replacing(sts: &RunStatefulSet, status: &VolumeResizeStatus) -> bool {
    sts.foreign
        || status.plan.iter().filter(|row| is_copy(row)).any(|row| {
            let size_differs = parse_bytes(&row.target_size)
                .is_ok_and(|bytes| sts.template_sizes.get(&row.volume) != Some(&bytes));
            let class_differs = row
                .target_storage_class
                .as_ref()
                .is_some_and(|class| sts.template_classes.get(&row.volume) != Some(&Some(class.clone())));
            size_differs || class_differs
        })
}

/// Undo the copy of the replicas in flight, row by row and exactly: a row whose swap has begun
/// finishes it (its old volume retained and listed), every other row loses its movers and temporary
/// claim. Only when every claim is whole again does the StatefulSet come back from the backup, so
/// its controller never provisions an empty claim in place of one mid-swap.
fn roll_back(
    ctx: &CopyContext,
    mut status: VolumeResizeStatus,
    observed: &RunObserved,
    batch: &[i32],
    now: &Time,
) -> Decision {
    let mut actions = usage_leftovers(ctx, &status, observed);
    let mut swaps_pending = false;
    let rows: Vec<usize> = (0..status.plan.len())
        .filter(|&i| is_copy(&status.plan[i]) && batch.contains(&status.plan[i].replica))
        .collect();
    if let Some(clearing) = clear_for_swap(ctx, &status, observed, &rows) {
        actions.extend(clearing);
        let summary = status.message.clone().unwrap_or_default();
        return Decision {
            status,
            actions,
            summary,
        };
    }
    for &i in &rows {
        if swap_begun(&status.plan[i], observed) {
            let forward = finish_swap_in_rollback(ctx, &mut status, i, observed, now);
            swaps_pending |= !forward.is_empty() || !swapped(&status.plan[i], observed);
            actions.extend(forward);
            continue;
        }
        let row = &mut status.plan[i];
        row.step = Some(STEP_ROLLED_BACK.into());
        // A swap undone before its claim was deleted may have set the old volume to Retain.
        if let (Some(source), Some(policy)) = (&row.source_volume, &row.original_reclaim_policy)
            && observed.bound_to(&row.claim_name, source)
            && observed
                .volumes
                .get(source)
                .is_some_and(|v| &v.reclaim_policy != policy)
        {
            actions.push(ResizeAction::SetReclaimPolicy {
                volume: source.clone(),
                uid: observed.volume_uid(source),
                policy: policy.clone(),
            });
        }
        for pass in [Pass::Warm, Pass::Final] {
            let pod = ctx.mover(row, pass);
            if observed.movers.contains_key(&pod) {
                actions.push(ResizeAction::DeleteMover { pod });
            }
        }
        let temp = ctx.temp_claim(row);
        if let Some(claim) = observed.claims.get(&temp)
            && !claim.deleting
        {
            actions.push(ResizeAction::DeleteClaim {
                claim: temp,
                uid: claim.uid.clone(),
            });
        }
    }
    match &observed.stateful_set {
        None if !swaps_pending => actions.push(ResizeAction::RestoreStatefulSet),
        None => {}
        Some(_) if actions.is_empty() => {
            let leftovers = rows
                .iter()
                .any(|&i| observed.claims.contains_key(&ctx.temp_claim(&status.plan[i])));
            if !leftovers {
                return rolled_back(status, now);
            }
        }
        Some(_) => {}
    }
    let summary = status
        .message
        .clone()
        .unwrap_or_else(|| format!("rolling back replicas {batch:?}"));
    Decision {
        status,
        actions,
        summary,
    }
}

/// A row of a batch being rolled back whose swap had begun: the swap goes on until the claim is
/// bound to its new volume, which then gets back the old volume's reclaim policy; the row is then
/// done, and its old volume retained like any other copied row's.
fn finish_swap_in_rollback(
    ctx: &CopyContext,
    status: &mut VolumeResizeStatus,
    i: usize,
    observed: &RunObserved,
    now: &Time,
) -> Vec<ResizeAction> {
    if !swapped(&status.plan[i], observed) {
        status.plan[i].step = Some(STEP_SWAPPING.into());
        return swap(ctx, &status.plan[i], observed, now);
    }
    let row = &mut status.plan[i];
    let wanted = row
        .target_reclaim_policy
        .as_ref()
        .or(row.original_reclaim_policy.as_ref());
    if let (Some(target), Some(wanted)) = (&row.target_volume, wanted)
        && observed
            .volumes
            .get(target)
            .is_some_and(|v| &v.reclaim_policy != wanted)
    {
        return vec![ResizeAction::SetReclaimPolicy {
            volume: target.clone(),
            uid: observed.volume_uid(target),
            policy: wanted.clone(),
        }];
    }
    if row.step.as_deref() != Some(STEP_COPIED) {
        row.step = Some(STEP_COPIED.into());
        row.finished_at = Some(now.clone());
    }
    if let Some(source) = &row.source_volume
        && !status.created_objects.retained_volumes.contains(source)
    {
        status.created_objects.retained_volumes.push(source.clone());
    }
    vec![]
}

/// The rollback is over: Failed, saying why, and which claims stayed on their new volumes.
fn rolled_back(mut status: VolumeResizeStatus, now: &Time) -> Decision {
    status.phase = Some(Phase::Failed);
    status.finished_at.get_or_insert_with(|| now.clone());
    status.created_objects.temporary_claims.clear();
    update_progress(&mut status);
    let reason = status.message.clone().unwrap_or_default();
    let mut message = if reason.starts_with("rolled back") {
        reason
    } else {
        format!("rolled back: {reason}")
    };
    let kept: Vec<&str> = status
        .plan
        .iter()
        .filter(|row| is_copy(row) && row.step.as_deref() == Some(STEP_COPIED))
        .map(|row| row.claim_name.as_str())
        .collect();
    let note = "already on their new volumes stay there";
    if !kept.is_empty() && !message.contains(note) {
        message = format!("{message}; {} {note} (old volumes retained)", kept.join(", "));
    }
    status.message = Some(message.clone());
    Decision {
        status,
        actions: vec![],
        summary: message,
    }
}

fn finish(mut status: VolumeResizeStatus, observed: &RunObserved, now: &Time) -> Decision {
    match &observed.stateful_set {
        None => decide(
            status,
            vec![ResizeAction::RecreateStatefulSet],
            "re-creating the StatefulSet",
        ),
        Some(sts) if sts.deleting => decide(status, vec![], "waiting for the StatefulSet to be released"),
        // Never Succeeded while the StatefulSet is someone else's or has other templates.
        Some(sts) if needs_replacing(sts, &status) => decide(
            status,
            vec![ResizeAction::OrphanDeleteStatefulSet],
            "replacing a StatefulSet that lacks the new volume claim templates (pods keep running)",
        ),
        Some(sts) if sts.ready_replicas < sts.replicas => {
            decide(status, vec![], "waiting for every replica to be Ready")
        }
        Some(_) => {
            status.phase = Some(Phase::Succeeded);
            status.finished_at.get_or_insert_with(|| now.clone());
            let retained = status.created_objects.retained_volumes.len();
            let message = format!("every volume copied and swapped; {retained} old volume(s) retained");
            status.message = Some(message.clone());
            status.created_objects.temporary_claims.clear();
            Decision {
                status,
                actions: vec![],
                summary: message,
            }
        }
    }
}

/// Takes a running mover's last progress line into the row (live bytes, files and rate).
fn absorb_progress(row: &mut VolumePlan, mover: &RunMover) {
    if mover.phase != MoverPhase::Running {
        return;
    }
    let Some(progress) = mover
        .progress
        .as_deref()
        .and_then(|text| serde_json::from_str::<Progress>(text).ok())
    else {
        return;
    };
    row.bytes_done = Some(progress.bytes_done);
    row.bytes_total = Some(progress.bytes_total);
    row.files_done = Some(progress.files_done);
    row.files_total = Some(progress.files_total);
    row.bytes_per_second = Some(progress.bytes_per_second);
}

/// Takes files and bytes from a mover's result JSON into the row; returns the bytes the pass wrote.
fn absorb_result(row: &mut VolumePlan, result: Option<&str>) -> Option<u64> {
    // A failure's result has no files or bytes and does not parse: the row is left as it is.
    let result = result.and_then(|text| serde_json::from_str::<SyncResult>(text).ok())?;
    row.files_done = Some(result.files);
    row.files_total = Some(result.files);
    row.bytes_done = Some(result.bytes);
    row.bytes_total = Some(result.bytes);
    // The rate of what this pass wrote (a final pass that found little to do is not "fast").
    if result.seconds > 0.0 && result.bytes_copied > 0 {
        row.bytes_per_second = Some((result.bytes_copied as f64 / result.seconds) as u64);
    }
    Some(result.bytes_copied)
}

fn decide(mut status: VolumeResizeStatus, actions: Vec<ResizeAction>, summary: &str) -> Decision {
    if !summary.is_empty() && status.phase != Some(Phase::RollingBack) {
        status.message = Some(summary.to_string());
    }
    Decision {
        status,
        actions,
        summary: summary.to_string(),
    }
}

#[cfg(test)]
mod tests;
