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

/// Whether a line a mover printed is its result: printed once, last, after a pass that
/// succeeded (synced and verified); its progress lines have other fields.
pub fn is_result_line(line: &str) -> bool {
    serde_json::from_str::<SyncResult>(line).is_ok()
}

/// How long a mover's pass took, in milliseconds, by its result JSON.
pub(super) fn result_milliseconds(result: Option<&str>) -> Option<u64> {
    let result = result.and_then(|text| serde_json::from_str::<SyncResult>(text).ok())?;
    Some((result.seconds * 1000.0).round() as u64)
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

/// Counts the final pass (`copied` bytes, its `result`) in the row, once.
pub(super) fn count_final_pass(row: &mut VolumePlan, copied: u64, result: Option<&str>) {
    row.bytes_copied = Some(row.bytes_copied.unwrap_or(0) + copied);
    row.final_bytes_copied = Some(copied);
    absorb_final_walk(row, result);
}

/// Takes from a final mover's result how its pass found what to copy: whether it used its change
/// record, and how many source entries it read. Its `digest` is not read: a pass that used the
/// record leaves it empty (the tree was not read whole), and the mover verified what it wrote.
fn absorb_final_walk(row: &mut VolumePlan, result: Option<&str>) {
    let Some(result) = result.and_then(|text| serde_json::from_str::<SyncResult>(text).ok()) else {
        return;
    };
    row.final_change_tracking = result.change_tracking;
    row.final_entries_visited = result.entries_visited;
    row.final_pass_milliseconds = Some((result.seconds * 1000.0).round() as u64);
    row.final_interim_passes = result.interim_passes;
    row.final_interim_bytes_copied = result.interim_bytes_copied;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_result_is_a_result_line() {
        let result = r#"{"bytes":10,"bytesCopied":10,"deleted":0,"digest":"ab","files":2,"filesCopied":2,"metadataFixed":0,"seconds":0.1,"verify":"checksum","warnings":0}"#;
        assert!(is_result_line(result));
        let progress = r#"{"phase":"copy","filesDone":1,"filesTotal":2,"bytesDone":5,"bytesTotal":10,"bytesPerSecond":50,"elapsedSeconds":0.1}"#;
        assert!(!is_result_line(progress));
        let failure = r#"{"error":"target full","kind":"noSpace","exitCode":4,"mismatches":[]}"#;
        assert!(!is_result_line(failure));
        assert!(!is_result_line("ferry-mover: error: target full"));
        assert!(!is_result_line(""));
    }

    /// A final pass that used its change record has an empty digest: still its result.
    #[test]
    fn a_tracked_final_result_is_a_result_and_says_how_it_walked() {
        let result = r#"{"files":2000,"bytes":10,"bytesCopied":3,"deleted":0,"digest":"","seconds":0.1,"verify":"checksum","warnings":0,"filesCopied":1,"metadataFixed":0,"bytesCompared":0,"changeTracking":"used","entriesVisited":4}"#;
        assert!(is_result_line(result));
        let mut row = VolumePlan::default();
        assert_eq!(absorb_result(&mut row, Some(result)), Some(3));
        absorb_final_walk(&mut row, Some(result));
        assert_eq!(row.final_change_tracking.as_deref(), Some("used"));
        assert_eq!(row.final_entries_visited, Some(4));
        assert_eq!(row.files_total, Some(2000));
        assert_eq!(row.final_pass_milliseconds, Some(100));
        assert_eq!(
            (row.final_interim_passes, row.final_interim_bytes_copied),
            (None, None)
        );
        let converged = r#"{"files":2000,"bytes":10,"bytesCopied":0,"deleted":0,"digest":"","seconds":0.25,"verify":"checksum","warnings":0,"filesCopied":0,"metadataFixed":0,"bytesCompared":0,"changeTracking":"used","entriesVisited":1,"interimPasses":3,"interimBytesCopied":4096}"#;
        absorb_final_walk(&mut row, Some(converged));
        assert_eq!(row.final_pass_milliseconds, Some(250));
        assert_eq!(
            (row.final_interim_passes, row.final_interim_bytes_copied),
            (Some(3), Some(4096))
        );
    }
}
