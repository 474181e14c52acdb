//! A new volume made as a CSI clone of the old one, standing for the warm copy; and giving it up
//! for the mover where the driver does not make it (no clone capability, a source it cannot clone).

use super::*;
use crate::volume_writes::VolumeWrite;

/// How long a clone may stay unbound before the mover's warm copy is used instead. The clone is
/// made once its first consumer (the standby final mover) is scheduled; a driver without the
/// capability leaves it Pending for good.
pub const CLONE_BIND_SECONDS: i64 = 120;

/// Why the row's clone is given up, if it is: the provisioner reported that it failed to make it
/// (a driver without the capability, a source it cannot clone at that size or class), or its
/// claim has been Pending for [`CLONE_BIND_SECONDS`] without a word. Given up at the first failure
/// even if the provisioner would try again: the mover's copy is always possible, and the replica
/// still serves.
pub(super) fn refused(
    ctx: &CopyContext,
    row: &VolumePlan,
    observed: &Observed,
    now: &Time,
) -> Option<String> {
    let claim = observed.claims.get(&ctx.temp_claim(row))?;
    if claim.bound || claim.deleting {
        return None;
    }
    if let Some(failure) = &claim.provisioning_failed {
        return Some(format!(
            "the CSI driver did not make the clone of {}: {failure}; the mover copies instead",
            row.claim_name
        ));
    }
    let waited = now.0.as_second() - claim.created.as_ref()?.0.as_second();
    (waited >= CLONE_BIND_SECONDS).then(|| {
        format!(
            "the clone of {} was not provisioned within {CLONE_BIND_SECONDS} s (does its CSI driver clone volumes? kubectl describe pvc {}); the mover copies instead",
            row.claim_name,
            ctx.temp_claim(row)
        )
    })
}

/// Gives the clone up: its claim and the mover waiting on it go, and the row copies with the mover
/// (recorded first, so a restarted operator does not clone again).
pub(super) fn give_up(
    ctx: &CopyContext,
    row: &mut VolumePlan,
    observed: &Observed,
    why: String,
) -> Vec<ResizeAction> {
    row.cloned = Some(false);
    row.clone_refused = Some(why);
    row.step = Some(RowStep::CreatingTarget);
    let mut actions = ctx.delete_movers(row, observed);
    let temp = ctx.temp_claim(row);
    if let Some(claim) = observed.claims.get(&temp) {
        actions.push(ResizeAction::Volume(VolumeWrite::DeleteClaim {
            claim: temp,
            uid: claim.uid.clone(),
        }));
    }
    actions
}
