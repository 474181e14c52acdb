//! Directory descriptors of a tree, opened on first use and shared by the copy threads, so a
//! file is opened (or created) by its name in its directory: the kernel resolves one name
//! instead of walking the whole path again for every file (on a tmpfs, where only system calls
//! cost, those walks were a tenth of a small-file copy).

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use rustix::fs::{CWD, OFlags};

use crate::walk::Tree;

/// Descriptors this process keeps free for everything else (files being copied, the result).
const RESERVED: u64 = 256;
/// Most directory descriptors one tree holds, whatever the limit allows.
const MOST: u64 = 65_536;

/// The directories of one tree, by entry index.
pub struct DirFds<'a> {
    root: &'a Path,
    tree: &'a Tree,
    fds: Vec<OnceLock<Option<OwnedFd>>>,
    /// How many more may be opened; past that, callers use paths.
    left: AtomicUsize,
}

impl<'a> DirFds<'a> {
    /// Descriptors for the directories of `tree` under `root`, at most `budget` of them open.
    pub fn new(root: &'a Path, tree: &'a Tree, budget: usize) -> Self {
        DirFds {
            root,
            tree,
            fds: tree.entries.iter().map(|_| OnceLock::new()).collect(),
            left: AtomicUsize::new(budget),
        }
    }

    /// The descriptor of directory entry `dir`, opened on first use (`O_PATH`, not following a
    /// symlink); `None` when the budget is spent or it cannot be opened, and the caller uses the
    /// path instead.
    pub fn get(&self, dir: usize) -> Option<BorrowedFd<'_>> {
        let slot = self.fds.get(dir)?;
        slot.get_or_init(|| {
            let taken = self
                .left
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
            if taken.is_err() {
                return None;
            }
            let path = self.root.join(&self.tree.entries[dir].rel);
            let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            rustix::fs::openat(CWD, &path, flags, rustix::fs::Mode::empty()).ok()
        })
        .as_ref()
        .map(|fd| fd.as_fd())
    }
}

/// How many directory descriptors each of `trees` trees may hold: a share of the open-file
/// limit, so a tree of a million directories never runs the process out of descriptors.
pub fn budget(trees: u64) -> usize {
    let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .unwrap_or(MOST * trees + RESERVED);
    let share = soft.saturating_sub(RESERVED) / trees.max(1) / 2;
    usize::try_from(share.min(MOST)).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::Warnings;

    #[test]
    fn a_directory_is_opened_once_and_the_budget_bounds_how_many() {
        let tmp = tempfile::tempdir().unwrap();
        for d in ["a", "b", "c"] {
            std::fs::create_dir(tmp.path().join(d)).unwrap();
        }
        std::fs::write(tmp.path().join("f"), b"x").unwrap();
        let tree = crate::walk::scan(tmp.path(), false, &Warnings::default(), None).unwrap();
        let index = |name: &str| {
            tree.entries
                .iter()
                .position(|e| e.rel == Path::new(name))
                .unwrap()
        };
        let fds = DirFds::new(tmp.path(), &tree, 2);
        let a = fds.get(index("a")).expect("first within budget");
        let again = fds.get(index("a")).expect("the same descriptor again");
        assert_eq!(
            std::os::fd::AsRawFd::as_raw_fd(&a),
            std::os::fd::AsRawFd::as_raw_fd(&again)
        );
        assert!(fds.get(index("b")).is_some(), "second within budget");
        assert!(fds.get(index("c")).is_none(), "past the budget: use the path");
        let fresh = DirFds::new(tmp.path(), &tree, 2);
        assert!(fresh.get(index("f")).is_none(), "a file is no directory");
        assert!(fresh.get(tree.entries.len()).is_none(), "no such entry");
    }

    #[test]
    fn the_budget_is_a_share_of_the_open_file_limit() {
        let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
        let b = budget(2) as u64;
        assert!(b <= MOST);
        if let Some(soft) = soft {
            assert!(b * 2 * 2 + RESERVED <= soft.max(RESERVED), "{b} of {soft}");
        }
    }
}
