//! Autoresize I/O (the controller that uses it is not written yet): reading volume usage from a
//! node's kubelet through the API server's node proxy.

use crate::Error;
use ferry_engine::autoscale::usage::Summary;
use kube::Client;

/// The kubelet's stats summary of `node`: one request covers every pod on it.
pub async fn node_summary(client: &Client, node: &str) -> Result<Summary, Error> {
    let path = format!("/api/v1/nodes/{node}/proxy/stats/summary?only_cpu_and_memory=false");
    let request = http::Request::get(path).body(Vec::new()).map_err(|error| {
        Error::Invariant(format!("cannot build the stats request for node {node}: {error}"))
    })?;
    Ok(client.request::<Summary>(request).await?)
}
