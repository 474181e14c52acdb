//! One authenticated connection from the pulling mover to the serving one.

use std::io::{BufWriter, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use rustls::{ClientConfig, ClientConnection, StreamOwned};

use super::tls::peer_name;
use super::wire::{self, Reply, Request};
use crate::digest::Manifest;
use crate::error::MoverError;
use crate::walk::{Entry, Tree};

/// How long a connection to the serving mover may take to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How soon a connection that found nobody listening is tried again.
const RETRY_AFTER: Duration = Duration::from_millis(200);

/// One authenticated connection to the serving mover.
pub(super) struct Peer {
    stream: StreamOwned<ClientConnection, TcpStream>,
    from: SocketAddr,
}

impl Peer {
    pub(super) fn connect(from: SocketAddr, config: &Arc<ClientConfig>) -> Result<Peer, MoverError> {
        Peer::connect_within(from, config, Duration::ZERO)
    }

    /// Connects, trying again for up to `wait` while nothing answers at `from` (a serving mover
    /// that has just started, a network path not up yet); a refused handshake is final.
    pub(super) fn connect_within(
        from: SocketAddr,
        config: &Arc<ClientConfig>,
        wait: Duration,
    ) -> Result<Peer, MoverError> {
        let broke = |e: &dyn std::fmt::Display| MoverError::Transport(format!("connecting to {from}: {e}"));
        let started = std::time::Instant::now();
        let tcp = loop {
            match TcpStream::connect_timeout(&from, CONNECT_TIMEOUT) {
                Ok(tcp) => break tcp,
                Err(_) if started.elapsed() < wait => std::thread::sleep(RETRY_AFTER),
                Err(e) => return Err(broke(&e)),
            }
        };
        super::tcp::tune(&tcp);
        let conn = ClientConnection::new(config.clone(), peer_name()?).map_err(|e| broke(&e))?;
        let mut stream = StreamOwned::new(conn, tcp);
        while stream.conn.is_handshaking() {
            stream.conn.complete_io(&mut stream.sock).map_err(|e| broke(&e))?;
        }
        Ok(Peer { stream, from })
    }

    pub(super) fn broke(&self, e: impl std::fmt::Display) -> MoverError {
        MoverError::Transport(format!("the serving mover at {}: {e}", self.from))
    }

    pub(super) fn ask(&mut self, request: &Request) -> Result<(), MoverError> {
        self.ask_all(std::slice::from_ref(request))
    }

    /// Sends `requests` at once (one flush): the server answers them in turn, and a batch of
    /// small files costs one round trip, not one each.
    pub(super) fn ask_all(&mut self, requests: &[Request]) -> Result<(), MoverError> {
        let from = self.from;
        let mut out = BufWriter::with_capacity(1 << 16, &mut self.stream);
        let sent = (requests.iter()).try_for_each(|request| wire::send(&mut out, request));
        sent.and_then(|()| out.flush())
            .map_err(|e| MoverError::Transport(format!("the serving mover at {from}: {e}")))
    }

    pub(super) fn next(&mut self) -> Result<Reply, MoverError> {
        match wire::receive(&mut self.stream) {
            Ok(Some(reply)) => Ok(reply),
            Ok(None) => Err(self.broke("closed the connection")),
            Err(e) => Err(self.broke(e)),
        }
    }

    pub(super) fn bytes(&mut self, buf: &mut [u8]) -> Result<(), MoverError> {
        let read = self.stream.read_exact(buf);
        read.map_err(|e| self.broke(e))
    }

    /// The tree, once [`Request::Tree`] was asked and its `first` reply read.
    pub(super) fn tree(&mut self, first: Reply) -> Result<Tree, MoverError> {
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

    pub(super) fn manifest(&mut self) -> Result<Manifest, MoverError> {
        self.ask(&Request::Manifest)?;
        match self.next()? {
            Reply::Manifest(manifest) => Ok(*manifest),
            other => Err(self.unexpected(&other)),
        }
    }

    pub(super) fn unexpected(&self, reply: &Reply) -> MoverError {
        match reply {
            Reply::Failed { message, .. } => self.broke(message),
            _ => self.broke("answered out of turn"),
        }
    }
}
