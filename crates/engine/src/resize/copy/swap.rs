//! The swap by PV re-binding, in safe order, and what keeps it safe: nothing may use the claim while
//! it is mid-swap, and a swap begun on stale data is undone while the claim is still whole.

use super::*;
use crate::volume_writes::VolumeWrite;

/// The original claim name is bound to the new volume (both sides of the binding done).
pub(super) fn swapped(row: &VolumePlan, observed: &Observed) -> bool {
    row.target_volume
        .as_deref()
        .is_some_and(|target| observed.bound_to(&row.claim_name, target))
}

/// Next actions of the PV re-binding swap for one row: its claim moves from the old to the new volume.
pub(super) fn swap(
    ctx: &CopyContext,
    row: &VolumePlan,
    observed: &Observed,
    now: &Time,
) -> Vec<ResizeAction> {
    // A row without a target size never got a new volume (`reason_to_roll_back` refuses it).
    let (Some(source), Some(target), Some(bytes)) = (
        row.source_volume.clone(),
        row.target_volume.clone(),
        row.target_bytes(),
    ) else {
        return vec![];
    };
    let actions = swap_claim_to(
        ctx,
        row,
        &source,
        &target,
        bytes,
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
    observed: &Observed,
    now: &Time,
) -> Option<ResizeAction> {
    let claim = observed.claims.get(&row.claim_name)?;
    let waited = now.0.as_second() - claim.created.as_ref()?.0.as_second();
    (claim.volume_name.as_deref() == Some(volume)
        && !claim.bound
        && !claim.deleting
        && !claim.nudged
        && waited >= BIND_NUDGE_AFTER_SECONDS)
        .then(|| {
            ResizeAction::Volume(VolumeWrite::NudgeClaim {
                claim: row.claim_name.clone(),
                uid: claim.uid.clone(),
            })
        })
}

/// Moves a row's claim from volume `from` to volume `to` by PV re-binding, in safe order: both
/// volumes retained, mover pods gone, the claims deleted, `to` reserved for the claim's name, the
/// claim re-created bound to it with `bytes` and `class`. Used forwards by the copy and backwards by
/// a rollback on request.
pub fn swap_claim_to(
    ctx: &CopyContext,
    row: &VolumePlan,
    from: &str,
    to: &str,
    bytes: u64,
    class: Option<String>,
    observed: &Observed,
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
        .filter_map(|v| observed.set_reclaim_policy(v, RETAIN))
        .collect();
    if !not_retained.is_empty() {
        return not_retained;
    }
    // Both claims and the movers go in one step: the claim name is free for as short a time as can
    // be, and a Terminating claim keeps any new pod off the old volume. The claims first: already
    // Terminating when the mover pod goes, both are let go by one pass of the PVC protection
    // controller (one live pod list); deleted after it, each gets a pass of its own, and the
    // second pass's list waits up to 0.1 s for the API server's watch cache.
    let mut deletes = Vec::new();
    for name in [ctx.temp_claim(row), row.claim_name.clone()] {
        if let Some(claim) = observed.claims.get(&name)
            && !claim.deleting
        {
            deletes.push(ResizeAction::Volume(VolumeWrite::DeleteClaim {
                claim: name,
                uid: claim.uid.clone(),
            }));
        }
    }
    deletes.extend(ctx.delete_movers(row, observed));
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
        return vec![ResizeAction::Volume(VolumeWrite::ReserveVolume {
            uid: observed.volume_uid(&target),
            volume: target,
            claim: row.claim_name.clone(),
        })];
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
        attributes_class: volume.attributes_class.clone(),
        volume: target,
        bytes,
        storage_class: class,
    }]
}

/// Whether Ferry recorded its intent to swap this row (or the swap is done): from then on the row
/// only goes forward, so a rollback of its batch never leaves its claim missing or half-bound.
pub(super) fn swap_begun(row: &VolumePlan, observed: &Observed) -> bool {
    matches!(
        row.step,
        Some(RowStep::Swapping | RowStep::StartingReplica | RowStep::Copied)
    ) || swapped(row, observed)
}

/// A pod started on the old claim after the final sync (someone else's StatefulSet) while the claim
/// is still whole: its writes are not in the copy, so the swap has not begun after all. The row
/// steps back and its movers go, so a new final sync runs once the replica is stopped again.
pub(super) fn undo_stale_swaps(
    ctx: &CopyContext,
    status: &mut VolumeResizeStatus,
    observed: &Observed,
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
        if row.step != Some(RowStep::Swapping) || !claim_whole || !pod_back {
            continue;
        }
        actions.extend(ctx.delete_movers(row, observed));
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
        status.plan[i].step = Some(RowStep::StoppingReplica);
    }
    actions
}

/// Before and during a swap nothing may use the claim: a StatefulSet that appeared meanwhile (its
/// controller would provision an empty claim under the name being swapped) is orphan-deleted again,
/// and a pod it started is deleted. `None` when the way is clear (or no swap is under way).
pub(super) fn clear_for_swap(
    ctx: &CopyContext,
    status: &VolumeResizeStatus,
    observed: &Observed,
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
            Some(pod) => actions.push(ResizeAction::EvictPod {
                pod: name,
                uid: pod.uid.clone(),
            }),
            None => {}
        }
    }
    actions.dedup();
    (waiting || !actions.is_empty()).then_some(actions)
}
