//! Deleting a VolumeResize in the middle of a copy stops it at a safe point: the StatefulSet is
//! whole, every replica runs on a volume with its data (new or old), and nothing is leaked.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use ferry_api::names::FINALIZER;
use ferry_testenv::fixtures::{stateful_set, wait_ready};
use ferry_testenv::{CLASS_FIXED, wait_until};
use k8s_openapi::api::apps::v1::StatefulSet;
use kube::ResourceExt;
use kube::api::DeleteParams;
use serde_json::json;
use support::Harness;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_running_copy_stops_at_a_safe_point() {
    let harness = Harness::start("copy-deleted").await;
    let seeded = harness
        .seeded(stateful_set("db", 3, CLASS_FIXED, "256Mi"), &["data"], 40)
        .await;

    harness
        .create_resize(
            "copy",
            json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "512Mi"}]}),
        )
        .await;
    let api = harness.ns.api::<ferry_api::VolumeResize>();
    // Delete once the second replica's copy is under way.
    let running = wait_until("replica 1's copy to start", 120, || async {
        let resize = api.get_opt("copy").await.ok().flatten()?;
        let started = resize
            .status
            .as_ref()?
            .plan
            .iter()
            .any(|row| row.replica == 1 && row.step.is_some());
        started.then_some(resize)
    })
    .await
    .unwrap();
    assert!(
        running.finalizers().iter().any(|f| f == FINALIZER),
        "a running resize holds a finalizer"
    );
    api.delete("copy", &DeleteParams::default()).await.unwrap();
    wait_until("the VolumeResize to be gone", 120, || async {
        api.get_opt("copy").await.ok()?.is_none().then_some(())
    })
    .await
    .unwrap();

    wait_ready(&harness.ns.api::<StatefulSet>(), "db", 3, 60)
        .await
        .unwrap();
    harness.assert_data_intact(&seeded).await;
    harness.assert_nothing_leaked(3).await;
    harness.finish().await;
}
