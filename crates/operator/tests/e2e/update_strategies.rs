//! StatefulSets under the update strategies Kubernetes added lately, on the real node with
//! writers: `Recreate` (alpha in v1.37 behind `StatefulSetRecreateStrategy`, which the test bed
//! switches on; beta from v1.38) deletes every pod of an old revision before it makes new ones, and
//! `RollingUpdate.maxUnavailable` (on by default from v1.37) lets the controller take several
//! replicas down at once. Ferry's own stops stay one replica at a time, and its re-created
//! StatefulSet keeps the strategy: if the controller took the re-created StatefulSet's pods for
//! another revision, `Recreate` would delete them all at once.

use crate::real_node::{assert_nothing_lost, resize_succeeds, writer_shaped};
use crate::support::Harness;
use ferry_api::ChosenStrategy;
use ferry_testenv::workload::writer_stateful_set;
use ferry_testenv::{CLASS_BLOCK, CLASS_BLOCK_FIXED};
use k8s_openapi::api::apps::v1::StatefulSet;
use kube::Api;
use kube::api::PostParams;
use serde_json::json;

/// The API server's minor version (37 for v1.37.2).
async fn server_minor(harness: &Harness) -> u32 {
    let info = harness.client.apiserver_version().await.unwrap();
    info.minor.trim_end_matches('+').parse().unwrap()
}

/// The update strategy of the StatefulSet `db` as the API server has it.
async fn update_strategy(harness: &Harness) -> serde_json::Value {
    let sets: Api<StatefulSet> = harness.ns.api();
    let set = sets.get("db").await.unwrap();
    serde_json::to_value(set.spec.unwrap().update_strategy).unwrap()
}

/// Before v1.37 the API server has no `Recreate`: it refuses the StatefulSet, and there is nothing
/// for Ferry to do. Returns true when the server takes it.
async fn recreate_is_served(harness: &Harness) -> bool {
    if server_minor(harness).await >= 37 {
        return true;
    }
    let sets: Api<StatefulSet> = harness.ns.api();
    let mut set =
        writer_stateful_set("db", 1, &[("data", CLASS_BLOCK, "320Mi")], &harness.ns.name, 0, 0).unwrap();
    set.spec.as_mut().unwrap().update_strategy = serde_json::from_value(json!({"type": "Recreate"})).unwrap();
    let refused = sets.create(&PostParams::default(), &set).await.unwrap_err();
    assert!(refused.to_string().contains("Recreate"), "{refused}");
    false
}

/// A StatefulSet that updates by `Recreate` is grown in place (no replica stops) and then copied
/// onto another class one replica at a time (the harness's oracle: never two down, each down once),
/// losing no acknowledged write; it keeps its strategy through Ferry's re-create.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateful_set_updated_by_recreate_is_grown_and_copied_one_replica_at_a_time() {
    let harness = Harness::start("strategy-recreate").await;
    if !recreate_is_served(&harness).await {
        harness.finish().await;
        return;
    }
    let recreate = json!({"type": "Recreate"});
    let seeds = writer_shaped(&harness, 2, CLASS_BLOCK, "320Mi", 8 << 10, 0, |set| {
        set.spec.as_mut().unwrap().update_strategy = serde_json::from_value(recreate.clone()).unwrap();
    })
    .await;
    let before = harness.pod_uids("db").await;

    let grown = resize_succeeds(
        &harness,
        "grow",
        json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "480Mi"}]}),
        180,
    )
    .await;
    assert!(
        grown
            .plan
            .iter()
            .all(|row| row.strategy == Some(ChosenStrategy::InPlace))
    );
    assert_eq!(
        harness.pod_uids("db").await,
        before,
        "an online growth restarts nobody"
    );

    let copied = resize_succeeds(
        &harness,
        "move",
        json!({"statefulSetName": "db", "volumes": [
            {"name": "data", "size": "480Mi", "storageClassName": CLASS_BLOCK_FIXED}
        ]}),
        300,
    )
    .await;
    assert!(
        copied
            .plan
            .iter()
            .all(|row| row.strategy == Some(ChosenStrategy::Copy))
    );
    assert_eq!(update_strategy(&harness).await, recreate);
    assert_nothing_lost(&harness, 2, &seeds).await;
    harness.finish().await;
}

/// `maxUnavailable: 2` lets the StatefulSet controller take two of three replicas down in a
/// rollout; Ferry does not take it as leave to copy two at once: one replica at a time (the
/// harness's oracle), and the StatefulSet keeps its `maxUnavailable` through the re-create.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_stops_one_replica_at_a_time_whatever_max_unavailable_allows() {
    let harness = Harness::start("strategy-maxunavail").await;
    let rolling = json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2, "partition": 0}});
    let seeds = writer_shaped(&harness, 3, CLASS_BLOCK, "320Mi", 8 << 10, 0, |set| {
        set.spec.as_mut().unwrap().update_strategy = serde_json::from_value(rolling.clone()).unwrap();
    })
    .await;
    resize_succeeds(
        &harness,
        "move",
        json!({"statefulSetName": "db", "volumes": [
            {"name": "data", "size": "320Mi", "storageClassName": CLASS_BLOCK_FIXED}
        ]}),
        300,
    )
    .await;
    assert_eq!(update_strategy(&harness).await, rolling);
    assert_nothing_lost(&harness, 3, &seeds).await;
    harness.finish().await;
}
