//! Creating target entries: file data (sparse-aware, `copy_file_range` with a read/write
//! fallback, big files split across threads), symlinks, special nodes and hard links.
//! A new inode is built under a temp name and renamed into place, so an interrupted run never
//! leaves a half-written file under the real name; only in a directory this run made, which no
//! reader knows yet, is a file written under its final name ([`crate::fresh`]).

use std::ffi::OsStr;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::BorrowedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use rayon::prelude::*;
use rustix::fs::{CWD, FileType, Mode, OFlags, SeekFrom};
use rustix::io::Errno;

use crate::dirs::DirFds;
use crate::error::{MoverError, errno};
use crate::fresh::FreshDir;
use crate::meta::{self, Created, EntryMeta, Kind};
use crate::plan::TEMP_PREFIX;
use crate::progress::{Progress, Warnings};
use crate::record::{self, FileRecord, PieceHasher, Stamp};
use crate::small;
use crate::throttle::{LIMITED_CHUNK, Throttle};

/// Bytes per unit of work; files with more than one chunk are copied by several threads.
const CHUNK: u64 = 32 << 20;
/// Buffer size of the read/write path.
const BUF: u64 = 1 << 20;

/// Shared state of the copy phase.
pub struct CopyCtx<'a> {
    /// Hash what is read and re-read what landed (verify = checksum).
    pub hash: bool,
    /// Read back each written file's metadata for the verify phase (any verification).
    pub read_back: bool,
    /// Test hook: corrupt this relative path after writing it, before verifying it.
    pub corrupt: Option<&'a Path>,
    /// Progress counters.
    pub progress: &'a Progress,
    /// Warning sink.
    pub warnings: &'a Warnings,
    /// Set once `copy_file_range` proved unusable (EXDEV, ENOSYS, ...), to stop trying it.
    pub no_copy_range: AtomicBool,
    /// Bandwidth limit shared by all copy threads (`--bwlimit`).
    pub throttle: Option<&'a Throttle>,
    /// The directories this run made that pass nothing on to new files, by entry index.
    pub fresh_dirs: std::collections::HashMap<usize, FreshDir>,
    /// Each entry's parent directory, by entry index ([`crate::walk::parents`]).
    pub parents: Vec<usize>,
    /// The source tree's directories, by entry index.
    pub source_dirs: DirFds<'a>,
    /// The same directories in the target.
    pub target_dirs: DirFds<'a>,
    /// Look at each source again once it is read (`--strict`, where a change fails the pass).
    /// Elsewhere a change only meant a warning: the target carries the scanned mtime, so the next
    /// pass copies the file again either way, and the second `fstat` was one of a dozen calls a
    /// small file costs.
    pub recheck_sources: bool,
    /// Test hook: the process aborts once it wrote this many pieces in place (a pass killed in
    /// the middle of a delta).
    pub abort_after_pieces: Option<u64>,
    /// Pieces written in place so far (for the hook).
    pub pieces_in_place: std::sync::atomic::AtomicU64,
}

impl CopyCtx<'_> {
    /// Waits until the bandwidth limit allows writing `bytes` more.
    pub(crate) fn before_writing(&self, bytes: u64) {
        if let Some(throttle) = self.throttle {
            throttle.pace(bytes);
        }
    }

    /// Counts `bytes` written.
    pub(crate) fn wrote(&self, bytes: u64) {
        self.progress.bytes_copied.fetch_add(bytes, Ordering::Relaxed);
        self.progress.bytes_done.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Counts one piece written in place ([`crate::delta`]), aborting where the test hook asks.
    pub(crate) fn wrote_piece_in_place(&self) {
        let written = self.pieces_in_place.fetch_add(1, Ordering::Relaxed) + 1;
        if self.abort_after_pieces.is_some_and(|limit| written >= limit) {
            std::process::abort();
        }
    }

    /// Largest piece to copy in one call: small under a bandwidth limit, so it paces evenly.
    fn chunk_limit(&self, limit: u64) -> u64 {
        if self.throttle.is_some() {
            limit.min(LIMITED_CHUNK)
        } else {
            limit
        }
    }
}

/// Result of copying one regular file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Copied {
    /// Installed.
    Done {
        /// Data bytes written.
        bytes: u64,
        /// What landed, read back from the written file once it was complete (when verifying).
        landed: Option<Box<EntryMeta>>,
        /// The chunk record of what was written (large files without holes), stamped once the
        /// file is in place.
        record: Option<FileRecord>,
    },
    /// The source disappeared or stopped being a regular file; nothing installed.
    Vanished,
    /// The re-read target differs from what was read; nothing installed.
    Mismatch,
}

/// The temp name used for `dst` (same directory, fixed per name so a rerun finds it).
pub fn temp_path(dst: &Path) -> PathBuf {
    let name = dst.file_name().map(|n| n.as_bytes()).unwrap_or_default();
    let h = xxhash_rust::xxh3::xxh3_64(name);
    dst.with_file_name(format!("{TEMP_PREFIX}{h:016x}"))
}

fn gone(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound
        || e.raw_os_error() == Some(Errno::LOOP.raw_os_error())
        || e.raw_os_error() == Some(Errno::NOTDIR.raw_os_error())
}

/// Opens regular file `src` (source entry `i`) for reading, by its name in its open directory
/// where there is one; `None` (after a warning) when it vanished or is no longer a regular file.
pub(crate) fn open_source(
    ctx: &CopyCtx,
    i: usize,
    rel: &Path,
    src: &Path,
    meta: &EntryMeta,
) -> Result<Option<(File, std::fs::Metadata)>, MoverError> {
    let dir = ctx.parents.get(i).copied().unwrap_or(i);
    let name = rel.file_name().unwrap_or_default();
    let opened = match ctx.source_dirs.get(dir) {
        Some(at) => rustix::fs::openat(at, name, source_open_flags() | OFlags::CLOEXEC, Mode::empty())
            .map(File::from)
            .map_err(io::Error::from),
        None => OpenOptions::new()
            .read(true)
            .custom_flags(source_open_flags().bits() as i32)
            .open(src),
    };
    let sf = match opened {
        Ok(f) => f,
        Err(e) if gone(&e) => {
            ctx.warnings
                .warn(format!("vanished before copy: {}", src.display()));
            return Ok(None);
        }
        Err(e) => return Err(MoverError::io("opening", src, e)),
    };
    let before = sf
        .metadata()
        .map_err(|e| MoverError::io("reading metadata of", src, e))?;
    if !before.file_type().is_file() {
        ctx.warnings
            .warn(format!("no longer a regular file: {}", src.display()));
        return Ok(None);
    }
    if before.size() != meta.size || before.mtime() != meta.mtime || before.mtime_nsec() != meta.mtime_nsec {
        // The target gets the scanned mtime, so the next run sees the difference and recopies.
        ctx.warnings
            .warn(format!("changed since scan: {}", src.display()));
    }
    Ok(Some((sf, before)))
}

/// Copies regular file `src` to `dst` with metadata `meta` (from the scan).
pub fn copy_file(
    ctx: &CopyCtx,
    i: usize,
    rel: &Path,
    src: &Path,
    dst: &Path,
    meta: &EntryMeta,
) -> Result<Copied, MoverError> {
    let Some((sf, before)) = open_source(ctx, i, rel, src, meta)? else {
        return Ok(Copied::Vanished);
    };
    let dir = ctx.parents.get(i).copied().unwrap_or(i);
    let name = rel.file_name().unwrap_or_default();
    let fresh = ctx
        .fresh_dirs
        .get(&dir)
        .map(|fresh| (fresh, ctx.target_dirs.get(dir)));
    let made = fresh
        .map(|(fresh, at)| create_final(dst, at.map(|at| (at, name)), meta, fresh))
        .transpose()?;
    let (path, file, created) = match made {
        Some(Some((file, created))) => (dst.to_path_buf(), file, Some(created)),
        // Not fresh, or the name is taken (a rerun's leftover): the temp name and a rename.
        _ => {
            let tmp = temp_path(dst);
            let file = create_temp(&tmp)?;
            (tmp, file, None)
        }
    };
    let result =
        write_into(ctx, rel, &sf, src, &file, &path, meta, created).map_err(|e| e.at_final(&path, dst));
    drop(file);
    match result {
        Ok(WriteOutcome::Done {
            bytes,
            landed,
            digests,
        }) => {
            if ctx.recheck_sources {
                warn_if_changed(ctx, &sf, src, &before)?;
            }
            // Only a file written under a temp name has to be put in place.
            if created.is_none() {
                std::fs::rename(&path, dst).map_err(|e| {
                    let _ = std::fs::remove_file(&path);
                    MoverError::io("renaming into place", dst, e)
                })?;
            }
            // Stamped once in place: the rename moves the inode's ctime.
            let record = match digests {
                Some(digests) => Some(FileRecord {
                    stamp: Stamp::of_metadata(
                        &std::fs::symlink_metadata(dst)
                            .map_err(|e| MoverError::io("reading metadata of", dst, e))?,
                    ),
                    digests,
                }),
                None => None,
            };
            Ok(Copied::Done {
                bytes,
                landed,
                record,
            })
        }
        // A mismatch (the only other outcome) or an error.
        failed => {
            // Never leave a partial file behind on failure (ENOSPC in particular).
            let _ = std::fs::remove_file(&path);
            failed.map(|_mismatch| Copied::Mismatch)
        }
    }
}

/// A source whose size or mtime moved while it was read fails a strict pass (its warning is an
/// error there).
pub(crate) fn warn_if_changed(
    ctx: &CopyCtx,
    sf: &File,
    src: &Path,
    before: &std::fs::Metadata,
) -> Result<(), MoverError> {
    let after = sf
        .metadata()
        .map_err(|e| MoverError::io("reading metadata of", src, e))?;
    if after.size() != before.size()
        || after.mtime() != before.mtime()
        || after.mtime_nsec() != before.mtime_nsec()
    {
        ctx.warnings
            .warn(format!("changed while being copied: {}", src.display()));
    }
    Ok(())
}

/// Creates `dst` itself in a fresh directory (by its name in the directory's descriptor `at`
/// when open), with its final permission bits as far as a create can give them; `None` when the
/// name is taken.
pub(crate) fn create_final(
    dst: &Path,
    at: Option<(BorrowedFd, &OsStr)>,
    meta: &EntryMeta,
    dir: &FreshDir,
) -> Result<Option<(File, Created)>, MoverError> {
    let opened = match at {
        Some((at, name)) => {
            let flags = OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            rustix::fs::openat(at, name, flags, Mode::from_raw_mode(meta.perm & 0o777))
                .map(File::from)
                .map_err(io::Error::from)
        }
        None => OpenOptions::new()
            .write(true)
            .read(true)
            .create_new(true)
            .mode(meta.perm & 0o777)
            .custom_flags(libc_nofollow())
            .open(dst),
    };
    match opened {
        Ok(file) => Ok(Some((
            file,
            Created {
                uid: dir.uid,
                gid: dir.gid,
                mode: dir.created_mode(meta.perm),
            },
        ))),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(None),
        Err(e) => Err(MoverError::io("creating", dst, e)),
    }
}

/// Opens the temp file of a copy, emptied (a killed run may have left one).
pub(crate) fn create_temp(tmp: &Path) -> Result<File, MoverError> {
    OpenOptions::new()
        .write(true)
        .read(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(libc_nofollow())
        .open(tmp)
        .map_err(|e| MoverError::io("creating", tmp, e))
}

fn libc_nofollow() -> i32 {
    rustix::fs::OFlags::NOFOLLOW.bits() as i32
}

/// Flags of a source's open: not through a symlink, and non-blocking, so that an entry that
/// became a FIFO after the scan does not wait for a writer (regular files ignore it).
fn source_open_flags() -> OFlags {
    OFlags::NOFOLLOW | OFlags::NONBLOCK
}

/// Writes the data and metadata of `meta` into the new, empty file `tf` at `tmp`; `created` is
/// what a file in a fresh directory already has.
#[allow(clippy::too_many_arguments)]
fn write_into(
    ctx: &CopyCtx,
    rel: &Path,
    sf: &File,
    src: &Path,
    tf: &File,
    tmp: &Path,
    meta: &EntryMeta,
    created: Option<Created>,
) -> Result<WriteOutcome, MoverError> {
    let segments = data_segments(sf, meta).map_err(|e| MoverError::io("seeking in", src, e))?;
    // A large file without holes has its pieces' digests recorded, for the next pass's delta.
    let pieces = record::recorded_size(meta.size) && segments == [(0, meta.size)];
    let file = Written {
        rel,
        tf,
        tmp,
        meta,
        pieces,
    };
    let copied = match small::one_checked_range(ctx.hash, &segments) {
        Some((off, len)) => small::with_buffers(len, |read, landed| {
            copy_compared(ctx, sf, src, &file, off, read, landed)
        })?
        .map(|bytes| (bytes, None)),
        None => copy_ranges(ctx, sf, src, &file, &chunks(&segments))?,
    };
    let Some((bytes, digests)) = copied else {
        return Ok(WriteOutcome::Mismatch);
    };
    match created {
        Some(created) => meta::apply_new_fd(tf, tmp, meta, created)?,
        None => meta::apply_fd(tf, tmp, meta)?,
    }
    // Read back through the open file: the verify phase needs no path lookup for it. A file made
    // in a fresh directory (which passes no default ACL on) and given no xattrs has none to read
    // back: only a call that sets one, which this run did not make, or a security module's own
    // label, which Ferry neither copies nor checks, could add one.
    let landed = match (ctx.read_back, created) {
        (false, _) => None,
        (true, Some(_)) if meta.xattrs.is_empty() => Some(Box::new(meta::read_fd_without_xattrs(tf, tmp)?)),
        (true, _) => Some(Box::new(meta::read_fd(tf, tmp)?)),
    };
    Ok(WriteOutcome::Done {
        bytes,
        landed,
        digests,
    })
}

/// What writing a file's data and metadata came to, before it is put in place.
enum WriteOutcome {
    /// Written and checked.
    Done {
        /// Data bytes written.
        bytes: u64,
        /// What landed, read back (when verifying).
        landed: Option<Box<EntryMeta>>,
        /// The digest of each piece of the file, where they were recorded.
        digests: Option<Vec<u128>>,
    },
    /// What landed differs from what was read.
    Mismatch,
}

/// The new file being written: where it is, and what it must end up as.
struct Written<'a> {
    /// Source-relative path (for the corrupt test hook).
    rel: &'a Path,
    /// The open new file.
    tf: &'a File,
    /// Its path (temp or final name).
    tmp: &'a Path,
    /// What the scan saw of the source.
    meta: &'a EntryMeta,
    /// Read and digest its data piece by piece (for the chunk record) even when not verifying.
    pieces: bool,
}

/// What a copy wrote: its bytes, and the digest of each piece of the file where it recorded them.
type Landed = (u64, Option<Vec<u128>>);

/// Copies `ranges` of the source into the new file, big files by several threads, and (when
/// hashing) checks each range that landed against the digests of what was read; `None` on a
/// mismatch, else the bytes written and (for `file.pieces`, all of it written) the digest of each
/// piece of the file.
fn copy_ranges(
    ctx: &CopyCtx,
    sf: &File,
    src: &Path,
    file: &Written,
    ranges: &[(u64, u64)],
) -> Result<Option<Landed>, MoverError> {
    let (tf, tmp) = (file.tf, file.tmp);
    let copy_one = |&(off, len): &(u64, u64)| copy_chunk(ctx, sf, src, file, off, len);
    let results: Vec<(u64, Vec<u128>)> = if ranges.len() > 1 {
        ranges.par_iter().map(copy_one).collect::<Result<_, _>>()?
    } else {
        ranges.iter().map(copy_one).collect::<Result<_, _>>()?
    };
    // The file was empty, so its length is where the last write ended.
    let written_end = ranges
        .iter()
        .zip(&results)
        .filter(|(_, (copied, _))| *copied > 0)
        .map(|(&(off, _), &(copied, _))| off + copied)
        .max()
        .unwrap_or(0);
    settle(ctx, file, written_end)?;
    // The length that landed is checked with the rest of the metadata in the verify phase.
    if ctx.hash {
        for (&(off, len), (copied, want)) in ranges.iter().zip(&results) {
            let got = piece_digests(tf, tmp, off, len.min(*copied))?;
            if got != *want {
                return Ok(None);
            }
        }
    }
    let bytes: u64 = results.iter().map(|r| r.0).sum();
    let digests =
        (file.pieces && bytes == file.meta.size).then(|| results.into_iter().flat_map(|r| r.1).collect());
    Ok(Some((bytes, digests)))
}

/// Copies `read.len()` bytes at `off` of the source into the new, empty file through `read`,
/// then reads back what landed into `landed` and compares; `None` when they differ, else the
/// bytes written.
fn copy_compared(
    ctx: &CopyCtx,
    sf: &File,
    src: &Path,
    file: &Written,
    off: u64,
    read: &mut [u8],
    landed: &mut [u8],
) -> Result<Option<u64>, MoverError> {
    // Short only when the source shrank since the scan.
    let n = read_full(sf, src, read, off)?;
    if n > 0 {
        ctx.before_writing(n as u64);
        file.tf
            .write_all_at(&read[..n], off)
            .map_err(|e| MoverError::io("writing", file.tmp, e))?;
        ctx.wrote(n as u64);
    }
    settle(ctx, file, if n > 0 { off + n as u64 } else { 0 })?;
    let back = read_full(file.tf, file.tmp, &mut landed[..n], off)?;
    Ok((back == n && read[..n] == landed[..n]).then_some(n as u64))
}

/// Gives the new file its full length when the writes ended before it (holes at the end, a
/// source that shrank), then runs the corrupt test hook, which comes before any check.
fn settle(ctx: &CopyCtx, file: &Written, written_end: u64) -> Result<(), MoverError> {
    if written_end != file.meta.size {
        file.tf
            .set_len(file.meta.size)
            .map_err(|e| MoverError::io("setting length of", file.tmp, e))?;
    }
    if ctx.corrupt == Some(file.rel) {
        corrupt(file.tf, file.tmp, file.meta.size)?;
    }
    Ok(())
}

/// Test hook: flips the first byte of the written file (or adds one to an empty file).
fn corrupt(tf: &File, tmp: &Path, size: u64) -> Result<(), MoverError> {
    if size == 0 {
        return tf
            .write_all_at(b"x", 0)
            .map_err(|e| MoverError::io("writing", tmp, e));
    }
    flip_byte(tf, tmp, 0)
}

/// Test hook: flips the byte at `off` of a written file.
pub(crate) fn flip_byte(tf: &File, path: &Path, off: u64) -> Result<(), MoverError> {
    let mut b = [0u8; 1];
    tf.read_exact_at(&mut b, off)
        .map_err(|e| MoverError::io("reading", path, e))?;
    b[0] ^= 0xff;
    tf.write_all_at(&b, off)
        .map_err(|e| MoverError::io("writing", path, e))
}

/// The data ranges of a file: the whole file, or only its non-hole parts when it has fewer
/// blocks allocated than its size (a possibly sparse file).
pub(crate) fn data_segments(sf: &File, meta: &EntryMeta) -> io::Result<Vec<(u64, u64)>> {
    let size = meta.size;
    if size == 0 {
        return Ok(Vec::new());
    }
    if meta.blocks.saturating_mul(512) >= size {
        return Ok(vec![(0, size)]);
    }
    let mut segs = Vec::new();
    let mut pos = 0;
    while pos < size {
        let start = match rustix::fs::seek(sf, SeekFrom::Data(pos)) {
            Ok(s) => s,
            Err(Errno::NXIO) => break,
            // No SEEK_DATA support: copy everything.
            Err(Errno::INVAL) | Err(Errno::OPNOTSUPP) => return Ok(vec![(0, size)]),
            Err(e) => return Err(e.into()),
        };
        if start >= size {
            break;
        }
        let end = rustix::fs::seek(sf, SeekFrom::Hole(start))?.min(size);
        segs.push((start, end - start));
        pos = end;
    }
    Ok(segs)
}

fn chunks(segs: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    for &(off, len) in segs {
        let mut o = off;
        while o < off + len {
            let l = CHUNK.min(off + len - o);
            out.push((o, l));
            o += l;
        }
    }
    out
}

/// Copies one range; returns the bytes copied and the digest of each piece of what was read
/// (pieces counted from `off`; none when neither hashing nor recording).
fn copy_chunk(
    ctx: &CopyCtx,
    sf: &File,
    src: &Path,
    file: &Written,
    off: u64,
    len: u64,
) -> Result<(u64, Vec<u128>), MoverError> {
    let (tf, tmp) = (file.tf, file.tmp);
    let digest = ctx.hash || file.pieces;
    if !digest && !ctx.no_copy_range.load(Ordering::Relaxed) {
        match copy_range(ctx, sf, tf, off, len) {
            Ok(Some(n)) => return Ok((n, Vec::new())),
            Ok(None) => {}
            Err(e) => return Err(MoverError::io("copying data to", tmp, e)),
        }
    }
    read_write(ctx, sf, src, tf, tmp, (off, len), digest)
}

/// `copy_file_range` loop; `Ok(None)` means unsupported here, fall back to read/write.
fn copy_range(ctx: &CopyCtx, sf: &File, tf: &File, off: u64, len: u64) -> io::Result<Option<u64>> {
    let mut done = 0u64;
    while done < len {
        let mut off_in = off + done;
        let mut off_out = off + done;
        let want = ctx.chunk_limit((len - done).min(1 << 30));
        ctx.before_writing(want);
        let want = usize::try_from(want).unwrap_or(usize::MAX);
        match rustix::fs::copy_file_range(sf, Some(&mut off_in), tf, Some(&mut off_out), want) {
            Ok(0) => break, // source shrank
            Ok(n) => {
                done += n as u64;
                ctx.wrote(n as u64);
            }
            Err(Errno::XDEV | Errno::NOSYS | Errno::OPNOTSUPP | Errno::INVAL) if done == 0 => {
                ctx.no_copy_range.store(true, Ordering::Relaxed);
                return Ok(None);
            }
            Err(Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(Some(done))
}

fn read_write(
    ctx: &CopyCtx,
    sf: &File,
    src: &Path,
    tf: &File,
    tmp: &Path,
    (off, len): (u64, u64),
    digest: bool,
) -> Result<(u64, Vec<u128>), MoverError> {
    let mut buf = vec![0u8; BUF.min(len) as usize];
    let mut hasher = PieceHasher::default();
    let mut done = 0u64;
    while done < len {
        let want = (len - done).min(buf.len() as u64) as usize;
        let n = match sf.read_at(&mut buf[..want], off + done) {
            Ok(0) => break, // source shrank
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(MoverError::io("reading", src, e)),
        };
        if digest {
            hasher.update(&buf[..n]);
        }
        ctx.before_writing(n as u64);
        tf.write_all_at(&buf[..n], off + done)
            .map_err(|e| MoverError::io("writing", tmp, e))?;
        done += n as u64;
        ctx.wrote(n as u64);
    }
    Ok((done, if digest { hasher.finish() } else { Vec::new() }))
}

/// The digest of each piece of a byte range of an open file (pieces counted from `off`).
pub(crate) fn piece_digests(f: &File, path: &Path, off: u64, len: u64) -> Result<Vec<u128>, MoverError> {
    let mut buf = vec![0u8; BUF.min(len.max(1)) as usize];
    let mut hasher = PieceHasher::default();
    let mut done = 0u64;
    while done < len {
        let want = (len - done).min(buf.len() as u64) as usize;
        match f.read_at(&mut buf[..want], off + done) {
            Ok(0) => break,
            Ok(n) => {
                hasher.update(&buf[..n]);
                done += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(MoverError::io("reading", path, e)),
        }
    }
    Ok(hasher.finish())
}

/// Whether two files have identical contents (checksum-compare). A vanished source
/// compares as equal so that nothing is done with it.
pub fn same_contents(src: &Path, dst: &Path) -> Result<bool, MoverError> {
    let a = match OpenOptions::new()
        .read(true)
        .custom_flags(source_open_flags().bits() as i32)
        .open(src)
    {
        Ok(f) => f,
        Err(e) if gone(&e) => return Ok(true),
        Err(e) => return Err(MoverError::io("opening", src, e)),
    };
    let b = File::open(dst).map_err(|e| MoverError::io("opening", dst, e))?;
    let mut ba = vec![0u8; BUF as usize];
    let mut bb = vec![0u8; BUF as usize];
    let mut off = 0u64;
    loop {
        let na = read_full(&a, src, &mut ba, off)?;
        let nb = read_full(&b, dst, &mut bb, off)?;
        if na != nb || ba[..na] != bb[..nb] {
            return Ok(false);
        }
        if na == 0 {
            return Ok(true);
        }
        off += na as u64;
    }
}

pub(crate) fn read_full(f: &File, path: &Path, buf: &mut [u8], off: u64) -> Result<usize, MoverError> {
    let mut n = 0;
    while n < buf.len() {
        match f.read_at(&mut buf[n..], off + n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(MoverError::io("reading", path, e)),
        }
    }
    Ok(n)
}

fn remove_if_exists(path: &Path) -> Result<(), MoverError> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(MoverError::io("removing", path, e)),
        _ => Ok(()),
    }
}

/// (Re)creates a symlink or special node at `dst` (temp + rename).
pub fn create_node(dst: &Path, meta: &EntryMeta) -> Result<(), MoverError> {
    let tmp = temp_path(dst);
    remove_if_exists(&tmp)?;
    let made = match (meta.kind, &meta.link) {
        (Kind::Symlink, Some(target)) => {
            std::os::unix::fs::symlink(target, &tmp).map_err(|e| MoverError::io("creating symlink", &tmp, e))
        }
        (Kind::Symlink, None) => Err(MoverError::Other(format!(
            "symlink without target: {}",
            dst.display()
        ))),
        (kind, _) => {
            let ft = match kind {
                Kind::Fifo => FileType::Fifo,
                Kind::CharDev => FileType::CharacterDevice,
                Kind::BlockDev => FileType::BlockDevice,
                Kind::Socket => FileType::Socket,
                _ => {
                    return Err(MoverError::Other(format!(
                        "not a special file: {}",
                        dst.display()
                    )));
                }
            };
            rustix::fs::mknodat(CWD, &tmp, ft, Mode::from_raw_mode(meta.perm), meta.rdev)
                .map_err(|e| errno("creating node", &tmp, e))
        }
    };
    let installed = made
        .and_then(|()| meta::apply_path(&tmp, meta).map_err(|e| e.at_final(&tmp, dst)))
        .and_then(|()| std::fs::rename(&tmp, dst).map_err(|e| MoverError::io("renaming into place", dst, e)));
    if installed.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    installed
}

/// Makes `dst` a hard link to `leader` (both target paths). Returns false if the leader is
/// missing (it vanished from the source during the copy).
/// What [`hard_link`] found or did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Linked {
    /// `dst` is now a new link to the leader.
    Made,
    /// `dst` already was a link to the leader's inode (its leader kept its inode).
    Already,
    /// The leader is not there (it vanished from the source).
    LeaderMissing,
}

pub fn hard_link(leader: &Path, dst: &Path) -> Result<Linked, MoverError> {
    use std::os::unix::fs::MetadataExt;
    if let (Ok(a), Ok(b)) = (std::fs::symlink_metadata(leader), std::fs::symlink_metadata(dst))
        && (a.dev(), a.ino()) == (b.dev(), b.ino())
    {
        return Ok(Linked::Already);
    }
    // Not via temp + rename: rename between two links of one inode is a no-op by POSIX.
    remove_if_exists(dst)?;
    match std::fs::hard_link(leader, dst) {
        Ok(()) => Ok(Linked::Made),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Linked::LeaderMissing),
        Err(e) => Err(MoverError::io("linking", dst, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_split_segments() {
        assert_eq!(chunks(&[(0, 10)]), [(0, 10)]);
        let big = CHUNK * 2 + 5;
        assert_eq!(
            chunks(&[(7, big)]),
            [(7, CHUNK), (7 + CHUNK, CHUNK), (7 + 2 * CHUNK, 5)]
        );
        assert!(chunks(&[]).is_empty());
    }

    #[test]
    fn temp_name_is_stable_and_hidden() {
        let a = temp_path(Path::new("/t/dir/file.txt"));
        assert_eq!(a, temp_path(Path::new("/t/dir/file.txt")));
        assert_eq!(a.parent(), Some(Path::new("/t/dir")));
        assert!(a.file_name().unwrap().to_str().unwrap().starts_with(TEMP_PREFIX));
        assert_ne!(a, temp_path(Path::new("/t/dir/other")));
    }
}
