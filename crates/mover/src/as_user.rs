//! A mover that runs as the StatefulSet's own user, without capabilities (a namespace that
//! enforces Pod Security "restricted"). It can only recreate entries of its own uid and of its
//! groups; it must never copy an entry with another owner, so what it cannot recreate fails the
//! copy by name. As root (effective uid 0) none of this applies and nothing changes.

use std::path::Path;
use std::sync::OnceLock;

/// Who an unprivileged mover is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// Effective uid (never 0).
    pub uid: u32,
    /// Effective gid.
    pub gid: u32,
    /// Supplementary groups (the pod's fsGroup among them).
    pub groups: Vec<u32>,
}

impl Identity {
    /// Whether a file of this process may be given group `gid` (its own or a supplementary one).
    pub fn has_group(&self, gid: u32) -> bool {
        gid == self.gid || self.groups.contains(&gid)
    }
}

/// The process's identity when its effective uid is not 0, else `None`. Read once: the mover
/// never changes who it is.
pub fn unprivileged() -> Option<&'static Identity> {
    static WHO: OnceLock<Option<Identity>> = OnceLock::new();
    WHO.get_or_init(|| {
        let uid = rustix::process::geteuid();
        if uid.is_root() {
            return None;
        }
        // Without its list, only the primary group counts: a check may then fail, never pass.
        let groups = rustix::process::getgroups().unwrap_or_default();
        Some(Identity {
            uid: uid.as_raw(),
            gid: rustix::process::getegid().as_raw(),
            groups: groups.iter().map(|g| g.as_raw()).collect(),
        })
    })
    .as_ref()
}

/// The name mkfs (ext4) gives the directory it makes at a file system's root.
const LOST_FOUND: &str = "lost+found";

/// Whether `rel` (relative to a tree root) is the root's `lost+found` or below it, and the
/// mover is unprivileged: it belongs to the target's own file system (mkfs made it root-owned,
/// which no copy as a user can), so it is neither copied, deleted nor verified.
pub fn left_alone(rel: &Path) -> bool {
    unprivileged().is_some() && rel.starts_with(LOST_FOUND)
}

/// [`left_alone`] for a name directly at the tree root.
pub fn left_alone_at_root(name: &std::ffi::OsStr) -> bool {
    unprivileged().is_some() && name == LOST_FOUND
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_count_with_the_primary_one() {
        let who = Identity {
            uid: 999,
            gid: 999,
            groups: vec![2000],
        };
        assert!(who.has_group(999) && who.has_group(2000));
        assert!(!who.has_group(0));
    }

    #[test]
    fn only_the_roots_lost_found_is_left_alone_and_only_as_a_user() {
        // The tests run as root: nothing is left alone then.
        if unprivileged().is_none() {
            assert!(!left_alone(Path::new("lost+found")));
            return;
        }
        assert!(left_alone(Path::new("lost+found")));
        assert!(left_alone(Path::new("lost+found/#12")));
        assert!(!left_alone(Path::new("data/lost+found")));
        assert!(!left_alone(Path::new("lost+found2")));
    }
}
