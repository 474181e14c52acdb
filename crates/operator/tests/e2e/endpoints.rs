//! The operator's /healthz, /readyz and /metrics, served while it reconciles; every metric the
//! Helm chart's Grafana dashboard queries is on the page.

use crate::support;

use ferry_operator::{Settings, run};
use ferry_testenv::CLASS_EXPANDABLE;
use ferry_testenv::fixtures::stateful_set;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Pod;
use serde_json::json;
use support::install_crd;

#[path = "../common/dashboard.rs"]
mod dashboard;

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
    let (identity, operator_client) = support::chart_identity(&ns.name).await;
    let operator = tokio::spawn(run(operator_client, settings));
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
    // Families are declared before their first sample (no resize has finished here).
    for family in [
        "ferry_copied_bytes",
        "ferry_replica_downtime_seconds",
        "ferry_volume_resizes",
    ] {
        assert!(
            metrics.contains(&format!("# HELP {family} ")),
            "{family} registered: {metrics}"
        );
    }
    assert!(
        metrics.contains("ferry_volume_resize_reconcile_duration_seconds_count"),
        "{metrics}"
    );
    // The standard process metrics, read from /proc at each scrape.
    for sample in [
        "\nprocess_cpu_seconds_total ",
        "\nprocess_resident_memory_bytes ",
        "\nprocess_open_fds ",
        "\nprocess_start_time_seconds ",
    ] {
        assert!(metrics.contains(sample), "{sample:?} in {metrics}");
    }
    // Without leader election the controllers run at once: this replica leads.
    assert!(metrics.contains("\nferry_leader 1\n"), "{metrics}");

    // A resize waiting for its StatefulSet (pods that no node accepts are never Ready) is in
    // flight, Pending; the one whose StatefulSet is missing failed and is not.
    let sets: kube::Api<StatefulSet> = ns.api();
    let pods: kube::Api<Pod> = ns.api();
    ferry_testenv::fixtures::create_unschedulable(
        &sets,
        &pods,
        stateful_set("db", 1, CLASS_EXPANDABLE, "1Gi"),
    )
    .await
    .unwrap();
    let waiting = serde_json::from_value(json!({
        "apiVersion": "ferry.dev/v1alpha1", "kind": "VolumeResize", "metadata": {"name": "waits"},
        "spec": {"statefulSetName": "db", "volumes": [{"name": "data", "size": "2Gi"}]},
    }))
    .unwrap();
    api.create(&Default::default(), &waiting).await.unwrap();
    let in_flight = format!(
        "\nferry_volume_resizes_in_flight{{namespace=\"{}\",phase=\"Pending\"}} 1\n",
        ns.name
    );
    let metrics = ferry_testenv::wait_until("the waiting resize in flight", 60, || async {
        let (code, body) = get(&format!("{base}/metrics")).await;
        (code == 200 && body.contains(&in_flight)).then_some(body)
    })
    .await
    .unwrap();
    assert!(
        !metrics.contains("phase=\"Failed\""),
        "finished resizes are not in flight: {metrics}"
    );

    // Every metric the chart's Grafana dashboard queries is declared on the live page.
    let board = dashboard::load().unwrap();
    let queries = dashboard::queries(&board);
    assert!(queries.len() >= 20, "the dashboard's queries: {queries:#?}");
    let queried = dashboard::series_names(&queries);
    assert!(queried.len() >= 15, "the dashboard's metrics: {queried:?}");
    let missing = dashboard::missing(&queried, &metrics);
    assert!(
        missing.is_empty(),
        "the dashboard queries {missing:?}, which /metrics does not declare:\n{metrics}"
    );
    operator.abort();
    ferry_testenv::chart::remove_identity(&identity).await.unwrap();
    ns.cleanup().await.unwrap();
}
