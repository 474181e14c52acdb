//! A copy to another node (`spec.placement`): the old volume stays on its node, where a serving
//! mover reads it (read only) and answers the row's movers on the new volume's node over mutual
//! TLS, with a key made for this copy alone. The serving mover lives from the row's first pass to
//! its swap, which removes it with the other movers; the final pass tells it to stop.

use super::*;

/// Where a row's movers read the old volume.
pub(super) enum Source {
    /// Mounted beside the new one (a copy on the replica's own node).
    Local,
    /// From the serving mover at this address.
    Serving(String),
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
    match observed.movers.get(&name) {
        None => {
            actions.push(ResizeAction::StartServer {
                pod: name,
                claim: row.claim_name.clone(),
                capabilities: capabilities::of_row(row),
            });
            Source::Starting
        }
        Some(serving) => match (&serving.phase, &serving.pod_ip) {
            (MoverPhase::Running, Some(ip)) => Source::Serving(names::serving_address(ip)),
            // Started again while it waits: an operator killed between the pod and its key's
            // Secret makes the Secret now (neither is made twice).
            (MoverPhase::Waiting, _) => {
                actions.push(ResizeAction::StartServer {
                    pod: name,
                    claim: row.claim_name.clone(),
                    capabilities: capabilities::of_row(row),
                });
                Source::Starting
            }
            _ => Source::Starting,
        },
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
