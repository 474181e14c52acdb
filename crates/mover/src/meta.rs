//! Entry metadata: what we read from a tree (lstat + link target + xattrs) and how we apply it.

use std::ffi::OsStr;
use std::fs::{File, Metadata};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, CWD, Gid, Mode, Timespec, Timestamps, Uid};
use xattr::FileExt;

use crate::as_user::{self, Identity};
use crate::error::{MoverError, errno};

/// The type of a filesystem entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum Kind {
    /// A directory.
    Dir,
    /// A regular file.
    File,
    /// A symbolic link (never followed).
    Symlink,
    /// A named pipe.
    Fifo,
    /// A character device node.
    CharDev,
    /// A block device node.
    BlockDev,
    /// A unix socket (recreated as a node; it has no data).
    Socket,
}

impl Kind {
    /// Short name used in manifests and messages.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Dir => "dir",
            Kind::File => "file",
            Kind::Symlink => "symlink",
            Kind::Fifo => "fifo",
            Kind::CharDev => "char",
            Kind::BlockDev => "block",
            Kind::Socket => "socket",
        }
    }

    fn of(md: &Metadata) -> Kind {
        let ft = md.file_type();
        if ft.is_dir() {
            Kind::Dir
        } else if ft.is_symlink() {
            Kind::Symlink
        } else if ft.is_fifo() {
            Kind::Fifo
        } else if ft.is_char_device() {
            Kind::CharDev
        } else if ft.is_block_device() {
            Kind::BlockDev
        } else if ft.is_socket() {
            Kind::Socket
        } else {
            Kind::File
        }
    }

    /// Whether the entry is a device/fifo/socket node made with mknod.
    pub fn is_special(self) -> bool {
        matches!(self, Kind::Fifo | Kind::CharDev | Kind::BlockDev | Kind::Socket)
    }
}

/// One extended attribute (name, value); POSIX ACLs are the `system.posix_acl_*` ones.
pub type Xattr = (Vec<u8>, Vec<u8>);

/// The coarsest file-time granularity among the file systems the mover meets (one second).
pub const RACY_WINDOW_NS: i128 = 1_000_000_000;
/// How far the node's clock may be behind the API server's when a clone's time is given: files
/// modified in this last minute before the clone are compared by content.
pub const CLONE_CLOCK_SKEW_NS: i128 = 60_000_000_000;

/// Everything the mover preserves about one entry (it crosses the network as is between two
/// movers: `remote::wire`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EntryMeta {
    /// Entry type.
    pub kind: Kind,
    /// Permission bits including setuid/setgid/sticky (`mode & 0o7777`).
    pub perm: u32,
    /// Numeric owner.
    pub uid: u32,
    /// Numeric group.
    pub gid: u32,
    /// Size in bytes (regular files; other kinds keep whatever lstat said).
    pub size: u64,
    /// Modification time, seconds.
    pub mtime: i64,
    /// Modification time, nanoseconds.
    pub mtime_nsec: i64,
    /// Status change time, seconds: when the inode last changed (set by the kernel, never by us),
    /// which on a target file is when its copy was made.
    pub ctime: i64,
    /// Status change time, nanoseconds.
    pub ctime_nsec: i64,
    /// Access time, seconds (applied, never compared).
    pub atime: i64,
    /// Access time, nanoseconds.
    pub atime_nsec: i64,
    /// Device number for device nodes.
    pub rdev: u64,
    /// Filesystem device id, with `ino` identifies hard links.
    pub dev: u64,
    /// Inode number.
    pub ino: u64,
    /// Link count.
    pub nlink: u64,
    /// 512-byte blocks allocated (tells whether a file may be sparse).
    pub blocks: u64,
    /// Symlink target.
    #[serde(with = "crate::remote::wire::os_path::option")]
    pub link: Option<PathBuf>,
    /// Extended attributes sorted by name (ACLs included).
    pub xattrs: Vec<Xattr>,
}

impl EntryMeta {
    /// Builds metadata from an lstat result; link target and xattrs are filled separately.
    pub fn from_metadata(md: &Metadata) -> Self {
        EntryMeta {
            kind: Kind::of(md),
            perm: md.mode() & 0o7777,
            uid: md.uid(),
            gid: md.gid(),
            size: md.size(),
            mtime: md.mtime(),
            mtime_nsec: md.mtime_nsec(),
            ctime: md.ctime(),
            ctime_nsec: md.ctime_nsec(),
            atime: md.atime(),
            atime_nsec: md.atime_nsec(),
            rdev: md.rdev(),
            dev: md.dev(),
            ino: md.ino(),
            nlink: md.nlink(),
            blocks: md.blocks(),
            link: None,
            xattrs: Vec::new(),
        }
    }

    /// Whether mtimes are equal to the nanosecond.
    pub fn same_mtime(&self, other: &EntryMeta) -> bool {
        self.mtime == other.mtime && self.mtime_nsec == other.mtime_nsec
    }

    /// Whether this source entry may have changed after `copy` of it was made without its size or
    /// mtime showing it: file times are coarse (a clock tick, up to a second on some file systems),
    /// so a write in the tick of the copy leaves both alone. Such a source was modified no earlier
    /// than [`RACY_WINDOW_NS`] before the copy's inode last changed (git's racy-file rule).
    ///
    /// `cloned_at` (nanoseconds since the epoch): the target began as a block-level clone of the
    /// source made no earlier than this. A clone's inode keeps the ctime the source had, so for it
    /// the copy was made when the clone was, less [`CLONE_CLOCK_SKEW_NS`] (that time is the API
    /// server's, the file times the node's); an inode changed since (written by a pass) has its
    /// own ctime.
    pub fn racy_against(&self, copy: &EntryMeta, cloned_at: Option<i128>) -> bool {
        let modified = i128::from(self.mtime) * 1_000_000_000 + i128::from(self.mtime_nsec);
        let changed = i128::from(copy.ctime) * 1_000_000_000 + i128::from(copy.ctime_nsec);
        let copied = match cloned_at {
            Some(cloned) => changed.max(cloned - CLONE_CLOCK_SKEW_NS),
            None => changed,
        };
        modified >= copied - RACY_WINDOW_NS
    }

    /// Whether ownership, permissions and xattrs match (what a metadata fix would change,
    /// besides the mtime). Symlink permissions are not settable on Linux, so they are ignored.
    pub fn same_attrs(&self, other: &EntryMeta) -> bool {
        let perm_ok = self.kind == Kind::Symlink || self.perm == other.perm;
        perm_ok && self.uid == other.uid && self.gid == other.gid && self.xattrs == other.xattrs
    }
}

/// Reads the full metadata of `path` without following symlinks.
/// `Ok(None)` means the entry vanished.
pub fn read(path: &Path, with_xattrs: bool) -> Result<Option<EntryMeta>, MoverError> {
    match std::fs::symlink_metadata(path) {
        Ok(md) => complete(path, &md, with_xattrs),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(MoverError::io("reading metadata of", path, e)),
    }
}

/// Completes an lstat result with the link target and xattrs. `Ok(None)` means it vanished.
pub fn complete(path: &Path, md: &Metadata, with_xattrs: bool) -> Result<Option<EntryMeta>, MoverError> {
    let mut meta = EntryMeta::from_metadata(md);
    if meta.kind == Kind::Symlink {
        match std::fs::read_link(path) {
            Ok(t) => meta.link = Some(t),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(MoverError::io("reading symlink", path, e)),
        }
    }
    if with_xattrs {
        match read_xattrs(path) {
            Ok(x) => meta.xattrs = x,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(MoverError::io("reading xattrs of", path, e)),
        }
    }
    Ok(Some(meta))
}

fn unsupported(e: &io::Error) -> bool {
    e.raw_os_error() == Some(rustix::io::Errno::OPNOTSUPP.raw_os_error())
}

/// Lists and reads all xattrs of `path` (not following symlinks), sorted by name.
pub fn read_xattrs(path: &Path) -> io::Result<Vec<Xattr>> {
    let names = match xattr::list(path) {
        Ok(n) => n,
        // Filesystems without xattr support simply have none.
        Err(e) if unsupported(&e) => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    for name in names {
        // An attribute removed between list and get is simply gone.
        if let Some(value) = xattr::get(path, &name)? {
            out.push((name.as_bytes().to_vec(), value));
        }
    }
    out.sort();
    Ok(out)
}

/// The metadata of an open regular file (what [`read`] gives for its path).
pub fn read_fd(file: &File, path: &Path) -> Result<EntryMeta, MoverError> {
    let mut meta = read_fd_without_xattrs(file, path)?;
    meta.xattrs = read_fd_xattrs(file).map_err(|e| MoverError::io("reading xattrs of", path, e))?;
    Ok(meta)
}

/// [`read_fd`] for a file known to have no xattrs.
pub fn read_fd_without_xattrs(file: &File, path: &Path) -> Result<EntryMeta, MoverError> {
    let md = file
        .metadata()
        .map_err(|e| MoverError::io("reading metadata of", path, e))?;
    Ok(EntryMeta::from_metadata(&md))
}

fn read_fd_xattrs(file: &File) -> io::Result<Vec<Xattr>> {
    let names = match file.list_xattr() {
        Ok(n) => n,
        Err(e) if unsupported(&e) => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    for name in names {
        if let Some(value) = file.get_xattr(&name)? {
            out.push((name.as_bytes().to_vec(), value));
        }
    }
    out.sort();
    Ok(out)
}

fn timestamps(meta: &EntryMeta) -> Timestamps {
    Timestamps {
        last_access: Timespec {
            tv_sec: meta.atime,
            tv_nsec: meta.atime_nsec,
        },
        last_modification: Timespec {
            tv_sec: meta.mtime,
            tv_nsec: meta.mtime_nsec,
        },
    }
}

fn ids(meta: &EntryMeta) -> (Option<Uid>, Option<Gid>) {
    (Some(Uid::from_raw(meta.uid)), Some(Gid::from_raw(meta.gid)))
}

/// Applies ownership, xattrs, permissions and times to an open regular file.
/// Order matters: chown clears setuid bits and file capabilities, so it goes first;
/// the mtime goes last because every other change would bump the ctime only, but writes would not.
pub fn apply_fd(file: &File, path: &Path, meta: &EntryMeta) -> Result<(), MoverError> {
    if let Some(who) = as_user::unprivileged() {
        return apply_as(who, &ByFd(file), path, meta, Times::Set);
    }
    let (u, g) = ids(meta);
    rustix::fs::fchown(file, u, g).map_err(|e| errno("changing owner of", path, e))?;
    let current = read_fd_xattrs(file).map_err(|e| MoverError::io("reading xattrs of", path, e))?;
    sync_xattrs(
        &current,
        &meta.xattrs,
        path,
        |n| file.remove_xattr(n),
        |n, v| file.set_xattr(n, v),
    )?;
    rustix::fs::fchmod(file, Mode::from_raw_mode(meta.perm))
        .map_err(|e| errno("changing mode of", path, e))?;
    rustix::fs::futimens(file, &timestamps(meta)).map_err(|e| errno("setting times of", path, e))?;
    Ok(())
}

/// What a file created in a fresh directory already has (see [`crate::fresh`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Created {
    /// Owner it was created with.
    pub uid: u32,
    /// Group it was created with.
    pub gid: u32,
    /// Permission bits it was created with.
    pub mode: u32,
}

/// [`apply_fd`] for a file just created in a fresh directory: it has no xattrs (nothing to list
/// or remove), and an owner or mode it already has is not set again. The mode is set after the
/// owner (chown clears setuid, which a create never gives) and whenever an xattr is (an ACL
/// rewrites the group bits).
pub fn apply_new_fd(file: &File, path: &Path, meta: &EntryMeta, created: Created) -> Result<(), MoverError> {
    if (created.uid, created.gid) != (meta.uid, meta.gid) {
        match as_user::unprivileged() {
            Some(who) => give_owner(who, &ByFd(file), path, meta, created.uid)?,
            None => {
                let (u, g) = ids(meta);
                rustix::fs::fchown(file, u, g).map_err(|e| errno("changing owner of", path, e))?;
            }
        }
    }
    for (name, value) in &meta.xattrs {
        file.set_xattr(OsStr::from_bytes(name), value)
            .map_err(|e| MoverError::io("setting xattr of", path, e))?;
    }
    if !meta.xattrs.is_empty() || created.mode != meta.perm {
        rustix::fs::fchmod(file, Mode::from_raw_mode(meta.perm))
            .map_err(|e| errno("changing mode of", path, e))?;
    }
    rustix::fs::futimens(file, &timestamps(meta)).map_err(|e| errno("setting times of", path, e))?;
    Ok(())
}

/// Applies metadata by path without following symlinks (symlinks, dirs, special files,
/// and metadata-only fixes of regular files).
pub fn apply_path(path: &Path, meta: &EntryMeta) -> Result<(), MoverError> {
    if let Some(who) = as_user::unprivileged() {
        return apply_as(who, &ByPath(path), path, meta, Times::Set);
    }
    let (u, g) = ids(meta);
    rustix::fs::chownat(CWD, path, u, g, AtFlags::SYMLINK_NOFOLLOW)
        .map_err(|e| errno("changing owner of", path, e))?;
    let current = read_xattrs(path).map_err(|e| MoverError::io("reading xattrs of", path, e))?;
    sync_xattrs(
        &current,
        &meta.xattrs,
        path,
        |n| xattr::remove(path, n),
        |n, v| xattr::set(path, n, v),
    )?;
    if meta.kind != Kind::Symlink {
        // Linux has no lchmod; symlink modes are always 0777.
        rustix::fs::chmodat(CWD, path, Mode::from_raw_mode(meta.perm), AtFlags::empty())
            .map_err(|e| errno("changing mode of", path, e))?;
    }
    rustix::fs::utimensat(CWD, path, &timestamps(meta), AtFlags::SYMLINK_NOFOLLOW)
        .map_err(|e| errno("setting times of", path, e))?;
    Ok(())
}

/// Makes the xattrs of a target equal to `wanted`: removes extras (e.g. an ACL inherited
/// from a default ACL of the parent) and sets what differs.
fn sync_xattrs(
    current: &[Xattr],
    wanted: &[Xattr],
    path: &Path,
    mut remove: impl FnMut(&OsStr) -> io::Result<()>,
    mut set: impl FnMut(&OsStr, &[u8]) -> io::Result<()>,
) -> Result<bool, MoverError> {
    let mut changed = false;
    for (name, _) in current {
        if !wanted.iter().any(|(n, _)| n == name) {
            remove(OsStr::from_bytes(name)).map_err(|e| MoverError::io("removing xattr of", path, e))?;
            changed = true;
        }
    }
    for (name, value) in wanted {
        if !current.iter().any(|(n, v)| n == name && v == value) {
            set(OsStr::from_bytes(name), value).map_err(|e| MoverError::io("setting xattr of", path, e))?;
            changed = true;
        }
    }
    Ok(changed)
}

/// [`apply_path`] for a tree's root directory: a mover without capabilities leaves its times
/// alone when another user owns it (the volume's root, made by mkfs: what it holds changes them,
/// and only its owner may set them back). Its owner and mode must match already.
pub fn apply_root(path: &Path, meta: &EntryMeta) -> Result<(), MoverError> {
    match as_user::unprivileged() {
        Some(who) => apply_as(who, &ByPath(path), path, meta, Times::IfOwned),
        None => apply_path(path, meta),
    }
}

/// Whether an unprivileged mover sets the times of an entry another user owns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Times {
    /// It must (and fails saying why: only the owner may).
    Set,
    /// Only when it owns it (a tree's root).
    IfOwned,
}

/// Owner, group and permission bits of an entry as it is now.
struct Now {
    uid: u32,
    gid: u32,
    perm: u32,
}

/// The calls that set an entry's metadata: on an open file or by path (never following a link).
trait Target {
    fn now(&self, path: &Path) -> Result<Now, MoverError>;
    fn chown(&self, uid: Option<Uid>, gid: Option<Gid>) -> rustix::io::Result<()>;
    fn xattrs(&self, path: &Path, wanted: &[Xattr]) -> Result<bool, MoverError>;
    fn chmod(&self, perm: u32) -> rustix::io::Result<()>;
    fn times(&self, times: &Timestamps) -> rustix::io::Result<()>;
}

fn now_of(st: &rustix::fs::Stat) -> Now {
    Now {
        uid: st.st_uid,
        gid: st.st_gid,
        perm: st.st_mode & 0o7777,
    }
}

struct ByFd<'a>(&'a File);

impl Target for ByFd<'_> {
    fn now(&self, path: &Path) -> Result<Now, MoverError> {
        let st = rustix::fs::fstat(self.0).map_err(|e| errno("reading metadata of", path, e))?;
        Ok(now_of(&st))
    }
    fn chown(&self, uid: Option<Uid>, gid: Option<Gid>) -> rustix::io::Result<()> {
        rustix::fs::fchown(self.0, uid, gid)
    }
    fn xattrs(&self, path: &Path, wanted: &[Xattr]) -> Result<bool, MoverError> {
        let file = self.0;
        let current = read_fd_xattrs(file).map_err(|e| MoverError::io("reading xattrs of", path, e))?;
        sync_xattrs(
            &current,
            wanted,
            path,
            |n| file.remove_xattr(n),
            |n, v| file.set_xattr(n, v),
        )
    }
    fn chmod(&self, perm: u32) -> rustix::io::Result<()> {
        rustix::fs::fchmod(self.0, Mode::from_raw_mode(perm))
    }
    fn times(&self, times: &Timestamps) -> rustix::io::Result<()> {
        rustix::fs::futimens(self.0, times)
    }
}

struct ByPath<'a>(&'a Path);

impl Target for ByPath<'_> {
    fn now(&self, path: &Path) -> Result<Now, MoverError> {
        let st = rustix::fs::lstat(self.0).map_err(|e| errno("reading metadata of", path, e))?;
        Ok(now_of(&st))
    }
    fn chown(&self, uid: Option<Uid>, gid: Option<Gid>) -> rustix::io::Result<()> {
        rustix::fs::chownat(CWD, self.0, uid, gid, AtFlags::SYMLINK_NOFOLLOW)
    }
    fn xattrs(&self, path: &Path, wanted: &[Xattr]) -> Result<bool, MoverError> {
        let at = self.0;
        let current = read_xattrs(at).map_err(|e| MoverError::io("reading xattrs of", path, e))?;
        sync_xattrs(
            &current,
            wanted,
            path,
            |n| xattr::remove(at, n),
            |n, v| xattr::set(at, n, v),
        )
    }
    fn chmod(&self, perm: u32) -> rustix::io::Result<()> {
        rustix::fs::chmodat(CWD, self.0, Mode::from_raw_mode(perm), AtFlags::empty())
    }
    fn times(&self, times: &Timestamps) -> rustix::io::Result<()> {
        rustix::fs::utimensat(CWD, self.0, times, AtFlags::SYMLINK_NOFOLLOW)
    }
}

/// Metadata applied by a mover without capabilities: only what differs (Linux refuses a chown,
/// even one that changes nothing, a chmod and explicit times to anyone but the owner), and what
/// it cannot set fails by name, never dropped.
fn apply_as(
    who: &Identity,
    target: &impl Target,
    path: &Path,
    meta: &EntryMeta,
    times: Times,
) -> Result<(), MoverError> {
    let before = target.now(path)?;
    let chowned = (before.uid, before.gid) != (meta.uid, meta.gid);
    if chowned {
        give_owner(who, target, path, meta, before.uid)?;
    }
    let relabelled = target.xattrs(path, &meta.xattrs)?;
    // A chown clears set-id bits, an ACL rewrites the group bits: read the mode again then.
    let now = match chowned || relabelled {
        true => target.now(path)?,
        false => before,
    };
    if meta.kind != Kind::Symlink && now.perm != meta.perm {
        if now.uid != who.uid {
            return Err(not_owner("set the mode of", path, now.uid, who));
        }
        target
            .chmod(meta.perm)
            .map_err(|e| errno("changing mode of", path, e))?;
    }
    if now.uid != who.uid {
        return match times {
            Times::IfOwned => Ok(()),
            Times::Set => Err(not_owner("set the times of", path, now.uid, who)),
        };
    }
    target
        .times(&timestamps(meta))
        .map_err(|e| errno("setting times of", path, e))
}

/// Gives an entry now owned by `owner` the owner and group of `meta`, as a mover without
/// capabilities may: only to itself, and only one of its groups.
fn give_owner(
    who: &Identity,
    target: &impl Target,
    path: &Path,
    meta: &EntryMeta,
    owner: u32,
) -> Result<(), MoverError> {
    let refused = || MoverError::OwnerNotKept {
        path: path.to_path_buf(),
        uid: meta.uid,
        gid: meta.gid,
        euid: who.uid,
    };
    if meta.uid != who.uid || !who.has_group(meta.gid) {
        return Err(refused());
    }
    if owner != who.uid {
        return Err(not_owner("change the group of", path, owner, who));
    }
    let (u, g) = ids(meta);
    target.chown(u, g).map_err(|e| match e {
        rustix::io::Errno::PERM => refused(),
        e => errno("changing owner of", path, e),
    })
}

fn not_owner(op: &'static str, path: &Path, owner: u32, who: &Identity) -> MoverError {
    MoverError::NotOwner {
        op,
        path: path.to_path_buf(),
        owner,
        euid: who.uid,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> EntryMeta {
        EntryMeta {
            kind: Kind::File,
            perm: 0o644,
            uid: 1,
            gid: 2,
            size: 10,
            mtime: 100,
            mtime_nsec: 5,
            ctime: 0,
            ctime_nsec: 0,
            atime: 0,
            atime_nsec: 0,
            rdev: 0,
            dev: 1,
            ino: 1,
            nlink: 1,
            blocks: 8,
            link: None,
            xattrs: vec![],
        }
    }

    #[test]
    fn quick_check_sees_nanoseconds() {
        let a = base();
        let mut b = base();
        assert!(a.same_mtime(&b));
        b.mtime_nsec = 6;
        assert!(!a.same_mtime(&b));
    }

    #[test]
    fn symlink_perm_is_ignored_but_owner_is_not() {
        let mut a = base();
        a.kind = Kind::Symlink;
        let mut b = a.clone();
        b.perm = 0o777;
        assert!(a.same_attrs(&b));
        b.uid = 9;
        assert!(!a.same_attrs(&b));
    }
}
