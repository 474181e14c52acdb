//! Which volumes a row is on, remembered (name, UID, reclaim policies) the first time they are seen,
//! and a claim deleted by someone else told apart from Ferry's own swap.

use super::*;

/// Remembers which PV each side of a row is on, the first time it is seen.
pub(super) fn record_volumes(ctx: &CopyContext, status: &mut VolumeResizeStatus, observed: &Observed) {
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
            row.target_reclaim_policy = None;
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
        // The new volume's own policy (its class's), the first time it is seen: a swap sets it to
        // Retain, and a swap stepped back (`undo_stale_swaps`) must not take that for its own.
        if row.target_reclaim_policy.is_none() && !swap_begun(row, observed) {
            row.target_reclaim_policy = row
                .target_volume
                .as_ref()
                .and_then(|v| observed.volumes.get(v))
                .map(|v| v.reclaim_policy.clone());
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

/// The original claim is gone or going although Ferry has not begun its swap: someone else deleted
/// it. Only Ferry's own recorded intent (step `Swapping`) may start a swap.
pub(super) fn deleted_by_someone_else(row: &VolumePlan, observed: &Observed) -> bool {
    if matches!(row.step, Some(RowStep::Swapping | RowStep::StartingReplica)) || swapped(row, observed) {
        return false;
    }
    match observed.claims.get(&row.claim_name) {
        None => row.source_volume.is_some(),
        Some(claim) => claim.deleting,
    }
}
