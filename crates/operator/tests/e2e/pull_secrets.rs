//! `--mover-image-pull-secrets` (chart `mover.imagePullSecrets`) reaches the pods the operator
//! makes: a shrink's first pod (it measures the data in use) names the Secrets to pull with.

use crate::support::Harness;
use ferry_operator::{Settings, run};
use ferry_testenv::CLASS_EXPANDABLE;
use ferry_testenv::fixtures::stateful_set;
use ferry_testenv::wait_until;
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mover_pods_name_the_operators_pull_secrets() {
    let harness = Harness::start_bare("pull-secrets").await;
    let ns = harness.ns.name.clone();
    let settings = Settings {
        namespaces: vec![ns.clone()],
        mover_image: Some(ferry_testenv::workload::FERRY_IMAGE.to_string()),
        mover_image_pull_secrets: vec!["registry-a".to_string(), "registry-b".to_string()],
        hold_namespace: Some(ns.clone()),
        ..Settings::default()
    };
    let client = harness.client.clone();
    let operator = tokio::spawn(async move {
        if let Err(error) = run(client, settings).await {
            eprintln!("operator stopped: {error}");
        }
    });
    harness
        .healthy_stateful_set(stateful_set("db", 1, CLASS_EXPANDABLE, "1Gi"))
        .await;
    harness
        .create_resize(
            "shrink",
            json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "512Mi"}]}),
        )
        .await;
    let pods = harness.ns.api::<Pod>();
    let secrets = wait_until("the resize's first pod", 60, || async {
        let listed = pods
            .list(&ListParams::default().labels("ferry.dev/mover=true"))
            .await
            .ok()?;
        let pod = listed.items.into_iter().next()?;
        Some(pod.spec?.image_pull_secrets.unwrap_or_default())
    })
    .await
    .unwrap();
    let names: Vec<&str> = secrets.iter().map(|secret| secret.name.as_str()).collect();
    assert_eq!(names, ["registry-a", "registry-b"]);
    operator.abort();
    harness.finish().await;
}
