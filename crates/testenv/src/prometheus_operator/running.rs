//! A Prometheus `metrics` run by the real prometheus-operator on the real nodes, and what tests ask
//! its TSDB over the pod network: shared by the operator's and the plugin's end-to-end tests.

use super::{PrometheusOperator, install_crds, prometheus_resource, prometheus_version, prometheuses, start};
use crate::{Error, fixtures, wait};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::json;

/// The Prometheus resource's name; its StatefulSet is `prometheus-metrics`, its claim template
/// `prometheus-metrics-db`, its pod `prometheus-metrics-0`.
pub const METRICS: &str = "metrics";
/// The StatefulSet the operator makes for [`METRICS`].
pub const METRICS_STATEFUL_SET: &str = "prometheus-metrics";
/// The Secret of a Prometheus's own scrape configuration: itself, every second.
const SELF_SCRAPE: &str = "self-scrape";

/// What the Prometheus looks like.
pub struct MetricsPrometheus<'a> {
    /// The class of its TSDB's claim.
    pub class: &'a str,
    /// Its TSDB's claim size.
    pub size: &'a str,
    /// Scraping itself every second, so its TSDB has samples to check after a move.
    pub self_scrape: bool,
}

/// The real prometheus-operator watching `namespace` (running until the caller kills or drops
/// it), and its Prometheus [`METRICS`] Ready on its StatefulSet [`METRICS_STATEFUL_SET`].
pub async fn running_prometheus(
    client: &kube::Client,
    namespace: &str,
    prometheus: MetricsPrometheus<'_>,
) -> Result<(PrometheusOperator, Api<DynamicObject>), Error> {
    install_crds(client).await?;
    let operator = start(namespace).await?;
    let mut resource = prometheus_resource(
        METRICS,
        &prometheus_version().await?,
        prometheus.class,
        prometheus.size,
    );
    if prometheus.self_scrape {
        create_self_scrape(client, namespace).await?;
        resource["spec"]["additionalScrapeConfigs"] = json!({"name": SELF_SCRAPE, "key": "scrape.yaml"});
    }
    let resource: DynamicObject = serde_json::from_value(resource)
        .map_err(|e| Error::Setup(format!("the Prometheus resource: {e}")))?;
    let api = prometheuses(client, namespace);
    api.create(&PostParams::default(), &resource).await?;
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), namespace);
    wait::wait_for_object(
        &sets,
        METRICS_STATEFUL_SET,
        "the operator to make its StatefulSet",
        60,
        |_| true,
    )
    .await?;
    fixtures::wait_ready(&sets, METRICS_STATEFUL_SET, 1, 240).await?;
    Ok((operator, api))
}

async fn create_self_scrape(client: &kube::Client, namespace: &str) -> Result<(), Error> {
    let scrape =
        "- job_name: self\n  scrape_interval: 1s\n  static_configs:\n  - targets: ['localhost:9090']\n";
    let secret = json!({"metadata": {"name": SELF_SCRAPE}, "stringData": {"scrape.yaml": scrape}});
    let secret: Secret =
        serde_json::from_value(secret).map_err(|e| Error::Setup(format!("the scrape Secret: {e}")))?;
    Api::<Secret>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &secret)
        .await?;
    Ok(())
}

/// The samples of `up{job="self"}` the Prometheus pod `pod` answers for at `time` (seconds since
/// the epoch; evaluated with the default 5 minute look-back), asked over the pod network.
pub async fn self_samples_at(client: &kube::Client, namespace: &str, pod: &str, time: u64) -> Option<usize> {
    let pod = Api::<Pod>::namespaced(client.clone(), namespace)
        .get(pod)
        .await
        .ok()?;
    let ip = pod.status?.pod_ip?;
    let url = format!("http://{ip}:9090/api/v1/query?query=up%7Bjob%3D%22self%22%7D&time={time}");
    let output = tokio::process::Command::new("curl")
        .args(["-sf", "--max-time", "5", &url])
        .output()
        .await
        .ok()?;
    let answer: serde_json::Value = serde_json::from_slice(&output.stdout).ok()?;
    answer["data"]["result"].as_array().map(Vec::len)
}

/// A moment in the TSDB's terms: seconds since the epoch.
pub fn epoch_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs())
        .unwrap_or_default()
}

/// Waits until the Prometheus pod `pod` has scraped itself, and returns the moment of a sample.
pub async fn a_scraped_moment(client: &kube::Client, namespace: &str, pod: &str) -> Result<u64, Error> {
    wait::wait_until("Prometheus to have scraped itself", 60, || async {
        let now = epoch_seconds();
        (self_samples_at(client, namespace, pod, now).await? > 0).then_some(now)
    })
    .await
}
