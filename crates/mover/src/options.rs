//! Inputs and outputs of [`crate::sync`].

use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::progress::ProgressMode;

/// How the target is checked after copying.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VerifyMode {
    /// No check.
    None,
    /// Re-read every target entry's metadata and compare it with the source.
    Metadata,
    /// Metadata, plus a streaming hash of every file copied in this run, compared with a
    /// re-read of what landed.
    #[default]
    Checksum,
}

impl VerifyMode {
    /// The name used on the command line and in the result.
    pub fn name(self) -> &'static str {
        match self {
            VerifyMode::None => "none",
            VerifyMode::Metadata => "metadata",
            VerifyMode::Checksum => "checksum",
        }
    }
}

/// What [`crate::sync`] should do.
#[derive(Debug, Clone, Default)]
pub struct SyncOptions {
    /// Tree to read (never modified).
    pub source: PathBuf,
    /// Tree to make equal to the source; created if missing (its parent must exist).
    pub target: PathBuf,
    /// Remove target entries that are not in the source.
    pub delete: bool,
    /// Verification level.
    pub verify: VerifyMode,
    /// Compare contents of same-size files instead of trusting size + mtime.
    pub checksum_compare: bool,
    /// Worker threads; `None` picks a default suited to I/O (8 × cores, 8 to 64).
    pub threads: Option<usize>,
    /// Progress output.
    pub progress: ProgressMode,
    /// Most bytes per second the copy writes (all threads together); `None` for no limit.
    pub bwlimit: Option<u64>,
    /// Print warnings to stderr as they happen.
    pub print_warnings: bool,
    /// Fail (instead of warning) when an entry changes or vanishes during the pass: for a final
    /// sync, whose source must be quiet.
    pub strict: bool,
    /// Keep a record of the pieces of large files this pass wrote, in the target, for the next
    /// pass to compare against instead of reading the target (a warm pass; a strict pass never
    /// keeps one, and any pass without this removes the one it found).
    pub chunk_record: bool,
    /// The target began as a block-level clone of the source made no earlier than this (seconds
    /// since the epoch, by the API server's clock): a file the clone made counts as copied then,
    /// not when its inode last changed (which the clone kept from the source), so only files
    /// modified about then are compared by content.
    pub cloned_at: Option<i64>,
    /// Leave flushing the target to the caller (an interim pass: the final pass's flush makes
    /// its data durable); otherwise a pass succeeds only once its data is on disk.
    pub defer_flush: bool,
    /// Test hook: abort the process once this many pieces were written in place.
    #[doc(hidden)]
    pub abort_after_pieces: Option<u64>,
    /// Test hook: corrupt this source-relative path after writing it and before verifying it.
    #[doc(hidden)]
    pub corrupt_after_write: Option<PathBuf>,
    /// Test hook: called between the scan and the copy (to simulate a live source).
    #[doc(hidden)]
    pub after_scan: Option<Hook>,
}

/// A callback for tests.
#[derive(Clone)]
pub struct Hook(pub Arc<dyn Fn() + Send + Sync>);

impl std::fmt::Debug for Hook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Hook")
    }
}

/// The outcome of a successful sync; serialized as the pod's termination message. It is the wire
/// type itself, so what the planner reads back cannot drift from what is written.
pub use ferry_mover_report::SyncResult as SyncReport;
