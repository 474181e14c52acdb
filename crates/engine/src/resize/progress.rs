//! `status.progress`, the count `kubectl get` shows: written by every step that finishes a row
//! (prechecks, copy, in place), so it lives below all of them.

use ferry_api::VolumeResizeStatus;

/// `status.progress` for `kubectl get`: planned changes finished out of all planned (`1/3`).
pub fn update_progress(status: &mut VolumeResizeStatus) {
    let total = status.plan.iter().filter(|row| row.strategy.is_some()).count();
    let done = status
        .plan
        .iter()
        .filter(|row| row.strategy.is_some() && row.finished_at.is_some())
        .count();
    status.progress = Some(format!("{done}/{total}"));
}
