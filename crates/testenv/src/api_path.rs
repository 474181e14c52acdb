//! A path to an API server that one test can cut: a TCP relay on loopback in front of its port
//! (the tests put it in front of their own second API server, `crate::api_server`). An operator whose client goes through it loses the API server when the test cuts
//! it (connections reset, new ones refused), exactly as in an API server outage or a partition,
//! while every other test on the shared control plane goes on undisturbed. TLS passes through
//! untouched (the server's certificate names 127.0.0.1).

use crate::Error;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{AbortHandle, JoinHandle};

/// The relay; dropped, it stops and takes its connections with it.
pub struct ApiPath {
    address: SocketAddr,
    open: Arc<AtomicBool>,
    connections: Arc<Mutex<Vec<AbortHandle>>>,
    relay: JoinHandle<()>,
}

impl ApiPath {
    /// Starts relaying a free loopback port to the API server at `server` (e.g. a second one,
    /// [`crate::api_server::ApiServerReplica::address`]).
    pub async fn start_to(server: SocketAddr) -> Result<ApiPath, Error> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| Error::io("binding the API path", e))?;
        let address = listener
            .local_addr()
            .map_err(|e| Error::io("the API path's address", e))?;
        let open = Arc::new(AtomicBool::new(true));
        let connections: Arc<Mutex<Vec<AbortHandle>>> = Arc::default();
        let relay = tokio::spawn({
            let (open, connections) = (open.clone(), connections.clone());
            async move {
                while let Ok((mut client, _)) = listener.accept().await {
                    // Cut: refused at once, as a server that is not there.
                    if !open.load(Ordering::SeqCst) {
                        continue;
                    }
                    let connection = tokio::spawn(async move {
                        if let Ok(mut upstream) = TcpStream::connect(server).await {
                            let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
                        }
                    });
                    if let Ok(mut live) = connections.lock() {
                        live.retain(|handle| !handle.is_finished());
                        live.push(connection.abort_handle());
                    }
                }
            }
        });
        Ok(ApiPath {
            address,
            open,
            connections,
            relay,
        })
    }

    /// `https://127.0.0.1:<port>`: the API server's URL through this path.
    pub fn url(&self) -> String {
        format!("https://{}", self.address)
    }

    /// Cuts the path: every open connection (watches included) is reset, new ones are refused.
    pub fn cut(&self) {
        self.open.store(false, Ordering::SeqCst);
        if let Ok(mut live) = self.connections.lock() {
            for connection in live.drain(..) {
                connection.abort();
            }
        }
    }

    /// Opens the path again.
    pub fn restore(&self) {
        self.open.store(true, Ordering::SeqCst);
    }
}

impl Drop for ApiPath {
    fn drop(&mut self) {
        self.cut();
        self.relay.abort();
    }
}

/// A moment chosen at random in `0..max` (printed by the caller, so a failure can be replayed).
pub fn random_delay(max: std::time::Duration) -> std::time::Duration {
    use rand::Rng;
    let millis = u64::try_from(max.as_millis()).unwrap_or(u64::MAX).max(1);
    std::time::Duration::from_millis(rand::rng().random_range(0..millis))
}
