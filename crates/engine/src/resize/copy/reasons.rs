//! Why the copy of the replicas in flight must be undone now, if it must: someone else's
//! StatefulSet before the swap began, a row without a target size, a mover that failed or cannot
//! run, a step that outlasted `timeoutSeconds`, a claim deleted by someone else.

use super::*;
use ferry_api::condition::REASON_STEP_TOO_LONG;

/// The reason, without "rolling back …" (the caller adds who); a failed mover's reason is also
/// kept on its row.
pub(super) fn reason_to_roll_back(
    ctx: &CopyContext,
    status: &mut VolumeResizeStatus,
    observed: &Observed,
    rows: &[usize],
    now: &Time,
) -> Option<String> {
    let foreign = observed
        .stateful_set
        .as_ref()
        .is_some_and(|sts| sts.foreign && !sts.deleting);
    if foreign && !rows.iter().any(|&i| swap_begun(&status.plan[i], observed)) {
        return Some(format!(
            "StatefulSet {} was re-created by someone else (a GitOps tool or a parent operator?) with its old volume claim templates while Ferry was resizing",
            ctx.sts_name
        ));
    }
    // A row without a target size cannot get a new volume.
    if let Some(reason) = rows
        .iter()
        .map(|&i| &status.plan[i])
        .filter(|row| !swap_begun(row, observed))
        .find_map(unsized_target)
    {
        return Some(reason);
    }
    // A failed (or hopelessly stuck) mover before the swap.
    if let Some(reason) = serving_failed(ctx, status, observed, rows, now) {
        return Some(reason);
    }
    for &i in rows {
        for pass in [Pass::Warm, Pass::Final] {
            if let Some(failure) = observed
                .movers
                .get(&ctx.mover(&status.plan[i], pass))
                .and_then(|m| m.failure(now, ctx.stuck_after_seconds))
            {
                let row = &mut status.plan[i];
                let reason = format!("mover for {} {failure}", row.claim_name);
                row.message = Some(reason.clone());
                return Some(reason);
            }
        }
    }
    // A step before the swap that outlasts `timeoutSeconds` (a mover that never ends, a replica
    // that never stops, a target that never binds).
    if let Some((claim, step, took, limit)) = rows
        .iter()
        .map(|&i| &status.plan[i])
        .filter(|row| !swap_begun(row, observed))
        .find_map(|row| {
            let limit = step_limit(ctx, row.step)?;
            let started = row.step_started_at.as_ref()?.0.as_second();
            let took = now.0.as_second() - started;
            (took > limit).then(|| {
                (
                    row.claim_name.clone(),
                    row.step.map(RowStep::as_str).unwrap_or_default(),
                    took,
                    limit,
                )
            })
        })
    {
        let reason = format!("step {step} of {claim} took {took} s, more than timeoutSeconds ({limit} s)");
        crate::resize::timeout::timed_out(status, REASON_STEP_TOO_LONG, &reason, now);
        return Some(reason);
    }
    // A claim deleted by someone else mid-copy (`kubectl delete pvc`, a retention policy): never
    // bind its name to a partial copy.
    rows.iter()
        .map(|&i| &status.plan[i])
        .find(|row| deleted_by_someone_else(row, observed))
        .map(|row| {
            format!(
                "claim {} was deleted by someone else during the copy; stopped without swapping",
                row.claim_name
            )
        })
}

/// The longest a row may stay in `step` before its swap: a mover's pass only what the spec says,
/// every other step (stopping, binding, waiting) the spec's or the operator's default.
fn step_limit(ctx: &CopyContext, step: Option<RowStep>) -> Option<i64> {
    match step {
        Some(RowStep::WarmCopy | RowStep::FinalSync) => ctx.pass_timeout_seconds,
        _ => Some(ctx.step_timeout_seconds),
    }
}

/// A row's serving mover (a copy from another node) failed before its swap: said on the row too.
fn serving_failed(
    ctx: &CopyContext,
    status: &mut VolumeResizeStatus,
    observed: &Observed,
    rows: &[usize],
    now: &Time,
) -> Option<String> {
    for &i in rows {
        let row = &status.plan[i];
        if !swap_begun(row, observed)
            && let Some(reason) = super::remote::serving_failure(ctx, row, observed, now)
        {
            status.plan[i].message = Some(reason.clone());
            return Some(reason);
        }
    }
    None
}
