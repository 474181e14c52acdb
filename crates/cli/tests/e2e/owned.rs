//! `kubectl ferry plan` and `resize` given the resource of the operator that owns the StatefulSet
//! (`prometheus/NAME`), end to end: the real prometheus-operator runs its Prometheus on a real
//! node, Ferry's operator runs in-process, and the plugin resolves, plans, resizes and follows.

use crate::support::Env;
use ferry_testenv::CLASS_BLOCK;
use ferry_testenv::prometheus_operator::{
    METRICS, METRICS_STATEFUL_SET, MetricsPrometheus, running_prometheus,
};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prometheus_is_planned_and_grown_through_its_operator_by_naming_it() {
    let mut env = Env::start("cli-prom").await;
    let prometheus = MetricsPrometheus {
        class: CLASS_BLOCK,
        size: "320Mi",
        self_scrape: false,
    };
    let (operator, prometheuses) = running_prometheus(&env.client, &env.ns.name, prometheus)
        .await
        .unwrap();
    env.start_operator().await;

    // The plan names the owner, its pause switch and each field Ferry writes into it.
    let run = env
        .ferry(&[
            "plan",
            "prometheus/metrics",
            "--volume",
            "prometheus-metrics-db=640Mi",
        ])
        .await;
    assert_eq!(run.code, 0, "{run:?}");
    let expected = [
        "Plan for StatefulSet prometheus-metrics ",
        "Owned by Prometheus/metrics (monitoring.coreos.com/v1), resized through it:",
        "  paused while the volumes change: /spec/paused = true",
        "  then written: /spec/storage/volumeClaimTemplate/spec/resources/requests/storage = \"640Mi\"",
    ];
    for line in expected {
        assert!(run.stdout.contains(line), "{line:?} in {}", run.stdout);
    }
    assert!(env.resize_names().await.is_empty(), "the dry run is deleted");

    // The resize, followed to its end.
    let started = std::time::Instant::now();
    let run = env
        .ferry(&[
            "resize",
            "prometheus/metrics",
            "--volume",
            "prometheus-metrics-db",
            "--size",
            "640Mi",
            "--watch",
        ])
        .await;
    assert_eq!(
        run.code,
        0,
        "{run:?} (operator log: {})",
        operator.log().display()
    );
    eprintln!(
        "resized by naming the Prometheus in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let now = prometheuses.get(METRICS).await.unwrap();
    assert_eq!(
        now.data["spec"]["storage"]["volumeClaimTemplate"]["spec"]["resources"]["requests"]["storage"],
        json!("640Mi")
    );
    assert_eq!(now.data["spec"].get("paused"), None, "let go");
    let claim = env
        .ns
        .api::<PersistentVolumeClaim>()
        .get("prometheus-metrics-db-prometheus-metrics-0")
        .await
        .unwrap();
    let capacity = claim.status.and_then(|s| s.capacity).unwrap_or_default();
    assert_eq!(capacity.get("storage").map(|q| q.0.as_str()), Some("640Mi"));
    let sts = env
        .ns
        .api::<StatefulSet>()
        .get(METRICS_STATEFUL_SET)
        .await
        .unwrap();
    let template = &sts.spec.unwrap().volume_claim_templates.unwrap()[0];
    let requests = template
        .spec
        .as_ref()
        .and_then(|s| s.resources.as_ref())
        .and_then(|r| r.requests.clone());
    assert_eq!(
        requests.unwrap_or_default().get("storage").map(|q| q.0.as_str()),
        Some("640Mi")
    );
    let log = std::fs::read_to_string(operator.log()).unwrap_or_default();
    assert!(
        !log.contains("recreating StatefulSet"),
        "{}",
        operator.log().display()
    );
    operator.kill().await.unwrap();
    drop(operator);
    env.finish().await;
}
