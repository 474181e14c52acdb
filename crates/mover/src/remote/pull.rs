//! The pulling side of a cross-node copy: a mover on the new volume's node makes its target an
//! exact copy of the tree a serving mover holds on another node. It plans as a local pass does
//! (`plan::plan` over the source's tree, sent over the stream, and its own), fetches the data of
//! the files to copy over several connections at once, and sets metadata, links and nodes itself.
//! Verification compares the manifest the serving mover makes of its own tree (every file hashed
//! where it lies) with the manifest of what landed here, read back from disk: the check is end to
//! end, not of what crossed the network.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rustls::{ClientConfig, ClientConnection, StreamOwned};

use super::tls::{TlsFiles, peer_name};
use super::wire::{self, DATA_PER_FRAME, Reply, Request};
use crate::digest::{Manifest, ManifestEntry};
use crate::error::MoverError;
use crate::meta::{self, Kind};
use crate::options::SyncReport;
use crate::plan::{self, Op, PlanOptions};
use crate::progress::{Warnings, lock};
use crate::throttle::Throttle;
use crate::walk::{Entry, Tree};

/// How long a connection to the serving mover may take to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// What `ferry-mover pull` is told.
#[derive(Debug, Clone)]
pub struct PullOptions {
    /// The serving mover.
    pub from: SocketAddr,
    /// The directory with `ca.crt`, `tls.crt` and `tls.key`.
    pub tls: PathBuf,
    /// The tree to make a copy of the source (created if missing; its parent must exist).
    pub target: PathBuf,
    /// Remove target entries the source does not have.
    pub delete: bool,
    /// Compare the two manifests after copying (exit 3 on a difference). A pass over a source
    /// that is still written (a warm pass) leaves it off.
    pub verify: bool,
    /// Connections that fetch file data at once.
    pub connections: usize,
    /// Most bytes per second fetched, all connections together.
    pub bwlimit: Option<u64>,
    /// Tell the serving mover to stop once the pass succeeded (the final pass).
    pub stop_server: bool,
}

/// One authenticated connection to the serving mover.
struct Peer {
    stream: StreamOwned<ClientConnection, TcpStream>,
    from: SocketAddr,
}

impl Peer {
    fn connect(from: SocketAddr, config: &Arc<ClientConfig>) -> Result<Peer, MoverError> {
        let broke = |e: &dyn std::fmt::Display| MoverError::Transport(format!("connecting to {from}: {e}"));
        let tcp = TcpStream::connect_timeout(&from, CONNECT_TIMEOUT).map_err(|e| broke(&e))?;
        let _ = tcp.set_nodelay(true);
        let conn = ClientConnection::new(config.clone(), peer_name()?).map_err(|e| broke(&e))?;
        let mut stream = StreamOwned::new(conn, tcp);
        while stream.conn.is_handshaking() {
            stream.conn.complete_io(&mut stream.sock).map_err(|e| broke(&e))?;
        }
        Ok(Peer { stream, from })
    }

    fn broke(&self, e: impl std::fmt::Display) -> MoverError {
        MoverError::Transport(format!("the serving mover at {}: {e}", self.from))
    }

    fn ask(&mut self, request: &Request) -> Result<(), MoverError> {
        let mut out = BufWriter::new(&mut self.stream);
        wire::send(&mut out, request)
            .and_then(|()| out.flush())
            .map_err(|e| MoverError::Transport(format!("the serving mover at {}: {e}", self.from)))
    }

    fn next(&mut self) -> Result<Reply, MoverError> {
        match wire::receive(&mut self.stream) {
            Ok(Some(reply)) => Ok(reply),
            Ok(None) => Err(self.broke("closed the connection")),
            Err(e) => Err(self.broke(e)),
        }
    }

    fn bytes(&mut self, buf: &mut [u8]) -> Result<(), MoverError> {
        let read = self.stream.read_exact(buf);
        read.map_err(|e| self.broke(e))
    }

    /// The tree, once [`Request::Tree`] was asked and its `first` reply read.
    fn tree(&mut self, first: Reply) -> Result<Tree, MoverError> {
        let mut entries = Vec::new();
        let mut reply = first;
        loop {
            match reply {
                Reply::Entries(batch) => {
                    entries.extend(batch.into_iter().map(|e| Entry {
                        rel: e.rel,
                        meta: e.meta,
                    }));
                }
                Reply::End { .. } => return Ok(Tree { entries }),
                other => return Err(self.unexpected(&other)),
            }
            reply = self.next()?;
        }
    }

    fn manifest(&mut self) -> Result<Manifest, MoverError> {
        self.ask(&Request::Manifest)?;
        match self.next()? {
            Reply::Manifest(manifest) => Ok(*manifest),
            other => Err(self.unexpected(&other)),
        }
    }

    fn unexpected(&self, reply: &Reply) -> MoverError {
        match reply {
            Reply::Failed { message, .. } => self.broke(message),
            _ => self.broke("answered out of turn"),
        }
    }
}

/// Per-entry outcomes shared by the fetching threads.
struct Outcome {
    vanished: Vec<AtomicBool>,
    files_copied: AtomicU64,
    metadata_fixed: AtomicU64,
    bytes_copied: AtomicU64,
    error: Mutex<Option<MoverError>>,
}

/// Makes `opts.target` a copy of what the serving mover at `opts.from` holds.
pub fn pull(opts: &PullOptions) -> Result<SyncReport, MoverError> {
    let start = Instant::now();
    let config = TlsFiles::load(&opts.tls)?.client()?;
    let warnings = Warnings::new(true);
    let (mut control, target, src, dst) = read_trees(opts, &config, &warnings)?;
    let plan = plan::plan(
        &src,
        &dst,
        PlanOptions {
            delete: opts.delete,
            checksum_compare: false,
            cloned_at: None,
        },
    );
    let out = Outcome {
        vanished: (0..src.entries.len()).map(|_| AtomicBool::new(false)).collect(),
        files_copied: AtomicU64::new(0),
        metadata_fixed: AtomicU64::new(0),
        bytes_copied: AtomicU64::new(0),
        error: Mutex::new(None),
    };
    let throttle = opts.bwlimit.map(Throttle::new);
    let fetch = Fetch {
        src: &src,
        ops: &plan.ops,
        target: &target,
        out: &out,
        warnings: &warnings,
        throttle: throttle.as_ref(),
    };
    fetch.apply_plan(&plan, opts, &config, &mut control)?;
    if opts.verify {
        verify(&mut control, &target)?;
    }
    let dir = File::open(&target).map_err(|e| MoverError::io("opening", &target, e))?;
    rustix::fs::syncfs(&dir).map_err(|e| crate::error::errno("syncing", &target, e))?;
    if opts.stop_server {
        control.ask(&Request::Done)?;
        match control.next()? {
            Reply::End { .. } => {}
            other => return Err(control.unexpected(&other)),
        }
    }
    let (files, bytes) = crate::sync::totals(&src);
    Ok(SyncReport {
        files,
        bytes,
        bytes_copied: out.bytes_copied.load(Ordering::Relaxed),
        deleted: plan.extraneous_entries(),
        digest: crate::digest::metadata_digest(&src, |i| out.vanished[i].load(Ordering::Relaxed)),
        seconds: (start.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
        verify: if opts.verify { "checksum" } else { "none" }.to_string(),
        warnings: warnings.count(),
        files_copied: out.files_copied.load(Ordering::Relaxed),
        metadata_fixed: out.metadata_fixed.load(Ordering::Relaxed),
        bytes_compared: 0,
        change_tracking: None,
        entries_visited: Some(src.entries.len() as u64),
        interim_passes: None,
        interim_bytes_copied: None,
    })
}

/// Connects, then reads the source's tree from the serving mover and the target's here at once.
/// The target is made only once the server answered: a refused peer changes nothing.
fn read_trees(
    opts: &PullOptions,
    config: &Arc<ClientConfig>,
    warnings: &Warnings,
) -> Result<(Peer, PathBuf, Tree, Tree), MoverError> {
    let mut control = Peer::connect(opts.from, config)?;
    control.ask(&Request::Tree)?;
    let first = control.next()?;
    let target = prepare_target(&opts.target)?;
    let (src, dst) = std::thread::scope(|s| {
        let local = s.spawn(|| crate::walk::scan(&target, true, warnings, None));
        let src = control.tree(first);
        let dst = local
            .join()
            .unwrap_or_else(|_| Err(MoverError::Other("the target's scan panicked".into())));
        (src, dst)
    });
    let (src, dst) = (src?, dst?);
    if (src.entries.first()).is_none_or(|root| !root.rel.as_os_str().is_empty()) {
        return Err(control.broke("sent a tree without its root"));
    }
    Ok((control, target, src, dst))
}

/// The target directory, made if missing (its parent must exist).
fn prepare_target(target: &Path) -> Result<PathBuf, MoverError> {
    match std::fs::symlink_metadata(target) {
        Ok(md) if md.is_dir() => Ok(target.to_path_buf()),
        Ok(_) => Err(MoverError::BadInput(format!(
            "not a directory: {}",
            target.display()
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            make_dir(target)?;
            Ok(target.to_path_buf())
        }
        Err(e) => Err(MoverError::io("reading", target, e)),
    }
}

/// A directory, private until its metadata is set at the end.
fn make_dir(d: &Path) -> Result<(), MoverError> {
    match std::fs::DirBuilder::new().mode(0o700).create(d) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && d.is_dir() => Ok(()),
        Err(e) => Err(MoverError::io("creating directory", d, e)),
    }
}

/// Compares the serving mover's manifest of the source with this node's of the target: every
/// source entry must be in the target as it is in the source, content included.
fn verify(control: &mut Peer, target: &Path) -> Result<(), MoverError> {
    let (source, landed) = std::thread::scope(|s| {
        let landed = s.spawn(|| crate::digest::digest(target));
        let source = control.manifest();
        let landed = landed
            .join()
            .unwrap_or_else(|_| Err(MoverError::Other("the target's manifest panicked".into())));
        (source, landed)
    });
    let (source, landed) = (source?, landed?);
    let (paths, reasons): (Vec<PathBuf>, Vec<String>) = differences(&source, &landed).into_iter().unzip();
    if paths.is_empty() {
        return Ok(());
    }
    Err(MoverError::VerifyMismatch { paths, reasons })
}

/// The source entries the target lacks or holds otherwise (target-only entries do not count:
/// without `delete` they stay).
pub fn differences(source: &Manifest, landed: &Manifest) -> Vec<(PathBuf, String)> {
    let by_path: HashMap<&str, &ManifestEntry> =
        landed.entries.iter().map(|e| (e.path.as_str(), e)).collect();
    (source.entries.iter())
        .filter_map(|want| match by_path.get(want.path.as_str()) {
            None => Some((PathBuf::from(&want.path), "missing in the target".to_string())),
            Some(got) if *got != want => Some((PathBuf::from(&want.path), describe(want, got))),
            Some(_) => None,
        })
        .collect()
}

fn describe(want: &ManifestEntry, got: &ManifestEntry) -> String {
    if want.kind != got.kind {
        return format!("a {} where the source has a {}", got.kind, want.kind);
    }
    if want.content_hash != got.content_hash {
        return "content differs from the source's".to_string();
    }
    "metadata differs from the source's".to_string()
}

/// What a file's data frames brought.
#[derive(Default)]
struct Received {
    /// Bytes written (with a comparison, only those that differed).
    written: u64,
    /// The source file's size.
    size: u64,
    /// The (offset, length) of every frame, in order.
    segments: Vec<(u64, u64)>,
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

/// Makes `[from, from + len)` of `file` read as zeros: a hole where the file system can punch
/// one, else written zeros.
fn punch(file: &File, path: &Path, from: u64, len: u64) -> Result<(), MoverError> {
    let flags = rustix::fs::FallocateFlags::PUNCH_HOLE | rustix::fs::FallocateFlags::KEEP_SIZE;
    if rustix::fs::fallocate(file, flags, from, len).is_ok() {
        return Ok(());
    }
    let zeros = vec![0u8; crate::delta::BLOCK];
    let mut at = from;
    while at < from + len {
        let n = (from + len - at).min(zeros.len() as u64) as usize;
        file.write_all_at(&zeros[..n], at)
            .map_err(|e| MoverError::io("writing", path, e))?;
        at += n as u64;
    }
    Ok(())
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

/// The copy phase: the entries to write, shared out over the connections.
struct Fetch<'a> {
    src: &'a Tree,
    ops: &'a [Op],
    target: &'a Path,
    out: &'a Outcome,
    warnings: &'a Warnings,
    throttle: Option<&'a Throttle>,
}

impl Fetch<'_> {
    /// Removals, new directories, the files' data and metadata, links, then the directories'
    /// metadata (creating entries inside bumps a directory's mtime).
    fn apply_plan(
        &self,
        plan: &plan::Plan,
        opts: &PullOptions,
        config: &Arc<ClientConfig>,
        control: &mut Peer,
    ) -> Result<(), MoverError> {
        for removal in &plan.removals {
            crate::sync::remove(self.target, removal)?;
        }
        for (e, op) in self.src.entries.iter().zip(&plan.ops) {
            if *op == Op::Mkdir {
                make_dir(&self.target.join(&e.rel))?;
            }
        }
        let work: Vec<usize> = (0..plan.ops.len())
            .filter(|&i| !matches!(plan.ops[i], Op::Skip | Op::Mkdir | Op::HardLink(_)))
            .collect();
        self.run_all(&work, opts.connections.max(1), opts.from, config, control)?;
        for (i, op) in plan.ops.iter().enumerate() {
            if let Op::HardLink(leader) = op {
                self.link(i, *leader)?;
            }
        }
        for e in self.src.entries.iter().filter(|e| e.meta.kind == Kind::Dir) {
            let d = self.target.join(&e.rel);
            let current = meta::read(&d, true)?;
            if !current.is_some_and(|c| c.same_attrs(&e.meta) && c.same_mtime(&e.meta)) {
                meta::apply_path(&d, &e.meta)?;
            }
        }
        Ok(())
    }

    /// Runs `work` on `connections` threads, each with its own connection (the control one is the
    /// first's); the first error stops them all.
    fn run_all(
        &self,
        work: &[usize],
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
                let Some(&i) = work.get(next.fetch_add(1, Ordering::Relaxed)) else {
                    return;
                };
                if let Err(e) = self.apply(peer, i, &mut buf) {
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

    fn apply(&self, peer: &mut Peer, i: usize, buf: &mut [u8]) -> Result<(), MoverError> {
        let e = &self.src.entries[i];
        let d = self.target.join(&e.rel);
        match self.ops[i] {
            // Without the source's bytes here, a file of the same size that may differ is fetched whole.
            Op::CopyData | Op::Compare { .. } => self.fetch(peer, i, &d, buf),
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
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return self.fetch(peer, i, d, buf),
            Err(err) => return Err(MoverError::io("opening", d, err)),
        };
        let now = meta::read_fd_without_xattrs(&file, d)?;
        if now.kind != Kind::File || now.nlink != 1 {
            return self.fetch(peer, i, d, buf);
        }
        peer.ask(&Request::Pieces { rel: e.rel.clone() })?;
        let (size, theirs) = match peer.next()? {
            Reply::Pieces { size, digests } => (size, digests),
            Reply::Failed {
                message,
                vanished: true,
            } => {
                self.warnings.warn(message);
                self.out.vanished[i].store(true, Ordering::Relaxed);
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
            punch(&file, d, from, len)?;
        }
        file.set_len(size)
            .map_err(|err| MoverError::io("writing", d, err))?;
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
                self.out
                    .bytes_copied
                    .fetch_add(bytes.len() as u64, Ordering::Relaxed);
                received.written += bytes.len() as u64;
            }
        }
    }

    /// Fetches file `i` into its temp name, sets its metadata and renames it into place.
    fn fetch(&self, peer: &mut Peer, i: usize, d: &Path, buf: &mut [u8]) -> Result<(), MoverError> {
        let e = &self.src.entries[i];
        let tmp = crate::copy::temp_path(d);
        peer.ask(&Request::Read { rel: e.rel.clone() })?;
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(&tmp)
            .map_err(|err| MoverError::io("creating", &tmp, err))?;
        let Some(Received { size, .. }) = self.receive_data(peer, &file, &tmp, buf, None)? else {
            drop(file);
            let _ = std::fs::remove_file(&tmp);
            self.out.vanished[i].store(true, Ordering::Relaxed);
            return Ok(());
        };
        file.set_len(size)
            .map_err(|err| MoverError::io("writing", &tmp, err))?;
        meta::apply_fd(&file, &tmp, &e.meta)?;
        drop(file);
        std::fs::rename(&tmp, d).map_err(|err| MoverError::io("renaming into place", d, err))?;
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

    fn entry(path: &str, kind: &str, hash: Option<&str>, mode: &str) -> ManifestEntry {
        ManifestEntry {
            path: path.into(),
            kind: kind.into(),
            mode: mode.into(),
            uid: 0,
            gid: 0,
            mtime_ns: 1,
            size: 3,
            rdev: None,
            link_target: None,
            hard_link: None,
            xattrs: Default::default(),
            acl: None,
            default_acl: None,
            content_hash: hash.map(String::from),
        }
    }

    fn manifest(entries: Vec<ManifestEntry>) -> Manifest {
        Manifest {
            digest: String::new(),
            metadata_digest: String::new(),
            entries,
        }
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

    #[test]
    fn every_source_entry_the_target_lacks_or_holds_otherwise_is_named_and_extra_ones_are_not() {
        let source = manifest(vec![
            entry(".", "dir", None, "755"),
            entry("same", "file", Some("aa"), "644"),
            entry("content", "file", Some("bb"), "644"),
            entry("mode", "file", Some("cc"), "644"),
            entry("kind", "file", Some("dd"), "644"),
            entry("missing", "file", Some("ee"), "644"),
        ]);
        let landed = manifest(vec![
            entry(".", "dir", None, "755"),
            entry("same", "file", Some("aa"), "644"),
            entry("content", "file", Some("b0"), "644"),
            entry("mode", "file", Some("cc"), "600"),
            entry("kind", "dir", None, "644"),
            entry("extra", "file", Some("ff"), "644"),
        ]);
        let found: Vec<(String, String)> = differences(&source, &landed)
            .into_iter()
            .map(|(path, why)| (path.display().to_string(), why))
            .collect();
        assert_eq!(
            found,
            [
                ("content", "content differs from the source's"),
                ("mode", "metadata differs from the source's"),
                ("kind", "a dir where the source has a file"),
                ("missing", "missing in the target"),
            ]
            .map(|(p, w)| (p.to_string(), w.to_string()))
        );
    }
}
