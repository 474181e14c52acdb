//! Undoing the copy of the replicas in flight, row by row and exactly.

use super::*;
use crate::volume_writes::VolumeWrite;

/// Undo the copy of the replicas in flight, row by row and exactly: a row whose swap has begun
/// finishes it (its old volume retained and listed), every other row loses its movers and temporary
/// claim. Only when every claim is whole again does the StatefulSet come back from the backup, so
/// its controller never provisions an empty claim in place of one mid-swap.
pub(super) fn roll_back(
    ctx: &CopyContext,
    mut status: VolumeResizeStatus,
    observed: &Observed,
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
        actions.extend(undo_row(ctx, &mut status.plan[i], observed));
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

/// A row whose swap had not begun goes back as it was: its old volume's policy, its movers gone,
/// the new volume's own policy given back, then its temporary claim deleted.
fn undo_row(ctx: &CopyContext, row: &mut VolumePlan, observed: &Observed) -> Vec<ResizeAction> {
    let mut actions = Vec::new();
    row.step = Some(RowStep::RolledBack);
    // A swap undone before its claim was deleted may have set the old volume to Retain.
    if let (Some(source), Some(policy)) = (&row.source_volume, &row.original_reclaim_policy)
        && observed.bound_to(&row.claim_name, source)
    {
        actions.extend(observed.set_reclaim_policy(source, policy));
    }
    actions.extend(ctx.delete_movers(row, observed));
    // ... and the new volume to Retain: it gets its own policy back before its temporary claim
    // goes, or its disk would outlive the claim with nobody knowing.
    if let (Some(target), Some(policy)) = (&row.target_volume, &row.target_reclaim_policy)
        && let Some(give_back) = observed.set_reclaim_policy(target, policy)
    {
        actions.push(give_back);
        return actions;
    }
    let temp = ctx.temp_claim(row);
    if let Some(claim) = observed.claims.get(&temp)
        && !claim.deleting
    {
        actions.push(ResizeAction::Volume(VolumeWrite::DeleteClaim {
            claim: temp,
            uid: claim.uid.clone(),
        }));
    }
    actions
}

/// A row of a batch being rolled back whose swap had begun: the swap goes on until the claim is
/// bound to its new volume, which then gets back the old volume's reclaim policy; the row is then
/// done, and its old volume retained like any other copied row's.
pub(super) fn finish_swap_in_rollback(
    ctx: &CopyContext,
    status: &mut VolumeResizeStatus,
    i: usize,
    observed: &Observed,
    now: &Time,
) -> Vec<ResizeAction> {
    if !swapped(&status.plan[i], observed) {
        status.plan[i].step = Some(RowStep::Swapping);
        return swap(ctx, &status.plan[i], observed, now);
    }
    let row = &mut status.plan[i];
    let wanted = row
        .target_reclaim_policy
        .as_ref()
        .or(row.original_reclaim_policy.as_ref());
    if let (Some(target), Some(wanted)) = (&row.target_volume, wanted)
        && let Some(give_back) = observed.set_reclaim_policy(target, wanted)
    {
        return vec![give_back];
    }
    mark_copied(status, i, now);
    vec![]
}

/// Row `i` is done on its new volume (once: a row already done keeps when it was), and its old
/// volume is kept for a rollback on request until the retention expires.
pub(super) fn mark_copied(status: &mut VolumeResizeStatus, i: usize, now: &Time) {
    let row = &mut status.plan[i];
    if row.step != Some(RowStep::Copied) {
        row.step = Some(RowStep::Copied);
        row.finished_at = Some(now.clone());
    }
    if let Some(source) = &row.source_volume
        && !status.created_objects.retained_volumes.contains(source)
    {
        status.created_objects.retained_volumes.push(source.clone());
    }
}

/// The rollback is over: Failed, saying why, and which claims stayed on their new volumes.
pub(super) fn rolled_back(mut status: VolumeResizeStatus, now: &Time) -> Decision {
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
        .filter(|row| is_copy(row) && row.step == Some(RowStep::Copied))
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
