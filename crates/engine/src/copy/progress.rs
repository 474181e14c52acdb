//! A mover's live progress and final result, read into the row through the shared wire types.

use super::*;

/// Takes a running mover's last progress line into the row (live bytes, files and rate).
pub(super) fn absorb_progress(row: &mut VolumePlan, mover: &MoverView) {
    if mover.phase != MoverPhase::Running {
        return;
    }
    let Some(progress) = mover
        .progress
        .as_deref()
        .and_then(|text| serde_json::from_str::<Progress>(text).ok())
    else {
        return;
    };
    row.bytes_done = Some(progress.bytes_done);
    row.bytes_total = Some(progress.bytes_total);
    row.files_done = Some(progress.files_done);
    row.files_total = Some(progress.files_total);
    row.bytes_per_second = Some(progress.bytes_per_second);
}

/// Takes files and bytes from a mover's result JSON into the row; returns the bytes the pass wrote.
pub(super) fn absorb_result(row: &mut VolumePlan, result: Option<&str>) -> Option<u64> {
    // A failure's result has no files or bytes and does not parse: the row is left as it is.
    let result = result.and_then(|text| serde_json::from_str::<SyncResult>(text).ok())?;
    row.files_done = Some(result.files);
    row.files_total = Some(result.files);
    row.bytes_done = Some(result.bytes);
    row.bytes_total = Some(result.bytes);
    // The rate of what this pass wrote (a final pass that found little to do is not "fast").
    if result.seconds > 0.0 && result.bytes_copied > 0 {
        row.bytes_per_second = Some((result.bytes_copied as f64 / result.seconds) as u64);
    }
    Some(result.bytes_copied)
}
