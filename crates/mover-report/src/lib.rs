//! The JSON contract between `ferry-mover` and the planner: the progress lines the mover prints,
//! and the result it writes as its pod's termination message.
//!
//! Both sides use these types, so a renamed field cannot silently break progress display or the
//! reading of results. Field order is the order the mover has always written (the JSON is
//! byte-compatible with earlier movers). Reading tolerates unknown fields, and fields the planner
//! does not use may be missing; the fields it needs are required, so a line of another shape (a
//! failure read as a success, say) is rejected instead of read as zeros.

use serde::{Deserialize, Serialize};

/// One progress line, printed on stdout at most twice a second while a sync runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Progress {
    /// scan, delete, copy, verify or done.
    #[serde(default)]
    pub phase: String,
    /// Entries handled (including skipped ones).
    pub files_done: u64,
    /// Entries in the source.
    pub files_total: u64,
    /// Bytes handled (including skipped files).
    pub bytes_done: u64,
    /// Bytes of regular files in the source.
    pub bytes_total: u64,
    /// Average rate of bytes written since the start.
    pub bytes_per_second: u64,
    /// Seconds since the start.
    #[serde(default)]
    pub elapsed_seconds: f64,
}

/// The outcome of a successful sync pass: its last stdout line and its result file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SyncResult {
    /// Entries in the source tree (root excluded).
    pub files: u64,
    /// Bytes of regular-file data in the source.
    pub bytes: u64,
    /// Data bytes written in this run.
    pub bytes_copied: u64,
    /// Target entries removed as extraneous (`--delete`).
    #[serde(default)]
    pub deleted: u64,
    /// Metadata digest of the tree as synced (equals `metadataDigest` of `ferry-mover digest`
    /// on the target when exact).
    #[serde(default)]
    pub digest: String,
    /// Wall-clock duration; 0 when unknown (no rate is derived from it then).
    #[serde(default)]
    pub seconds: f64,
    /// Verification level used.
    #[serde(default)]
    pub verify: String,
    /// Non-fatal problems (entries that vanished or changed during the copy).
    #[serde(default)]
    pub warnings: u64,
    /// Entries created or whose data was rewritten in this run.
    #[serde(default)]
    pub files_copied: u64,
    /// Entries whose metadata only was fixed.
    #[serde(default)]
    pub metadata_fixed: u64,
    /// Bytes of target files read to compare them with the source (files whose size and mtime
    /// could not be trusted, pieces of large files without a recorded digest): what the pass read
    /// beyond the source.
    #[serde(default)]
    pub bytes_compared: u64,
    /// With `--track-changes`: `used` when the pass visited only what the change record named,
    /// else `fell back: <why>` (it walked both trees whole). Absent when not asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change_tracking: Option<String>,
    /// Source entries the pass read (the root and the directories above a change included): all
    /// of them for a full walk, the changed ones with change tracking. Absent from movers older
    /// than this field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entries_visited: Option<u64>,
    /// With `--track-changes`: how many interim passes the standby ran while it waited for its
    /// go (each over what changed since the pass before). Absent otherwise, and from older movers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interim_passes: Option<u64>,
    /// With `--track-changes`: the data bytes those interim passes wrote (before the go; the
    /// final pass's own are `bytesCopied`). Absent otherwise, and from older movers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interim_bytes_copied: Option<u64>,
}

/// The mover's exit code when the kernel refused an operation (EACCES / EPERM): with a mover pod
/// given only the capabilities its data needed when measured, an entry made since can need more.
pub const EXIT_PERMISSION: i32 = 5;

/// The mover's exit code when a cross-node copy lost its peer: the other mover could not be
/// reached, refused the handshake, or broke off.
pub const EXIT_TRANSPORT: i32 = 7;

/// The result of `ferry-mover usage`: what a tree occupies, for the shrink precheck, and what
/// copying it exactly needs, for the mover pods' capabilities. (Not `Copy`: `not_as_user` is
/// text.)
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageResult {
    /// Allocated bytes (st_blocks × 512; sparse holes are free).
    pub bytes: u64,
    /// Distinct inodes, the root included.
    #[serde(default)]
    pub inodes: u64,
    /// What the tree holds that only a privileged copy keeps; absent from movers older than this
    /// field (then nothing is known, and a copy gets every capability).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs: Option<CopyNeeds>,
    /// The file system the tree is on, as `statvfs` reports it (what the kubelet reports of a
    /// volume): whether it is full, for a rescue. Absent from movers older than this field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_system: Option<FileSystemUsage>,
    /// Only from a mover that runs as a user (effective uid not 0, no capabilities: Pod Security
    /// "restricted"): `None` when a copy running as its uid, gid and supplementary groups could
    /// recreate every entry exactly (the root directory and the root's `lost+found` left out),
    /// else at most three entries and why, `"sub/x: owner 0:0; dev/null0: a device node"`, with
    /// `"; and N more"`. Absent from a mover that runs as root, and from older movers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_as_user: Option<String>,
}

/// A file system's size and use, in bytes (`statvfs`: blocks × fragment size).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileSystemUsage {
    /// Its size (`f_blocks`).
    pub capacity_bytes: u64,
    /// In use (`f_blocks - f_bfree`), as the kubelet counts it.
    pub used_bytes: u64,
}

/// Entries a copy can only recreate exactly with a capability (each `true` when at least one
/// entry of the tree is such).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CopyNeeds {
    /// Entries not owned by user and group 0: `CHOWN` to give them away, `FOWNER` to set their
    /// mode, times and ACLs after that.
    #[serde(default)]
    pub other_owners: bool,
    /// Set-user-ID or set-group-ID entries: `FSETID`, or the kernel clears the bits.
    #[serde(default)]
    pub set_id: bool,
    /// Character or block device nodes: `MKNOD` (FIFOs and sockets need nothing).
    #[serde(default)]
    pub device_nodes: bool,
    /// Files with capabilities (`security.capability`): `SETFCAP`.
    #[serde(default)]
    pub file_capabilities: bool,
}

/// The result file of a failed run.
///
/// Fields are in alphabetical order because the mover used to build this object with
/// `serde_json::json!`, whose keys come out sorted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FailureResult {
    /// What went wrong, for people (shortened to fit the termination-message limit).
    pub error: String,
    /// The process exit code (see `ferry-mover --help`).
    #[serde(default)]
    pub exit_code: i32,
    /// The error class, e.g. `verifyMismatch`, `targetFull`.
    #[serde(default)]
    pub kind: String,
    /// Paths that failed verification (possibly shortened); empty for other failures.
    #[serde(default)]
    pub mismatches: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines exactly as `ferry-mover` prints them (the result's `bytesCompared` is the one field
    /// added since these types existed).
    const PROGRESS_LINE: &str = r#"{"phase":"done","filesDone":3,"filesTotal":3,"bytesDone":100003,"bytesTotal":100003,"bytesPerSecond":799551,"elapsedSeconds":0.125}"#;
    const SYNC_RESULT: &str = r#"{"files":3,"bytes":100003,"bytesCopied":100003,"deleted":0,"digest":"ff6a0e59ac2e23fd6bf6ad2068ba228c","seconds":0.123,"verify":"checksum","warnings":0,"filesCopied":2,"metadataFixed":1,"bytesCompared":7}"#;
    /// A result line of a mover from before `bytesCompared`: still read, as 0.
    const OLDER_SYNC_RESULT: &str = r#"{"files":3,"bytes":100003,"bytesCopied":100003,"deleted":0,"digest":"ff6a0e59ac2e23fd6bf6ad2068ba228c","seconds":0.123,"verify":"checksum","warnings":0,"filesCopied":2,"metadataFixed":1}"#;
    const USAGE_RESULT: &str = r#"{"bytes":114688,"inodes":4}"#;
    const FAILURE_RESULT: &str = r#"{"error":"verification failed for 1 entry: dir/victim.bin (content differs after copy)","exitCode":3,"kind":"verifyMismatch","mismatches":["dir/victim.bin"]}"#;

    /// Parses `text` as `T` and checks that writing it back gives the very same bytes.
    fn round_trip<T: Serialize + for<'de> Deserialize<'de>>(text: &str) -> T {
        let value: T = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&value).unwrap(), text);
        value
    }

    #[test]
    fn progress_line_round_trips_byte_for_byte() {
        let progress: Progress = round_trip(PROGRESS_LINE);
        assert_eq!(
            progress,
            Progress {
                phase: "done".into(),
                files_done: 3,
                files_total: 3,
                bytes_done: 100_003,
                bytes_total: 100_003,
                bytes_per_second: 799_551,
                elapsed_seconds: 0.125,
            }
        );
    }

    #[test]
    fn sync_result_round_trips_byte_for_byte() {
        let result: SyncResult = round_trip(SYNC_RESULT);
        assert_eq!(
            (result.files, result.bytes, result.bytes_copied),
            (3, 100_003, 100_003)
        );
        assert_eq!((result.files_copied, result.metadata_fixed), (2, 1));
        assert_eq!(result.bytes_compared, 7);
        assert_eq!(result.verify, "checksum");
        let older: SyncResult = serde_json::from_str(OLDER_SYNC_RESULT).unwrap();
        assert_eq!(
            older,
            SyncResult {
                bytes_compared: 0,
                ..result
            }
        );
    }

    #[test]
    fn a_tracked_result_says_what_it_visited() {
        const TRACKED: &str = r#"{"files":3,"bytes":100003,"bytesCopied":5,"deleted":0,"digest":"","seconds":0.01,"verify":"checksum","warnings":0,"filesCopied":1,"metadataFixed":0,"bytesCompared":0,"changeTracking":"used","entriesVisited":2}"#;
        let result: SyncResult = round_trip(TRACKED);
        assert_eq!(result.change_tracking.as_deref(), Some("used"));
        assert_eq!(result.entries_visited, Some(2));
        assert_eq!(
            result.interim_passes, None,
            "a result without interim passes still reads"
        );
        const CONVERGED: &str = r#"{"files":3,"bytes":100003,"bytesCopied":0,"deleted":0,"digest":"","seconds":0.01,"verify":"checksum","warnings":0,"filesCopied":0,"metadataFixed":0,"bytesCompared":0,"changeTracking":"used","entriesVisited":1,"interimPasses":2,"interimBytesCopied":4096}"#;
        let result: SyncResult = round_trip(CONVERGED);
        assert_eq!(
            (result.interim_passes, result.interim_bytes_copied),
            (Some(2), Some(4096))
        );
    }

    #[test]
    fn usage_result_round_trips_byte_for_byte() {
        let usage: UsageResult = round_trip(USAGE_RESULT);
        assert_eq!(
            usage,
            UsageResult {
                bytes: 114_688,
                inodes: 4,
                needs: None,
                file_system: None,
                not_as_user: None,
            }
        );
        let with_needs = r#"{"bytes":4096,"inodes":2,"needs":{"otherOwners":true,"setId":false,"deviceNodes":true,"fileCapabilities":false}}"#;
        let usage: UsageResult = round_trip(with_needs);
        let needs = usage.needs.unwrap();
        assert!(needs.other_owners && needs.device_nodes && !needs.set_id && !needs.file_capabilities);
        let as_user = r#"{"bytes":4096,"inodes":2,"notAsUser":"sub/x: owner 0:0; and 2 more"}"#;
        let usage: UsageResult = round_trip(as_user);
        assert_eq!(usage.not_as_user.as_deref(), Some("sub/x: owner 0:0; and 2 more"));
    }

    #[test]
    fn failure_result_round_trips_byte_for_byte() {
        let failure: FailureResult = round_trip(FAILURE_RESULT);
        assert_eq!((failure.exit_code, failure.kind.as_str()), (3, "verifyMismatch"));
        assert_eq!(failure.mismatches, ["dir/victim.bin"]);
    }

    #[test]
    fn a_progress_line_from_the_engine_tests_parses() {
        let line = r#"{"phase":"copy","filesDone":40,"filesTotal":87,"bytesDone":1048576,"bytesTotal":4194304,"bytesPerSecond":524288,"elapsedSeconds":2.0}"#;
        let progress: Progress = serde_json::from_str(line).unwrap();
        assert_eq!(
            (progress.bytes_done, progress.bytes_total),
            (1_048_576, 4_194_304)
        );
        assert_eq!((progress.files_done, progress.files_total), (40, 87));
        assert_eq!(progress.bytes_per_second, 524_288);
    }

    #[test]
    fn unknown_fields_and_unneeded_missing_fields_are_tolerated() {
        let progress: Progress = serde_json::from_str(
            r#"{"filesDone":1,"filesTotal":2,"bytesDone":3,"bytesTotal":4,"bytesPerSecond":5,"extra":true}"#,
        )
        .unwrap();
        assert_eq!((progress.phase.as_str(), progress.elapsed_seconds), ("", 0.0));
        let result: SyncResult =
            serde_json::from_str(r#"{"files":10,"bytes":1000,"bytesCopied":7,"new":[1]}"#).unwrap();
        assert_eq!(
            (result.bytes_copied, result.seconds, result.digest.as_str()),
            (7, 0.0, "")
        );
        let usage: UsageResult = serde_json::from_str(r#"{"bytes":9}"#).unwrap();
        assert_eq!(usage.inodes, 0);
        let failure: FailureResult = serde_json::from_str(r#"{"error":"boom"}"#).unwrap();
        assert!(failure.mismatches.is_empty());
    }

    #[test]
    fn a_failure_is_not_read_as_a_sync_result() {
        assert!(serde_json::from_str::<SyncResult>(FAILURE_RESULT).is_err());
        assert!(serde_json::from_str::<UsageResult>(FAILURE_RESULT).is_err());
    }

    #[test]
    fn a_renamed_needed_field_is_rejected() {
        let renamed = PROGRESS_LINE.replace("bytesDone", "bytes_done");
        assert!(serde_json::from_str::<Progress>(&renamed).is_err());
        let renamed = SYNC_RESULT.replace("bytesCopied", "copiedBytes");
        assert!(serde_json::from_str::<SyncResult>(&renamed).is_err());
    }
}
