//! Volume usage from each node's kubelet, through the API server's node proxy, at a bounded rate:
//! one request per node per interval however many autoscalers and replicas it serves.

use crate::Error;
use crate::usage::per_key::PerKey;
use ferry_engine::autoscale::usage::Summary;
use kube::Client;
use std::sync::Arc;
use std::time::Duration;

/// The kubelet's stats summary of `node`: one request covers every pod on it.
pub async fn node_summary(client: &Client, node: &str) -> Result<Summary, Error> {
    let path = format!("/api/v1/nodes/{node}/proxy/stats/summary?only_cpu_and_memory=false");
    let request = http::Request::get(path).body(Vec::new()).map_err(|error| {
        Error::Invariant(format!("cannot build the stats request for node {node}: {error}"))
    })?;
    Ok(client.request::<Summary>(request).await?)
}

/// The last summary of every node, fetched again once it is an interval old.
pub struct Summaries {
    client: Client,
    nodes: PerKey<Summary>,
}

impl Summaries {
    pub fn new(client: Client, interval: Duration) -> Self {
        Summaries {
            client,
            nodes: PerKey::new(interval),
        }
    }

    /// The summary of `node`, at most an interval old (or why there is none).
    pub async fn of(&self, node: &str) -> Result<Arc<Summary>, String> {
        self.nodes
            .of(node, || async {
                match tokio::time::timeout(Duration::from_secs(10), node_summary(&self.client, node)).await {
                    Ok(Ok(summary)) => Ok(summary),
                    Ok(Err(error)) => Err(format!("node {node}: {error}")),
                    Err(_) => Err(format!("node {node}: the stats summary took longer than 10s")),
                }
            })
            .await
    }
}
