//! Watching the source for changes with inotify: a watch on every directory, set up before the
//! standby's catch-up pass reads the tree, and a thread that keeps the kernel's queue drained
//! into a [`ChangeRecord`].
//!
//! Why inotify and not a fanotify mark on the whole file system: fanotify's directory-entry
//! events need CAP_SYS_ADMIN (and CAP_DAC_READ_SEARCH to turn their file handles into paths),
//! which the restricted pod security standard forbids, and raw system calls this crate does not
//! allow itself (no `unsafe`; no safe wrapper of them exists). inotify needs only read access to
//! the directories. Its cost is a watch per directory (kernel memory, `fs.inotify.max_user_watches`),
//! and directories that appear later are not watched: they were created or moved in, so their
//! name is visited whole anyway.
//!
//! An event is queued before the system call that caused it returns, so reading the queue
//! without blocking once the go came sees every change made before it.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use rustix::fs::inotify::{self, CreateFlags, WatchFlags};
use rustix::io::Errno;

use crate::changes::{ChangeRecord, Visit};
use crate::progress::lock;

/// How often the thread empties the kernel's queue (16,384 events by default): often enough
/// that a busy source does not overflow it.
const DRAIN_EVERY: Duration = Duration::from_millis(10);

/// What each directory's watch reports: names created, removed or moved, entries written or
/// whose metadata changed. A write through a shared mapping has no event of its own, but its
/// file's close comes after it (the mapping holds the file open): `CLOSE_WRITE`.
fn watch_flags() -> WatchFlags {
    WatchFlags::ATTRIB
        | WatchFlags::CLOSE_WRITE
        | WatchFlags::CREATE
        | WatchFlags::DELETE
        | WatchFlags::DELETE_SELF
        | WatchFlags::MODIFY
        | WatchFlags::MOVE_SELF
        | WatchFlags::MOVED_FROM
        | WatchFlags::MOVED_TO
        | WatchFlags::ONLYDIR
        | WatchFlags::DONT_FOLLOW
}

/// The inotify instance, what each watch is, and what its events said so far.
struct State {
    fd: OwnedFd,
    /// Watch descriptor → the directory's source-relative path when it was watched.
    dirs: HashMap<i32, PathBuf>,
    record: ChangeRecord,
    buf: Vec<MaybeUninit<u8>>,
}

impl State {
    /// Reads every queued event into the record, without blocking.
    fn drain(&mut self) {
        let State {
            fd,
            dirs,
            record,
            buf,
        } = self;
        let mut reader = inotify::Reader::new(&*fd, buf);
        loop {
            match reader.next() {
                Ok(event) => {
                    let name = event.file_name().map(|n| OsStr::from_bytes(n.to_bytes()));
                    match dirs.get(&event.wd()) {
                        Some(dir) => record.note_event(dir, name, event.events()),
                        // The overflow event has no watch of its own.
                        None if event.wd() == -1 => record.note_event(Path::new(""), None, event.events()),
                        None => record.lose(format!("an event of unknown watch {}", event.wd())),
                    }
                }
                Err(Errno::AGAIN) => return,
                Err(Errno::INTR) => {}
                Err(e) => return record.lose(format!("reading change events: {e}")),
            }
        }
    }
}

/// A running watch of a source tree.
pub struct Watcher {
    /// The source tree's root (absolute, resolved).
    source: PathBuf,
    /// The test hook's watch limit.
    most_watches: Option<usize>,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// Watches every directory of `source` (an absolute, resolved path) and starts draining events.
/// `most_watches` (a test hook) makes the watch fail as a full watch table would. The error is
/// why tracking is not possible.
pub fn start(source: &Path, most_watches: Option<usize>) -> Result<Watcher, String> {
    let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK)
        .map_err(|e| format!("inotify unavailable: {e}"))?;
    let mut dirs = HashMap::new();
    watch_tree(&fd, source, PathBuf::new(), &mut dirs, most_watches)?;
    let state = Arc::new(Mutex::new(State {
        fd,
        dirs,
        record: ChangeRecord::default(),
        buf: vec![MaybeUninit::uninit(); 64 * 1024],
    }));
    let stop = Arc::new(AtomicBool::new(false));
    let thread = {
        let (state, stop) = (state.clone(), stop.clone());
        std::thread::Builder::new()
            .name("ferry-mover-watch".into())
            .spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    lock(&state).drain();
                    std::thread::sleep(DRAIN_EVERY);
                }
            })
            .map_err(|e| format!("cannot start the watch thread: {e}"))?
    };
    Ok(Watcher {
        source: source.to_path_buf(),
        most_watches,
        state,
        stop,
        thread: Some(thread),
    })
}

/// Adds a watch on `rel` under `root`, then on each directory it holds. The watch comes before
/// the listing, so a directory made after the listing is reported by its parent's watch.
fn watch_tree(
    fd: &OwnedFd,
    root: &Path,
    rel: PathBuf,
    dirs: &mut HashMap<i32, PathBuf>,
    most_watches: Option<usize>,
) -> Result<(), String> {
    let abs = root.join(&rel);
    if most_watches.is_some_and(|most| dirs.len() >= most) {
        return Err(format!("cannot watch {}: {}", abs.display(), Errno::NOSPC));
    }
    let wd = match inotify::add_watch(fd, &abs, watch_flags()) {
        Ok(wd) => wd,
        // Gone (or replaced by a non-directory) since it was listed: its parent reported that.
        Err(Errno::NOENT | Errno::NOTDIR) => return Ok(()),
        Err(Errno::NOSPC) => {
            return Err(format!(
                "cannot watch {}: the inotify watch limit (fs.inotify.max_user_watches) is reached",
                abs.display()
            ));
        }
        Err(e) => return Err(format!("cannot watch {}: {e}", abs.display())),
    };
    dirs.insert(wd, rel.clone());
    let listing = match std::fs::read_dir(&abs) {
        Ok(listing) => listing,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("cannot list {}: {e}", abs.display())),
    };
    for entry in listing {
        let entry = entry.map_err(|e| format!("cannot list {}: {e}", abs.display()))?;
        // d_type: no stat per entry; a symlink to a directory is not followed.
        let mkfs = rel.as_os_str().is_empty() && crate::as_user::left_alone_at_root(&entry.file_name());
        if entry.file_type().is_ok_and(|t| t.is_dir()) && !mkfs {
            watch_tree(fd, root, rel.join(entry.file_name()), dirs, most_watches)?;
        }
    }
    Ok(())
}

impl Watcher {
    /// The record so far, with every event queued before this call in it; watching goes on
    /// into a fresh record (changes during the final pass, which must see none).
    pub fn take(&self) -> ChangeRecord {
        let mut state = lock(&self.state);
        state.drain();
        std::mem::take(&mut state.record)
    }

    /// Watches the directories that `visits` visits whole (made, moved in or renamed since the
    /// last record was taken), with everything below them, under their names as they are now.
    /// Called before a pass reads them: what changes in them after that is in the next record.
    /// A directory renamed keeps its watch, which from now on reports under the new name.
    pub fn watch_whole(&self, visits: &[Visit]) -> Result<(), String> {
        let mut state = lock(&self.state);
        let State { fd, dirs, .. } = &mut *state;
        for visit in visits.iter().filter(|visit| visit.whole) {
            watch_tree(fd, &self.source, visit.rel.clone(), dirs, self.most_watches)?;
        }
        Ok(())
    }

    /// Stops watching and returns the record, with every event queued before this call in it.
    pub fn finish(mut self) -> ChangeRecord {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            lock(&self.state).record.lose("the watch thread failed".into());
        }
        let mut state = lock(&self.state);
        state.drain();
        std::mem::take(&mut state.record)
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
