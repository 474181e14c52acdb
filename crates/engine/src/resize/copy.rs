//! Copy (SPEC §2), Rolling: one replica at a time — target claim, warm copy while the replica runs,
//! stop the replica, final sync with verification, swap by PV re-binding (one copy of the data), start
//! the replica on its new volume and wait until it is Ready. A mover failure before the swap rolls the
//! replica back. Every stage is derived from what is observed, so a restarted operator resumes.

use crate::names;
use crate::resize::action::{MOVER_STUCK_SECONDS, Pass, ResizeAction};
use crate::resize::observed::{MoverPhase, MoverView, Observed, StatefulSetView};
use crate::resize::progress::update_progress;
use crate::resize::run::{Decision, unsized_target};
use ferry_api::{ChosenStrategy, Mode, Phase, RowStep, VolumePlan, VolumeResizeSpec, VolumeResizeStatus};
use ferry_mover_report::{Progress, SyncResult, UsageResult};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, Time};

mod advance;
pub mod capabilities;
pub mod clone;
pub mod converge;
mod measure;
mod progress;
pub use progress::is_result_line;
mod ready_wait;
mod reasons;
mod remote;
mod replica;
mod rollback;
mod swap;
mod volumes;

use advance::advance;
use measure::{measure_usage, usage_leftovers};
use progress::{absorb_progress, absorb_result, count_final_pass, result_milliseconds};
use reasons::reason_to_roll_back;
use replica::stop_replica;
pub use replica::unready_others;
use rollback::roll_back;
pub use swap::{BIND_NUDGE_AFTER_SECONDS, nudge_stalled_binding, swap_claim_to};
use swap::{clear_for_swap, swap, swap_begun, swapped, undo_stale_swaps};
use volumes::{deleted_by_someone_else, record_volumes};

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
    /// `spec.timeoutSeconds` (else the operator's default): the longest any step before the swap
    /// may take, past it the replica is rolled back (the swap itself only goes forward); and the
    /// longest a replica may take to be Ready after it, past it the resize fails.
    pub step_timeout_seconds: i64,
    /// `spec.timeoutSeconds` alone: the longest a mover's pass (the warm copy, the final sync) may
    /// take. The operator's default does not bound them: a pass over terabytes takes hours while it
    /// moves, and a mover that stops moving fails as stuck (`stuck_after_seconds`) whatever this is.
    pub pass_timeout_seconds: Option<i64>,
    /// A serving replica is taken down only while every other one is Ready (Rolling, `force` or not).
    pub quorum: bool,
    /// A standby final mover tracks changes (`spec.mover.trackChanges`): the replica stops only
    /// once it is armed, and its pass visits only what changed.
    pub track_changes: bool,
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

/// Mover pods that may run at once unless `spec.mover.concurrency` says otherwise.
pub const DEFAULT_CONCURRENCY: usize = 4;

/// Mover pods a copy may run at once: `spec.mover.concurrency`, else [`DEFAULT_CONCURRENCY`].
pub fn mover_concurrency(spec: &VolumeResizeSpec) -> usize {
    spec.mover
        .as_ref()
        .and_then(|m| m.concurrency)
        .map_or(DEFAULT_CONCURRENCY, |n| n.max(1) as usize)
}

impl<'a> CopyContext<'a> {
    /// The copy settings a VolumeResize's spec asks for.
    pub fn for_run(
        spec: &'a VolumeResizeSpec,
        backup_name: &'a str,
        suffix: &'a str,
        stopping: bool,
        timeout_seconds: i64,
    ) -> Self {
        CopyContext {
            sts_name: &spec.stateful_set_name,
            backup_name,
            suffix,
            warm_copy: spec.warm_copy,
            stopping,
            offline: spec.mode == Mode::Offline,
            concurrency: mover_concurrency(spec),
            // A timeout shorter than the default patience for stuck movers shortens that too.
            stuck_after_seconds: timeout_seconds.min(MOVER_STUCK_SECONDS),
            step_timeout_seconds: timeout_seconds,
            pass_timeout_seconds: spec.timeout_seconds,
            // `force` only lets a resize start while not all replicas are Ready (the precheck):
            // it never lets a stop take a second replica down.
            quorum: spec.mode == Mode::Rolling,
            track_changes: ferry_api::MoverSettings::tracks_changes(spec.mover.as_ref()),
        }
    }

    pub fn temp_claim(&self, row: &VolumePlan) -> String {
        temp_claim_name(row, self.suffix)
    }

    pub fn mover(&self, row: &VolumePlan, pass: Pass) -> String {
        mover_name(row, self.suffix, pass)
    }

    /// The pod serving the row's old volume to another node (a copy there).
    pub fn serving_mover(&self, row: &VolumePlan) -> String {
        names::serving_mover(&row.claim_name, self.suffix)
    }

    /// Deleting the row's mover pods (warm, final, and the serving one) that exist.
    fn delete_movers(&self, row: &VolumePlan, observed: &Observed) -> Vec<ResizeAction> {
        let serving = self.serving_mover(row);
        // A final pass that succeeded told its serving mover to stop (`--stop-server`): that pod
        // goes at once too, its claim released without waiting for its node's kubelet to report
        // the exit (a move's swap waited about 0.2 s for it).
        let served = (observed.movers.get(&self.mover(row, Pass::Final))).is_some_and(|m| m.exited_ok());
        [Pass::Warm, Pass::Final]
            .into_iter()
            .map(|pass| self.mover(row, pass))
            .chain(std::iter::once(serving.clone()))
            .filter_map(|pod| {
                let mover = observed.movers.get(&pod)?;
                Some(if pod == serving && served {
                    mover.delete_ended(&pod)
                } else {
                    mover.delete(&pod)
                })
            })
            .collect()
    }

    fn pod(&self, replica: i32) -> String {
        names::pod(self.sts_name, replica)
    }
}

/// The replicas handled now. Offline: every unfinished one. Rolling: one, the one already begun if
/// any; else one that is down already (copying it first costs no availability, and the others-Ready
/// gate would hold every other one while it is down); else the lowest.
fn next_batch(ctx: &CopyContext, status: &VolumeResizeStatus, observed: &Observed) -> Vec<i32> {
    let unfinished = status
        .plan
        .iter()
        .filter(|row| is_copy(row) && row.finished_at.is_none());
    let mut batch: Vec<i32> = unfinished.clone().map(|row| row.replica).collect();
    batch.sort_unstable();
    batch.dedup();
    if ctx.offline {
        return batch;
    }
    let begun = unfinished
        .filter(|row| row.step.is_some())
        .map(|row| row.replica)
        .min();
    let down = || {
        observed
            .replicas_down(ctx.sts_name, batch.iter().copied())
            .first()
            .copied()
    };
    begun
        .or_else(down)
        .or_else(|| batch.first().copied())
        .into_iter()
        .collect()
}

fn is_copy(row: &VolumePlan) -> bool {
    row.strategy == Some(ChosenStrategy::Copy)
}

pub fn plan_copy(
    ctx: &CopyContext,
    previous: &VolumeResizeStatus,
    observed: &Observed,
    now: &Time,
) -> Decision {
    let mut status = previous.clone();
    status.started_at.get_or_insert_with(|| now.clone());
    if status.phase != Some(Phase::RollingBack) {
        status.phase = Some(Phase::Running);
    }
    // Deleted: measuring pods go first; with no backup yet, nothing else was touched.
    if ctx.stopping {
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
    record(ctx, &mut status, observed);

    let batch = next_batch(ctx, &status, observed);
    if batch.is_empty() && status.phase != Some(Phase::RollingBack) {
        return ready_wait::finish_in_time(ctx, status, observed, now);
    }
    let who = named(&batch);
    if status.phase == Some(Phase::RollingBack) {
        return roll_back(ctx, status, observed, &batch, now);
    }
    let rows = start_rows(&mut status, &batch, now);

    if ctx.stopping && !committed(&status, observed, &rows) {
        return stop_uncommitted(ctx, status, observed, &batch, &rows, &who, now);
    }
    let status = match undone_or_broken(ctx, status, observed, &batch, &who, &rows, now) {
        Checked::GoOn(status) => status,
        Checked::Decided(decision) => return decision,
    };
    if let Some(actions) = clear_for_swap(ctx, &status, observed, &rows) {
        return decide(
            status,
            actions,
            &format!("keeping the claims of {who} free for their swap"),
        );
    }

    // The replica runs on its new volumes: wait for it to be Ready, then the rows are done.
    if rows.iter().all(|&i| swapped(&status.plan[i], observed)) {
        return ready_wait::start_in_time(ctx, status, observed, &batch, &rows, now);
    }

    advance(ctx, status, observed, &batch, &rows, &who, now)
}

/// What a check before the batch goes on concluded: go on with this status, or this step first.
enum Checked {
    GoOn(VolumeResizeStatus),
    Decided(Decision),
}

/// What goes back before the batch goes on: a swap a pod's return made stale, a copy from another
/// node whose connection broke (started again), or a reason to roll the batch back.
fn undone_or_broken(
    ctx: &CopyContext,
    mut status: VolumeResizeStatus,
    observed: &Observed,
    batch: &[i32],
    who: &str,
    rows: &[usize],
    now: &Time,
) -> Checked {
    let stale = undo_stale_swaps(ctx, &mut status, observed, rows);
    if !stale.is_empty() {
        let summary = format!("{who} started again before its swap; its final sync must run again");
        return Checked::Decided(decide(status, stale, &summary));
    }
    let restarts = remote::restart_broken(ctx, &mut status, observed, rows);
    if !restarts.is_empty() {
        let summary = format!("the copy of {who} from its node broke; starting it again");
        return Checked::Decided(decide(status, restarts, &summary));
    }
    if let Some(reason) = reason_to_roll_back(ctx, &mut status, observed, rows, now) {
        status.phase = Some(Phase::RollingBack);
        status.message = Some(format!("{reason}; rolling back {who}"));
        return Checked::Decided(roll_back(ctx, status, observed, batch, now));
    }
    Checked::GoOn(status)
}

/// What the status records of the cluster: the volumes each row is on, the temporary claims of
/// the rows not finished, and the progress.
fn record(ctx: &CopyContext, status: &mut VolumeResizeStatus, observed: &Observed) {
    record_volumes(ctx, status, observed);
    status.created_objects.temporary_claims = status
        .plan
        .iter()
        .filter(|row| is_copy(row) && row.finished_at.is_none())
        .map(|row| ctx.temp_claim(row))
        .collect();
    update_progress(status);
}

/// The batch's copy rows (their indexes), each marked started.
fn start_rows(status: &mut VolumeResizeStatus, batch: &[i32], now: &Time) -> Vec<usize> {
    let rows: Vec<usize> = (0..status.plan.len())
        .filter(|&i| is_copy(&status.plan[i]) && batch.contains(&status.plan[i].replica))
        .collect();
    for &i in &rows {
        status.plan[i].started_at.get_or_insert_with(|| now.clone());
    }
    rows
}

/// The batch's replicas as the summaries name them: "replica 1", "replicas 0, 2".
fn named(batch: &[i32]) -> String {
    match batch {
        [one] => format!("replica {one}"),
        many => format!(
            "replicas {}",
            many.iter().map(i32::to_string).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// A row of the batch has begun its swap (or is on its new volume): it only goes forward.
fn committed(status: &VolumeResizeStatus, observed: &Observed, rows: &[usize]) -> bool {
    rows.iter().any(|&i| {
        let row = &status.plan[i];
        swapped(row, observed) || matches!(row.step, Some(RowStep::Swapping | RowStep::StartingReplica))
    })
}

/// Deleted while the batch has not begun its swap: Failed at once if nothing of the batch was
/// started, else its replicas are rolled back.
fn stop_uncommitted(
    ctx: &CopyContext,
    mut status: VolumeResizeStatus,
    observed: &Observed,
    batch: &[i32],
    rows: &[usize],
    who: &str,
    now: &Time,
) -> Decision {
    let untouched = rows.iter().all(|&i| {
        let row = &status.plan[i];
        row.step.is_none() && !observed.claims.contains_key(&ctx.temp_claim(row))
    }) && observed.stateful_set.as_ref().is_some_and(|sts| !sts.deleting)
        && observed.movers.is_empty();
    if untouched {
        let message = format!("stopped because the VolumeResize was deleted; {who} not started");
        return fail(status, vec![], message, now);
    }
    status.phase = Some(Phase::RollingBack);
    status.message = Some(format!("the VolumeResize was deleted; rolling back {who}"));
    roll_back(ctx, status, observed, batch, now)
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
