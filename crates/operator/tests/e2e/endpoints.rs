//! The operator's /healthz, /readyz and /metrics, served while it reconciles.

use crate::support;

use ferry_operator::{Settings, run};
use serde_json::json;
use support::install_crd;

async fn get(url: &str) -> (u16, String) {
    let output = tokio::process::Command::new("curl")
        .args(["-s", "-w", "\\n%{http_code}", url])
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (code.parse().unwrap_or(0), body.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_readiness_and_metrics_are_served() {
    let client = ferry_testenv::client().await.unwrap();
    install_crd(&client).await;
    let ns = ferry_testenv::TestNamespace::create(&client, "endpoints")
        .await
        .unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let settings = Settings {
        namespaces: vec![ns.name.clone()],
        http_addr: Some(([127, 0, 0, 1], port).into()),
        ..Settings::default()
    };
    let operator = tokio::spawn(run(client.clone(), settings));
    let base = format!("http://127.0.0.1:{port}");

    ferry_testenv::wait_until("/readyz to turn ready", 30, || async {
        (get(&format!("{base}/readyz")).await.0 == 200).then_some(())
    })
    .await
    .unwrap();
    assert_eq!(get(&format!("{base}/healthz")).await, (200, "ok".to_string()));

    // One reconcile (a VolumeResize whose StatefulSet is missing) shows up in the metrics.
    let api: kube::Api<ferry_api::VolumeResize> = ns.api();
    let resize = serde_json::from_value(json!({
        "apiVersion": "ferry.dev/v1alpha1", "kind": "VolumeResize", "metadata": {"name": "m"},
        "spec": {"statefulSetName": "none", "volumes": [{"name": "data", "size": "1Gi"}]},
    }))
    .unwrap();
    api.create(&Default::default(), &resize).await.unwrap();
    let metrics = ferry_testenv::wait_until("reconcile metrics", 30, || async {
        let (code, body) = get(&format!("{base}/metrics")).await;
        let counted = body.contains("ferry_prechecks_total{reason=\"StatefulSetNotFound\"} 1")
            && body.contains("ferry_volume_resize_reconciles_total{outcome=\"ok\"}");
        (code == 200 && counted).then_some(body)
    })
    .await
    .unwrap();
    assert!(
        metrics.contains("ferry_volume_resize_reconciles_total{outcome=\"ok\"}"),
        "{metrics}"
    );
    // (The per-outcome family of finished resizes prints only once it has counted one.)
    for family in ["ferry_copied_bytes", "ferry_replica_downtime_seconds"] {
        assert!(
            metrics.contains(&format!("# HELP {family} ")),
            "{family} registered: {metrics}"
        );
    }
    assert!(
        metrics.contains("ferry_volume_resize_reconcile_duration_seconds_count"),
        "{metrics}"
    );
    operator.abort();
    ns.cleanup().await.unwrap();
}
