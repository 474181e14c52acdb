//! Before anything is touched: the data in use on every claim to copy, measured by read-only pods,
//! and a target too small for it refused.

use super::*;

/// The usage stage: one read-only pod per claim still unmeasured; when all are measured, their pods
/// are removed and every target is checked against the data it must hold. `None` when done.
pub(super) fn measure_usage(
    ctx: &CopyContext,
    status: &mut VolumeResizeStatus,
    observed: &Observed,
    now: &Time,
) -> Option<Decision> {
    // A target that is not a size fails the resize before anything is touched (once touched, it
    // rolls back: `reason_to_roll_back`).
    let no_size: Vec<String> = status
        .plan
        .iter()
        .filter(|row| is_copy(row) && row.finished_at.is_none())
        .filter_map(unsized_target)
        .collect();
    if !no_size.is_empty() && !observed.backup_exists {
        let leftovers = usage_leftovers(ctx, status, observed);
        return Some(fail(status.clone(), leftovers, no_size.join("; "), now));
    }
    let actions = measure_rows(ctx, status, observed, now);
    // A claim that could not be measured fails the resize (recorded, so it is not measured again),
    // once every measuring pod is gone; nothing else was touched.
    let failures: Vec<String> = status
        .plan
        .iter()
        .filter(|row| row.step == Some(RowStep::MeasuringFailed))
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
    let too_small = too_small(status);
    if !too_small.is_empty() {
        return Some(fail(status.clone(), leftovers, too_small.join("; "), now));
    }
    (!leftovers.is_empty()).then(|| decide(status.clone(), leftovers, "data in use measured"))
}

/// Each copied row not measured yet: a measuring pod started (no more at once than the free
/// mover slots), or the result of its finished one recorded, or its failure.
fn measure_rows(
    ctx: &CopyContext,
    status: &mut VolumeResizeStatus,
    observed: &Observed,
    now: &Time,
) -> Vec<ResizeAction> {
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
        if row.used_bytes.is_some() || row.step == Some(RowStep::MeasuringFailed) {
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
                    let usage = mover
                        .result
                        .as_deref()
                        .and_then(|r| serde_json::from_str::<UsageResult>(r).ok());
                    // Measured as the StatefulSet's user (Pod Security `restricted`): what that user
                    // could not recreate exactly fails the resize before anything is touched.
                    if let Some(kept_otherwise) = usage.as_ref().and_then(|u| u.not_as_user.as_ref()) {
                        row.step = Some(RowStep::MeasuringFailed);
                        row.message = Some(not_as_user(&row.claim_name, kept_otherwise));
                        continue;
                    }
                    // Ended well yet said nothing (no result it could write): measured again
                    // it would say nothing again, so the resize fails saying so.
                    if usage.is_none() {
                        row.step = Some(RowStep::MeasuringFailed);
                        row.message = Some(format!(
                            "could not measure the data in use on {}: its measuring pod {pod} ended without a result",
                            row.claim_name
                        ));
                        continue;
                    }
                    row.used_bytes = usage.as_ref().map(|usage| usage.bytes);
                    row.bytes_total = row.used_bytes;
                    // What its mover pods may do: only what this data needs.
                    row.mover_capabilities = usage.map(|usage| capabilities::for_needs(usage.needs));
                }
                _ => {
                    if let Some(failure) = mover.failure(now, ctx.stuck_after_seconds) {
                        row.step = Some(RowStep::MeasuringFailed);
                        row.message = Some(format!(
                            "could not measure the data in use on {}: mover {failure}",
                            row.claim_name
                        ));
                    }
                }
            },
        }
    }
    actions
}

/// Why a claim measured as the StatefulSet's own user cannot be copied as that user.
fn not_as_user(claim: &str, kept_otherwise: &str) -> String {
    format!(
        "a copy of {claim} runs as the StatefulSet's own user here (Pod Security \"restricted\" admits no root pod), and that user could not recreate exactly: {kept_otherwise}. Ferry never copies with owners dropped: let this namespace enforce \"baseline\" for the copy"
    )
}

/// The rows whose target leaves no room for the data measured on them (with headroom).
fn too_small(status: &VolumeResizeStatus) -> Vec<String> {
    status
        .plan
        .iter()
        .filter(|row| is_copy(row) && row.finished_at.is_none())
        .filter_map(|row| {
            let used = row.used_bytes?;
            let target = row.target_bytes()?;
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
        .collect()
}

/// Deletions of the measuring pods that still exist.
pub(super) fn usage_leftovers(
    ctx: &CopyContext,
    status: &VolumeResizeStatus,
    observed: &Observed,
) -> Vec<ResizeAction> {
    status
        .plan
        .iter()
        .map(|row| usage_pod_name(row, ctx.suffix))
        .filter_map(|pod| observed.movers.get(&pod).map(|mover| mover.delete(&pod)))
        .collect()
}
