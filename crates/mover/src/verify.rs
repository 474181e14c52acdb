//! Post-copy verification of metadata: target entries compared with what the source scan saw.

use crate::meta::{EntryMeta, Kind};

/// Describes how `dst` differs from `src`, or `None` when it is exact. Content is checked
/// separately (streaming hashes in the copy); here size stands in for it. `root`: the entries
/// are the trees' roots, whose mtime a mover without capabilities cannot set where another user
/// owns the target's (the volume's root): that difference is none then.
pub fn metadata_mismatch(src: &EntryMeta, dst: Option<&EntryMeta>, root: bool) -> Option<String> {
    let Some(dst) = dst else {
        return Some("missing in target".into());
    };
    if src.kind != dst.kind {
        return Some(format!("type {} != {}", dst.kind.name(), src.kind.name()));
    }
    let mut diffs = Vec::new();
    if src.kind != Kind::Symlink && src.perm != dst.perm {
        diffs.push(format!("mode {:o} != {:o}", dst.perm, src.perm));
    }
    if (src.uid, src.gid) != (dst.uid, dst.gid) {
        diffs.push(format!(
            "owner {}:{} != {}:{}",
            dst.uid, dst.gid, src.uid, src.gid
        ));
    }
    let not_ours = root && crate::as_user::unprivileged().is_some_and(|who| dst.uid != who.uid);
    if !src.same_mtime(dst) && !not_ours {
        diffs.push(format!(
            "mtime {}.{:09} != {}.{:09}",
            dst.mtime, dst.mtime_nsec, src.mtime, src.mtime_nsec
        ));
    }
    if src.kind == Kind::File && src.size != dst.size {
        diffs.push(format!("size {} != {}", dst.size, src.size));
    }
    if src.link != dst.link {
        diffs.push("symlink target differs".into());
    }
    if matches!(src.kind, Kind::CharDev | Kind::BlockDev) && src.rdev != dst.rdev {
        diffs.push("device number differs".into());
    }
    if src.xattrs != dst.xattrs {
        diffs.push("xattrs/ACLs differ".into());
    }
    (!diffs.is_empty()).then(|| diffs.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn m() -> EntryMeta {
        EntryMeta {
            kind: Kind::File,
            perm: 0o600,
            uid: 1,
            gid: 1,
            size: 3,
            mtime: 1,
            mtime_nsec: 2,
            ctime: 0,
            ctime_nsec: 0,
            atime: 0,
            atime_nsec: 0,
            rdev: 0,
            dev: 0,
            ino: 0,
            nlink: 1,
            blocks: 0,
            link: None,
            xattrs: vec![],
        }
    }

    #[test]
    fn reports_each_difference() {
        let a = m();
        assert_eq!(metadata_mismatch(&a, Some(&a), false), None);
        assert_eq!(
            metadata_mismatch(&a, None, false).as_deref(),
            Some("missing in target")
        );
        let b = EntryMeta {
            perm: 0o644,
            mtime_nsec: 3,
            ..m()
        };
        let msg = metadata_mismatch(&a, Some(&b), false).unwrap();
        assert!(msg.contains("mode") && msg.contains("mtime"), "{msg}");
        let l = EntryMeta {
            kind: Kind::Symlink,
            link: Some(PathBuf::from("x")),
            ..m()
        };
        let l2 = EntryMeta {
            perm: 0o777,
            ..l.clone()
        };
        assert_eq!(
            metadata_mismatch(&l, Some(&l2), false),
            None,
            "symlink modes are not settable"
        );
    }
}
