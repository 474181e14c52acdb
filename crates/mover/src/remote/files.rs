//! The serving mover's answers about one regular file of its source: its data (with the hash of
//! what was read), its pieces' digests, byte ranges of it, its hash. Files are opened without
//! following a symlink and never written.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::Ordering;

use rustix::fs::{Mode, OFlags};
use xxhash_rust::xxh3::Xxh3;

use super::wire::{self, DATA_PER_FRAME, Reply};
use crate::error::MoverError;
use crate::meta::{EntryMeta, Kind};
use std::sync::atomic::AtomicU64;

/// The data segments of a file (holes are not sent), then [`Reply::Sent`]: its size, the hash of
/// the whole content as read (holes as zeros), and whether it changed while it was read.
pub(super) fn read(path: &Path, out: &mut impl Write, sent: &AtomicU64) -> io::Result<()> {
    grow_for_test(path);
    let (file, before) = match open_file(path)? {
        Ok(opened) => opened,
        Err(refusal) => return wire::send(out, &refusal),
    };
    let segments = crate::copy::data_segments(&file, &before)?;
    let mut hasher = Hashed::default();
    send_ranges(&file, path, &segments, out, sent, Some(&mut hasher))?;
    hasher.zeros_to(before.size);
    let after = EntryMeta::from_metadata(&file.metadata()?);
    wire::send(
        out,
        &Reply::Sent {
            size: before.size,
            hash: hasher.hash.digest128(),
            changed: changed(&before, &after),
        },
    )
}

/// The digest of each piece of a file.
pub(super) fn pieces(path: &Path, out: &mut impl Write) -> io::Result<()> {
    let (file, meta) = match open_file(path)? {
        Ok(opened) => opened,
        Err(refusal) => return wire::send(out, &refusal),
    };
    match crate::copy::piece_digests(&file, path, 0, meta.size) {
        Ok(digests) => wire::send(
            out,
            &Reply::Pieces {
                size: meta.size,
                digests,
            },
        ),
        Err(e) => wire::send(out, &failed(e)),
    }
}

/// The data inside `ranges` (holes are not sent: the pulling side makes holes of what it asked
/// and did not get), then [`Reply::End`] with the file's size.
pub(super) fn read_ranges(
    path: &Path,
    ranges: &[(u64, u64)],
    out: &mut impl Write,
    sent: &AtomicU64,
) -> io::Result<()> {
    let (file, meta) = match open_file(path)? {
        Ok(opened) => opened,
        Err(refusal) => return wire::send(out, &refusal),
    };
    let segments = crate::copy::data_segments(&file, &meta)?;
    send_ranges(&file, path, &intersection(ranges, &segments), out, sent, None)?;
    wire::send(out, &Reply::End { size: meta.size })
}

/// The hash of a file's content read now, with the size and mtime it had before the read.
pub(super) fn hash(path: &Path, out: &mut impl Write) -> io::Result<()> {
    let (file, meta) = match open_file(path)? {
        Ok(opened) => opened,
        Err(refusal) => return wire::send(out, &refusal),
    };
    let mut hasher = Hashed::default();
    let mut buf = vec![0u8; DATA_PER_FRAME as usize];
    let mut at = 0;
    loop {
        let got = crate::copy::read_full(&file, path, &mut buf, at).map_err(io::Error::other)?;
        if got == 0 {
            break;
        }
        hasher.data(at, &buf[..got]);
        at += got as u64;
    }
    wire::send(
        out,
        &Reply::Hashed {
            hash: hasher.hash.digest128(),
            size: meta.size,
            mtime: meta.mtime,
            mtime_nsec: meta.mtime_nsec,
        },
    )
}

fn failed(e: MoverError) -> Reply {
    Reply::Failed {
        message: e.to_string(),
        vanished: false,
    }
}

/// Whether a file's inode changed between two looks (its data may be torn).
fn changed(before: &EntryMeta, after: &EntryMeta) -> bool {
    before.size != after.size
        || !before.same_mtime(after)
        || (before.ctime, before.ctime_nsec) != (after.ctime, after.ctime_nsec)
}

/// The hash of a file's content from its data in offset order, the holes between as zeros.
#[derive(Default)]
struct Hashed {
    hash: Xxh3,
    to: u64,
}

impl Hashed {
    fn data(&mut self, at: u64, bytes: &[u8]) {
        self.zeros_to(at);
        self.hash.update(bytes);
        self.to = at + bytes.len() as u64;
    }

    fn zeros_to(&mut self, end: u64) {
        static ZEROS: [u8; 64 << 10] = [0; 64 << 10];
        while self.to < end {
            let n = (end - self.to).min(ZEROS.len() as u64) as usize;
            self.hash.update(&ZEROS[..n]);
            self.to += n as u64;
        }
    }
}

/// Opens a regular file of the source; the reply that refuses it when it is gone, no longer a
/// regular file, or cannot be opened.
fn open_file(path: &Path) -> io::Result<Result<(File, EntryMeta), Reply>> {
    let vanished = |why: &str| Reply::Failed {
        message: format!("{}: {why}", path.display()),
        vanished: true,
    };
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let file = match rustix::fs::open(path, flags, Mode::empty()) {
        Ok(fd) => File::from(fd),
        Err(e)
            if e == rustix::io::Errno::NOENT
                || e == rustix::io::Errno::LOOP
                || e == rustix::io::Errno::NOTDIR =>
        {
            return Ok(Err(vanished("vanished")));
        }
        Err(e) => return Ok(Err(failed(MoverError::io("opening", path, e.into())))),
    };
    let meta = EntryMeta::from_metadata(&file.metadata()?);
    if meta.kind != Kind::File {
        return Ok(Err(vanished("no longer a regular file")));
    }
    Ok(Ok((file, meta)))
}

/// The bytes of `ranges` (offset, length) as data frames, hashed on the way when asked; a range
/// past the file's end is cut where the file ends (it shrank since its size was read).
fn send_ranges(
    file: &File,
    path: &Path,
    ranges: &[(u64, u64)],
    out: &mut impl Write,
    sent: &AtomicU64,
    mut hasher: Option<&mut Hashed>,
) -> io::Result<()> {
    let mut buf = vec![0u8; DATA_PER_FRAME as usize];
    for &(start, len) in ranges {
        let end = start.saturating_add(len);
        let mut at = start;
        while at < end {
            let want = (end - at).min(DATA_PER_FRAME) as usize;
            let got = crate::copy::read_full(file, path, &mut buf[..want], at).map_err(io::Error::other)?;
            if got == 0 {
                break;
            }
            wire::send(out, &Reply::Data { at, len: got as u64 })?;
            out.write_all(&buf[..got])?;
            if let Some(hasher) = hasher.as_deref_mut() {
                hasher.data(at, &buf[..got]);
            }
            sent.fetch_add(got as u64, Ordering::Relaxed);
            at += got as u64;
        }
    }
    Ok(())
}

/// The parts of the ordered ranges `asked` that are also in the ordered ranges `data`.
fn intersection(asked: &[(u64, u64)], data: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    for &(start, len) in asked {
        for &(from, dlen) in data {
            let (a, b) = (start.max(from), (start + len).min(from + dlen));
            if a < b {
                out.push((a, b - a));
            }
        }
    }
    out
}

/// Test hook (feature `test-hooks` only): a file named `$FERRY_MOVER_TEST_GROW_ON_READ` grows by a
/// line just before it is read, as a writer the listing did not see would make it.
#[cfg(feature = "test-hooks")]
fn grow_for_test(path: &Path) {
    use std::io::Write as _;
    let Some(name) = std::env::var_os("FERRY_MOVER_TEST_GROW_ON_READ") else {
        return;
    };
    if path.file_name() == Some(name.as_os_str())
        && let Ok(mut file) = std::fs::OpenOptions::new().append(true).open(path)
    {
        let _ = file.write_all(b"written after the listing\n");
    }
}

/// Builds without `test-hooks` (every release) never touch the source.
#[cfg(not(feature = "test-hooks"))]
fn grow_for_test(_path: &Path) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_data_inside_the_asked_ranges_is_sent() {
        let data = [(0, 50), (80, 100)];
        assert_eq!(
            intersection(&[(10, 100), (300, 10)], &data),
            vec![(10, 40), (80, 30)]
        );
        assert_eq!(intersection(&[(50, 30)], &data), vec![]);
    }

    #[test]
    fn a_sparse_files_hash_is_its_contents_with_the_holes_as_zeros() {
        let mut whole = vec![0u8; 200_000];
        whole[70_000..70_010].copy_from_slice(b"0123456789");
        whole[199_990..].copy_from_slice(b"abcdefghij");
        let mut sparse = Hashed::default();
        sparse.data(70_000, b"0123456789");
        sparse.data(199_990, b"abcdefghij");
        sparse.zeros_to(200_000);
        assert_eq!(sparse.hash.digest128(), xxhash_rust::xxh3::xxh3_128(&whole));
        // A file whose end is a hole.
        let mut tail = Hashed::default();
        tail.data(0, &whole[..100]);
        tail.zeros_to(300);
        let mut expected = whole[..100].to_vec();
        expected.resize(300, 0);
        assert_eq!(tail.hash.digest128(), xxhash_rust::xxh3::xxh3_128(&expected));
    }
}
