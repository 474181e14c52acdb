//! The serving side of a cross-node copy: a mover on the old volume's node, which it holds read
//! only, answers the pulling mover's requests (the tree, a file's data, the manifest) over mutual
//! TLS until the pulling mover says it is done. It never writes anything.

use std::fs::File;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;

use rustix::fs::{Mode, OFlags};
use rustls::{ServerConfig, ServerConnection, StreamOwned};
use serde::Serialize;

use super::tls::TlsFiles;
use super::wire::{self, DATA_PER_FRAME, ENTRIES_PER_FRAME, Reply, Request, WireEntry};
use crate::error::MoverError;
use crate::meta::{EntryMeta, Kind};
use crate::progress::Warnings;

/// What `ferry-mover serve` is told.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The tree served (read only).
    pub source: PathBuf,
    /// Where to listen (`0.0.0.0:PORT`; port 0 picks one, printed on stdout).
    pub listen: SocketAddr,
    /// The directory with `ca.crt`, `tls.crt` and `tls.key`.
    pub tls: PathBuf,
}

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
            let (config, source, counters, done) =
                (config.clone(), source.clone(), accepting.clone(), done.clone());
            std::thread::spawn(move || connection(&config, &source, &counters, tcp, &done));
        }
    });
    finished
        .recv()
        .map_err(|_| MoverError::Transport(format!("stopped listening on {address}")))?;
    Ok(ServeReport {
        connections: counters.connections.load(Ordering::Relaxed),
        refused: counters.refused.load(Ordering::Relaxed),
        bytes_sent: counters.bytes_sent.load(Ordering::Relaxed),
    })
}

/// One peer: the handshake, then its requests in turn until it closes the stream.
fn connection(
    config: &Arc<ServerConfig>,
    source: &Path,
    counters: &Counters,
    tcp: TcpStream,
    done: &mpsc::Sender<()>,
) {
    let peer = tcp
        .peer_addr()
        .map_or_else(|_| "a peer".to_string(), |a| a.to_string());
    let _ = tcp.set_nodelay(true);
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
        let mut answered = answer(source, &request, &mut duplex, counters);
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

fn answer(source: &Path, request: &Request, out: &mut impl Write, counters: &Counters) -> io::Result<()> {
    let failed = |e: MoverError| Reply::Failed {
        message: e.to_string(),
        vanished: false,
    };
    match request {
        Request::Tree => {
            let warnings = Warnings::new(false);
            match crate::walk::scan(source, true, &warnings, None) {
                Ok(tree) => {
                    let count = tree.entries.len() as u64;
                    for batch in tree.entries.chunks(ENTRIES_PER_FRAME) {
                        let entries = (batch.iter())
                            .map(|e| WireEntry {
                                rel: e.rel.clone(),
                                meta: e.meta.clone(),
                            })
                            .collect();
                        wire::send(out, &Reply::Entries(entries))?;
                    }
                    wire::send(out, &Reply::End { size: count })
                }
                Err(e) => wire::send(out, &failed(e)),
            }
        }
        Request::Read { rel } | Request::Pieces { rel } | Request::ReadRanges { rel, .. }
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
        Request::Read { rel } => match open_file(&source.join(rel))? {
            Ok((file, meta)) => {
                let segments = crate::copy::data_segments(&file, &meta)?;
                send_ranges(&file, &segments, out, counters)?;
                wire::send(out, &Reply::End { size: meta.size })
            }
            Err(refusal) => wire::send(out, &refusal),
        },
        Request::Pieces { rel } => {
            let path = source.join(rel);
            match open_file(&path)? {
                Ok((file, meta)) => match crate::copy::piece_digests(&file, &path, 0, meta.size) {
                    Ok(digests) => wire::send(
                        out,
                        &Reply::Pieces {
                            size: meta.size,
                            digests,
                        },
                    ),
                    Err(e) => wire::send(out, &failed(e)),
                },
                Err(refusal) => wire::send(out, &refusal),
            }
        }
        Request::ReadRanges { rel, ranges } => match open_file(&source.join(rel))? {
            Ok((file, meta)) => {
                // Holes are not sent: the pulling side makes holes of what it asked and did not get.
                let segments = crate::copy::data_segments(&file, &meta)?;
                send_ranges(&file, &intersection(ranges, &segments), out, counters)?;
                wire::send(out, &Reply::End { size: meta.size })
            }
            Err(refusal) => wire::send(out, &refusal),
        },
        Request::Manifest => match crate::digest::digest(source) {
            Ok(manifest) => wire::send(out, &Reply::Manifest(Box::new(manifest))),
            Err(e) => wire::send(out, &failed(e)),
        },
        Request::Done => wire::send(out, &Reply::End { size: 0 }),
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
        Err(e) => {
            return Ok(Err(Reply::Failed {
                message: MoverError::io("opening", path, e.into()).to_string(),
                vanished: false,
            }));
        }
    };
    let meta = EntryMeta::from_metadata(&file.metadata()?);
    if meta.kind != Kind::File {
        return Ok(Err(vanished("no longer a regular file")));
    }
    Ok(Ok((file, meta)))
}

/// The bytes of `ranges` (offset, length) as data frames; a range past the file's end is cut
/// where the file ends (it shrank since its size was read).
fn send_ranges(
    file: &File,
    ranges: &[(u64, u64)],
    out: &mut impl Write,
    counters: &Counters,
) -> io::Result<()> {
    let mut buf = vec![0u8; DATA_PER_FRAME as usize];
    for &(start, len) in ranges {
        let end = start.saturating_add(len);
        let mut at = start;
        while at < end {
            let want = (end - at).min(DATA_PER_FRAME) as usize;
            let got = read_at(file, &mut buf[..want], at)?;
            if got == 0 {
                break;
            }
            wire::send(out, &Reply::Data { at, len: got as u64 })?;
            out.write_all(&buf[..got])?;
            counters.bytes_sent.fetch_add(got as u64, Ordering::Relaxed);
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

/// Reads until `buf` is full or the file ends.
fn read_at(file: &File, buf: &mut [u8], at: u64) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read_at(&mut buf[got..], at + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

#[cfg(test)]
mod tests {
    use super::intersection;

    #[test]
    fn only_the_data_inside_the_asked_ranges_is_sent() {
        let data = [(0, 50), (80, 100)];
        assert_eq!(
            intersection(&[(10, 100), (300, 10)], &data),
            vec![(10, 40), (80, 30)]
        );
        assert_eq!(intersection(&[(50, 30)], &data), vec![]);
    }
}
