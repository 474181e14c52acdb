//! For a dry run only: the bytes in use on the namespace's claims, from Prometheus where one is
//! configured, else as the kubelets report them (one stats summary per node a replica runs on), so
//! a plan can say whether a shrink fits. A source that cannot answer, or may not be asked, adds
//! nothing: that usage stays unknown, never an error, and a run measures with its own pods anyway.

use crate::context::Context;
use std::collections::{BTreeMap, BTreeSet};

pub async fn data_in_use(ctx: &Context, namespace: &str, nodes: BTreeSet<&str>) -> BTreeMap<String, u64> {
    if let Some(prometheus) = &ctx.usage_prometheus {
        return match prometheus.samples(namespace).await {
            Ok(samples) => ferry_engine::autoscale::prometheus::used_bytes(&samples, namespace),
            Err(error) => {
                tracing::debug!(namespace, %error, "no Prometheus usage for a dry run");
                BTreeMap::new()
            }
        };
    }
    let mut summaries = Vec::new();
    for node in nodes {
        match crate::autoscale::node_summary(&ctx.client, node).await {
            Ok(summary) => summaries.push(summary),
            Err(error) => tracing::debug!(node, %error, "no kubelet usage for a dry run"),
        }
    }
    ferry_engine::autoscale::usage::used_bytes(&summaries, namespace)
}
