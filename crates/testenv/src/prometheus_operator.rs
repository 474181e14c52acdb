//! The real prometheus-operator on the test control plane, for tests of StatefulSets another
//! operator owns (#58): its CRDs ([`install_crds`]) and the operator itself as a child process
//! watching one test namespace ([`start`]). Its binaries, CRDs and the Prometheus it
//! runs come from the test bed's cache (`scripts/k8s/build.sh`, pinned in `scripts/k8s/versions.sh`);
//! the image is `ferry.local/prometheus:dev` (`scripts/images`), which `scripts/testenv up` imports
//! into every real node.

mod running;

use crate::operator_process::{Operator, OperatorProcess};
use crate::{Error, cluster};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use tokio::sync::OnceCell;

pub use running::{
    METRICS, METRICS_STATEFUL_SET, MetricsPrometheus, a_scraped_moment, epoch_seconds, running_prometheus,
    self_samples_at,
};

/// The image with Prometheus and the operator's config reloader (`scripts/lib/ferry_images.py`).
pub const PROMETHEUS_IMAGE: &str = "ferry.local/prometheus:dev";
/// The API group of the operator's resources.
pub const GROUP: &str = "monitoring.coreos.com";

/// A running prometheus-operator; dropped, it is killed.
pub type PrometheusOperator = OperatorProcess;

/// Starts prometheus-operator for `namespace` (its `--namespaces`: it sees and makes objects there
/// only) and waits until it serves `/healthz`.
pub async fn start(namespace: &str) -> Result<PrometheusOperator, Error> {
    // The reloader runs from the image Prometheus runs from (both are in it).
    let operator = Operator::Prometheus {
        config_reloader: PROMETHEUS_IMAGE,
    };
    OperatorProcess::start(operator, namespace).await
}

/// Applies every CRD of the pinned release (`example/prometheus-operator-crd`) and waits until
/// each is served: once per test process.
pub async fn install_crds(client: &kube::Client) -> Result<(), Error> {
    static INSTALLED: OnceCell<()> = OnceCell::const_new();
    crate::test_bed_crds::install(client, "prometheus-operator-crds", &INSTALLED).await
}

/// The namespaced `Prometheus` resources (`monitoring.coreos.com/v1`, plural `prometheuses`).
pub fn prometheuses(client: &kube::Client, namespace: &str) -> Api<DynamicObject> {
    let kind = GroupVersionKind::gvk(GROUP, "v1", "Prometheus");
    let resource = ApiResource::from_gvk_with_plural(&kind, "prometheuses");
    Api::namespaced_with(client.clone(), namespace, &resource)
}

/// A one-replica `Prometheus` `name` on the real nodes, of our image at `version`, its TSDB on a
/// claim of `class` and `size`.
pub fn prometheus_resource(name: &str, version: &str, class: &str, size: &str) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "Prometheus",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "image": PROMETHEUS_IMAGE,
            "version": version,
            // Imported into the nodes, never pulled.
            "imagePullPolicy": "Never",
            // A selector makes the operator write the configuration (none selected: no targets).
            "serviceMonitorSelector": {},
            // The operator (v0.93) sets no pod security context, and a new file system's root is
            // root's: Prometheus (the image's nobody otherwise) writes there through fsGroup, as
            // kube-prometheus runs it.
            "securityContext": {"runAsUser": 1000, "runAsGroup": 2000, "runAsNonRoot": true, "fsGroup": 2000},
            "nodeSelector": {crate::REAL_NODE_KEY: "true"},
            "tolerations": [{"key": crate::REAL_NODE_KEY, "operator": "Exists", "effect": "NoSchedule"}],
            "storage": {"volumeClaimTemplate": {"spec": {
                "storageClassName": class,
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": size}},
            }}},
        },
    })
}

/// The version of the Prometheus in [`PROMETHEUS_IMAGE`] as the operator wants it in
/// `spec.version` (`v3.16.0`), from the Go module version the test bed recorded (`v0.316.0`), so
/// the operator picks the flags of the Prometheus that really runs.
pub async fn prometheus_version() -> Result<String, Error> {
    let recorded = cluster::test_bed_file("prometheus.version").await?;
    let module = std::fs::read_to_string(&recorded).map_err(|e| Error::io(recorded.display(), e))?;
    release_of_module(module.trim()).ok_or_else(|| {
        Error::Setup(format!(
            "{}: {module:?} is not a Prometheus module version (v0.MMM.P)",
            recorded.display()
        ))
    })
}

/// `v0.316.0` → `v3.16.0`, `v0.55.1` → `v2.55.1`: Prometheus 3 tags its Go module v0.3MM.P, and
/// Prometheus 2 tagged it v0.MM.P.
fn release_of_module(module: &str) -> Option<String> {
    let mut parts = module.strip_prefix("v0.")?.split('.');
    let minor: u32 = parts.next()?.parse().ok()?;
    let patch: u32 = parts.next()?.parse().ok()?;
    if parts.next().is_some() {
        return None;
    }
    Some(match minor {
        300.. => format!("v3.{}.{patch}", minor - 300),
        _ => format!("v2.{minor}.{patch}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_versions_name_their_prometheus_release() {
        assert_eq!(release_of_module("v0.316.0").as_deref(), Some("v3.16.0"));
        assert_eq!(release_of_module("v0.300.1").as_deref(), Some("v3.0.1"));
        assert_eq!(release_of_module("v0.55.1").as_deref(), Some("v2.55.1"));
        assert_eq!(release_of_module("v3.16.0"), None);
        assert_eq!(release_of_module("v0.316"), None);
        assert_eq!(release_of_module("v0.316.0.1"), None);
    }
}
