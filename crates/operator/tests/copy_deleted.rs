//! Deleting a VolumeResize in the middle of a copy stops it at a safe point: the StatefulSet is
//! whole, every replica runs on a volume with its data (new or old), and nothing is leaked.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use ferry_api::names::FINALIZER;
use ferry_testenv::fixtures::{claim_directory, stateful_set, tree_checksum, wait_ready, write_sample_data};
use ferry_testenv::{CLASS_FIXED, MOVER_LABEL, wait_until};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use support::Harness;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_running_copy_stops_at_a_safe_point() {
    let harness = Harness::start("copy-deleted").await;
    let sets: Api<StatefulSet> = harness.ns.api();
    sets.create(
        &PostParams::default(),
        &stateful_set("db", 3, CLASS_FIXED, "256Mi"),
    )
    .await
    .unwrap();
    wait_ready(&sets, "db", 3, 120).await.unwrap();
    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    let volumes: Api<PersistentVolume> = Api::all(harness.client.clone());
    let mut sums = Vec::new();
    for replica in 0..3 {
        let claim = format!("data-db-{replica}");
        let dir = claim_directory(&claims, &volumes, &claim).await.unwrap();
        write_sample_data(&dir, 40).unwrap();
        sums.push((claim, tree_checksum(&dir).unwrap()));
    }

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

    wait_ready(&sets, "db", 3, 60).await.unwrap();
    for (claim, sum) in &sums {
        let dir = claim_directory(&claims, &volumes, claim).await.unwrap();
        assert_eq!(&tree_checksum(&dir).unwrap(), sum, "{claim}: data intact");
    }
    let names: Vec<String> = claims
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|c| c.name_any())
        .collect();
    assert_eq!(names.len(), 3, "no temporary claim left: {names:?}");
    let movers = harness
        .ns
        .api::<Pod>()
        .list(&ListParams::default().labels(MOVER_LABEL))
        .await
        .unwrap();
    assert!(movers.items.is_empty(), "no mover pod left");
    harness.finish().await;
}
