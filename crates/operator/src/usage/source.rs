//! Where volume usage is read: from Prometheus where one is configured, else from the kubelets'
//! stats summaries of the nodes asked. One choice for the autoscaler and a dry run's plan; each
//! reads what it needs from the answer.

use super::prometheus::PrometheusUsage;
use ferry_engine::autoscale::prometheus::Sample;
use ferry_engine::autoscale::usage::Summary;
use std::future::Future;
use std::sync::Arc;

/// What the source answered.
pub enum Usage {
    /// Prometheus's samples of the namespace.
    Prometheus(Arc<Vec<Sample>>),
    /// The summaries of the nodes that answered.
    Kubelets(Vec<Arc<Summary>>),
}

/// The usage of `namespace`: Prometheus's where one is configured (`--usage-prometheus-url`), else
/// the summaries `summary` gives for `nodes`; and why the source (or some node) could not answer,
/// when it could not.
pub async fn read<F, Fut>(
    prometheus: Option<&PrometheusUsage>,
    namespace: &str,
    nodes: impl IntoIterator<Item = String>,
    summary: F,
) -> (Usage, Option<String>)
where
    F: Fn(String) -> Fut,
    Fut: Future<Output = Result<Arc<Summary>, String>>,
{
    if let Some(prometheus) = prometheus {
        return match prometheus.samples(namespace).await {
            Ok(samples) => (Usage::Prometheus(samples), None),
            Err(error) => (
                Usage::Prometheus(Arc::default()),
                Some(format!("Prometheus did not answer: {error}")),
            ),
        };
    }
    let mut found = Vec::new();
    let mut unanswered = Vec::new();
    for node in nodes {
        match summary(node).await {
            Ok(summary) => found.push(summary),
            Err(error) => unanswered.push(error),
        }
    }
    let why = (!unanswered.is_empty()).then(|| {
        format!(
            "the kubelet's stats summary is unavailable: {}",
            unanswered.join("; ")
        )
    });
    (Usage::Kubelets(found), why)
}
