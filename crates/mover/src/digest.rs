//! Manifests of a tree (one record per entry) and tree digests.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::Xxh3;

use crate::error::MoverError;
use crate::meta::{EntryMeta, Kind};
use crate::plan::link_leaders;
use crate::progress::Warnings;
use crate::walk::{Entry, Tree};

const ACL_ACCESS: &[u8] = b"system.posix_acl_access";
const ACL_DEFAULT: &[u8] = b"system.posix_acl_default";

/// One entry of a manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManifestEntry {
    /// Path relative to the root ("." for the root).
    pub path: String,
    /// dir, file, symlink, fifo, char, block or socket.
    #[serde(rename = "type")]
    pub kind: String,
    /// Permission bits in octal, special bits included (e.g. "4755").
    pub mode: String,
    /// Numeric owner.
    pub uid: u32,
    /// Numeric group.
    pub gid: u32,
    /// Modification time in nanoseconds since the epoch.
    pub mtime_ns: i128,
    /// Size in bytes (regular files; 0 otherwise).
    pub size: u64,
    /// Device number of device nodes.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub rdev: Option<u64>,
    /// Symlink target.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub link_target: Option<String>,
    /// For a hard link: the path of the first entry (in path order) sharing its inode.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub hard_link: Option<String>,
    /// Extended attributes other than ACLs; values as text when printable, else `0x` + hex.
    #[serde(skip_serializing_if = "BTreeMap::is_empty", default)]
    pub xattrs: BTreeMap<String, String>,
    /// Access ACL in `getfacl` short text form.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub acl: Option<String>,
    /// Default ACL (directories).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub default_acl: Option<String>,
    /// xxh3-128 of the contents (regular files), hex.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub content_hash: Option<String>,
}

/// A manifest of a tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// Digest over all entries including content hashes.
    pub digest: String,
    /// Digest over metadata only (what `sync` reports as `digest`).
    pub metadata_digest: String,
    /// The entries, sorted by path.
    pub entries: Vec<ManifestEntry>,
}

/// Builds the manifest of `dir`, hashing every regular file's contents.
pub fn digest(dir: &Path) -> Result<Manifest, MoverError> {
    let md = std::fs::symlink_metadata(dir).map_err(|e| bad_dir(dir, e))?;
    if !md.is_dir() {
        return Err(MoverError::BadInput(format!(
            "not a directory: {}",
            dir.display()
        )));
    }
    let warnings = Warnings::new(true);
    let tree = crate::walk::scan(dir, true, &warnings, None)?;
    let hashes: Vec<Option<u128>> = tree
        .entries
        .par_iter()
        .map(|e| match e.meta.kind {
            Kind::File => hash_file(&dir.join(&e.rel)).map(Some),
            _ => Ok(None),
        })
        .collect::<Result<_, _>>()?;
    let leaders = link_leaders(&tree);
    let mut full = Xxh3::new();
    let mut meta_only = Xxh3::new();
    let mut entries = Vec::with_capacity(tree.entries.len());
    for (i, e) in tree.entries.iter().enumerate() {
        let leader = leaders[i].map(|l| &tree.entries[l]);
        let line = canonical(e, leader);
        meta_only.update(&line);
        full.update(&line);
        if let Some(h) = hashes[i] {
            full.update(&h.to_le_bytes());
        }
        entries.push(manifest_entry(e, leader, hashes[i]));
    }
    Ok(Manifest {
        digest: format!("{:032x}", full.digest128()),
        metadata_digest: format!("{:032x}", meta_only.digest128()),
        entries,
    })
}

pub(crate) fn bad_dir(dir: &Path, e: std::io::Error) -> MoverError {
    match e.kind() {
        std::io::ErrorKind::NotFound => MoverError::BadInput(format!("no such directory: {}", dir.display())),
        _ => MoverError::io("reading", dir, e),
    }
}

/// The metadata digest of a scanned tree, skipping entries for which `skip` is true.
pub fn metadata_digest(tree: &Tree, skip: impl Fn(usize) -> bool + Sync) -> String {
    let leaders = link_leaders(tree);
    // Encoded in parallel (formatting 100,000 entries was a serial pause at the end of a run),
    // hashed in tree order.
    let encoded: Vec<Option<Vec<u8>>> = tree
        .entries
        .par_iter()
        .enumerate()
        .map(|(i, e)| (!skip(i)).then(|| canonical(e, leaders[i].map(|l| &tree.entries[l]))))
        .collect();
    let mut h = Xxh3::new();
    for bytes in encoded.iter().flatten() {
        h.update(bytes);
    }
    format!("{:032x}", h.digest128())
}

fn hash_file(path: &Path) -> Result<u128, MoverError> {
    let mut f = File::open(path).map_err(|e| MoverError::io("opening", path, e))?;
    let mut h = Xxh3::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match f.read(&mut buf) {
            Ok(0) => return Ok(h.digest128()),
            Ok(n) => h.update(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(MoverError::io("reading", path, e)),
        }
    }
}

fn perm_of(m: &EntryMeta) -> u32 {
    // Symlink modes are not settable on Linux and differ between filesystems.
    if m.kind == Kind::Symlink { 0o777 } else { m.perm }
}

/// Unambiguous byte encoding of one entry's preserved metadata (NUL-separated fields).
fn canonical(e: &Entry, leader: Option<&Entry>) -> Vec<u8> {
    let m = &e.meta;
    let mut v = Vec::with_capacity(128);
    let mut field = |b: &[u8]| {
        v.extend_from_slice(b);
        v.push(0);
    };
    field(e.rel.as_os_str().as_bytes());
    field(m.kind.name().as_bytes());
    field(format!("{:o}", perm_of(m)).as_bytes());
    field(format!("{}:{}", m.uid, m.gid).as_bytes());
    field(format!("{}.{:09}", m.mtime, m.mtime_nsec).as_bytes());
    field(format!("{}", if m.kind == Kind::File { m.size } else { 0 }).as_bytes());
    field(format!("{}", rdev_of(m).unwrap_or(0)).as_bytes());
    field(
        m.link
            .as_ref()
            .map(|l| l.as_os_str().as_bytes())
            .unwrap_or_default(),
    );
    field(leader.map(|l| l.rel.as_os_str().as_bytes()).unwrap_or_default());
    for (n, val) in &m.xattrs {
        field(n);
        field(format!("{}", val.len()).as_bytes());
        field(val);
    }
    v.push(b'\n');
    v
}

fn rdev_of(m: &EntryMeta) -> Option<u64> {
    matches!(m.kind, Kind::CharDev | Kind::BlockDev).then_some(m.rdev)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn xattr_value(v: &[u8]) -> String {
    match std::str::from_utf8(v) {
        Ok(s) if !s.chars().any(|c| c.is_control()) => s.to_string(),
        _ => format!("0x{}", v.iter().map(|b| format!("{b:02x}")).collect::<String>()),
    }
}

fn manifest_entry(e: &Entry, leader: Option<&Entry>, hash: Option<u128>) -> ManifestEntry {
    let m = &e.meta;
    let path = if e.rel.as_os_str().is_empty() {
        ".".to_string()
    } else {
        text(e.rel.as_os_str().as_bytes())
    };
    let mut xattrs = BTreeMap::new();
    let (mut acl, mut default_acl) = (None, None);
    for (n, v) in &m.xattrs {
        match n.as_slice() {
            ACL_ACCESS => acl = Some(acl_text(v)),
            ACL_DEFAULT => default_acl = Some(acl_text(v)),
            _ => {
                xattrs.insert(text(n), xattr_value(v));
            }
        }
    }
    ManifestEntry {
        path,
        kind: m.kind.name().to_string(),
        mode: format!("{:04o}", perm_of(m)),
        uid: m.uid,
        gid: m.gid,
        mtime_ns: i128::from(m.mtime) * 1_000_000_000 + i128::from(m.mtime_nsec),
        size: if m.kind == Kind::File { m.size } else { 0 },
        rdev: rdev_of(m),
        link_target: m.link.as_ref().map(|l| text(l.as_os_str().as_bytes())),
        hard_link: leader.map(|l| text(l.rel.as_os_str().as_bytes())),
        xattrs,
        acl,
        default_acl,
        content_hash: hash.map(|h| format!("{h:032x}")),
    }
}

/// Decodes the kernel's binary POSIX ACL xattr into `getfacl`-style short text, e.g.
/// `user::rw-,user:1000:r--,group::r--,mask::r--,other::r--`.
pub fn acl_text(v: &[u8]) -> String {
    if v.len() < 4 || !(v.len() - 4).is_multiple_of(8) {
        return xattr_value(v);
    }
    let rwx = |p: u16| {
        format!(
            "{}{}{}",
            if p & 4 != 0 { 'r' } else { '-' },
            if p & 2 != 0 { 'w' } else { '-' },
            if p & 1 != 0 { 'x' } else { '-' }
        )
    };
    v[4..]
        .chunks_exact(8)
        .map(|c| {
            let tag = u16::from_le_bytes([c[0], c[1]]);
            let perm = u16::from_le_bytes([c[2], c[3]]);
            let id = u32::from_le_bytes([c[4], c[5], c[6], c[7]]);
            match tag {
                0x01 => format!("user::{}", rwx(perm)),
                0x02 => format!("user:{id}:{}", rwx(perm)),
                0x04 => format!("group::{}", rwx(perm)),
                0x08 => format!("group:{id}:{}", rwx(perm)),
                0x10 => format!("mask::{}", rwx(perm)),
                0x20 => format!("other::{}", rwx(perm)),
                t => format!("tag{t:#x}:{id}:{}", rwx(perm)),
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acl_decodes_like_getfacl() {
        let mut v = 2u32.to_le_bytes().to_vec();
        for (tag, perm, id) in [
            (1u16, 6u16, u32::MAX),
            (2, 4, 1000),
            (4, 4, u32::MAX),
            (0x10, 5, u32::MAX),
            (0x20, 0, u32::MAX),
        ] {
            v.extend_from_slice(&tag.to_le_bytes());
            v.extend_from_slice(&perm.to_le_bytes());
            v.extend_from_slice(&id.to_le_bytes());
        }
        assert_eq!(
            acl_text(&v),
            "user::rw-,user:1000:r--,group::r--,mask::r-x,other::---"
        );
    }

    #[test]
    fn xattr_values_are_text_or_hex() {
        assert_eq!(xattr_value(b"hello"), "hello");
        assert_eq!(xattr_value(&[0, 255]), "0x00ff");
    }
}
