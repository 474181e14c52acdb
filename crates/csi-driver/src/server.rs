//! The driver's gRPC server: the CSI services on the driver's socket.

use crate::Error;
use crate::controller::ControllerService;
pub use crate::driver::Config;
use crate::driver::Driver;
use crate::identity::IdentityService;
use crate::node::NodeService;
use crate::proto::csi::controller_server::ControllerServer;
use crate::proto::csi::identity_server::IdentityServer;
use crate::proto::csi::node_server::NodeServer;
use std::path::Path;
use std::sync::Arc;
use tokio::net::UnixListener;
use tokio_stream::wrappers::UnixListenerStream;

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
