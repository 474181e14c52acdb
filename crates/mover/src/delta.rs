//! A large file whose copy already exists is updated in place, piece by piece: each [`PIECE`] of
//! the source is compared with the target's (by the digest the chunk record kept of what an
//! earlier pass wrote, else by reading the target's piece); in a piece that differs, the target's
//! piece is read and only the [`BLOCK`]s that differ are written. A database's segment rewritten
//! in pages costs a read of the source (still in the page cache right after the replica stopped),
//! a read of the differing pieces of the target and the writes of those pages, not a rewrite of
//! the whole segment nor of the pieces around its pages.
//!
//! The file's metadata (its mtime last) is set only once every piece is right, so a pass killed
//! half-way leaves a target whose mtime is the time of its last write: the next pass sees it
//! differ from the source and compares every piece again (its recorded digests no longer hold
//! either, as its ctime moved). A written piece is read back and compared with what was read from
//! the source; an unchanged one matched the source by digest or byte for byte.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

use rayon::prelude::*;
use rustix::fs::FallocateFlags;

use crate::copy::{self, CopyCtx, data_segments, read_full};
use crate::error::MoverError;
use crate::meta::{self, EntryMeta};
use crate::record::{self, FileRecord, PIECE, Stamp};

/// Pieces one worker compares in turn (32 MiB): big files are split across threads.
const UNIT_PIECES: u64 = 256;
/// What a differing piece is written in: the file systems' block, so a page rewritten by a
/// database costs its own blocks, not the whole piece around it.
pub(crate) const BLOCK: usize = 4 << 10;

/// What updating a file in place came to.
#[derive(Debug)]
pub enum Updated {
    /// The target now equals the source.
    Done {
        /// Bytes written (the pieces that differed).
        written: u64,
        /// What landed, read back once complete (when verifying).
        landed: Option<Box<EntryMeta>>,
        /// The file's pieces as they now are, for the next pass.
        record: FileRecord,
    },
    /// The source disappeared or stopped being a regular file.
    Vanished,
    /// A written piece read back differently.
    Mismatch,
    /// The target cannot be updated in place (gone, not a regular file, linked elsewhere): the
    /// caller copies the file whole.
    Replace,
}

/// The source and target of one update, open.
struct Pair<'a> {
    sf: File,
    src: &'a Path,
    tf: File,
    dst: &'a Path,
    /// The source's data ranges (holes read as zeros and are punched in the target).
    segments: Vec<(u64, u64)>,
    /// The recorded digest of each piece still known to be the target's.
    known: &'a [u128],
    /// Test hook: corrupt each piece written before it is read back.
    corrupt: bool,
}

/// Updates `dst` in place to equal `src` (scanned as `meta`), trusting `recorded` only while the
/// target's stamp matches it.
pub fn update_in_place(
    ctx: &CopyCtx,
    i: usize,
    rel: &Path,
    src: &Path,
    dst: &Path,
    meta: &EntryMeta,
    recorded: Option<&FileRecord>,
) -> Result<Updated, MoverError> {
    let Some((sf, before)) = copy::open_source(ctx, i, rel, src, meta)? else {
        return Ok(Updated::Vanished);
    };
    let tf = match OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(dst)
    {
        Ok(tf) => tf,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Updated::Replace),
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) => {
            return Ok(Updated::Replace);
        }
        Err(e) => return Err(MoverError::io("opening", dst, e)),
    };
    let tmd = tf
        .metadata()
        .map_err(|e| MoverError::io("reading metadata of", dst, e))?;
    if !tmd.file_type().is_file() || std::os::unix::fs::MetadataExt::nlink(&tmd) != 1 {
        return Ok(Updated::Replace);
    }
    let old_size = tmd.len();
    let recorded = recorded.filter(|r| r.stamp == Stamp::of_metadata(&tmd));
    // Pieces wholly below both the old and the new end keep their recorded digest (all of them
    // when the length is the same).
    let still_known = match old_size == meta.size {
        true => record::pieces(old_size),
        false => usize::try_from(old_size.min(meta.size) / PIECE).unwrap_or(0),
    };
    let known = recorded.map_or(&[][..], |r| &r.digests[..still_known.min(r.digests.len())]);
    if old_size != meta.size {
        tf.set_len(meta.size)
            .map_err(|e| MoverError::io("setting length of", dst, e))?;
    }
    let segments = data_segments(&sf, meta).map_err(|e| MoverError::io("seeking in", src, e))?;
    let pair = Pair {
        sf,
        src,
        tf,
        dst,
        segments,
        known,
        corrupt: ctx.corrupt == Some(rel),
    };
    let Some((written, digests)) = compare_and_write(ctx, &pair, meta.size)? else {
        return Ok(Updated::Mismatch);
    };
    if ctx.recheck_sources {
        copy::warn_if_changed(ctx, &pair.sf, src, &before)?;
    }
    meta::apply_fd(&pair.tf, dst, meta)?;
    let landed = match ctx.read_back {
        true => Some(Box::new(meta::read_fd(&pair.tf, dst)?)),
        false => None,
    };
    let after = pair
        .tf
        .metadata()
        .map_err(|e| MoverError::io("reading metadata of", dst, e))?;
    let record = FileRecord {
        stamp: Stamp::of_metadata(&after),
        digests,
    };
    Ok(Updated::Done {
        written,
        landed,
        record,
    })
}

/// Every piece of the file compared and, where it differs, written; `None` on a read-back
/// mismatch, else the bytes written and each piece's digest.
fn compare_and_write(ctx: &CopyCtx, pair: &Pair, size: u64) -> Result<Option<(u64, Vec<u128>)>, MoverError> {
    let units: Vec<u64> = (0..record::pieces(size) as u64)
        .step_by(UNIT_PIECES as usize)
        .collect();
    let done: Vec<Option<(u64, Vec<u128>)>> = units
        .par_iter()
        .map(|&first| unit(ctx, pair, size, first))
        .collect::<Result<_, _>>()?;
    let mut written = 0;
    let mut digests = Vec::with_capacity(record::pieces(size));
    for unit in done {
        let Some((bytes, unit_digests)) = unit else {
            return Ok(None);
        };
        written += bytes;
        digests.extend(unit_digests);
    }
    Ok(Some((written, digests)))
}

/// The pieces from `first` on, at most [`UNIT_PIECES`] of them.
fn unit(ctx: &CopyCtx, pair: &Pair, size: u64, first: u64) -> Result<Option<(u64, Vec<u128>)>, MoverError> {
    let mut source = vec![0u8; PIECE as usize];
    let mut other = vec![0u8; PIECE as usize];
    let mut written = 0;
    let mut digests = Vec::new();
    let last = (first + UNIT_PIECES).min(record::pieces(size) as u64);
    for piece in first..last {
        let off = piece * PIECE;
        let len = PIECE.min(size - off) as usize;
        let source = &mut source[..len];
        read_source(pair, off, source)?;
        let digest = record::digest(source);
        let known = usize::try_from(piece).ok().and_then(|p| pair.known.get(p));
        // The target's piece, read when no recorded digest settles it or once it differs.
        let mut target_len = None;
        let read_target = |other: &mut [u8]| -> Result<usize, MoverError> {
            let n = read_full(&pair.tf, pair.dst, &mut other[..len], off)?;
            ctx.progress
                .bytes_compared
                .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
            Ok(n)
        };
        let same = match known {
            Some(&recorded) => recorded == digest,
            None => {
                let n = read_target(&mut other)?;
                target_len = Some(n);
                n == len && other[..len] == *source
            }
        };
        if !same {
            let n = match target_len {
                Some(n) => n,
                None => read_target(&mut other)?,
            };
            // Only the blocks that differ are written: a database's checkpoint dirties pages all
            // over its segments, and a piece holding one changed page costs that page's blocks.
            for (from, to) in differing_runs(source, &other[..n], BLOCK) {
                write_range(ctx, pair, off + from as u64, &source[from..to])?;
                written += (to - from) as u64;
            }
            ctx.wrote_piece_in_place();
            if pair.corrupt {
                copy::flip_byte(&pair.tf, pair.dst, off)?;
            }
            if ctx.hash {
                let n = read_full(&pair.tf, pair.dst, &mut other[..len], off)?;
                if n != len || other[..len] != *source {
                    return Ok(None);
                }
            }
        }
        digests.push(digest);
    }
    Ok(Some((written, digests)))
}

/// The source's bytes at `off` (zeros where it has a hole or where it shrank since the scan).
fn read_source(pair: &Pair, off: u64, buf: &mut [u8]) -> Result<(), MoverError> {
    let end = off + buf.len() as u64;
    if !pair.segments.iter().any(|&(s, l)| s < end && s + l > off) {
        buf.fill(0);
        return Ok(());
    }
    let n = read_full(&pair.sf, pair.src, buf, off)?;
    buf[n..].fill(0);
    Ok(())
}

/// The ranges of `source` (as `[from, to)` offsets, adjacent blocks joined) whose `block`-sized
/// blocks differ from `target`'s; where `target` is shorter, the rest differs.
pub(crate) fn differing_runs(source: &[u8], target: &[u8], block: usize) -> Vec<(usize, usize)> {
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for from in (0..source.len()).step_by(block.max(1)) {
        let to = (from + block).min(source.len());
        if target.get(from..to) == Some(&source[from..to]) {
            continue;
        }
        match runs.last_mut() {
            Some(run) if run.1 == from => run.1 = to,
            _ => runs.push((from, to)),
        }
    }
    runs
}

/// Writes a range's data and punches its holes (the source's holes stay holes).
fn write_range(ctx: &CopyCtx, pair: &Pair, off: u64, source: &[u8]) -> Result<(), MoverError> {
    let end = off + source.len() as u64;
    let mut at = off;
    for &(s, l) in &pair.segments {
        let (from, to) = (s.max(off), (s + l).min(end));
        if from >= to {
            continue;
        }
        punch(pair, at, from)?;
        let bytes = &source[(from - off) as usize..(to - off) as usize];
        ctx.before_writing(bytes.len() as u64);
        pair.tf
            .write_all_at(bytes, from)
            .map_err(|e| MoverError::io("writing", pair.dst, e))?;
        ctx.wrote(bytes.len() as u64);
        at = to;
    }
    punch(pair, at, end)?;
    Ok(())
}

/// Makes `[from, to)` of the target read as zeros (the source's holes there).
fn punch(pair: &Pair, from: u64, to: u64) -> Result<(), MoverError> {
    if from >= to {
        return Ok(());
    }
    punch_hole(&pair.tf, pair.dst, from, to - from)
}

/// Makes `[from, from + len)` of `file` read as zeros: a hole where the file system can punch
/// one, else written zeros.
pub(crate) fn punch_hole(file: &File, path: &Path, from: u64, len: u64) -> Result<(), MoverError> {
    let flags = FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE;
    if rustix::fs::fallocate(file, flags, from, len).is_ok() {
        return Ok(());
    }
    let zeros = [0u8; BLOCK];
    let mut at = from;
    while at < from + len {
        let n = (from + len - at).min(BLOCK as u64) as usize;
        file.write_all_at(&zeros[..n], at)
            .map_err(|e| MoverError::io("writing", path, e))?;
        at += n as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::differing_runs;

    #[test]
    fn only_the_blocks_that_differ_are_written_and_neighbours_are_joined() {
        let source: Vec<u8> = (0..40).map(|i| i as u8).collect();
        let mut target = source.clone();
        assert!(differing_runs(&source, &target, 8).is_empty());
        target[3] ^= 1; // block 0
        target[17] ^= 1; // block 2
        target[25] ^= 1; // block 3, next to block 2
        assert_eq!(differing_runs(&source, &target, 8), vec![(0, 8), (16, 32)]);
    }

    #[test]
    fn a_shorter_target_differs_from_where_it_ends_and_a_short_last_block_counts() {
        let source = vec![7u8; 20];
        assert_eq!(differing_runs(&source, &source[..9], 8), vec![(8, 20)]);
        assert_eq!(differing_runs(&source, &[], 8), vec![(0, 20)]);
        let mut target = source.clone();
        target[19] = 0;
        assert_eq!(differing_runs(&source, &target, 8), vec![(16, 20)]);
    }
}
