//! The serving side of a cross-node copy: a mover on the old volume's node, which it holds read
//! only, answers the pulling mover's requests (the tree, a file's data, the manifest) over mutual
//! TLS until the pulling mover says it is done. It never writes anything.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};

use rustls::{ServerConfig, ServerConnection, StreamOwned};
use serde::Serialize;

use super::changes::Tracker;
use super::files;
use super::tls::TlsFiles;
use super::wire::{self, ENTRIES_PER_FRAME, Reply, Request, WireEntry, WireVisit};
use crate::changes::Visit;
use crate::error::MoverError;
use crate::progress::{Warnings, lock};
use crate::standby::TrackOptions;
use crate::walk::Tree;

/// What `ferry-mover serve` is told.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The tree served (read only).
    pub source: PathBuf,
    /// Where to listen (`0.0.0.0:PORT`; port 0 picks one, printed on stdout).
    pub listen: SocketAddr,
    /// The directory with `ca.crt`, `tls.crt` and `tls.key`.
    pub tls: PathBuf,
    /// Watch the source for changes from the start (`--track-changes`), with these test hooks,
    /// so that a pull can visit only what changed since its last pass.
    pub track: Option<TrackOptions>,
}

/// The change record, if tracking was asked for: the tracker, or why it could not start.
type Tracking = Option<Result<Mutex<Tracker>, String>>;

/// What a server did, printed when it ends.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServeReport {
    /// Connections that passed the handshake.
    pub connections: u64,
    /// Connections refused at the handshake (no certificate, or another authority's).
    pub refused: u64,
    /// File data sent, in bytes.
    pub bytes_sent: u64,
    /// With `--track-changes`: `on`, or `off: <why>` (every pull walks both trees whole).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change_tracking: Option<String>,
}

#[derive(Default)]
struct Counters {
    connections: AtomicU64,
    refused: AtomicU64,
    bytes_sent: AtomicU64,
}

/// Serves `opts.source` until an authenticated peer sends [`Request::Done`]; `listening` is told
/// the address it listens on before the first connection is taken.
pub fn serve(opts: &ServeOptions, listening: impl FnOnce(SocketAddr)) -> Result<ServeReport, MoverError> {
    let md = std::fs::symlink_metadata(&opts.source).map_err(|e| crate::digest::bad_dir(&opts.source, e))?;
    if !md.is_dir() {
        return Err(MoverError::BadInput(format!(
            "not a directory: {}",
            opts.source.display()
        )));
    }
    let config = TlsFiles::load(&opts.tls)?.server()?;
    // Before anything is answered: a pass that reads the tree after its mark misses no change.
    let tracking: Tracking =
        (opts.track.as_ref()).map(|track| Tracker::start(&opts.source, track).map(Mutex::new));
    if let Some(Err(why)) = &tracking {
        eprintln!("ferry-mover: serve: warning: change tracking off, every pull walks whole: {why}");
    }
    let change_tracking = tracking.as_ref().map(|t| match t {
        Ok(_) => "on".to_string(),
        Err(why) => format!("off: {why}"),
    });
    let tracking = Arc::new(tracking);
    let listener = TcpListener::bind(opts.listen)
        .map_err(|e| MoverError::Transport(format!("listening on {}: {e}", opts.listen)))?;
    let address = listener
        .local_addr()
        .map_err(|e| MoverError::Transport(format!("listening on {}: {e}", opts.listen)))?;
    listening(address);
    let counters = Arc::new(Counters::default());
    let (done, finished) = mpsc::channel::<()>();
    let source = Arc::new(opts.source.clone());
    let accepting = Arc::clone(&counters);
    // The accepting thread lives as long as the process: `serve` returns at the first Done.
    std::thread::spawn(move || {
        for tcp in listener.incoming().flatten() {
            let served = Served {
                source: source.clone(),
                counters: accepting.clone(),
                tracking: tracking.clone(),
            };
            let (config, done) = (config.clone(), done.clone());
            std::thread::spawn(move || connection(&config, &served, tcp, &done));
        }
    });
    finished
        .recv()
        .map_err(|_| MoverError::Transport(format!("stopped listening on {address}")))?;
    Ok(ServeReport {
        connections: counters.connections.load(Ordering::Relaxed),
        refused: counters.refused.load(Ordering::Relaxed),
        bytes_sent: counters.bytes_sent.load(Ordering::Relaxed),
        change_tracking,
    })
}

/// What every connection answers from: the source, the counters, the change record.
struct Served {
    source: Arc<PathBuf>,
    counters: Arc<Counters>,
    tracking: Arc<Tracking>,
}

/// One peer: the handshake, then its requests in turn until it closes the stream.
fn connection(config: &Arc<ServerConfig>, served: &Served, tcp: TcpStream, done: &mpsc::Sender<()>) {
    let counters = &served.counters;
    let peer = tcp
        .peer_addr()
        .map_or_else(|_| "a peer".to_string(), |a| a.to_string());
    super::tcp::tune(&tcp);
    let mut stream = match ServerConnection::new(config.clone()) {
        Ok(conn) => StreamOwned::new(conn, tcp),
        Err(e) => return eprintln!("ferry-mover: serve: {peer}: {e}"),
    };
    if let Err(e) = handshake(&mut stream.conn, &mut stream.sock) {
        // Counted before the peer learns it was refused (the alert goes out after).
        counters.refused.fetch_add(1, Ordering::Relaxed);
        eprintln!("ferry-mover: serve: refused {peer}: {e}");
        while stream.conn.wants_write() && stream.conn.write_tls(&mut stream.sock).is_ok() {}
        return;
    }
    counters.connections.fetch_add(1, Ordering::Relaxed);
    let mut duplex = Duplex {
        stream,
        out: Vec::with_capacity(OUT_BUFFER),
    };
    loop {
        let request = match wire::receive::<Request>(&mut duplex) {
            Ok(Some(request)) => request,
            Ok(None) => return,
            Err(e) => return eprintln!("ferry-mover: serve: {peer}: {e}"),
        };
        let is_done = request == Request::Done;
        let mut answered = answer(served, &request, &mut duplex);
        // Answers to a batch of requests go out together; the last one when nothing waits.
        if answered.is_ok() && (is_done || !duplex.more_asked()) {
            answered = duplex.flush();
        }
        if let Err(e) = answered {
            return eprintln!("ferry-mover: serve: {peer}: {e}");
        }
        if is_done {
            let _ = done.send(());
            return;
        }
    }
}

/// How much of the answers is gathered before it is sent.
const OUT_BUFFER: usize = 256 << 10;

/// The TLS stream read as is and written through a buffer that goes out when it is full or
/// flushed.
struct Duplex {
    stream: StreamOwned<ServerConnection, TcpStream>,
    out: Vec<u8>,
}

impl Duplex {
    /// Whether the peer's next request is already here (decrypted or still in TLS records).
    fn more_asked(&mut self) -> bool {
        (self.stream.conn.process_new_packets()).is_ok_and(|state| state.plaintext_bytes_to_read() > 0)
    }

    fn send_out(&mut self) -> io::Result<()> {
        if !self.out.is_empty() {
            self.stream.write_all(&self.out)?;
            self.out.clear();
        }
        Ok(())
    }
}

impl Read for Duplex {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.stream.read(buf)
    }
}

impl Write for Duplex {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.out.len() + buf.len() > OUT_BUFFER {
            self.send_out()?;
        }
        if buf.len() >= OUT_BUFFER {
            return self.stream.write(buf);
        }
        self.out.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.send_out()?;
        self.stream.flush()
    }
}

/// The TLS handshake, leaving the alert of a refusal unsent.
fn handshake(conn: &mut ServerConnection, sock: &mut TcpStream) -> Result<(), String> {
    while conn.is_handshaking() {
        while conn.wants_write() {
            conn.write_tls(sock).map_err(|e| e.to_string())?;
        }
        if !conn.is_handshaking() {
            break;
        }
        if conn.read_tls(sock).map_err(|e| e.to_string())? == 0 {
            return Err("closed during the handshake".into());
        }
        conn.process_new_packets().map_err(|e| e.to_string())?;
    }
    while conn.wants_write() {
        conn.write_tls(sock).map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn answer(served: &Served, request: &Request, out: &mut impl Write) -> io::Result<()> {
    let (source, counters) = (served.source.as_path(), &served.counters);
    let failed = |e: MoverError| Reply::Failed {
        message: e.to_string(),
        vanished: false,
    };
    match request {
        Request::Tree => {
            let warnings = Warnings::new(false);
            match crate::walk::scan(source, true, &warnings, None) {
                Ok(tree) => {
                    if let Some(Ok(tracker)) = served.tracking.as_ref() {
                        lock(tracker).served(&tree);
                    }
                    send_tree(&tree, out)
                }
                Err(e) => wire::send(out, &failed(e)),
            }
        }
        Request::PartialTree { visits } => match partial_tree(source, visits) {
            Ok(tree) => send_tree(&tree, out),
            Err(e) => wire::send(out, &failed(e)),
        },
        Request::Mark | Request::Passed { .. } | Request::Changes { .. } => {
            wire::send(out, &tracked(&served.tracking, request))
        }
        Request::Read { rel }
        | Request::Pieces { rel }
        | Request::ReadRanges { rel, .. }
        | Request::Hash { rel }
            if !wire::inside_root(rel) || rel.as_os_str().is_empty() =>
        {
            wire::send(
                out,
                &Reply::Failed {
                    message: format!("{} is not a file below the source", rel.display()),
                    vanished: false,
                },
            )
        }
        Request::Read { rel } => files::read(&source.join(rel), out, &counters.bytes_sent),
        Request::Pieces { rel } => files::pieces(&source.join(rel), out),
        Request::ReadRanges { rel, ranges } => {
            files::read_ranges(&source.join(rel), ranges, out, &counters.bytes_sent)
        }
        Request::Hash { rel } => files::hash(&source.join(rel), out),
        Request::Manifest => match crate::digest::digest(source) {
            Ok(manifest) => wire::send(out, &Reply::Manifest(Box::new(manifest))),
            Err(e) => wire::send(out, &failed(e)),
        },
        Request::Done => wire::send(out, &Reply::End { size: 0 }),
    }
}

/// A tree as frames of entries, then its count.
fn send_tree(tree: &Tree, out: &mut impl Write) -> io::Result<()> {
    for batch in tree.entries.chunks(ENTRIES_PER_FRAME) {
        let entries = (batch.iter())
            .map(|e| WireEntry {
                rel: e.rel.clone(),
                meta: e.meta.clone(),
            })
            .collect();
        wire::send(out, &Reply::Entries(entries))?;
    }
    wire::send(
        out,
        &Reply::End {
            size: tree.entries.len() as u64,
        },
    )
}

/// The source's entries at `visits` (each checked to lie below the source) and the directories
/// above them.
fn partial_tree(source: &Path, visits: &[WireVisit]) -> Result<Tree, MoverError> {
    if let Some(bad) = visits.iter().find(|v| !wire::inside_root(&v.rel)) {
        return Err(MoverError::BadInput(format!(
            "{} is not below the source",
            bad.rel.display()
        )));
    }
    let read_whole: std::collections::HashSet<&Path> = (visits.iter())
        .filter(|v| v.target_lacks_dir)
        .map(|v| v.rel.as_path())
        .collect();
    let visits: Vec<Visit> = (visits.iter())
        .map(|v| Visit {
            rel: v.rel.clone(),
            whole: v.whole,
        })
        .collect();
    let whole_dir = |rel: &Path| read_whole.contains(rel);
    crate::partial::scan(source, &visits, &whole_dir, &Warnings::new(false), None)
}

/// The answer to a request about the change record.
fn tracked(tracking: &Tracking, request: &Request) -> Reply {
    let cannot = |message: &str| Reply::Failed {
        message: message.to_string(),
        vanished: false,
    };
    let tracker = match tracking {
        None => return cannot("not tracking changes (serve without --track-changes)"),
        Some(Err(why)) => return cannot(&format!("change tracking off: {why}")),
        Some(Ok(tracker)) => tracker,
    };
    let mut tracker = lock(tracker);
    match request {
        Request::Mark => Reply::Marked { mark: tracker.mark() },
        Request::Passed { mark, files, bytes } => {
            tracker.passed(*mark, *files, *bytes);
            Reply::End { size: 0 }
        }
        Request::Changes { since } => match tracker.changes(*since) {
            Ok(changed) => Reply::Changed {
                files: changed.files,
                bytes: changed.bytes,
                visits: (changed.visits.into_iter())
                    .map(|v| WireVisit {
                        rel: v.rel,
                        whole: v.whole,
                        target_lacks_dir: false,
                    })
                    .collect(),
            },
            Err(why) => cannot(&why),
        },
        _ => cannot("not a request about changes"),
    }
}
