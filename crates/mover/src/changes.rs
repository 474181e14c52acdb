//! The record of what changed in the source while a standby mover waited for its go: the paths
//! its final pass must visit. Pure (events in, paths out) so that every rule is unit-tested; the
//! watching itself is in `watch.rs`.
//!
//! A name that was created, removed or moved is visited with everything below it: a directory
//! moved in brings a subtree no event described, and one moved away must be removed from the
//! target with all it held. A name whose data or metadata changed is visited alone.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use rustix::fs::inotify::ReadFlags;

use crate::walk::path_order;

/// One path a final pass visits, in the source and in the target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Visit {
    /// Path relative to the tree roots.
    pub rel: PathBuf,
    /// Everything below it too (it was created, removed or moved).
    pub whole: bool,
}

/// What changed since tracking began, or why that is not known.
#[derive(Debug, Clone, Default)]
pub struct ChangeRecord {
    /// Path → whether it is visited whole.
    marked: HashMap<PathBuf, bool>,
    /// Why the record cannot be trusted (the first reason found).
    lost: Option<String>,
}

/// Events that name an entry created, removed or moved.
const NAMES: ReadFlags = ReadFlags::CREATE
    .union(ReadFlags::DELETE)
    .union(ReadFlags::MOVED_FROM)
    .union(ReadFlags::MOVED_TO);
/// Events on a watched directory itself that change where its entries are.
const SELF_GONE: ReadFlags = ReadFlags::DELETE_SELF.union(ReadFlags::MOVE_SELF);
/// Events that change an entry's data or metadata.
const CONTENT: ReadFlags = ReadFlags::MODIFY
    .union(ReadFlags::ATTRIB)
    .union(ReadFlags::CLOSE_WRITE);

impl ChangeRecord {
    /// Takes in one event of the directory at `dir` (source-relative) about entry `name`, or
    /// about the directory itself when `name` is `None`.
    pub fn note_event(&mut self, dir: &Path, name: Option<&OsStr>, flags: ReadFlags) {
        if flags.contains(ReadFlags::QUEUE_OVERFLOW) {
            return self.lose("events were lost (the kernel's event queue overflowed)".into());
        }
        if flags.contains(ReadFlags::UNMOUNT) {
            return self.lose("the source's file system was unmounted".into());
        }
        let rel = match name {
            Some(name) if !name.is_empty() => dir.join(name),
            _ => dir.to_path_buf(),
        };
        if flags.intersects(NAMES) {
            self.mark(rel, true);
        } else if name.is_none() && flags.intersects(SELF_GONE) {
            // A watched directory deleted or moved away: its parent's watch reported that when it
            // happened (IN_DELETE, IN_MOVED_FROM), so this event adds nothing, and it may come
            // much later: a deleted directory's own watch hears of it only once the last
            // reference to it goes (a pass still reading it), which a final pass must not take
            // for a change made while it ran. Only the source itself has no watched parent.
            if dir.as_os_str().is_empty() {
                self.lose("the source directory itself was moved or deleted".into());
            }
        } else if flags.intersects(CONTENT) {
            self.mark(rel, false);
        }
        // IN_IGNORED: the watch went with its directory, whose removal its parent reported.
    }

    /// Marks `rel` to visit (with its subtree when `whole`).
    pub fn mark(&mut self, rel: PathBuf, whole: bool) {
        *self.marked.entry(rel).or_insert(whole) |= whole;
    }

    /// The record cannot be trusted: a final pass walks both trees whole.
    pub fn lose(&mut self, reason: String) {
        self.lost.get_or_insert(reason);
    }

    /// Adds what `other` recorded (a record of the time after this one's, or one taken for a
    /// pass that did not finish and put back), so that one record names every change of both.
    pub fn absorb(&mut self, other: ChangeRecord) {
        for (rel, whole) in other.marked {
            self.mark(rel, whole);
        }
        if let Some(reason) = other.lost {
            self.lose(reason);
        }
    }

    /// Whether nothing changed (and nothing was lost).
    pub fn is_empty(&self) -> bool {
        self.marked.is_empty() && self.lost.is_none()
    }

    /// How many paths changed (at least one when events were lost).
    pub fn changes(&self) -> u64 {
        (self.marked.len() as u64).max(u64::from(self.lost.is_some()))
    }

    /// What changed, for a message: up to `most` paths (sorted), or why the record was lost.
    pub fn described(&self, most: usize) -> String {
        if let Some(reason) = &self.lost {
            return reason.clone();
        }
        let mut paths: Vec<String> = self.marked.keys().map(|p| p.display().to_string()).collect();
        paths.sort();
        let more = paths.len().saturating_sub(most);
        paths.truncate(most);
        let listed = paths.join(", ");
        if more > 0 {
            format!("{listed} and {more} more")
        } else {
            listed
        }
    }

    /// The paths to visit, in walk order, none below a path visited whole; or why the record
    /// is not complete.
    pub fn visits(&self) -> Result<Vec<Visit>, String> {
        if let Some(reason) = &self.lost {
            return Err(reason.clone());
        }
        let mut all: Vec<Visit> = self
            .marked
            .iter()
            .map(|(rel, &whole)| Visit {
                rel: rel.clone(),
                whole,
            })
            .collect();
        all.sort_by(|a, b| path_order(&a.rel, &b.rel));
        let mut kept: Vec<Visit> = Vec::with_capacity(all.len());
        let mut cover: Option<PathBuf> = None;
        for visit in all {
            if cover.as_ref().is_some_and(|c| visit.rel.starts_with(c)) {
                continue;
            }
            if visit.whole {
                cover = Some(visit.rel.clone());
            }
            kept.push(visit);
        }
        Ok(kept)
    }
}

/// Whether a pass over `visits` reads `rel`: it is visited, or below a path visited whole.
pub fn covers(visits: &[Visit]) -> impl Fn(&Path) -> bool + '_ {
    let visited: HashMap<&Path, bool> = visits.iter().map(|v| (v.rel.as_path(), v.whole)).collect();
    move |rel: &Path| {
        rel.ancestors()
            .any(|a| visited.get(a).is_some_and(|&whole| whole || a == rel))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn visits(record: &ChangeRecord) -> Vec<(String, bool)> {
        record
            .visits()
            .unwrap()
            .into_iter()
            .map(|v| (v.rel.display().to_string(), v.whole))
            .collect()
    }

    fn owned(list: &[(&str, bool)]) -> Vec<(String, bool)> {
        list.iter().map(|(p, w)| (p.to_string(), *w)).collect()
    }

    #[test]
    fn a_written_file_is_visited_alone_and_a_created_or_moved_name_whole() {
        let mut r = ChangeRecord::default();
        r.note_event(Path::new("a"), Some(OsStr::new("f")), ReadFlags::MODIFY);
        r.note_event(Path::new("a"), Some(OsStr::new("f")), ReadFlags::CLOSE_WRITE);
        r.note_event(
            Path::new(""),
            Some(OsStr::new("new")),
            ReadFlags::CREATE | ReadFlags::ISDIR,
        );
        r.note_event(Path::new("b"), Some(OsStr::new("x")), ReadFlags::MOVED_FROM);
        r.note_event(Path::new("c"), Some(OsStr::new("x")), ReadFlags::MOVED_TO);
        r.note_event(Path::new("d"), None, ReadFlags::ATTRIB | ReadFlags::ISDIR);
        r.note_event(Path::new("e"), Some(OsStr::new("gone")), ReadFlags::DELETE);
        let want = [
            ("a/f", false),
            ("b/x", true),
            ("c/x", true),
            ("d", false),
            ("e/gone", true),
            ("new", true),
        ];
        assert_eq!(visits(&r), owned(&want));
    }

    #[test]
    fn paths_below_a_whole_visit_are_left_to_it() {
        let mut r = ChangeRecord::default();
        r.mark("t/deep/f".into(), false);
        r.mark("t".into(), false);
        r.mark("t".into(), true);
        r.mark("t/deep".into(), true);
        r.mark("t-sibling".into(), false);
        r.mark("u/v".into(), false);
        assert_eq!(
            visits(&r),
            owned(&[("t", true), ("t-sibling", false), ("u/v", false)])
        );
    }

    #[test]
    fn a_watched_directory_moved_or_removed_is_visited_whole_by_its_parents_event_alone() {
        let mut r = ChangeRecord::default();
        r.note_event(Path::new("a"), Some(OsStr::new("b")), ReadFlags::MOVED_FROM);
        r.note_event(Path::new("a"), Some(OsStr::new("c")), ReadFlags::DELETE);
        assert_eq!(visits(&r), owned(&[("a/b", true), ("a/c", true)]));
        // Its own watch's word, which may come long after (a reader held it open), adds nothing:
        // a record taken in between stays empty.
        let mut late = ChangeRecord::default();
        late.note_event(Path::new("a/b"), None, ReadFlags::MOVE_SELF);
        late.note_event(Path::new("a/c"), None, ReadFlags::DELETE_SELF);
        late.note_event(Path::new("a/c"), None, ReadFlags::IGNORED);
        assert!(late.is_empty());
        // The source itself gone: nothing to trust.
        let mut root = ChangeRecord::default();
        root.note_event(Path::new(""), None, ReadFlags::DELETE_SELF);
        assert!(!root.is_empty());
    }

    #[test]
    fn a_record_absorbed_adds_its_paths_and_its_loss() {
        let mut first = ChangeRecord::default();
        first.mark("a".into(), false);
        first.mark("b".into(), false);
        let mut later = ChangeRecord::default();
        later.mark("b".into(), true);
        later.mark("c".into(), false);
        first.absorb(later);
        assert_eq!(visits(&first), owned(&[("a", false), ("b", true), ("c", false)]));
        let mut lost = ChangeRecord::default();
        lost.lose("overflow".into());
        first.absorb(lost);
        assert_eq!(first.visits().unwrap_err(), "overflow");
    }

    #[test]
    fn lost_events_make_the_record_useless() {
        let mut r = ChangeRecord::default();
        r.mark("a".into(), false);
        r.note_event(Path::new(""), None, ReadFlags::QUEUE_OVERFLOW);
        r.lose("later".into());
        let reason = r.visits().unwrap_err();
        assert!(reason.contains("overflowed"), "{reason}");
    }

    #[test]
    fn a_pass_reads_its_visits_and_what_is_below_the_whole_ones() {
        let visits = [
            Visit {
                rel: "a/f".into(),
                whole: false,
            },
            Visit {
                rel: "t".into(),
                whole: true,
            },
        ];
        let reads = covers(&visits);
        assert!(reads(Path::new("a/f")) && reads(Path::new("t")) && reads(Path::new("t/x/y")));
        assert!(!reads(Path::new("a/f/below")) && !reads(Path::new("a/g")) && !reads(Path::new("u")));
    }
}
