//! A copy to another node (`spec.placement`): the old volume stays on its node, where a serving
//! mover reads it (read only) and answers the row's movers on the new volume's node over mutual
//! TLS, with a key made for this copy alone. The serving mover lives from the row's first pass to
//! its swap, which removes it with the other movers; the final pass tells it to stop.

use super::*;
use crate::resize::action::PullFrom;

/// Where a row's movers read the old volume.
pub(super) enum Source {
    /// Mounted beside the new one (a copy on the replica's own node).
    Local,
    /// From this serving mover.
    Serving(PullFrom),
    /// Its serving mover is not up yet: the row waits.
    Starting,
}

/// Where the movers of `row` read its old volume; a copy to another node starts its serving mover
/// first, and waits for it to run and have an address.
pub(super) fn source(
    ctx: &CopyContext,
    row: &VolumePlan,
    observed: &Observed,
    actions: &mut Vec<ResizeAction>,
) -> Source {
    if row.target_node.is_none() {
        return Source::Local;
    }
    let name = ctx.serving_mover(row);
    let key = names::serving_key(&row.claim_name, ctx.suffix, row.transport_restarts.unwrap_or(0));
    let serving = observed.movers.get(&name);
    match serving.map(|s| (&s.phase, &s.pod_ip)) {
        Some((MoverPhase::Running, Some(ip))) => Source::Serving(PullFrom {
            address: names::serving_address(ip),
            key,
            tracked: ctx.track_changes,
        }),
        // Absent; or started again while it waits: an operator killed between the pod and its
        // key's Secret makes the Secret now (neither is made twice).
        None | Some((MoverPhase::Waiting, _)) => {
            actions.push(ResizeAction::StartServer {
                pod: name,
                claim: row.claim_name.clone(),
                key,
                capabilities: capabilities::of_row(row),
                track_changes: ctx.track_changes,
            });
            Source::Starting
        }
        Some(_) => Source::Starting,
    }
}

/// Why the row's copy cannot go on: its serving mover failed, or ended before the final pass (only
/// that pass stops it).
pub(super) fn serving_failure(
    ctx: &CopyContext,
    row: &VolumePlan,
    observed: &Observed,
    now: &Time,
) -> Option<String> {
    let serving = observed.movers.get(&ctx.serving_mover(row))?;
    if let Some(failure) = serving.failure(now, ctx.stuck_after_seconds) {
        return Some(format!("serving mover for {} {failure}", row.claim_name));
    }
    let final_done = observed
        .movers
        .get(&ctx.mover(row, Pass::Final))
        .is_some_and(|m| m.exited_ok() && !m.awaiting_go);
    (serving.exited_ok() && !final_done)
        .then(|| format!("serving mover for {} ended before the final pass", row.claim_name))
}

/// How often a row's copy from another node starts again after its connection broke; past that,
/// the break rolls the replica back as any failed mover does.
pub const TRANSPORT_RESTARTS: u32 = 3;

/// Rows whose copy from another node broke while their replica still serves (its serving mover
/// failed, ended or went; a warm pass or a waiting final mover failed on the network): every mover
/// of the row goes and the copy starts again from a new serving mover (the new volume keeps what
/// was copied), each break counted once, at most [`TRANSPORT_RESTARTS`] times. Once the replica
/// has stopped, a break rolls it back instead (`reasons`).
pub(super) fn restart_broken(
    ctx: &CopyContext,
    status: &mut VolumeResizeStatus,
    observed: &Observed,
    rows: &[usize],
) -> Vec<ResizeAction> {
    let mut actions = Vec::new();
    for &i in rows {
        let row = &status.plan[i];
        if row.target_node.is_none() || swap_begun(row, observed) || !serving_replica(ctx, row, observed) {
            continue;
        }
        let Some(broken) = broken_by(ctx, row, observed) else {
            continue;
        };
        let removed = row_movers(ctx, row, observed);
        let row = &mut status.plan[i];
        if !row.transport_broken_by.contains(&broken) {
            let restarts = row.transport_restarts.unwrap_or(0);
            if restarts >= TRANSPORT_RESTARTS {
                continue;
            }
            row.transport_restarts = Some(restarts + 1);
            row.transport_broken_by = removed;
            row.message = Some(format!(
                "the copy from {} broke; starting it again ({} of {TRANSPORT_RESTARTS})",
                row.source_node.as_deref().unwrap_or("the old node"),
                restarts + 1
            ));
        }
        actions.extend(ctx.delete_movers(row, observed));
    }
    actions
}

/// The UIDs of the row's movers there now (serving, warm, final).
fn row_movers(ctx: &CopyContext, row: &VolumePlan, observed: &Observed) -> Vec<String> {
    [
        ctx.serving_mover(row),
        ctx.mover(row, Pass::Warm),
        ctx.mover(row, Pass::Final),
    ]
    .iter()
    .filter_map(|name| observed.movers.get(name).map(|m| m.uid.clone()))
    .collect()
}

/// The replica's pod is there and its final pass has not begun.
fn serving_replica(ctx: &CopyContext, row: &VolumePlan, observed: &Observed) -> bool {
    let pod = observed.pods.get(&ctx.pod(row.replica));
    let final_mover = observed.movers.get(&ctx.mover(row, Pass::Final));
    pod.is_some_and(|pod| !pod.deleting) && final_mover.is_none_or(|m| m.awaiting_go)
}

/// The UID of the mover whose state says the row's copy broke, if it did.
fn broken_by(ctx: &CopyContext, row: &VolumePlan, observed: &Observed) -> Option<String> {
    let pulling: Vec<&MoverView> = [Pass::Warm, Pass::Final]
        .iter()
        .filter_map(|&pass| observed.movers.get(&ctx.mover(row, pass)))
        .collect();
    let lost_peer = |m: &&&MoverView| matches!(m.phase, MoverPhase::Failed { exit_code, .. } if exit_code == ferry_mover_report::EXIT_TRANSPORT);
    match observed.movers.get(&ctx.serving_mover(row)) {
        Some(serving) if matches!(serving.phase, MoverPhase::Failed { .. }) || serving.exited_ok() => {
            Some(serving.uid.clone())
        }
        // Gone while movers pull from it: they would wait on an address that no longer answers.
        None => pulling.first().map(|m| m.uid.clone()),
        Some(_) => pulling.iter().find(lost_peer).map(|m| m.uid.clone()),
    }
}
