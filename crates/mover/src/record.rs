//! The chunk record: for each large file a pass wrote, the digest of every [`PIECE`] of what it
//! wrote, and the target inode's identity and times just after. The next pass (the final one,
//! with the replica stopped) compares a changed source file's pieces with these digests instead
//! of reading the target again, and writes only the pieces that differ ([`crate::delta`]).
//!
//! The record lives in the target, in one file at its root under a reserved temp name the scan
//! leaves out. A file's digests are trusted only while its target inode, size, mtime and ctime
//! are what the record says: any change to the inode (a write, a truncate, a metadata fix, an
//! interrupted pass) moves its ctime, which only the kernel sets. A record that cannot be read
//! whole (torn, another version) counts as none: correctness never depends on it, only the cost
//! of the pass. A strict pass (the final one) leaves no record behind.

use std::collections::HashMap;
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use xxhash_rust::xxh3::{Xxh3, xxh3_128};

use crate::error::MoverError;
use crate::meta::EntryMeta;

/// Bytes per recorded digest: the unit a delta pass compares and rewrites. A database's page
/// (8–16 KiB) rewritten in place costs one piece.
pub const PIECE: u64 = 128 << 10;
/// Smallest file updated piece by piece; smaller ones are rewritten whole (cheaper than the
/// comparison, and put in place by one rename).
pub const DELTA_MIN: u64 = 1 << 20;
/// The record's name at the target root (a temp name: never a source file's copy).
pub const RECORD_NAME: &str = ".ferry-tmp-chunk-record";
/// Where a new record is written before it is renamed over the old one.
pub const RECORD_NEW_NAME: &str = ".ferry-tmp-chunk-record-new";

const MAGIC: &[u8; 8] = b"FERRYCR1";

/// What a pass wrote into one target file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRecord {
    /// The target inode, its size and times right after the pass finished it.
    pub stamp: Stamp,
    /// xxh3-128 of each [`PIECE`] of the file (the last may be short); holes read as zeros.
    pub digests: Vec<u128>,
}

/// Identity and times of a target inode: a record holds only while these are unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// Inode number.
    pub ino: u64,
    /// Size in bytes.
    pub size: u64,
    /// Modification time (seconds, nanoseconds).
    pub mtime: (i64, i64),
    /// Status change time (seconds, nanoseconds).
    pub ctime: (i64, i64),
}

impl Stamp {
    /// The stamp of what a stat or a scan saw.
    pub fn of(meta: &EntryMeta) -> Self {
        Stamp {
            ino: meta.ino,
            size: meta.size,
            mtime: (meta.mtime, meta.mtime_nsec),
            ctime: (meta.ctime, meta.ctime_nsec),
        }
    }

    /// The stamp of an open file's current `fstat`.
    pub fn of_metadata(md: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        Stamp {
            ino: md.ino(),
            size: md.size(),
            mtime: (md.mtime(), md.mtime_nsec()),
            ctime: (md.ctime(), md.ctime_nsec()),
        }
    }
}

/// Pieces of a file of `size` bytes.
pub fn pieces(size: u64) -> usize {
    usize::try_from(size.div_ceil(PIECE)).unwrap_or(usize::MAX)
}

/// Whether a file of this size is updated in place, piece by piece, and recorded.
pub fn recorded_size(size: u64) -> bool {
    size >= DELTA_MIN
}

/// The digest of `bytes` as recorded.
pub fn digest(bytes: &[u8]) -> u128 {
    xxh3_128(bytes)
}

/// Digests a stream of bytes piece by piece, whatever lengths it is fed in.
#[derive(Default)]
pub struct PieceHasher {
    current: Xxh3,
    filled: u64,
    digests: Vec<u128>,
}

impl PieceHasher {
    /// Feeds the next bytes of the stream.
    pub fn update(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let take = usize::try_from(PIECE - self.filled)
                .unwrap_or(usize::MAX)
                .min(bytes.len());
            self.current.update(&bytes[..take]);
            self.filled += take as u64;
            bytes = &bytes[take..];
            if self.filled == PIECE {
                self.digests.push(self.current.digest128());
                self.current.reset();
                self.filled = 0;
            }
        }
    }

    /// The digest of every piece fed, the last one short if the stream ended inside it.
    pub fn finish(mut self) -> Vec<u128> {
        if self.filled > 0 {
            self.digests.push(self.current.digest128());
        }
        self.digests
    }
}

/// The chunk record as a pass found it.
#[derive(Debug, Default)]
pub struct Loaded {
    /// The files the pass read whose target is still what the record says.
    pub held: HashMap<PathBuf, FileRecord>,
    /// The files at paths the pass did not read (one that visited only what changed), unchecked:
    /// kept for a later pass, which checks them as it reads them.
    pub unread: Vec<(PathBuf, FileRecord)>,
}

/// The record read from `target`'s root: `read` says which paths the pass read, `current` gives
/// each read path's scanned target metadata.
pub fn load<'a>(
    target: &Path,
    read: impl Fn(&Path) -> bool,
    current: impl Fn(&Path) -> Option<&'a EntryMeta>,
) -> Loaded {
    let Ok(bytes) = std::fs::read(target.join(RECORD_NAME)) else {
        return Loaded::default();
    };
    let mut loaded = Loaded::default();
    for (rel, record) in decode(&bytes).unwrap_or_default() {
        if !read(&rel) {
            loaded.unread.push((rel, record));
        } else if current(&rel)
            .is_some_and(|m| m.kind == crate::meta::Kind::File && Stamp::of(m) == record.stamp)
        {
            loaded.held.insert(rel, record);
        }
    }
    loaded
}

/// Writes `records` as the target's record (a new file renamed over the old one), or removes
/// the record when there is nothing to keep.
pub fn save(target: &Path, records: &[(PathBuf, FileRecord)]) -> Result<(), MoverError> {
    if records.is_empty() {
        return remove(target);
    }
    let new = target.join(RECORD_NEW_NAME);
    std::fs::write(&new, encode(records)).map_err(|e| MoverError::io("writing", &new, e))?;
    let path = target.join(RECORD_NAME);
    std::fs::rename(&new, &path).map_err(|e| MoverError::io("renaming into place", &path, e))
}

/// Removes the record (and a new one a killed pass left) from the target.
pub fn remove(target: &Path) -> Result<(), MoverError> {
    for name in [RECORD_NAME, RECORD_NEW_NAME] {
        let path = target.join(name);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                return Err(MoverError::io("removing", &path, e));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Whether a target-relative path is the record's (left out of the target's scan).
pub fn is_record(rel: &Path) -> bool {
    rel == Path::new(RECORD_NAME) || rel == Path::new(RECORD_NEW_NAME)
}

/// The record's bytes: a magic, then per file its path, stamp and digests, then an xxh3-128 of
/// everything before it.
fn encode(records: &[(PathBuf, FileRecord)]) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    for (rel, r) in records {
        let path = rel.as_os_str().as_bytes();
        out.extend((path.len() as u64).to_le_bytes());
        out.extend(path);
        let s = r.stamp;
        for n in [
            s.ino,
            s.size,
            s.mtime.0 as u64,
            s.mtime.1 as u64,
            s.ctime.0 as u64,
            s.ctime.1 as u64,
        ] {
            out.extend(n.to_le_bytes());
        }
        out.extend((r.digests.len() as u64).to_le_bytes());
        for d in &r.digests {
            out.extend(d.to_le_bytes());
        }
    }
    let sum = xxh3_128(&out);
    out.extend(sum.to_le_bytes());
    out
}

/// The records in `bytes`, or `None` when they are not a whole record of this version.
fn decode(bytes: &[u8]) -> Option<Vec<(PathBuf, FileRecord)>> {
    let (body, sum) = bytes.split_at_checked(bytes.len().checked_sub(16)?)?;
    if xxh3_128(body).to_le_bytes() != sum || !body.starts_with(MAGIC) {
        return None;
    }
    let mut r = Reader(&body[MAGIC.len()..]);
    let mut out = Vec::new();
    while !r.0.is_empty() {
        let len = usize::try_from(r.u64()?).ok()?;
        let rel = PathBuf::from(std::ffi::OsString::from_vec(r.take(len)?.to_vec()));
        let [ino, size, ms, mn, cs, cn] = [r.u64()?, r.u64()?, r.u64()?, r.u64()?, r.u64()?, r.u64()?];
        let count = usize::try_from(r.u64()?).ok()?;
        // A count the record cannot hold is a corrupt record, not an allocation to attempt.
        if count > r.0.len() / 16 || count != pieces(size) {
            return None;
        }
        let digests = (0..count).map(|_| r.u128()).collect::<Option<Vec<_>>>()?;
        let stamp = Stamp {
            ino,
            size,
            mtime: (ms as i64, mn as i64),
            ctime: (cs as i64, cn as i64),
        };
        out.push((rel, FileRecord { stamp, digests }));
    }
    Some(out)
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn u128(&mut self) -> Option<u128> {
        Some(u128::from_le_bytes(self.take(16)?.try_into().ok()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<(PathBuf, FileRecord)> {
        let stamp = |ino| Stamp {
            ino,
            size: 3 * PIECE - 5,
            mtime: (1_700_000_000, 5),
            ctime: (1_700_000_001, 999_999_999),
        };
        vec![
            (
                PathBuf::from("base/1/16384"),
                FileRecord {
                    stamp: stamp(7),
                    digests: vec![1, u128::MAX, 3],
                },
            ),
            (
                PathBuf::from("é/x"),
                FileRecord {
                    stamp: stamp(8),
                    digests: vec![4, 5, 6],
                },
            ),
        ]
    }

    #[test]
    fn a_record_reads_back_as_written() {
        assert_eq!(decode(&encode(&sample())), Some(sample()));
        assert_eq!(decode(&encode(&[])), Some(vec![]));
    }

    #[test]
    fn a_torn_or_altered_record_is_none() {
        let bytes = encode(&sample());
        for cut in [0, 1, 8, 30, bytes.len() - 1] {
            assert_eq!(decode(&bytes[..cut]), None, "cut at {cut}");
        }
        let mut flipped = bytes.clone();
        flipped[20] ^= 1;
        assert_eq!(decode(&flipped), None);
    }

    #[test]
    fn digests_that_do_not_fit_the_size_are_refused() {
        let mut wrong = sample();
        wrong[0].1.digests.pop();
        assert_eq!(decode(&encode(&wrong)), None);
    }

    #[test]
    fn only_files_whose_target_is_unchanged_are_kept() {
        let tmp = tempfile::tempdir().unwrap();
        save(tmp.path(), &sample()).unwrap();
        let same = EntryMeta {
            kind: crate::meta::Kind::File,
            perm: 0o600,
            uid: 0,
            gid: 0,
            size: 3 * PIECE - 5,
            mtime: 1_700_000_000,
            mtime_nsec: 5,
            ctime: 1_700_000_001,
            ctime_nsec: 999_999_999,
            atime: 0,
            atime_nsec: 0,
            rdev: 0,
            dev: 1,
            ino: 7,
            nlink: 1,
            blocks: 0,
            link: None,
            xattrs: vec![],
        };
        let mut touched = same.clone();
        touched.ctime_nsec += 1;
        let kept = load(
            tmp.path(),
            |_| true,
            |rel| (rel == Path::new("base/1/16384")).then_some(&same),
        );
        assert_eq!(kept.held.keys().collect::<Vec<_>>(), [Path::new("base/1/16384")]);
        let kept = load(
            tmp.path(),
            |_| true,
            |rel| (rel == Path::new("base/1/16384")).then_some(&touched),
        );
        assert!(kept.held.is_empty() && kept.unread.is_empty());
        // A pass that did not read a path keeps its record, unchecked, for a later one.
        let kept = load(tmp.path(), |rel| rel != Path::new("base/1/16384"), |_| None);
        let unread: Vec<&Path> = kept.unread.iter().map(|(rel, _)| rel.as_path()).collect();
        assert_eq!(unread, [Path::new("base/1/16384")]);
        save(tmp.path(), &[]).unwrap();
        assert!(!tmp.path().join(RECORD_NAME).exists());
    }

    #[test]
    fn a_stream_fed_in_any_lengths_has_the_digests_of_its_pieces() {
        let bytes: Vec<u8> = (0..(2 * PIECE + 77)).map(|i| (i * 7 % 251) as u8).collect();
        let whole: Vec<u128> = bytes.chunks(PIECE as usize).map(digest).collect();
        for step in [1000, PIECE as usize, 3 * PIECE as usize] {
            let mut hasher = PieceHasher::default();
            bytes.chunks(step).for_each(|b| hasher.update(b));
            assert_eq!(hasher.finish(), whole, "fed {step} bytes at a time");
        }
        assert!(PieceHasher::default().finish().is_empty());
    }

    #[test]
    fn pieces_cover_the_file() {
        assert_eq!(pieces(0), 0);
        assert_eq!(pieces(1), 1);
        assert_eq!(pieces(PIECE), 1);
        assert_eq!(pieces(PIECE + 1), 2);
    }
}
