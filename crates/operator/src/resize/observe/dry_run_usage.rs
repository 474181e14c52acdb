//! For a dry run only: the bytes in use on the namespace's claims, from Prometheus where one is
//! configured, else as the kubelets report them (one stats summary per node a replica runs on), so
//! a plan can say whether a shrink fits. A source that cannot answer, or may not be asked, adds
//! nothing: that usage stays unknown, never an error, and a run measures with its own pods anyway.

use crate::context::Context;
use crate::usage::source::{self, Usage};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

pub async fn data_in_use(ctx: &Context, namespace: &str, nodes: BTreeSet<&str>) -> BTreeMap<String, u64> {
    let nodes = nodes.into_iter().map(str::to_string);
    let client = &ctx.client;
    let (usage, why) = source::read(
        ctx.usage_prometheus.as_deref(),
        namespace,
        nodes,
        |node| async move {
            crate::usage::summaries::node_summary(client, &node)
                .await
                .map(Arc::new)
                .map_err(|error| format!("node {node}: {error}"))
        },
    )
    .await;
    if let Some(why) = why {
        tracing::debug!(namespace, %why, "no usage (or not all of it) for a dry run");
    }
    match usage {
        Usage::Prometheus(samples) => ferry_engine::autoscale::prometheus::used_bytes(&samples, namespace),
        Usage::Kubelets(summaries) => {
            ferry_engine::autoscale::usage::used_bytes(summaries.iter().map(Arc::as_ref), namespace)
        }
    }
}
