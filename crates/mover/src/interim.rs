//! The standby's interim passes: while it waits for its go, it copies what changed since its last
//! pass (the catch-up pass first), about once a second, so that the final pass, which runs while
//! the replica is down, is left with only what changed in the last second and the shutdown.
//!
//! Correctness never rests on them: a record lost, or a pass failed, makes the final pass walk
//! both trees whole. Each interim pass visits only what its record names, so a go that comes
//! during one waits for that pass alone.

use std::time::Duration;

use crate::changes::ChangeRecord;
use crate::flush::Flusher;
use crate::options::SyncOptions;
use crate::partial::LinkGroups;
use crate::progress::ProgressMode;
use crate::sync::{self, Scope};
use crate::watch;

/// How long the standby waits for its go between interim passes: the final pass is left with
/// what changed in about this long, and a pass costs little more than what it copies.
pub const INTERIM_EVERY: Duration = Duration::from_secs(1);

/// A pass that wrote at least this much is followed by the next one at once: the source is
/// changing faster than a steady load changes it (a shutdown checkpoint writing out its cache),
/// and what it writes meanwhile is the final pass's unless a pass takes it first.
pub const BUSY_BYTES: u64 = 16 << 20;

/// What the catch-up pass (then each interim pass) left for the next one.
pub(crate) struct CaughtUp {
    pub watcher: watch::Watcher,
    /// Entries and data bytes in the target.
    pub files: u64,
    pub bytes: u64,
    /// The source's hard links as last read whole.
    pub links: LinkGroups,
}

/// What the interim passes did.
#[derive(Debug, Default)]
pub struct Interim {
    /// Passes run to their end.
    pub passes: u64,
    /// Data bytes they wrote.
    pub bytes_copied: u64,
    /// Why the final pass must walk whole (a record lost, a pass failed), if it must.
    pub whole: Option<String>,
    /// A pass failed: no more are run (the final pass reports what is wrong, if it still is).
    failed: bool,
    /// What flushed the passes' writes; its finish, after the final pass, says whether every
    /// flush since the first pass succeeded.
    pub(crate) flusher: Option<Flusher>,
}

/// When interim passes run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pacing {
    /// The wait between passes (zero: none run).
    pub every: Duration,
    /// A test hook: the first record an interim pass takes is lost.
    pub lose_first: bool,
    /// A test hook: at most this many passes run (a test's changes after them are the final
    /// pass's, however slowly the test runs).
    pub most: Option<u64>,
}

/// Waits for the go (`go` waits at most the time it is given); meanwhile runs an interim pass
/// over what changed each time a wait of `pacing.every` ends without it.
pub(crate) fn converge<G>(
    opts: &SyncOptions,
    pacing: Pacing,
    caught: &mut CaughtUp,
    go: &mut impl FnMut(Duration) -> Option<G>,
) -> (G, Interim) {
    let mut interim = Interim::default();
    if pacing.every.is_zero() {
        return (wait(go), interim);
    }
    // Without a descriptor of the target the passes fail too, and the final pass reports why.
    interim.flusher = Flusher::start(&opts.target).ok();
    let mut wrote = 0;
    loop {
        if let Some(went) = go(next_wait(pacing.every, wrote)) {
            return (went, interim);
        }
        if pacing.most.is_some_and(|most| interim.passes >= most) {
            return (wait(go), interim);
        }
        let before = interim.bytes_copied;
        if let Some(flusher) = &interim.flusher {
            flusher.writing();
        }
        step(opts, pacing.lose_first, caught, &mut interim);
        if let Some(flusher) = &interim.flusher {
            flusher.written();
        }
        wrote = interim.bytes_copied - before;
    }
}

/// How long to wait for the go before the next interim pass, after one that wrote `wrote` bytes.
pub(crate) fn next_wait(every: Duration, wrote: u64) -> Duration {
    if wrote >= BUSY_BYTES {
        Duration::ZERO
    } else {
        every
    }
}

/// Waits for the go, doing nothing else.
pub fn wait<G>(go: &mut impl FnMut(Duration) -> Option<G>) -> G {
    loop {
        if let Some(went) = go(Duration::MAX) {
            return went;
        }
    }
}

/// One interim pass over the record gathered since the last one, if it names anything. The
/// watcher's take swaps in a fresh record: what changes during the pass is in the next one.
fn step(opts: &SyncOptions, lose_first: bool, caught: &mut CaughtUp, interim: &mut Interim) {
    if interim.failed {
        return;
    }
    let mut record = caught.watcher.take();
    if record.is_empty() {
        return;
    }
    if lose_first && interim.whole.is_none() {
        record.lose("events were lost (test hook, while waiting)".into());
    }
    // A lost record leaves a gap only the final walk covers; later records are whole again,
    // and copying them still shortens the final pass.
    let scope = match scope_of(&record, &caught.links, caught.files, caught.bytes) {
        Ok(scope) => scope,
        Err(why) => {
            interim.whole.get_or_insert(why);
            return;
        }
    };
    // A directory made or renamed since the catch-up has no watch (or one under its old name):
    // without one, what is written in it after this pass would be in no record.
    if let Scope::Changed { visits, .. } = &scope
        && let Err(why) = caught.watcher.watch_whole(visits)
    {
        interim.whole.get_or_insert(why);
    }
    match sync::pass(&interim_options(opts), &scope) {
        Ok((report, tree)) => {
            interim.passes += 1;
            interim.bytes_copied += report.bytes_copied;
            caught.files = report.files;
            caught.bytes = report.bytes;
            // A pass that fell back walked whole: its links are the tree's as it is now.
            if report.change_tracking.as_deref() != Some("used") {
                caught.links = LinkGroups::of_tree(&tree);
            }
        }
        Err(e) => {
            interim
                .whole
                .get_or_insert(format!("an interim pass failed: {e}"));
            interim.failed = true;
        }
    }
}

/// An interim pass: a warm one (a live source; what changes while it runs is in the next record)
/// that keeps the chunk record current for the next pass, quiet on stdout and stderr, and leaves
/// its flush to the flusher.
fn interim_options(opts: &SyncOptions) -> SyncOptions {
    SyncOptions {
        strict: false,
        chunk_record: true,
        progress: ProgressMode::None,
        print_warnings: false,
        defer_flush: true,
        abort_after_pieces: None,
        corrupt_after_write: None,
        after_scan: None,
        ..opts.clone()
    }
}

/// What a pass over `record` reads: its paths and the other links of the files among them.
pub(crate) fn scope_of(
    record: &ChangeRecord,
    links: &LinkGroups,
    files: u64,
    bytes: u64,
) -> Result<Scope, String> {
    let visits = record.visits()?;
    let visits = if links.is_empty() {
        visits
    } else {
        links.widen(visits)
    };
    Ok(Scope::Changed { visits, files, bytes })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_that_wrote_much_is_followed_at_once_and_others_after_the_wait() {
        let every = Duration::from_secs(1);
        assert_eq!(next_wait(every, 0), every);
        assert_eq!(next_wait(every, BUSY_BYTES - 1), every);
        assert_eq!(next_wait(every, BUSY_BYTES), Duration::ZERO);
        assert_eq!(next_wait(every, 400 << 20), Duration::ZERO);
    }
}
