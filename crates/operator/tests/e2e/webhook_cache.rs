//! A webhook replica that has just started has not synced its VolumeResize cache: an empty cache
//! then looks like "no resize runs". The guard against re-creating a StatefulSet mid-swap must
//! not answer from it: it lists from the real API server instead, and refuses (retryably) when
//! it cannot.

use crate::triggers::post;
use ferry_api::VolumeResize;
use ferry_operator::context::Context;
use ferry_operator::metrics::Metrics;
use ferry_operator::resize_cache::Resizes;
use ferry_operator::webhook::server::{VALIDATE_STATEFUL_SET_CREATES, router};
use ferry_testenv::{TestNamespace, client};
use kube::api::PostParams;
use kube::runtime::reflector;
use kube::{Client, CustomResourceExt};
use serde_json::{Value, json};
use std::sync::Arc;

/// Serves the webhook routes over plain HTTP on loopback, with a VolumeResize cache that never
/// syncs; returns the create-validation URL.
async fn unsynced_webhook(client: Client) -> (String, tokio::task::JoinHandle<()>) {
    let (store, _writer) = reflector::store();
    let ctx = Context::new(
        client,
        Arc::new(Metrics::default()),
        Resizes::new(vec![store]),
        "ferry.local/ferry:dev".into(),
        None,
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://{}{VALIDATE_STATEFUL_SET_CREATES}",
        listener.local_addr().unwrap()
    );
    let server = tokio::spawn(async move {
        axum::serve(listener, router(Arc::new(ctx))).await.unwrap();
    });
    (url, server)
}

/// The admission answer to creating StatefulSet `name` in `namespace`: (allowed, message).
async fn create_review(url: &str, namespace: &str, name: &str) -> (bool, String) {
    let review = json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": "7f0b2c1e-0000-4000-8000-000000000001",
            "kind": {"group": "apps", "version": "v1", "kind": "StatefulSet"},
            "resource": {"group": "apps", "version": "v1", "resource": "statefulsets"},
            "name": name, "namespace": namespace, "operation": "CREATE", "userInfo": {},
            "object": {
                "apiVersion": "apps/v1", "kind": "StatefulSet",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"selector": {"matchLabels": {"app": name}}, "serviceName": name,
                    "template": {"metadata": {"labels": {"app": name}},
                        "spec": {"containers": [{"name": "app", "image": "i"}]}}},
            },
        },
    });
    let (code, body) = post(url, "application/json", serde_json::to_vec(&review).unwrap()).await;
    assert_eq!(code, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    let response = &answer["response"];
    (
        response["allowed"].as_bool().unwrap(),
        response["status"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsynced_cache_never_allows_a_create_mid_resize() {
    let client = client().await.unwrap();
    ferry_testenv::cluster::install_crd(&client, &VolumeResize::crd())
        .await
        .unwrap();
    let ns = TestNamespace::create(&client, "wh-unsynced").await.unwrap();
    // A VolumeResize on db that has not finished (no operator runs here: it stays so).
    let resize: VolumeResize = serde_json::from_value(json!({
        "apiVersion": "ferry.dev/v1alpha1", "kind": "VolumeResize",
        "metadata": {"name": "grow"},
        "spec": {"statefulSetName": "db", "volumes": [{"name": "data", "size": "2Gi"}]},
    }))
    .unwrap();
    ns.api::<VolumeResize>()
        .create(&PostParams::default(), &resize)
        .await
        .unwrap();

    let (url, server) = unsynced_webhook(client.clone()).await;
    let (allowed, message) = create_review(&url, &ns.name, "db").await;
    assert!(!allowed, "a create of db while VolumeResize grow runs");
    assert!(message.contains("VolumeResize grow"), "{message}");
    let (allowed, message) = create_review(&url, &ns.name, "web").await;
    assert!(allowed, "no resize runs on web: {message}");
    server.abort();

    // An identity that may not list VolumeResizes: unsure, so refused with a retryable message.
    let nobody = ferry_testenv::chart::client_as("system:serviceaccount:default:nobody")
        .await
        .unwrap();
    let (url, server) = unsynced_webhook(nobody).await;
    let (allowed, message) = create_review(&url, &ns.name, "web").await;
    assert!(!allowed, "never allowed on a guess");
    assert!(
        message.contains("cannot tell yet") && message.contains("try again"),
        "{message}"
    );
    server.abort();
    ns.cleanup().await.unwrap();
}
