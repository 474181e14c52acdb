//! Space and inodes used by a tree (for the shrink precheck): like `du`, hard links once. And what
//! copying it exactly needs (for the capabilities the planner gives the mover pods).

use std::collections::HashSet;
use std::path::Path;

use crate::as_user::Identity;
use crate::error::MoverError;
use crate::meta::{EntryMeta, Kind};
use crate::progress::Warnings;
use crate::walk::Tree;

/// Bytes allocated on disk and inodes in use by a tree: the wire type the planner reads back.
pub use ferry_mover_report::UsageResult as Usage;
pub use ferry_mover_report::{CopyNeeds, FileSystemUsage};

/// The extended attribute that holds a file's capabilities.
const FILE_CAPABILITIES: &[u8] = b"security.capability";

/// What recreating `entry` exactly needs, added to `needs`.
fn note_needs(needs: &mut CopyNeeds, entry: &EntryMeta) {
    needs.other_owners |= entry.uid != 0 || entry.gid != 0;
    needs.set_id |= entry.perm & 0o6000 != 0;
    needs.device_nodes |= matches!(entry.kind, Kind::CharDev | Kind::BlockDev);
    needs.file_capabilities |= entry.xattrs.iter().any(|(name, _)| name == FILE_CAPABILITIES);
}

/// Measures `dir`.
pub fn usage(dir: &Path) -> Result<Usage, MoverError> {
    let md = std::fs::symlink_metadata(dir).map_err(|e| crate::digest::bad_dir(dir, e))?;
    if !md.is_dir() {
        return Err(MoverError::BadInput(format!(
            "not a directory: {}",
            dir.display()
        )));
    }
    // With extended attributes: file capabilities are one.
    let tree = crate::walk::scan(dir, true, &Warnings::new(false), None)?;
    let mut seen = HashSet::new();
    let mut u = Usage::default();
    // (The root too: the copy gives the target's root the source root's owner and mode.)
    let mut needs = CopyNeeds::default();
    for e in &tree.entries {
        note_needs(&mut needs, &e.meta);
        if e.meta.nlink > 1 && !seen.insert((e.meta.dev, e.meta.ino)) {
            continue;
        }
        u.bytes += e.meta.blocks * 512;
        u.inodes += 1;
    }
    u.needs = Some(needs);
    u.file_system = Some(file_system(dir)?);
    u.not_as_user = crate::as_user::unprivileged().and_then(|who| not_as_user(who, &tree));
    Ok(u)
}

/// How many entries a `notAsUser` text names.
const NAMED: usize = 3;

/// The entries a copy running as `who` could not recreate exactly, and why (at most [`NAMED`],
/// then how many more); `None` when there is none. The root is left out: the copy gives it no
/// owner (the target's already has it, or the copy fails naming it). The walk left the root's
/// `lost+found` out.
fn not_as_user(who: &Identity, tree: &Tree) -> Option<String> {
    let mut named = Vec::new();
    let mut more = 0;
    for e in tree.entries.iter().filter(|e| !e.rel.as_os_str().is_empty()) {
        let Some(why) = not_recreatable(who, &e.meta) else {
            continue;
        };
        match named.len() < NAMED {
            true => named.push(format!("{}: {why}", e.rel.display())),
            false => more += 1,
        }
    }
    if more > 0 {
        named.push(format!("and {more} more"));
    }
    (!named.is_empty()).then(|| named.join("; "))
}

/// Why a copy running as `who` could not recreate `entry` exactly, or `None`.
fn not_recreatable(who: &Identity, entry: &EntryMeta) -> Option<String> {
    let mut why = Vec::new();
    if entry.uid != who.uid || !who.has_group(entry.gid) {
        why.push(format!("owner {}:{}", entry.uid, entry.gid));
    }
    if matches!(entry.kind, Kind::CharDev | Kind::BlockDev) {
        why.push("a device node".to_string());
    }
    if entry.xattrs.iter().any(|(name, _)| name == FILE_CAPABILITIES) {
        why.push("file capabilities".to_string());
    }
    (!why.is_empty()).then(|| why.join(", "))
}

/// The size and use of the file system `dir` is on.
fn file_system(dir: &Path) -> Result<FileSystemUsage, MoverError> {
    let stat = rustix::fs::statvfs(dir).map_err(|e| crate::error::errno("measuring", dir, e))?;
    let block = stat.f_frsize;
    Ok(FileSystemUsage {
        capacity_bytes: stat.f_blocks.saturating_mul(block),
        used_bytes: stat.f_blocks.saturating_sub(stat.f_bfree).saturating_mul(block),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{PermissionsExt, chown};

    fn needs_of(dir: &Path) -> CopyNeeds {
        usage(dir).unwrap().needs.unwrap()
    }

    /// The file system's figures come with the tree's: what a rescue judges a volume full by.
    #[test]
    fn the_file_system_the_tree_is_on_is_measured_too() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), vec![1u8; 1 << 20]).unwrap();
        let fs = usage(dir.path()).unwrap().file_system.unwrap();
        assert!(fs.capacity_bytes > 0, "{fs:?}");
        assert!(fs.used_bytes <= fs.capacity_bytes, "{fs:?}");
    }

    fn entry(rel: &str, uid: u32, gid: u32, kind: Kind) -> crate::walk::Entry {
        let md = std::fs::symlink_metadata("/").unwrap();
        let mut meta = EntryMeta::from_metadata(&md);
        (meta.uid, meta.gid, meta.kind) = (uid, gid, kind);
        crate::walk::Entry {
            rel: rel.into(),
            meta,
        }
    }

    #[test]
    fn what_a_user_cannot_recreate_is_named_three_at_most() {
        let who = Identity {
            uid: 999,
            gid: 999,
            groups: vec![999, 2000],
        };
        let mut tree = Tree {
            entries: vec![
                entry("", 0, 2000, Kind::Dir),
                entry("a", 999, 2000, Kind::File),
                entry("b", 999, 999, Kind::Dir),
            ],
        };
        assert_eq!(
            not_as_user(&who, &tree),
            None,
            "the root's owner is not the check's"
        );
        tree.entries.push(entry("b/x", 0, 0, Kind::File));
        tree.entries.push(entry("b/y", 999, 1000, Kind::File));
        tree.entries.push(entry("c", 999, 2000, Kind::CharDev));
        assert_eq!(
            not_as_user(&who, &tree).as_deref(),
            Some("b/x: owner 0:0; b/y: owner 999:1000; c: a device node")
        );
        tree.entries.push(entry("d", 0, 2000, Kind::BlockDev));
        tree.entries.push(entry("e", 1, 1, Kind::File));
        assert_eq!(
            not_as_user(&who, &tree).as_deref(),
            Some("b/x: owner 0:0; b/y: owner 999:1000; c: a device node; and 2 more")
        );
        let mut caps = entry("f", 999, 999, Kind::File);
        caps.meta.xattrs.push((FILE_CAPABILITIES.to_vec(), vec![0; 20]));
        let tree = Tree {
            entries: vec![entry("", 999, 999, Kind::Dir), caps],
        };
        assert_eq!(not_as_user(&who, &tree).as_deref(), Some("f: file capabilities"));
    }

    #[test]
    fn plain_files_of_root_need_nothing_and_each_special_entry_names_its_need() {
        // (Giving files away, device nodes and file capabilities need root: the test runs as it.)
        use std::os::unix::fs::MetadataExt;
        if std::fs::metadata("/proc/self").map(|m| m.uid()).ok() != Some(0) {
            eprintln!("skipped: needs root");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/plain"), b"data").unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            root.join("fifo"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        assert_eq!(needs_of(root), CopyNeeds::default(), "root's files and a FIFO");

        chown(root.join("sub/plain"), Some(999), None).unwrap();
        assert_eq!(
            needs_of(root),
            CopyNeeds {
                other_owners: true,
                ..CopyNeeds::default()
            }
        );
        chown(root.join("sub/plain"), Some(0), Some(0)).unwrap();

        std::fs::write(root.join("tool"), b"#!/bin/sh\n").unwrap();
        std::fs::set_permissions(root.join("tool"), std::fs::Permissions::from_mode(0o4755)).unwrap();
        assert!(needs_of(root).set_id);
        std::fs::set_permissions(root.join("tool"), std::fs::Permissions::from_mode(0o755)).unwrap();

        rustix::fs::mknodat(
            rustix::fs::CWD,
            root.join("null"),
            rustix::fs::FileType::CharacterDevice,
            rustix::fs::Mode::from_raw_mode(0o666),
            rustix::fs::makedev(1, 3),
        )
        .unwrap();
        assert_eq!(
            needs_of(root),
            CopyNeeds {
                device_nodes: true,
                ..CopyNeeds::default()
            }
        );
        std::fs::remove_file(root.join("null")).unwrap();

        // A v2 capability set (CAP_NET_BIND_SERVICE), as setcap writes it.
        let mut capability = vec![0u8; 20];
        capability[0..4].copy_from_slice(&0x0200_0001u32.to_le_bytes());
        capability[4..8].copy_from_slice(&(1u32 << 10).to_le_bytes());
        match xattr::set(root.join("tool"), "security.capability", &capability) {
            Ok(()) => assert_eq!(
                needs_of(root),
                CopyNeeds {
                    file_capabilities: true,
                    ..CopyNeeds::default()
                }
            ),
            // (A file system without security xattrs, e.g. some tmpfs: nothing to see.)
            Err(error) => eprintln!("file capabilities not checked: {error}"),
        }
    }
}
