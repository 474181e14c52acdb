//! The driver's shared state and its gRPC server: the CSI services on the driver's socket.

use crate::Error;
use crate::controller::ControllerService;
use crate::identity::IdentityService;
use crate::node::NodeService;
use crate::proto::csi::controller_server::ControllerServer;
use crate::proto::csi::identity_server::IdentityServer;
use crate::proto::csi::node_server::NodeServer;
use crate::snapshots::Snapshot;
use crate::store::Store;
use crate::volume::Volume;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::net::UnixListener;
use tokio_stream::wrappers::UnixListenerStream;
use tonic::Status;

/// Who this driver is and where it keeps its volumes.
#[derive(Debug, Clone)]
pub struct Config {
    /// The CSI driver name (`block.csi.ferry.dev`), as StorageClasses and the CSIDriver object name it.
    pub name: String,
    /// The one node whose volumes this driver serves (the kubelet's node name).
    pub node_id: String,
    /// The zone of that node: every volume's topology.
    pub zone: String,
    /// Volumes must be attached (ControllerPublishVolume) before a node may stage them.
    pub attach_required: bool,
    /// The largest volume; by default the size of the file system holding `state_dir`.
    pub max_volume_bytes: Option<u64>,
    pub state_dir: PathBuf,
}

pub struct Driver {
    pub config: Config,
    pub store: Store<Volume>,
    pub snapshots: Store<Snapshot>,
    /// One call that changes volumes at a time: the sidecars and the kubelet may call concurrently,
    /// and a loop device or mount half-made by one call must not be seen by another.
    serial: tokio::sync::Mutex<()>,
}

impl Driver {
    pub fn new(config: Config) -> Result<Driver, Error> {
        let store = Store::open(&config.state_dir)?;
        let snapshots = Store::open(&config.state_dir)?;
        Ok(Driver {
            config,
            store,
            snapshots,
            serial: tokio::sync::Mutex::new(()),
        })
    }

    /// Runs `work` (blocking I/O) alone, on a blocking thread.
    pub async fn call<T, F>(self: &Arc<Self>, work: F) -> Result<T, Status>
    where
        T: Send + 'static,
        F: FnOnce(&Driver) -> Result<T, Error> + Send + 'static,
    {
        let _alone = self.serial.lock().await;
        let driver = Arc::clone(self);
        match tokio::task::spawn_blocking(move || work(&driver)).await {
            Ok(result) => result.map_err(|error| {
                tracing::warn!(%error, "call failed");
                Status::from(error)
            }),
            Err(join) => Err(Status::internal(format!("the call's thread failed: {join}"))),
        }
    }

    /// The largest volume this driver makes.
    pub fn max_volume_bytes(&self) -> Result<u64, Error> {
        match self.config.max_volume_bytes {
            Some(bytes) => Ok(bytes),
            None => Ok(crate::disk::usage(self.store.dir())?.total_bytes),
        }
    }
}

/// Serves the CSI services at `endpoint` until the server fails.
pub async fn serve(config: Config, endpoint: &Path) -> Result<(), Error> {
    let driver = Arc::new(Driver::new(config)?);
    let csi = listen(endpoint)?;
    tracing::info!(driver = %driver.config.name, endpoint = %endpoint.display(), "serving CSI");
    tonic::transport::Server::builder()
        .add_service(IdentityServer::new(IdentityService::new(Arc::clone(&driver))))
        .add_service(ControllerServer::new(ControllerService::new(Arc::clone(&driver))))
        .add_service(NodeServer::new(NodeService::new(Arc::clone(&driver))))
        .serve_with_incoming(UnixListenerStream::new(csi))
        .await?;
    Ok(())
}

/// Listens on a unix socket, replacing a stale socket file a killed driver left.
fn listen(path: &Path) -> Result<UnixListener, Error> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent.display(), e))?;
    }
    crate::store::remove_file(path)?;
    UnixListener::bind(path).map_err(|e| Error::io(path.display(), e))
}
