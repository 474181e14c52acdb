//! The serving mover's change record (`serve --track-changes`): inotify watches over the source,
//! set before it answers anything, and the record cut into segments, one per pass. A pass marks
//! where it begins ([`Tracker::mark`], before it reads the tree) and reports when it succeeded
//! ([`Tracker::passed`]); the next pass asks what changed since the latest passed mark
//! ([`Tracker::changes`]): the union of the segments from that mark on. Whatever may make that
//! union incomplete (events lost, a watch that could not be set, a mark not known) is answered
//! with why, and the pull walks both trees whole.

use std::path::{Path, PathBuf};

use crate::changes::{ChangeRecord, Visit};
use crate::partial::LinkGroups;
use crate::standby::TrackOptions;
use crate::walk::Tree;
use crate::watch;

/// What the source's record holds, per pass.
pub(super) struct Tracker {
    watcher: watch::Watcher,
    /// Test hook: every answer to [`Tracker::changes`] is lost.
    lose_events: bool,
    /// Segments in mark order: each holds what changed from its mark to the next one's.
    segments: Vec<(u64, ChangeRecord)>,
    /// The next mark given.
    next_mark: u64,
    /// The latest mark reported passed, with the target's totals after that pass.
    passed: Option<Passed>,
    /// Why the record can no longer be complete (a directory made since could not be watched).
    broken: Option<String>,
    /// The source's hard links as the last whole tree served had them.
    links: LinkGroups,
}

/// A pass that succeeded: its mark and the entries and data bytes it left in the target.
#[derive(Debug, Clone, Copy)]
struct Passed {
    mark: u64,
    files: u64,
    bytes: u64,
}

/// What changed since a passed mark: the paths to visit and the target's totals after that pass.
#[derive(Debug)]
pub(super) struct Changed {
    pub visits: Vec<Visit>,
    pub files: u64,
    pub bytes: u64,
}

impl Tracker {
    /// Watches every directory of `source`; the error is why tracking is off.
    pub(super) fn start(source: &Path, track: &TrackOptions) -> Result<Tracker, String> {
        let source =
            std::fs::canonicalize(source).map_err(|e| format!("cannot resolve {}: {e}", source.display()))?;
        Ok(Tracker {
            watcher: watch::start(&source, track.most_watches)?,
            lose_events: track.lose_events,
            segments: Vec::new(),
            next_mark: 1,
            passed: None,
            broken: None,
            links: LinkGroups::default(),
        })
    }

    /// Starts a new segment: what changes from now on is in it.
    pub(super) fn mark(&mut self) -> u64 {
        self.gather();
        let mark = self.next_mark;
        self.next_mark += 1;
        self.segments.push((mark, ChangeRecord::default()));
        mark
    }

    /// The pass that began with `mark` succeeded: segments before it are no longer asked for.
    /// A mark not given, or older than the latest passed, changes nothing.
    pub(super) fn passed(&mut self, mark: u64, files: u64, bytes: u64) {
        let known = self.segments.iter().any(|(m, _)| *m == mark);
        if !known || self.passed.is_some_and(|p| p.mark >= mark) {
            return;
        }
        self.passed = Some(Passed { mark, files, bytes });
        self.segments.retain(|(m, _)| *m >= mark);
    }

    /// What changed since `since` (`None`: the latest passed mark), or why that is not known.
    pub(super) fn changes(&mut self, since: Option<u64>) -> Result<Changed, String> {
        self.gather();
        if let Some(why) = &self.broken {
            return Err(why.clone());
        }
        let (since, files, bytes) = match (since, self.passed) {
            (Some(mark), passed) => {
                let totals = passed
                    .filter(|p| p.mark == mark)
                    .map_or((0, 0), |p| (p.files, p.bytes));
                (mark, totals.0, totals.1)
            }
            (None, Some(p)) => (p.mark, p.files, p.bytes),
            (None, None) => {
                return Err("no pass has succeeded since this serving mover began tracking".into());
            }
        };
        if !self.segments.iter().any(|(m, _)| *m == since) {
            return Err(format!("mark {since} is not known to this serving mover"));
        }
        let mut union = ChangeRecord::default();
        for (_, segment) in self.segments.iter().filter(|(m, _)| *m >= since) {
            union.absorb(segment.clone());
        }
        if self.lose_events {
            union.lose("events were lost (test hook)".into());
        }
        let visits = union.visits()?;
        let visits = if self.links.is_empty() {
            visits
        } else {
            self.links.widen(visits)
        };
        Ok(Changed { visits, files, bytes })
    }

    /// A whole tree was served: its hard links widen later answers (a file written through one
    /// of its names is visited with all of them).
    pub(super) fn served(&mut self, tree: &Tree) {
        self.links = LinkGroups::of_tree(tree);
    }

    /// Moves what the watches saw into the latest segment (before the first mark nobody asks
    /// for it), and watches the directories made or moved in since, under their names now. A
    /// record that lost events names none of them: every directory is watched again then (the
    /// segments it spans are lost, the next ones whole again).
    fn gather(&mut self) {
        let record = self.watcher.take();
        let everything = [Visit {
            rel: PathBuf::new(),
            whole: true,
        }];
        let visits = record.visits();
        let made = visits.as_deref().unwrap_or(&everything);
        if let Err(why) = self.watcher.watch_whole(made) {
            self.broken.get_or_insert(why);
        }
        if let Some((_, segment)) = self.segments.last_mut() {
            segment.absorb(record);
        }
    }
}
