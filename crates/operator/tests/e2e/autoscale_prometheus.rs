//! Volume usage from a real Prometheus (built from its Go module by `scripts/k8s/build.sh`, without
//! service discovery), scraping the real node's kubelet over TLS as kube-prometheus does, for an
//! operator that is not granted `nodes/proxy` (`features.kubeletStats=false`): it grows a filled
//! volume and answers a dry run's "does this shrink fit?" from Prometheus alone.

use crate::autoscale::create_autoscaler;
use crate::autoscale_usage::dry_run_refused_as_too_small;
use crate::real_node::{assert_nothing_lost, wait_phase, writer_with};
use crate::support::{Harness, OperatorOptions, free_port};
use ferry_api::names::LABEL_TRIGGER;
use ferry_api::{Phase, VolumeAutoscaler, VolumeResize};
use ferry_engine::autoscale::prometheus::{query, samples, used_bytes};
use ferry_operator::features::Feature;
use ferry_operator::usage::prometheus::PrometheusSettings;
use ferry_testenv::{CLASS_BLOCK, REAL_NODES, wait_until};
use k8s_openapi::api::core::v1::Node;
use kube::api::ListParams;
use kube::{Api, ResourceExt};
use serde_json::json;

const MI: i64 = 1 << 20;

/// A Prometheus scraping the real node's kubelet every second; killed when dropped.
struct Prometheus {
    url: String,
    _process: tokio::process::Child,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    async fn start(harness: &Harness) -> Prometheus {
        // Every real kubelet's address and port as its node reports them.
        let mut targets = Vec::new();
        for real in REAL_NODES {
            let node = Api::<Node>::all(harness.client.clone()).get(real).await.unwrap();
            let status = node.status.unwrap();
            let ip = status
                .addresses
                .unwrap_or_default()
                .into_iter()
                .find(|address| address.type_ == "InternalIP")
                .unwrap()
                .address;
            let port = status.daemon_endpoints.unwrap().kubelet_endpoint.unwrap().port;
            targets.push(format!("{ip}:{port}"));
        }
        let pki = ferry_testenv::paths::state_dir().join("pki");
        let dir = tempfile::tempdir().unwrap();
        // The kubelet's serving certificate is the test CA's; the admin client certificate passes
        // its authentication (x509) and authorization (webhook) as a scraper's token would.
        let config = json!({
            "global": {"scrape_interval": "1s", "scrape_timeout": "900ms"},
            "scrape_configs": [{
                "job_name": "kubelet",
                "scheme": "https",
                "honor_labels": true,
                "tls_config": {
                    "ca_file": pki.join("ca.crt"),
                    "cert_file": pki.join("admin.crt"),
                    "key_file": pki.join("admin.key"),
                },
                "static_configs": [{"targets": targets}],
            }],
        });
        let config_file = dir.path().join("prometheus.yml");
        // JSON is YAML.
        std::fs::write(&config_file, serde_json::to_vec(&config).unwrap()).unwrap();
        let listen = format!("127.0.0.1:{}", free_port());
        let binary = ferry_testenv::cluster::control_plane_binary("prometheus").unwrap();
        let log = std::fs::File::create(dir.path().join("prometheus.log")).unwrap();
        let process = tokio::process::Command::new(binary)
            .arg(format!("--config.file={}", config_file.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={listen}"))
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let url = format!("http://{listen}");
        wait_until("Prometheus to be ready", 60, || async {
            let ready = tokio::process::Command::new("curl")
                .args([
                    "-sf",
                    "-o",
                    "/dev/null",
                    "--max-time",
                    "2",
                    &format!("{url}/-/ready"),
                ])
                .status()
                .await
                .ok()?;
            ready.success().then_some(())
        })
        .await
        .unwrap();
        Prometheus {
            url,
            _process: process,
            _dir: dir,
        }
    }

    /// The bytes in use on `claim` as Prometheus has them now (none before its first scrape of
    /// the kubelet's figures for it).
    async fn used_bytes(&self, namespace: &str, claim: &str) -> Option<u64> {
        let output = tokio::process::Command::new("curl")
            .args(["-sf", "--max-time", "5", "--data-urlencode"])
            .arg(format!("query={}", query(namespace)))
            .arg(format!("{}/api/v1/query", self.url))
            .output()
            .await
            .ok()?;
        used_bytes(&samples(&output.stdout).ok()?, namespace).remove(claim)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_from_prometheus_grows_a_filled_volume_without_nodes_proxy() {
    // The harness's own client starts Prometheus before the operator, which needs its URL.
    let probe = Harness::start_bare("vas-prom-probe").await;
    let prometheus = Prometheus::start(&probe).await;
    let options = OperatorOptions {
        usage_prometheus: Some(PrometheusSettings::new(&prometheus.url, None, None).unwrap()),
        ..OperatorOptions::default()
    };
    // The chart without kubelet stats: the operator may not ask any kubelet.
    let harness = Harness::start_without_and("vas-prom", &[Feature::KubeletStats], options).await;
    // 170 MiB on a 320Mi volume (256 MiB of XFS): past 60 %, and a 20 % step.
    let seeds = writer_with(&harness, 1, CLASS_BLOCK, "320Mi", 170 << 10, 0).await;

    // Once Prometheus has scraped the seeded data, a dry run answers from it: 40Mi cannot hold
    // the data and is refused.
    wait_until("Prometheus to have the volume's usage", 60, || async {
        let used = prometheus.used_bytes(&harness.ns.name, "data-db-0").await?;
        (used >= 170 << 20).then_some(())
    })
    .await
    .unwrap();
    dry_run_refused_as_too_small(&harness, "40Mi").await;

    create_autoscaler(
        &harness,
        "db",
        json!({"statefulSetName": "db", "volumes": [
            {"name": "data", "threshold": 60, "maxSize": "2Gi", "cooldown": "1h"}]}),
    )
    .await;
    let resizes = harness.ns.api::<VolumeResize>();
    let made = wait_until("the autoscaler to make a VolumeResize", 120, || async {
        let params = ListParams::default().labels(&format!("{LABEL_TRIGGER}=autoscale"));
        resizes.list(&params).await.ok()?.items.into_iter().next()
    })
    .await
    .unwrap();
    let grow = wait_phase(&harness, &made.name_any(), 240).await;
    assert_eq!(grow.phase(), Phase::Succeeded, "{:?}", grow.status);
    assert_eq!(grow.spec.volumes[0].size, "384Mi", "320Mi + 20%");
    let status: VolumeAutoscaler = harness
        .wait_object(
            "db",
            "the grow recorded with the usage read",
            60,
            |vas: &VolumeAutoscaler| {
                vas.status
                    .as_ref()
                    .and_then(|s| s.volumes.first())
                    .is_some_and(|v| v.last_resize.is_some())
            },
        )
        .await;
    let volume = &status.status.unwrap().volumes[0];
    let used = volume
        .replicas
        .first()
        .and_then(|r| r.used_bytes)
        .unwrap_or_default();
    assert!(used >= 170 * MI, "the usage Prometheus reported: {volume:?}");
    assert_nothing_lost(&harness, 1, &seeds).await;
    harness.finish().await;
    probe.finish().await;
}

/// A Prometheus that does not answer (nothing listens at the URL): usage is unknown, nothing grows,
/// and the autoscaler's status says why, naming the URL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_prometheus_is_named_in_the_autoscalers_status() {
    let url = format!("http://127.0.0.1:{}", free_port());
    let options = OperatorOptions {
        usage_prometheus: Some(PrometheusSettings::new(&url, None, None).unwrap()),
        ..OperatorOptions::default()
    };
    let harness = Harness::start_without_and("vas-prom-down", &[Feature::KubeletStats], options).await;
    writer_with(&harness, 1, CLASS_BLOCK, "64Mi", 1 << 10, 0).await;
    create_autoscaler(
        &harness,
        "db",
        json!({"statefulSetName": "db", "volumes": [{"name": "data", "threshold": 60, "maxSize": "1Gi"}]}),
    )
    .await;
    let said: VolumeAutoscaler = harness
        .wait_object(
            "db",
            "the autoscaler to say why usage is unknown",
            60,
            |vas: &VolumeAutoscaler| {
                vas.status
                    .as_ref()
                    .and_then(|s| s.volumes.first())
                    .is_some_and(|v| v.state.as_deref() == Some("UsageUnknown") && v.message.is_some())
            },
        )
        .await;
    let volume = &said.status.unwrap().volumes[0];
    let message = volume.message.as_deref().unwrap_or_default();
    assert!(
        message.contains("Prometheus did not answer") && message.contains(&url),
        "{message}"
    );
    let resizes = harness
        .ns
        .api::<VolumeResize>()
        .list(&ListParams::default())
        .await
        .unwrap();
    assert!(resizes.items.is_empty(), "nothing grows on unknown usage");
    harness.finish().await;
}
