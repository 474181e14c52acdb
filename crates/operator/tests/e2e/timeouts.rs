//! Every wait of a run is bounded (issue 56, items 4 and 5), on the real node: a replica held down
//! for a driver that grows only unused volumes and then keeps failing comes back at the default
//! timeout (a user's resize sets none), a second replica lost meanwhile brings the StatefulSet back
//! at once, and a forced resize whose down replica never becomes Ready ends at its timeout and
//! frees the StatefulSet for the next resize.

use crate::real_node::{assert_nothing_lost, wait_phase, writer, writer_with_unready_marker};
use crate::support::disruption::DisruptionOracle;
use crate::support::{Harness, OperatorOptions};
use ferry_api::condition::{REASON_REPLICA_NOT_READY, REASON_VOLUME_NOT_GROWN, TIMED_OUT};
use ferry_api::{Phase, RowStep, VolumeResize};
use ferry_testenv::disruption::Allowed;
use ferry_testenv::fixtures::wait_ready;
use ferry_testenv::workload::{acks_dir, df_bytes};
use ferry_testenv::{CLASS_BLOCK, CSI_DRIVER, REAL_ZONES};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::storage::v1::StorageClass;
use kube::runtime::wait::await_condition;
use kube::{Api, ResourceExt};
use serde_json::json;
use std::time::Duration;

const MI: u64 = 1 << 20;

/// A class of the real node's driver that grows a volume only while no pod uses it, and then
/// fails (UNAVAILABLE, retried for ever: `expansionFault: unused`), named after the test's
/// namespace (cluster-scoped: tests beside it never share it). Its name.
async fn never_growing_class(harness: &Harness) -> String {
    let name = format!("{}-never-grows", harness.ns.name);
    let class: StorageClass = serde_json::from_value(json!({
        "metadata": {"name": name},
        "provisioner": CSI_DRIVER,
        "parameters": {"expansion": "offline", "csi.storage.k8s.io/fstype": "xfs", "expansionFault": "unused"},
        "reclaimPolicy": "Delete",
        "allowVolumeExpansion": true,
        "volumeBindingMode": "WaitForFirstConsumer",
        "allowedTopologies": [{"matchLabelExpressions": [
            {"key": "topology.kubernetes.io/zone", "values": REAL_ZONES}
        ]}],
    }))
    .unwrap();
    Api::<StorageClass>::all(harness.client.clone())
        .create(&Default::default(), &class)
        .await
        .unwrap();
    name
}

async fn delete_class(harness: &Harness, name: &str) {
    Api::<StorageClass>::all(harness.client.clone())
        .delete(name, &Default::default())
        .await
        .unwrap();
}

/// Watches the VolumeResize `name` until `done`, at most `seconds`; a timeout panics saying where
/// it stood.
async fn watch_resize(
    harness: &Harness,
    name: &str,
    seconds: u64,
    done: impl Fn(&VolumeResize) -> bool,
) -> VolumeResize {
    let waited = tokio::time::timeout(
        Duration::from_secs(seconds),
        await_condition(harness.ns.api(), name, move |r: Option<&VolumeResize>| {
            r.is_some_and(&done)
        }),
    )
    .await;
    match waited {
        Ok(Ok(Some(resize))) => resize,
        other => panic!("{name}: {other:?}\n{}", harness.describe_resize(name).await),
    }
}

/// Watches pod `name` until `done`, at most `seconds`.
async fn watch_pod(harness: &Harness, name: &str, seconds: u64, done: impl Fn(Option<&Pod>) -> bool) {
    let waited = tokio::time::timeout(
        Duration::from_secs(seconds),
        await_condition(harness.ns.api::<Pod>(), name, done),
    )
    .await;
    assert!(
        matches!(waited, Ok(Ok(_))),
        "pod {name}: {waited:?}\n{}",
        harness.explain().await
    );
}

fn ready(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The `TimedOut` condition's reason and message.
fn timed_out(resize: &VolumeResize) -> (String, String) {
    let found = resize
        .condition(TIMED_OUT)
        .unwrap_or_else(|| panic!("no TimedOut condition: {:?}", resize.status));
    assert_eq!(found.status, "True");
    (found.reason.clone(), found.message.clone())
}

/// A user's resize, no `timeoutSeconds`, on a driver that grows only unused volumes and then
/// keeps failing: db-0 is stopped (its StatefulSet deleted, orphan-style) for its volume to grow,
/// and at the operator's default timeout (shortened here to 30 s) the StatefulSet is back, db-0
/// runs Ready again on its old volume with every acknowledged record, and the resize is Failed
/// saying why. Before the fix it held db-0 down for ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_held_down_for_a_driver_that_keeps_failing_comes_back_at_the_default_timeout() {
    let options = OperatorOptions {
        default_timeout_seconds: Some(30),
        ..OperatorOptions::default()
    };
    let harness = Harness::start_without_and("timeout-held", &[], options).await;
    let class = never_growing_class(&harness).await;
    let seeds = writer(&harness, 2, &class, "320Mi").await;
    let before = harness.pod_uids("db").await;
    let oracle = DisruptionOracle::start(harness.ns.api(), "db", 2).await;
    let created = harness
        .create_resize(
            "grow",
            json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "480Mi"}]}),
        )
        .await;
    assert_eq!(created.spec.timeout_seconds, None, "the user set no timeout");
    let resize = wait_phase(&harness, "grow", 300).await;
    let status = resize.status.clone().unwrap();
    assert_eq!(status.phase, Some(Phase::Failed), "{:?}", status.message);
    oracle.assert_at_most(1).await;
    let (reason, message) = timed_out(&resize);
    assert_eq!(reason, REASON_VOLUME_NOT_GROWN);
    assert!(
        message.contains("data-db-0 did not reach 480Mi within timeoutSeconds (30 s")
            && message.contains("replica(s) 0, stopped for the driver to grow their volume while unused, start again on their old volume"),
        "{message}"
    );
    let row = &status.plan[0];
    assert_eq!(row.refused_in_use, Some(true), "{row:?}");
    assert_eq!(row.restarted_pod.as_ref(), before.get("db-0"), "db-0 was stopped");
    let took = status.finished_at.unwrap().0.as_second() - row.started_at.as_ref().unwrap().0.as_second();
    assert!(took > 30, "ended after {took} s, not at the default timeout");
    let sets = harness.ns.api::<StatefulSet>();
    wait_ready(&sets, "db", 2, 180).await.unwrap();
    assert_ne!(harness.pod_uids("db").await.get("db-0"), before.get("db-0"));
    let size = df_bytes(&harness.ns.name, "db-0", "/data").await.unwrap();
    assert!(size <= 320 * MI, "db-0 runs on its old volume: df size {size}");
    assert_nothing_lost(&harness, 2, &seeds).await;
    delete_class(&harness, &class).await;
    harness.finish().await;
}

/// While db-0 is held down (no StatefulSet) for a volume that does not grow, db-1's pod is
/// deleted: the StatefulSet comes back at once and re-creates it, long before the resize's
/// timeout; before the fix db-1 stayed gone until then (or for ever, without one). Deleting the
/// resize then leaves the StatefulSet whole with every record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_replica_lost_while_one_is_held_down_brings_the_stateful_set_back() {
    let harness = Harness::start("timeout-lost").await;
    let class = never_growing_class(&harness).await;
    let seeds = writer(&harness, 2, &class, "320Mi").await;
    // The test takes db-1 down while db-0 is held down.
    harness.allow_disruption(Allowed { at_once: 2, each: 1 });
    let before = harness.pod_uids("db").await;
    harness
        .create_resize(
            "grow",
            json!({"statefulSetName": "db", "timeoutSeconds": 600, "volumes": [{"name": "data", "size": "480Mi"}]}),
        )
        .await;
    watch_resize(&harness, "grow", 180, |resize| {
        resize.status.as_ref().is_some_and(|s| {
            s.plan
                .iter()
                .any(|row| row.replica == 0 && row.step == Some(RowStep::RestartingPod))
        })
    })
    .await;
    let db0 = before.get("db-0").cloned();
    watch_pod(&harness, "db-0", 120, |pod| pod.is_none_or(|p| p.uid() != db0)).await;
    let sets = harness.ns.api::<StatefulSet>();
    assert!(
        sets.get_opt("db").await.unwrap().is_none(),
        "db-0 is held down with no StatefulSet"
    );
    let pods = harness.ns.api::<Pod>();
    pods.delete("db-1", &Default::default()).await.unwrap();
    let db1 = before.get("db-1").cloned();
    watch_pod(&harness, "db-1", 120, |pod| {
        pod.is_some_and(|p| p.uid() != db1 && ready(p))
    })
    .await;
    let resize = harness.ns.api::<VolumeResize>().get("grow").await.unwrap();
    assert!(
        !resize.phase().is_terminal(),
        "db-1 came back while the resize went on, not at its end: {:?}",
        resize.status
    );
    // Stopped: it lets go once the StatefulSet is whole.
    harness
        .ns
        .api::<VolumeResize>()
        .delete("grow", &Default::default())
        .await
        .unwrap();
    watch_resize_gone(&harness, "grow", 180).await;
    wait_ready(&sets, "db", 2, 180).await.unwrap();
    assert_nothing_lost(&harness, 2, &seeds).await;
    delete_class(&harness, &class).await;
    harness.finish().await;
}

/// Watches until the VolumeResize `name` is gone, at most `seconds`.
async fn watch_resize_gone(harness: &Harness, name: &str, seconds: u64) {
    let waited = tokio::time::timeout(
        Duration::from_secs(seconds),
        await_condition(
            harness.ns.api::<VolumeResize>(),
            name,
            |r: Option<&VolumeResize>| r.is_none(),
        ),
    )
    .await;
    assert!(
        matches!(waited, Ok(Ok(_))),
        "{name} not gone: {waited:?}\n{}",
        harness.describe_resize(name).await
    );
}

/// A forced resize (as a rescue is) started with db-1 down, which never becomes Ready (its
/// readiness marker stays): its volumes grow, and at the operator's default timeout (shortened
/// here to 30 s; an online growth takes seconds) the resize ends Failed saying db-1 was not Ready,
/// instead of waiting, and holding the StatefulSet, for ever. The next resize of the StatefulSet is
/// not blocked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forced_resize_whose_down_replica_never_becomes_ready_ends_at_the_timeout() {
    let options = OperatorOptions {
        default_timeout_seconds: Some(30),
        ..OperatorOptions::default()
    };
    let harness = Harness::start_without_and("timeout-unready", &[], options).await;
    let seeds = writer_with_unready_marker(&harness, 2, CLASS_BLOCK, "320Mi", 8 << 10).await;
    let marker = acks_dir(&harness.ns.name).join("db-1.unready");
    std::fs::write(&marker, b"").unwrap();
    watch_pod(&harness, "db-1", 60, |pod| pod.is_some_and(|p| !ready(p))).await;
    harness
        .create_resize(
            "rescue",
            json!({"statefulSetName": "db", "force": true, "volumes": [{"name": "data", "size": "400Mi"}]}),
        )
        .await;
    let resize = wait_phase(&harness, "rescue", 240).await;
    let status = resize.status.clone().unwrap();
    assert_eq!(status.phase, Some(Phase::Failed), "{:?}", status.message);
    let (reason, message) = timed_out(&resize);
    assert_eq!(reason, REASON_REPLICA_NOT_READY);
    assert!(
        message.starts_with("replica(s) 1 not Ready within timeoutSeconds (30 s)"),
        "{message}"
    );
    // db-1 serves again; the next resize takes the StatefulSet and runs to its end.
    std::fs::remove_file(&marker).unwrap();
    harness
        .create_resize(
            "grow",
            json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "480Mi"}]}),
        )
        .await;
    let next = wait_phase(&harness, "grow", 240).await;
    let next = next.status.unwrap();
    assert_eq!(next.phase, Some(Phase::Succeeded), "{:?}", next.message);
    for pod in ["db-0", "db-1"] {
        let size = df_bytes(&harness.ns.name, pod, "/data").await.unwrap();
        assert!(size > 400 * MI && size <= 480 * MI, "{pod}: df size {size}");
    }
    assert_nothing_lost(&harness, 2, &seeds).await;
    harness.finish().await;
}
