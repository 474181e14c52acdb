//! Directories this run made and what a file created in them inherits. In such a directory a
//! new file is written under its final name (no reader knows the directory before the swap, and
//! a run killed halfway leaves a file whose mtime is not the source's, so the next run's quick
//! check copies it again), and the calls that would only restate what it already has at creation
//! (owner, mode, no xattrs) are skipped.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// A directory made by this run that carries no xattrs: no default ACL and no security label,
/// so nothing reaches a file created in it but its owner and `mode & !umask`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FreshDir {
    /// Owner a new file gets (the creator's file-system uid, which the directory got too).
    pub uid: u32,
    /// Group a new file gets: the directory's (it is the creator's group, or its parent's
    /// when the parent is setgid, and then the directory is setgid too).
    pub gid: u32,
    /// The process's umask, applied to the mode a file is created with.
    pub umask: u32,
}

impl FreshDir {
    /// The permission bits a file created here with `perm` ends up with.
    pub fn created_mode(&self, perm: u32) -> u32 {
        perm & 0o777 & !self.umask
    }
}

/// What `dir`, just made by this run, passes on to new files; `None` when it carries xattrs
/// (an inherited default ACL, a label) or cannot be read, and new files there take the
/// general path.
pub fn inspect(dir: &Path, umask: Option<u32>) -> Option<FreshDir> {
    let umask = umask?;
    // A file system without xattrs lists none.
    if !crate::meta::read_xattrs(dir).ok()?.is_empty() {
        return None;
    }
    let md = std::fs::symlink_metadata(dir).ok()?;
    Some(FreshDir {
        uid: md.uid(),
        gid: md.gid(),
        umask,
    })
}

/// The process's umask, read without changing it (`Umask:` of `/proc/self/status`, Linux 4.7+).
pub fn process_umask() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_umask(&status)
}

fn parse_umask(status: &str) -> Option<u32> {
    let line = status.lines().find_map(|l| l.strip_prefix("Umask:"))?;
    u32::from_str_radix(line.trim(), 8).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_umask_is_read_from_the_status_file() {
        assert_eq!(parse_umask("Name:\tx\nUmask:\t0022\nState:\tR\n"), Some(0o022));
        assert_eq!(parse_umask("Name:\tx\n"), None);
        assert_eq!(parse_umask("Umask:\tzz\n"), None);
    }

    #[test]
    fn the_created_mode_drops_special_bits_and_the_umask() {
        let dir = FreshDir {
            uid: 0,
            gid: 0,
            umask: 0o022,
        };
        assert_eq!(dir.created_mode(0o4755), 0o755);
        assert_eq!(dir.created_mode(0o666), 0o644);
    }

    #[test]
    fn a_new_directory_without_xattrs_is_fresh_with_its_owner() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("d");
        std::fs::create_dir(&dir).unwrap();
        let md = std::fs::metadata(&dir).unwrap();
        let fresh = inspect(&dir, Some(0o022)).expect("fresh");
        assert_eq!((fresh.uid, fresh.gid), (md.uid(), md.gid()));
        assert_eq!(inspect(&dir, None), None, "no umask known: not fresh");
        assert_eq!(inspect(&tmp.path().join("missing"), Some(0o022)), None);
    }
}
