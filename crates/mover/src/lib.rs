//! ferry-mover: copies one directory tree onto another with full fidelity.
//!
//! Contents, permissions with setuid/setgid/sticky, numeric uid/gid, nanosecond mtimes
//! (directories set after their contents), symlinks (never followed), hard links, sparse files
//! (holes found with `SEEK_DATA`/`SEEK_HOLE`), xattrs and POSIX ACLs, FIFOs, device nodes and
//! empty directories. Runs are incremental (size + mtime quick check, or content comparison),
//! resumable (new inodes are written under a `.ferry-tmp-*` name and renamed into place; stale
//! temps are removed by the next run; in a directory the run made itself, which no reader knows
//! yet, a file is written under its own name and gets its mtime last, so one a killed run left
//! half-written fails the next run's quick check) and parallel (rayon pool; big files split in
//! 32 MiB chunks).
//!
//! # Large files: updated in place, piece by piece
//! A regular file of at least [`DELTA_MIN`] (1 MiB) whose target copy exists as a file of its own
//! (one link) is not rewritten when it changed: each [`PIECE`] (128 KiB) of the source is compared
//! with the target's and, in a piece that differs, only its 4 KiB blocks that differ are written,
//! in place, then the metadata (the mtime last). A database segment with pages rewritten costs a
//! read of the source, a read of the target's differing pieces and the writes of those pages'
//! blocks (a checkpoint scatters pages over every piece of a busy segment: written whole, the
//! pieces cost ten times the pages). The comparison uses the chunk record a pass run with
//! `--chunk-record` (the operator's warm pass) left in the target: the xxh3-128 digest of each
//! piece it wrote, trusted only while the target file's inode, size, mtime and ctime are what it
//! recorded; without it the target's piece is read and compared byte for byte. A pass killed half-way leaves the
//! file with the mtime of its last write, so the next pass compares it again (its record no longer
//! holds either). A written piece is read back and compared (`checksum`). Holes of the source are
//! punched in the target. The record is one file at the target root (`.ferry-tmp-chunk-record`),
//! left out of the scan; a `--strict` pass, or any pass without `--chunk-record`, removes it.
//!
//! # Change tracking: a final pass that visits what changed
//! `--track-changes` (only with `--wait-for`: a standby final pass) makes the wait useful. Before
//! waiting, the mover puts an inotify watch on every directory of the source, then copies the
//! source as a warm pass does (the *catch-up pass*: everything changed before the watches began is
//! in the target after it; it keeps a chunk record), and prints one line on stdout:
//! `{"standby":"ready","changeTracking":"on","catchUpSeconds":F}` (or `"off: <why>"`). A thread
//! keeps the kernel's event queue drained into the change record: a name created, removed or moved
//! is visited with its whole subtree (a directory moved in or out), a file written or whose
//! metadata changed alone, its directory too. At the go the queue is read to its end (an event is
//! queued before the system call that caused it returns), and the final pass reads only those
//! paths, the directories above them and the other links of linked files among them, in both
//! trees, then plans, copies and verifies them as a full pass would (`--strict` included).
//!
//! The record is never trusted where it may be incomplete: events lost (the queue overflowed), a
//! watch that could not be set (no read access, `fs.inotify.max_user_watches` reached), a catch-up
//! pass that failed, a changed file with hard links the record does not name (a new link to a
//! file that had one): the final pass walks both trees whole, as without tracking, with a warning
//! on stderr. The result says which: `"changeTracking":"used"` or `"fell back: <why>"`, and
//! `entriesVisited`. A pass that used the record has no `digest` (empty: the tree was not read
//! whole) and its `files`/`bytes` are the catch-up pass's, moved by what the visited paths hold.
//! With `--strict`, the watch goes on during the final pass: a change anywhere in the source
//! while it runs fails it (exit code 6), where it read the entry or not. Not seen by the watches:
//! a write to a linked file through a name outside the source (a full walk does not see its other
//! names either). Each watch holds its directory's inode in memory (about 1 KiB of kernel memory
//! a directory, charged against `fs.inotify.max_user_watches`, shared by every process of the
//! same user on the node, as is `fs.inotify.max_user_instances` for the one inotify instance):
//! where a limit is reached, tracking is off and the final pass walks whole. Watches need no
//! capability (inotify, not fanotify: fanotify's directory-entry events need
//! `CAP_SYS_ADMIN`, which restricted pods lack). Nothing else may write the target between the
//! standby's start and its end.
//!
//! While it waits, the standby keeps the target close to the source: about once a second
//! (`INTERIM_EVERY`, 1 s, in `interim.rs`), if the record names anything, it takes it (the watch goes
//! on into a fresh one) and runs an *interim pass* over those paths, a warm pass that keeps the
//! chunk record current (a pass over what changed keeps the record of the large files it did not
//! read), quiet on stdout and stderr. The final pass then visits only what changed since the last
//! interim pass: on a busy database, the last second's writes and the shutdown, not everything
//! since the catch-up. A pass that wrote much (a shutdown checkpoint under way) is followed by the
//! next one at once, and the target is flushed over and over by a thread of its own while interim
//! passes write, so their data reaches the disk while the replica serves and a go that comes
//! during one waits for that pass's reads and writes alone (the final pass's own flush still
//! waits for all of it before it succeeds, and a write-back error any flush met since the first
//! interim pass fails the final pass: `flush.rs`). Correctness never rests on them: a record lost while waiting, or an interim
//! pass that failed (no more run after it), makes the final pass walk whole. The result says
//! `"interimPasses":N,"interimBytesCopied":N` (the final pass's own bytes are `bytesCopied`).
//!
//! Across nodes, `serve --track-changes` keeps the same record from its start, cut into segments
//! by the `Mark` each `pull --track-changes` sends before it reads the tree; `pull --changes` (the
//! final pull) reads only the paths changed since the latest pass reported `Passed`, with the same
//! fallbacks, result fields and `--strict` check (`remote/changes.rs`, `remote/tracked.rs`).
//!
//! `--ready-file PATH` (with `--wait-for`) creates PATH once the standby is armed: with
//! `--track-changes` when its catch-up pass ended (before it prints its ready line), without it
//! just before it waits. A readiness probe running `ferry-mover ready PATH` then shows it as the
//! pod's Ready condition (the image may have no shell). A PATH left from before is removed at the
//! start; one whose directory takes no file fails the run at once.
//!
//! # Library
//! - [`sync`] makes a target equal to a source and returns a [`SyncReport`].
//! - [`digest()`] builds a [`Manifest`] of a tree (metadata and content hashes).
//! - [`usage`] measures allocated bytes and inodes (for the shrink precheck).
//!
//! # Command line
//! ```text
//! ferry-mover sync --source DIR --target DIR [--delete] [--verify none|metadata|checksum]
//!                  [--checksum-compare] [--threads N] [--progress json|human|none] [--result-file PATH]
//!                  [--bwlimit BYTES_PER_SECOND] [--wait-for FILE [--go-key-sha256 HEX]]
//!                  [--strict] [--chunk-record] [--track-changes] [--ready-file PATH]
//! ferry-mover digest DIR [--json]
//! ferry-mover ready PATH           # exit 0 iff PATH exists (a standby's readiness probe)
//! ferry-mover usage DIR            # prints {"bytes":N,"inodes":N}
//! ```
//! `--verify` defaults to `checksum`; `--progress` to `human` on a terminal, else `json`.
//! Progress (json) is one object per line on stdout, at most two per second plus a final one:
//! `{"phase":"scan|delete|copy|verify|done","filesDone":N,"filesTotal":N,"bytesDone":N,
//! "bytesTotal":N,"bytesPerSecond":N,"elapsedSeconds":F}`. On success the result
//! `{"files":N,"bytes":N,"bytesCopied":N,"deleted":N,"digest":"hex","seconds":F,
//! "verify":"checksum","warnings":N,"filesCopied":N,"metadataFixed":N,"entriesVisited":N}`
//! (`"changeTracking"`, `"interimPasses"` and `"interimBytesCopied"` too with `--track-changes`)
//! is printed as the last
//! stdout line and written to the result file; on failure the result file gets
//! `{"error":"...","kind":"...","exitCode":N,"mismatches":[paths]}`. Both stay under 4096 bytes
//! (the Kubernetes termination-message limit). The result file is `--result-file`, else
//! `$FERRY_RESULT_FILE`, else `/dev/termination-log` when running in a pod (the file exists or
//! `KUBERNETES_SERVICE_HOST` is set) and `/dev` is writable, else none.
//! Test hooks (built only with the `test-hooks` feature): `FERRY_MOVER_TEST_CORRUPT=rel/path`
//! corrupts that file after writing it (each piece written, for an update in place) and before
//! verifying it; `FERRY_MOVER_TEST_ABORT_AFTER_PIECES=N` aborts the process once it wrote N
//! pieces in place; `FERRY_MOVER_TEST_LOSE_EVENTS=1` loses the change record at the go (as a
//! queue overflow does; `=interim`: the first record an interim pass takes);
//! `FERRY_MOVER_TEST_MOST_WATCHES=N` fails the watch past N directories;
//! `FERRY_MOVER_TEST_INTERIM_MS=N` waits N ms between interim passes instead (0: none);
//! `FERRY_MOVER_TEST_INTERIM_PASSES=N` runs at most N interim passes.
//!
//! # Exit codes of the `ferry-mover` binary ([`MoverError::exit_code`])
//! | code | meaning |
//! |---|---|
//! | 0 | success (warnings about entries that vanished or changed during a warm copy are allowed) |
//! | 1 | any other failure (I/O error, ...) |
//! | 2 | bad arguments or bad input (missing source, target inside source, ...) |
//! | 3 | verification mismatch (the paths are named in the message and the result file) |
//! | 4 | target full (ENOSPC / EDQUOT) |
//! | 5 | permission denied (EACCES / EPERM) |
//! | 6 | `--strict` (a final sync): the source changed or lost entries during the pass |
//!
//! # Verification
//! `checksum` re-reads what landed before the file is put in place and compares it with what was
//! read from the source: byte for byte for a file whose data is one range of at most 256 KiB
//! (read into a buffer its thread keeps), else by xxh3-128 hashes per 32 MiB chunk; then
//! every target entry's metadata is compared with the source scan (a file written in the run is
//! read back through its open descriptor once complete). `metadata` does only the second part. Files skipped by the quick check are not re-hashed (use `checksum_compare`).
//!
//! # Racy files
//! The quick check (same size and mtime) cannot see a write that lands in the same clock tick as
//! the copy of the file: file times are coarse (a tick of a few milliseconds, a second on some file
//! systems), so a database page rewritten in place right after it was copied keeps both. A source
//! file modified no earlier than one second before its copy's inode last changed (the target's
//! ctime, which only the kernel sets) is therefore compared by content, as git does with racily
//! clean index entries. It costs a read of the few files written just before they were copied.

mod as_user;
mod changes;
mod copy;
mod delta;
mod digest;
mod dirs;
mod error;
mod flush;
mod fresh;
mod interim;
mod meta;
mod options;
mod partial;
mod plan;
mod progress;
mod record;
pub mod remote;
mod signal;
mod small;
mod standby;
mod sync;
mod throttle;
mod usage;
mod verify;
mod walk;
mod watch;

pub use digest::{Manifest, ManifestEntry, acl_text, digest};
pub use error::{
    EXIT_BAD_INPUT, EXIT_OK, EXIT_OTHER, EXIT_PERMISSION, EXIT_SOURCE_CHANGED, EXIT_TARGET_FULL,
    EXIT_VERIFY_MISMATCH, MoverError,
};
pub use meta::Kind;
pub use options::{Hook, SyncOptions, SyncReport, VerifyMode};
pub use plan::TEMP_PREFIX;
pub use progress::{ProgressLine, ProgressMode, one_line};
pub use record::{DELTA_MIN, PIECE, RECORD_NAME};
pub use signal::{Go, GoBy, wait_for_go};
pub use standby::{Ready, TrackOptions, standby};
pub use sync::sync;
pub use usage::{Usage, usage};
