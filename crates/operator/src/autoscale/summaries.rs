//! Volume usage from each node's kubelet, through the API server's node proxy, at a bounded rate:
//! one request per node per interval however many autoscalers and replicas it serves (a failed
//! request also waits out the interval, so a broken node is not hammered).

use crate::Error;
use ferry_engine::autoscale::usage::Summary;
use kube::Client;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The kubelet's stats summary of `node`: one request covers every pod on it.
pub async fn node_summary(client: &Client, node: &str) -> Result<Summary, Error> {
    let path = format!("/api/v1/nodes/{node}/proxy/stats/summary?only_cpu_and_memory=false");
    let request = http::Request::get(path).body(Vec::new()).map_err(|error| {
        Error::Invariant(format!("cannot build the stats request for node {node}: {error}"))
    })?;
    Ok(client.request::<Summary>(request).await?)
}

type Fetched = Option<(Instant, Result<Arc<Summary>, String>)>;

/// The last summary of every node, fetched again once it is `interval` old.
pub struct Summaries {
    client: Client,
    interval: Duration,
    nodes: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Fetched>>>>,
}

impl Summaries {
    pub fn new(client: Client, interval: Duration) -> Self {
        Summaries {
            client,
            interval,
            nodes: Mutex::new(HashMap::new()),
        }
    }

    fn slot(&self, node: &str) -> Arc<tokio::sync::Mutex<Fetched>> {
        // A poisoned lock only means another reconcile panicked; the map itself is still whole.
        let mut nodes = self
            .nodes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        nodes.entry(node.to_string()).or_default().clone()
    }

    /// The summary of `node`, at most `interval` old (or why there is none).
    pub async fn of(&self, node: &str) -> Result<Arc<Summary>, String> {
        let slot = self.slot(node);
        // Held across the request, so concurrent reconciles wait for one request instead of each
        // making their own.
        let mut fetched = slot.lock().await;
        if let Some((at, result)) = fetched.as_ref()
            && at.elapsed() < self.interval
        {
            return result.clone();
        }
        let result =
            match tokio::time::timeout(Duration::from_secs(10), node_summary(&self.client, node)).await {
                Ok(Ok(summary)) => Ok(Arc::new(summary)),
                Ok(Err(error)) => Err(format!("node {node}: {error}")),
                Err(_) => Err(format!("node {node}: the stats summary took longer than 10s")),
            };
        if let Err(error) = &result {
            tracing::warn!(%node, %error, "volume usage unavailable");
        }
        *fetched = Some((Instant::now(), result.clone()));
        result
    }
}
