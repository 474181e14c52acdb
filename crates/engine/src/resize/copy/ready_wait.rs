//! The copy's waits for readiness, bounded by `timeoutSeconds` like its steps: a replica started
//! on its new volumes that is not Ready in time (a forced resize's or a rescue's replica, down
//! from the start, may never be), or a StatefulSet whose replicas are not all Ready once every
//! row is done. Past the limit the resize fails, saying which replicas, with the StatefulSet whole
//! and a replica started kept on its new volume (its copy was verified; a rollback on request puts
//! it back), instead of holding the StatefulSet, and every later resize of it, for ever.

use super::*;
use crate::resize::listed;
use crate::resize::timeout::{overrun, timed_out};
use ferry_api::condition::REASON_REPLICA_NOT_READY;

/// The batch runs on its new volumes: started and waited for ([`replica::start_replica`]) within
/// the limit, else the resize fails ([`start_overdue`]).
pub(super) fn start_in_time(
    ctx: &CopyContext,
    status: VolumeResizeStatus,
    observed: &Observed,
    batch: &[i32],
    rows: &[usize],
    now: &Time,
) -> Decision {
    start_overdue(ctx, &status, observed, batch, rows, now)
        .unwrap_or_else(|| replica::start_replica(ctx, status, observed, batch, rows, now))
}

/// Every row is done: the end ([`replica::finish`]) waited for within the limit, else the resize
/// fails ([`finish_overdue`]).
pub(super) fn finish_in_time(
    ctx: &CopyContext,
    status: VolumeResizeStatus,
    observed: &Observed,
    now: &Time,
) -> Decision {
    finish_overdue(ctx, &status, observed, now).unwrap_or_else(|| replica::finish(status, observed, now))
}

/// The batch runs on its new volumes, the StatefulSet is whole, and its replicas have not been
/// back and Ready within the limit of their `StartingReplica` step: the rows are done (copied,
/// the old volumes retained) and the resize fails. `None`: still within it, or not that far.
fn start_overdue(
    ctx: &CopyContext,
    status: &VolumeResizeStatus,
    observed: &Observed,
    batch: &[i32],
    rows: &[usize],
    now: &Time,
) -> Option<Decision> {
    let sts = observed.stateful_set.as_ref()?;
    if sts.deleting || replica::needs_replacing(sts, status) {
        return None;
    }
    let since = rows
        .iter()
        .map(|&i| &status.plan[i])
        .filter(|row| row.step == Some(RowStep::StartingReplica))
        .filter_map(|row| row.step_started_at.as_ref())
        .map(|t| t.0.as_second())
        .min();
    overrun(since, ctx.step_timeout_seconds, now)?;
    let down = observed.replicas_down(ctx.sts_name, batch.iter().copied());
    if down.is_empty() {
        return None;
    }
    let mut status = status.clone();
    for &i in rows {
        rollback::mark_copied(&mut status, i, now);
    }
    update_progress(&mut status);
    let message = format!(
        "replica(s) {} not Ready within timeoutSeconds ({} s) after starting on the new volumes; they stay on them (the old volumes are retained: a rollback on request puts them back), the other replicas were not copied",
        listed(&down),
        ctx.step_timeout_seconds
    );
    Some(failed(status, message, now))
}

/// Every row is done and the StatefulSet has the new templates, but not every replica is Ready
/// within the limit from when the last row finished: the resize fails. `None`: still within it,
/// or not that far.
fn finish_overdue(
    ctx: &CopyContext,
    status: &VolumeResizeStatus,
    observed: &Observed,
    now: &Time,
) -> Option<Decision> {
    let sts = observed.stateful_set.as_ref()?;
    if sts.deleting || replica::needs_replacing(sts, status) || sts.ready_replicas >= sts.replicas {
        return None;
    }
    let since = status
        .plan
        .iter()
        .filter(|row| is_copy(row))
        .filter_map(|row| row.finished_at.as_ref())
        .map(|t| t.0.as_second())
        .max();
    overrun(since, ctx.step_timeout_seconds, now)?;
    let ordinals = sts.first_ordinal..sts.first_ordinal + sts.replicas;
    let message = format!(
        "replica(s) {} not Ready within timeoutSeconds ({} s) after every volume was copied and swapped",
        listed(&observed.replicas_down(ctx.sts_name, ordinals)),
        ctx.step_timeout_seconds
    );
    Some(failed(status.clone(), message, now))
}

fn failed(mut status: VolumeResizeStatus, message: String, now: &Time) -> Decision {
    timed_out(&mut status, REASON_REPLICA_NOT_READY, &message, now);
    status.created_objects.temporary_claims.clear();
    fail(status, vec![], message, now)
}
