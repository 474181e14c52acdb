//! Rollback on request (`kubectl ferry rollback`): after a copy, put each replica back on its old
//! volume, still retained, with the same PV re-binding swap in reverse. Writes made since the swap
//! stay on the new volume, which is kept (retained) rather than deleted.

use crate::resize::action::ResizeAction;
use crate::resize::copy::{CopyContext, nudge_stalled_binding, swap_claim_to};
use crate::resize::observed::Observed;
use crate::resize::run::Decision;
use ferry_api::{Phase, RowStep, VolumePlan, VolumeResizeStatus, parse_bytes};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// Copied rows, and rows being reverted, whose claim can get its old size back (a row whose sizes
/// are not sizes stays on its new volume, like one whose old volume is gone).
fn to_revert(row: &VolumePlan) -> bool {
    matches!(row.step, Some(RowStep::Copied | RowStep::Reverting)) && old_bytes(row).is_some()
}

/// The size the claim had before the copy: `currentSize`, else the target (a claim the copy
/// created, with no size before).
fn old_bytes(row: &VolumePlan) -> Option<u64> {
    match &row.current_size {
        Some(size) => parse_bytes(size).ok(),
        None => row.target_bytes(),
    }
}

/// The claim name is bound to the row's old volume again (both sides of the binding done).
fn back_on_old(row: &VolumePlan, observed: &Observed) -> bool {
    row.source_volume
        .as_deref()
        .is_some_and(|old| observed.bound_to(&row.claim_name, old))
}

pub fn plan_revert(
    ctx: &CopyContext,
    previous: &VolumeResizeStatus,
    observed: &Observed,
    now: &Time,
) -> Decision {
    let mut status = previous.clone();
    status.phase = Some(Phase::RollingBack);
    // Rows whose old volume is gone cannot come back; they stay on the new one.
    let Some(replica) = status
        .plan
        .iter()
        .filter(|row| {
            to_revert(row)
                && row
                    .source_volume
                    .as_ref()
                    .is_some_and(|v| observed.volumes.contains_key(v))
        })
        .map(|row| row.replica)
        .min()
    else {
        return finish(status, observed, now);
    };
    let rows: Vec<usize> = (0..status.plan.len())
        .filter(|&i| to_revert(&status.plan[i]) && status.plan[i].replica == replica)
        .collect();
    let pod_name = crate::names::pod(ctx.sts_name, replica);
    let message = format!(
        "rolling back replica {replica} to its old volume on request; writes since the swap stay on the new volume"
    );
    status.message = Some(message.clone());

    if rows.iter().all(|&i| back_on_old(&status.plan[i], observed)) {
        let actions = settle_back(&mut status, observed, &rows, &pod_name);
        return Decision {
            status,
            actions,
            summary: message,
        };
    }
    for &i in &rows {
        status.plan[i].step = Some(RowStep::Reverting);
    }
    if let Some((actions, summary)) = stop_replica(ctx, &mut status, observed, &rows, replica, &message) {
        return Decision {
            status,
            actions,
            summary,
        };
    }
    let actions = rebind_to_old(ctx, &status, observed, &rows, now);
    Decision {
        status,
        actions,
        summary: message,
    }
}

/// The replica's claims are back on their old volumes: the old reclaim policies return to them
/// and the StatefulSet is restored; once the replica serves again from a new pod, its rows are
/// Reverted and the new volumes kept for a while (retained) instead of the old ones.
fn settle_back(
    status: &mut VolumeResizeStatus,
    observed: &Observed,
    rows: &[usize],
    pod_name: &str,
) -> Vec<ResizeAction> {
    let mut actions = Vec::new();
    for &i in rows {
        let row = &status.plan[i];
        if let (Some(old), Some(policy)) = (&row.source_volume, &row.original_reclaim_policy) {
            actions.extend(observed.set_reclaim_policy(old, policy));
        }
    }
    if observed.stateful_set.is_none() {
        actions.push(ResizeAction::RestoreStatefulSet);
    }
    if !actions.is_empty() {
        return actions;
    }
    let stopped = status.plan[rows[0]].restarted_pod.clone();
    let back = observed
        .pods
        .get(pod_name)
        .is_some_and(|p| p.ready && !p.deleting && Some(&p.uid) != stopped.as_ref());
    if back && observed.stateful_set.as_ref().is_some_and(|s| !s.deleting) {
        for &i in rows {
            let row = &mut status.plan[i];
            row.step = Some(RowStep::Reverted);
            let (old, new) = (row.source_volume.clone(), row.target_volume.clone());
            let retained = &mut status.created_objects.retained_volumes;
            retained.retain(|v| Some(v) != old.as_ref());
            if let Some(new) = new
                && !retained.contains(&new)
            {
                retained.push(new);
            }
        }
    }
    Vec::new()
}

/// Stops the replica: orphan-delete the StatefulSet, then delete the pod (once, by UID) — only
/// while the others are Ready and the budget allows a disruption. The actions and summary of this
/// step, or `None` once the replica is stopped.
fn stop_replica(
    ctx: &CopyContext,
    status: &mut VolumeResizeStatus,
    observed: &Observed,
    rows: &[usize],
    replica: i32,
    message: &str,
) -> Option<(Vec<ResizeAction>, String)> {
    if let Some(sts) = &observed.stateful_set {
        let unready = if ctx.quorum && !sts.deleting {
            crate::resize::copy::unready_others(ctx, status, observed, &[replica])
        } else {
            Vec::new()
        };
        if !unready.is_empty() || (!sts.deleting && observed.budget_blocks()) {
            let why = if unready.is_empty() {
                crate::resize::action::WAITING_FOR_BUDGET.to_string()
            } else {
                format!("waiting for replica(s) {unready:?} to be Ready")
            };
            return Some((vec![], format!("{message}: {why}")));
        }
        let actions = if sts.deleting {
            vec![]
        } else {
            vec![ResizeAction::OrphanDeleteStatefulSet]
        };
        return Some((actions, message.to_string()));
    }
    let pod_name = crate::names::pod(ctx.sts_name, replica);
    let pod = observed.pods.get(&pod_name)?;
    if pod.deleting {
        return Some((vec![], message.to_string()));
    }
    for &i in rows {
        status.plan[i].restarted_pod = Some(pod.uid.clone());
    }
    let evict = ResizeAction::EvictPod {
        pod: pod_name,
        uid: pod.uid.clone(),
    };
    Some((vec![evict], message.to_string()))
}

/// The replica is stopped: each claim is re-bound to its old volume.
fn rebind_to_old(
    ctx: &CopyContext,
    status: &VolumeResizeStatus,
    observed: &Observed,
    rows: &[usize],
    now: &Time,
) -> Vec<ResizeAction> {
    let mut actions = Vec::new();
    for &i in rows {
        let row = &status.plan[i];
        if back_on_old(row, observed) {
            continue;
        }
        let (Some(old), Some(new)) = (row.source_volume.clone(), row.target_volume.clone()) else {
            continue;
        };
        // `to_revert` holds: the claim can get its old size back.
        let Some(bytes) = old_bytes(row) else {
            continue;
        };
        let swap = swap_claim_to(
            ctx,
            row,
            &new,
            &old,
            bytes,
            row.current_storage_class.clone(),
            observed,
        );
        if swap.is_empty() {
            actions.extend(nudge_stalled_binding(row, &old, observed, now));
        }
        actions.extend(swap);
    }
    actions
}

fn finish(mut status: VolumeResizeStatus, observed: &Observed, now: &Time) -> Decision {
    if observed.stateful_set.is_none() {
        let actions = vec![ResizeAction::RestoreStatefulSet];
        return Decision {
            status,
            actions,
            summary: "restoring the StatefulSet".into(),
        };
    }
    let reverted = status
        .plan
        .iter()
        .filter(|row| row.step == Some(RowStep::Reverted))
        .count();
    status.phase = Some(Phase::Failed);
    status.finished_at = Some(now.clone());
    let message = format!(
        "rolled back on request: {reverted} volume(s) back on their old volumes; the new volumes are retained with any writes made after the swap"
    );
    status.message = Some(message.clone());
    Decision {
        status,
        actions: vec![],
        summary: message,
    }
}
