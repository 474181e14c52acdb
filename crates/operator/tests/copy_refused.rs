//! A shrink below the data in use fails before anything is touched: the data is measured by a
//! read-only pod running the real mover, and the message says how much room is needed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use ferry_api::Phase;
use ferry_testenv::fixtures::{claim_directory, stateful_set, wait_ready};
use ferry_testenv::{CLASS_FIXED, wait_until};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use kube::Api;
use kube::api::PostParams;
use serde_json::json;
use support::Harness;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shrinking_below_the_data_in_use_fails_and_changes_nothing() {
    let harness = Harness::start("copy-refused").await;
    let sets: Api<StatefulSet> = harness.ns.api();
    sets.create(
        &PostParams::default(),
        &stateful_set("db", 2, CLASS_FIXED, "256Mi"),
    )
    .await
    .unwrap();
    wait_ready(&sets, "db", 2, 120).await.unwrap();
    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    let volumes: Api<PersistentVolume> = Api::all(harness.client.clone());
    // 40 MiB of real data on replica 1; the target is 32Mi.
    let dir = claim_directory(&claims, &volumes, "data-db-1").await.unwrap();
    let block: Vec<u8> = (0..(1 << 20)).map(|i| (i * 7 % 251) as u8).collect();
    for index in 0..40 {
        std::fs::write(dir.join(format!("blob-{index}")), &block).unwrap();
    }
    let before = harness.snapshot().await;

    harness
        .create_resize(
            "shrink",
            json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "32Mi"}]}),
        )
        .await;
    let resize = harness
        .wait_resize("shrink", "the shrink to be refused", |r| r.phase().is_terminal())
        .await;
    assert_eq!(resize.phase(), Phase::Failed);
    let status = resize.status.unwrap();
    let message = status.message.unwrap();
    assert!(
        message.contains("data-db-1 holds 40.") && message.contains("32Mi leaves no room"),
        "{message}"
    );
    assert!(
        !message.contains("data-db-0"),
        "replica 0 holds almost nothing: {message}"
    );
    let measured = status
        .plan
        .iter()
        .find(|row| row.claim_name == "data-db-1")
        .unwrap()
        .used_bytes
        .unwrap();
    assert!(
        (40 << 20..=41 << 20).contains(&measured),
        "measured {measured} bytes"
    );
    assert!(
        status.created_objects.backup_config_map.is_none(),
        "not even a backup was made"
    );

    // Only the measuring pods came and went.
    wait_until("the namespace to be as before", 30, || async {
        (harness.snapshot().await == before).then_some(())
    })
    .await
    .unwrap();
    harness.finish().await;
}
