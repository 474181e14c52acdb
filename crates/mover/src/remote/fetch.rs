//! The copy phase of a pull: the entries to write, shared out over several connections, each
//! file's data received and written here. Small files go in batches (their requests sent at
//! once, answered in turn); in a directory this pass made, a file is written under its own name
//! with only the calls its creation did not already make (as a local pass does: `fresh.rs`).

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::net::SocketAddr;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rustls::ClientConfig;

use super::check::{self, Landed};
use super::peer::Peer;
use super::wire::{DATA_PER_FRAME, Reply, Request};
use crate::error::MoverError;
use crate::fresh::FreshDir;
use crate::meta::{self, Kind};
use crate::plan::{self, Op};
use crate::progress::{Phase, Progress, Warnings, lock};
use crate::throttle::Throttle;
use crate::walk::Tree;

/// Files below this size are fetched in batches.
const SMALL: u64 = 1 << 20;
/// The most files in one batch.
const BATCH_FILES: usize = 64;
/// The most bytes in one batch.
const BATCH_BYTES: u64 = 4 << 20;
/// The most bytes of paths in one batch's requests: a batch is sent whole before its answers are
/// read, so it must fit the sockets' buffers whatever the names' lengths.
const BATCH_NAMES: usize = 16 << 10;

/// Per-entry outcomes shared by the fetching threads.
pub(super) struct Outcome {
    pub vanished: Vec<AtomicBool>,
    pub files_copied: AtomicU64,
    pub metadata_fixed: AtomicU64,
    /// Files whose landed content is not the source's (path, why).
    pub mismatches: Mutex<Vec<(PathBuf, String)>>,
    error: Mutex<Option<MoverError>>,
}

impl Outcome {
    /// Nothing done yet for `entries` source entries.
    pub fn new(entries: usize) -> Outcome {
        Outcome {
            vanished: (0..entries).map(|_| AtomicBool::new(false)).collect(),
            files_copied: AtomicU64::new(0),
            metadata_fixed: AtomicU64::new(0),
            mismatches: Mutex::new(Vec::new()),
            error: Mutex::new(None),
        }
    }
}

/// What a file's data frames brought.
#[derive(Default)]
pub(super) struct Received {
    /// Bytes written (with a comparison, only those that differed).
    written: u64,
    /// The source file's size.
    size: u64,
    /// The (offset, length) of every frame, in order.
    segments: Vec<(u64, u64)>,
    /// For a whole file: the hash of the source's content as read, and whether it changed then.
    sent: Option<(u128, bool)>,
}

/// The parts of `asked` (ordered ranges) no frame of `got` (ordered, inside them) covered, cut at
/// `size`: the source's holes there.
fn gaps(asked: &[(u64, u64)], got: &[(u64, u64)], size: u64) -> Vec<(u64, u64)> {
    let mut gaps = Vec::new();
    let mut frames = got.iter().peekable();
    for &(start, len) in asked {
        let end = (start + len).min(size);
        let mut at = start;
        while let Some(&&(from, flen)) = frames.peek() {
            if from >= end {
                break;
            }
            if from > at {
                gaps.push((at, from - at));
            }
            at = at.max(from + flen);
            frames.next();
        }
        if at < end {
            gaps.push((at, end - at));
        }
    }
    gaps
}

/// The byte ranges of the pieces whose digests differ (or that only the source has), adjacent
/// ones joined, cut at the source's `size`.
fn differing_ranges(theirs: &[u128], ours: &[u128], size: u64) -> Vec<(u64, u64)> {
    let mut ranges: Vec<(u64, u64)> = Vec::new();
    for (k, digest) in theirs.iter().enumerate() {
        if ours.get(k) == Some(digest) {
            continue;
        }
        let start = k as u64 * crate::PIECE;
        let len = crate::PIECE.min(size.saturating_sub(start));
        match ranges.last_mut() {
            Some((at, joined)) if *at + *joined == start => *joined += len,
            _ => ranges.push((start, len)),
        }
    }
    ranges.retain(|(_, len)| *len > 0);
    ranges
}

/// Whether an op fetches a file whole.
fn fetches_whole(op: &Op) -> bool {
    matches!(op, Op::CopyData | Op::Compare { .. })
}

/// The work in turns: consecutive small files fetched whole go together (up to [`BATCH_FILES`],
/// [`BATCH_BYTES`] of data and [`BATCH_NAMES`] of requests), everything else alone. `cost` gives
/// an entry's data size and the length of its path.
fn batches(work: &[usize], ops: &[Op], cost: impl Fn(usize) -> (u64, usize)) -> Vec<Vec<usize>> {
    let mut batches: Vec<Vec<usize>> = Vec::new();
    let (mut bytes, mut names) = (0, 0);
    let small = |i: usize| fetches_whole(&ops[i]) && cost(i).0 < SMALL;
    for &i in work {
        let (size, name) = cost(i);
        let joins = small(i)
            && batches
                .last()
                .is_some_and(|last| small(last[0]) && last.len() < BATCH_FILES)
            && bytes + size <= BATCH_BYTES
            && names + name <= BATCH_NAMES;
        match batches.last_mut() {
            Some(last) if joins => {
                last.push(i);
                (bytes, names) = (bytes + size, names + name);
            }
            _ => {
                batches.push(vec![i]);
                (bytes, names) = (size, name);
            }
        }
    }
    batches
}

/// The copy phase: the entries to write, shared out over the connections.
pub(super) struct Fetch<'a> {
    pub src: &'a Tree,
    pub ops: &'a [Op],
    pub target: &'a Path,
    pub out: &'a Outcome,
    pub warnings: &'a Warnings,
    pub throttle: Option<&'a Throttle>,
    /// The directories this pass made (by source index), and what a file made in them has.
    pub fresh: HashMap<usize, FreshDir>,
    /// Each source entry's parent directory (by source index).
    pub parents: Vec<usize>,
    /// Whether each file written is read back and compared with the source's content.
    pub verify: bool,
    /// Test hook: the source-relative file to corrupt once written.
    pub corrupt: Option<&'a Path>,
    /// What the pass has done, for its progress lines.
    pub progress: &'a Progress,
}

impl Fetch<'_> {
    /// The files' data and metadata, nodes and metadata fixes, then hard links, then the
    /// directories' metadata (creating entries inside bumps a directory's mtime).
    pub fn run(
        &self,
        plan: &plan::Plan,
        connections: usize,
        from: SocketAddr,
        config: &Arc<ClientConfig>,
        control: &mut Peer,
    ) -> Result<(), MoverError> {
        let work: Vec<usize> = (0..plan.ops.len())
            .filter(|&i| !matches!(plan.ops[i], Op::Skip | Op::Mkdir | Op::HardLink(_)))
            .collect();
        let cost = |i: usize| {
            let e = &self.src.entries[i];
            (e.meta.size, e.rel.as_os_str().len())
        };
        let turns = batches(&work, &plan.ops, cost);
        for (i, op) in plan.ops.iter().enumerate().skip(1) {
            if matches!(op, Op::Skip | Op::Mkdir) {
                self.progress.done(self.data_size(i));
            }
        }
        self.progress.set_phase(Phase::Copy);
        self.run_all(&turns, connections, from, config, control)?;
        for (i, op) in plan.ops.iter().enumerate() {
            if let Op::HardLink(leader) = op {
                self.link(i, *leader)?;
                self.progress.done(0);
            }
        }
        for e in self.src.entries.iter().filter(|e| e.meta.kind == Kind::Dir) {
            let d = self.target.join(&e.rel);
            let current = meta::read(&d, true)?;
            if !current.is_some_and(|c| c.same_attrs(&e.meta) && c.same_mtime(&e.meta)) {
                match e.rel.as_os_str().is_empty() {
                    true => meta::apply_root(&d, &e.meta)?,
                    false => meta::apply_path(&d, &e.meta)?,
                }
            }
        }
        Ok(())
    }

    /// Runs `work` on `connections` threads, each with its own connection (the control one is the
    /// first's); the first error stops them all.
    fn run_all(
        &self,
        work: &[Vec<usize>],
        connections: usize,
        from: SocketAddr,
        config: &Arc<ClientConfig>,
        control: &mut Peer,
    ) -> Result<(), MoverError> {
        let next = AtomicUsize::new(0);
        let worker = |peer: &mut Peer| {
            let mut buf = vec![0u8; DATA_PER_FRAME as usize];
            loop {
                if lock(&self.out.error).is_some() {
                    return;
                }
                let Some(turn) = work.get(next.fetch_add(1, Ordering::Relaxed)) else {
                    return;
                };
                let done = match turn.as_slice() {
                    [i] => self.apply(peer, *i, &mut buf),
                    many => self.fetch_all(peer, many, &mut buf),
                };
                for &i in turn {
                    self.progress.done(self.data_size(i));
                }
                if let Err(e) = done {
                    lock(&self.out.error).get_or_insert(e);
                    return;
                }
            }
        };
        std::thread::scope(|s| {
            for _ in 1..connections.min(work.len()) {
                s.spawn(|| match Peer::connect(from, config) {
                    Ok(mut peer) => worker(&mut peer),
                    Err(e) => _ = lock(&self.out.error).get_or_insert(e),
                });
            }
            worker(control);
        });
        match lock(&self.out.error).take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The bytes of data of source entry `i` (a regular file's size, else none).
    fn data_size(&self, i: usize) -> u64 {
        let meta = &self.src.entries[i].meta;
        if meta.kind == Kind::File { meta.size } else { 0 }
    }

    fn apply(&self, peer: &mut Peer, i: usize, buf: &mut [u8]) -> Result<(), MoverError> {
        let e = &self.src.entries[i];
        let d = self.target.join(&e.rel);
        match self.ops[i] {
            // Without the source's bytes here, a file of the same size that may differ is fetched whole.
            Op::CopyData | Op::Compare { .. } => self.fetch_all(peer, &[i], buf),
            Op::UpdateInPlace { fix } => self.update_in_place(peer, i, &d, fix, buf),
            Op::FixMeta => {
                meta::apply_path(&d, &e.meta)?;
                self.out.metadata_fixed.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Op::Symlink | Op::Special => {
                crate::copy::create_node(&d, &e.meta)?;
                self.out.files_copied.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Op::Skip | Op::Mkdir | Op::HardLink(_) => Ok(()),
        }
    }

    /// A large file whose target is its own inode: the source's piece digests are compared with
    /// the target's (each side reads its own file) and only the pieces that differ cross, written
    /// in place; then the size and the metadata, the mtime last (a pass killed half-way leaves an
    /// mtime the next pass does not trust).
    fn update_in_place(
        &self,
        peer: &mut Peer,
        i: usize,
        d: &Path,
        fix: bool,
        buf: &mut [u8],
    ) -> Result<(), MoverError> {
        let e = &self.src.entries[i];
        let file = match OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(d)
        {
            Ok(file) => file,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return self.fetch_all(peer, &[i], buf),
            Err(err) => return Err(MoverError::io("opening", d, err)),
        };
        let now = meta::read_fd_without_xattrs(&file, d)?;
        if now.kind != Kind::File || now.nlink != 1 {
            return self.fetch_all(peer, &[i], buf);
        }
        peer.ask(&Request::Pieces { rel: e.rel.clone() })?;
        let (size, theirs) = match peer.next()? {
            Reply::Pieces { size, digests } => (size, digests),
            Reply::Failed {
                message,
                vanished: true,
            } => {
                self.gone(i, message);
                return Ok(());
            }
            other => return Err(peer.unexpected(&other)),
        };
        let ours = crate::copy::piece_digests(&file, d, 0, now.size)?;
        let ranges = differing_ranges(&theirs, &ours, size);
        peer.ask(&Request::ReadRanges {
            rel: e.rel.clone(),
            ranges: ranges.clone(),
        })?;
        let mut ours = vec![0u8; buf.len()];
        let Some(received) = self.receive_data(peer, &file, d, buf, Some(&mut ours))? else {
            self.out.vanished[i].store(true, Ordering::Relaxed);
            return Ok(());
        };
        let (written, size) = (received.written, received.size);
        // What the source did not send of a range it was asked for is a hole there.
        for (from, len) in gaps(&ranges, &received.segments, size) {
            crate::delta::punch_hole(&file, d, from, len)?;
        }
        file.set_len(size)
            .map_err(|err| MoverError::io("writing", d, err))?;
        if self.verify && !self.landed_in_place(peer, i, &file, d, buf)? {
            // Its mtime stays another than the source's: the next pass compares it again.
            return Ok(());
        }
        meta::apply_fd(&file, d, &e.meta)?;
        let counter = match (written, fix) {
            (0, false) => None,
            (0, true) => Some(&self.out.metadata_fixed),
            _ => Some(&self.out.files_copied),
        };
        if let Some(counter) = counter {
            counter.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Whether a file updated in place has the source's content now (the source hashes its file
    /// again; the target's is read back). A source changed since the scan is a warning, another
    /// difference a mismatch.
    fn landed_in_place(
        &self,
        peer: &mut Peer,
        i: usize,
        file: &File,
        d: &Path,
        buf: &mut [u8],
    ) -> Result<bool, MoverError> {
        let e = &self.src.entries[i];
        peer.ask(&Request::Hash { rel: e.rel.clone() })?;
        let (hash, changed) = match peer.next()? {
            Reply::Hashed {
                hash,
                size,
                mtime,
                mtime_nsec,
            } => (
                hash,
                (size, mtime, mtime_nsec) != (e.meta.size, e.meta.mtime, e.meta.mtime_nsec),
            ),
            Reply::Failed {
                message,
                vanished: true,
            } => {
                self.gone(i, message);
                return Ok(false);
            }
            other => return Err(peer.unexpected(&other)),
        };
        match check::landed(file, d, buf, hash, changed)? {
            Landed::Same => Ok(true),
            Landed::SourceChanged => {
                self.changed_since_listed(i);
                Ok(false)
            }
            Landed::Differs => {
                self.out.vanished[i].store(true, Ordering::Relaxed);
                lock(&self.out.mismatches).push((
                    e.rel.clone(),
                    "content differs from the source's after an update in place".into(),
                ));
                Ok(false)
            }
        }
    }

    /// Source entry `i` changed since it was listed or while it was read: a warning (an error in a
    /// strict pass), and its metadata is not checked against the listing.
    fn changed_since_listed(&self, i: usize) {
        let e = &self.src.entries[i];
        self.warnings
            .warn(format!("changed while it was copied: {}", e.rel.display()));
        self.out.vanished[i].store(true, Ordering::Relaxed);
    }

    /// Source entry `i` is gone or no longer a regular file (a warm pass goes on without it).
    fn gone(&self, i: usize, message: String) {
        self.warnings.warn(message);
        self.out.vanished[i].store(true, Ordering::Relaxed);
    }

    /// Data frames written into `file` at their offsets until the end (`None`, after a warning,
    /// when the source file vanished). With `compare`, a buffer for the target's own bytes: each
    /// frame is compared with what the file holds there and only the blocks that differ are
    /// written (a database's pages, not whole pieces).
    fn receive_data(
        &self,
        peer: &mut Peer,
        file: &File,
        path: &Path,
        buf: &mut [u8],
        mut compare: Option<&mut Vec<u8>>,
    ) -> Result<Option<Received>, MoverError> {
        let mut received = Received::default();
        loop {
            let (at, len) = match peer.next()? {
                Reply::Data { at, len } if len <= buf.len() as u64 => (at, len),
                Reply::End { size } => {
                    received.size = size;
                    return Ok(Some(received));
                }
                Reply::Sent { size, hash, changed } => {
                    received.size = size;
                    received.sent = Some((hash, changed));
                    return Ok(Some(received));
                }
                Reply::Failed {
                    message,
                    vanished: true,
                } => {
                    self.warnings.warn(message);
                    return Ok(None);
                }
                other => return Err(peer.unexpected(&other)),
            };
            let data = &mut buf[..len as usize];
            peer.bytes(data)?;
            received.segments.push((at, len));
            let runs = match compare.as_deref_mut() {
                Some(ours) => {
                    let n = crate::copy::read_full(file, path, &mut ours[..data.len()], at)?;
                    crate::delta::differing_runs(data, &ours[..n], crate::delta::BLOCK)
                }
                None => vec![(0, data.len())],
            };
            for (from, to) in runs {
                let bytes = &data[from..to];
                if let Some(throttle) = self.throttle {
                    throttle.pace(bytes.len() as u64);
                }
                file.write_all_at(bytes, at + from as u64)
                    .map_err(|err| MoverError::io("writing", path, err))?;
                self.progress
                    .bytes_copied
                    .fetch_add(bytes.len() as u64, Ordering::Relaxed);
                received.written += bytes.len() as u64;
            }
        }
    }

    /// Fetches files `files` whole: their requests go at once, their answers come in turn.
    fn fetch_all(&self, peer: &mut Peer, files: &[usize], buf: &mut [u8]) -> Result<(), MoverError> {
        let requests: Vec<Request> = (files.iter())
            .map(|&i| Request::Read {
                rel: self.src.entries[i].rel.clone(),
            })
            .collect();
        peer.ask_all(&requests)?;
        files.iter().try_for_each(|&i| self.receive_file(peer, i, buf))
    }

    /// File `i`'s data, written under its own name in a directory this pass made, else under its
    /// temp name and renamed into place; then its metadata (the mtime last).
    fn receive_file(&self, peer: &mut Peer, i: usize, buf: &mut [u8]) -> Result<(), MoverError> {
        let e = &self.src.entries[i];
        let d = self.target.join(&e.rel);
        let fresh = self.parents.get(i).and_then(|parent| self.fresh.get(parent));
        let made = match fresh {
            Some(fresh) => crate::copy::create_final(&d, None, &e.meta, fresh)?,
            None => None,
        };
        // Not fresh, or the name is taken (a rerun's leftover): the temp name and a rename.
        let (path, file, created) = match made {
            Some((file, created)) => (d.clone(), file, Some(created)),
            None => {
                let tmp = crate::copy::temp_path(&d);
                let file = crate::copy::create_temp(&tmp)?;
                (tmp, file, None)
            }
        };
        let gone = |file: File| {
            drop(file);
            let _ = std::fs::remove_file(&path);
            self.out.vanished[i].store(true, Ordering::Relaxed);
        };
        let Some(Received { size, sent, .. }) = self.receive_data(peer, &file, &path, buf, None)? else {
            gone(file);
            return Ok(());
        };
        // Changed since the source was listed (a warm pass: a writer appended): what was read is
        // kept, but its listed metadata no longer says what it is, so it is not checked against
        // it; the next pass copies it again.
        if size != e.meta.size {
            self.changed_since_listed(i);
        }
        if size > 0 {
            file.set_len(size)
                .map_err(|err| MoverError::io("writing", &path, err))?;
        }
        if self.corrupt == Some(e.rel.as_path()) && size > 0 {
            crate::copy::flip_byte(&file, &path, 0)?;
        }
        if let (true, Some((hash, changed))) = (self.verify, sent) {
            match check::landed(&file, &path, buf, hash, changed)? {
                Landed::Same => {}
                Landed::SourceChanged => self.changed_since_listed(i),
                Landed::Differs => {
                    // Never left in place: a later pass would take it for a copy.
                    gone(file);
                    lock(&self.out.mismatches).push((
                        e.rel.clone(),
                        "content differs from the source's after the copy".into(),
                    ));
                    return Ok(());
                }
            }
        }
        match created {
            Some(created) => meta::apply_new_fd(&file, &path, &e.meta, created),
            None => meta::apply_fd(&file, &path, &e.meta),
        }
        .map_err(|err| err.at_final(&path, &d))?;
        drop(file);
        if created.is_none() {
            std::fs::rename(&path, &d).map_err(|err| MoverError::io("renaming into place", &d, err))?;
        }
        self.out.files_copied.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Makes entry `i` a hard link to its leader's copy.
    fn link(&self, i: usize, leader: usize) -> Result<(), MoverError> {
        if self.out.vanished[leader].load(Ordering::Relaxed) {
            self.out.vanished[i].store(true, Ordering::Relaxed);
            return Ok(());
        }
        let d = self.target.join(&self.src.entries[i].rel);
        match crate::copy::hard_link(&self.target.join(&self.src.entries[leader].rel), &d)? {
            crate::copy::Linked::Made => _ = self.out.files_copied.fetch_add(1, Ordering::Relaxed),
            crate::copy::Linked::Already => {}
            crate::copy::Linked::LeaderMissing => {
                self.warnings
                    .warn(format!("hard link leader missing for {}", d.display()));
                self.out.vanished[i].store(true, Ordering::Relaxed);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_files_fetched_whole_go_in_batches_and_everything_else_alone() {
        let ops = [
            Op::CopyData,
            Op::CopyData,
            Op::Compare { fix: false },
            Op::CopyData,
            Op::FixMeta,
            Op::CopyData,
            Op::UpdateInPlace { fix: false },
            Op::CopyData,
        ];
        let sizes = [10, 10, 10, SMALL, 10, 10, 10, 10];
        let work: Vec<usize> = (0..ops.len()).collect();
        assert_eq!(
            batches(&work, &ops, |i| (sizes[i], 10)),
            vec![vec![0, 1, 2], vec![3], vec![4], vec![5], vec![6], vec![7]]
        );
        // The byte bound: four files of nearly 1 MiB a batch; the file bound: 64 a batch.
        let ten: Vec<usize> = (0..10).collect();
        let turns = batches(&ten, &vec![Op::CopyData; 10], |_| (SMALL - 1, 10));
        assert_eq!(turns.iter().map(Vec::len).collect::<Vec<_>>(), vec![4, 4, 2]);
        let many: Vec<usize> = (0..130).collect();
        let turns = batches(&many, &vec![Op::CopyData; 130], |_| (1, 10));
        assert_eq!(turns.iter().map(Vec::len).collect::<Vec<_>>(), vec![64, 64, 2]);
        // The names' bound: paths of 4 KiB, four a batch.
        let turns = batches(&ten, &vec![Op::CopyData; 10], |_| (1, 4096));
        assert_eq!(turns.iter().map(Vec::len).collect::<Vec<_>>(), vec![4, 4, 2]);
    }

    #[test]
    fn only_the_pieces_that_differ_are_asked_for_joined_and_cut_at_the_end() {
        let piece = crate::PIECE;
        // Pieces 1 and 2 differ (joined), 4 is only on the source and ends short of a whole piece.
        let theirs = [1, 2, 3, 4, 5];
        let ours = [1, 9, 9, 4];
        let size = 4 * piece + 100;
        assert_eq!(
            differing_ranges(&theirs, &ours, size),
            vec![(piece, 2 * piece), (4 * piece, 100)]
        );
        assert_eq!(differing_ranges(&theirs, &theirs, size), vec![]);
        // The target is longer: nothing to fetch (the size cuts it).
        assert_eq!(differing_ranges(&[1], &[1, 2], piece), vec![]);
    }

    #[test]
    fn what_the_source_did_not_send_of_a_range_is_a_hole() {
        // Asked 0..100 and 200..300; frames at 10..30 and 40..100, none in the second range.
        let asked = [(0, 100), (200, 100)];
        let got = [(10, 20), (40, 60)];
        assert_eq!(gaps(&asked, &got, 1000), vec![(0, 10), (30, 10), (200, 100)]);
        // The file ends at 250: nothing past it.
        assert_eq!(gaps(&asked, &got, 250), vec![(0, 10), (30, 10), (200, 50)]);
        assert_eq!(gaps(&asked, &[(0, 100), (200, 100)], 1000), vec![]);
    }
}
