//! The disruption oracle itself (support/disruption.rs): it catches two members down at once,
//! names them, does not count a member that only restarts alone, and counts each member's outages.

use crate::support::Harness;
use crate::support::disruption::DisruptionOracle;
use ferry_testenv::CLASS_FIXED;
use ferry_testenv::fixtures::stateful_set;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;

const HOLD: &str = "ferry.dev/test-hold";

/// Waits (on a watch) until `pod` is back as a new pod, Ready.
async fn back(pods: &Api<Pod>, pod: &str, old_uid: &str) {
    let old_uid = old_uid.to_string();
    let replaced = kube::runtime::wait::await_condition(pods.clone(), pod, move |pod: Option<&Pod>| {
        pod.is_some_and(|pod| {
            pod.uid().as_deref() != Some(old_uid.as_str()) && ferry_engine::pods::ready(pod)
        })
    });
    tokio::time::timeout(std::time::Duration::from_secs(120), replaced)
        .await
        .expect("the pod back within 2 minutes")
        .unwrap();
}

/// Puts (or takes off) a finalizer that keeps `pod` terminating once deleted.
async fn hold(pods: &Api<Pod>, pod: &str, on: bool) {
    let finalizers: Vec<&str> = if on { vec![HOLD] } else { vec![] };
    pods.patch(
        pod,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": finalizers}})),
    )
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_oracle_names_two_members_down_at_once_and_not_one() {
    let harness = Harness::start("oracle").await;
    harness
        .healthy_stateful_set(stateful_set("db", 3, CLASS_FIXED, "1Gi"))
        .await;
    let pods: Api<Pod> = harness.ns.api();

    // One member down (held terminating, then let go): within what one allows.
    let uids = harness.pod_uids("db").await;
    let oracle = DisruptionOracle::start(pods.clone(), "db", 3).await;
    hold(&pods, "db-2", true).await;
    pods.delete("db-2", &DeleteParams::default()).await.unwrap();
    hold(&pods, "db-2", false).await;
    back(&pods, "db-2", &uids["db-2"]).await;
    let one = oracle.assert_at_most(1).await;
    assert_eq!(one.most, 1, "the restart was seen: {one:?}");
    assert_eq!(one.outages.keys().collect::<Vec<_>>(), ["db-2"], "{one:?}");
    assert_eq!(one.outages["db-2"].len(), 1, "one outage: {one:?}");

    // Two members held terminating at once: the oracle sees both, whatever the timing.
    let uids = harness.pod_uids("db").await;
    let oracle = DisruptionOracle::start(pods.clone(), "db", 3).await;
    for pod in ["db-0", "db-1"] {
        hold(&pods, pod, true).await;
        pods.delete(pod, &DeleteParams::default()).await.unwrap();
    }
    for pod in ["db-0", "db-1"] {
        hold(&pods, pod, false).await;
    }
    for pod in ["db-0", "db-1"] {
        back(&pods, pod, &uids[pod]).await;
    }
    let two = oracle.finish().await;
    assert_eq!(two.most, 2, "{two:?}");
    assert_eq!(two.pods, ["db-0", "db-1"], "{two:?}");

    // One member restarted twice, alone: within one at a time, and still named.
    let oracle = DisruptionOracle::start(pods.clone(), "db", 3).await;
    for _ in 0..2 {
        let uid = harness.pod_uids("db").await["db-2"].clone();
        pods.delete("db-2", &DeleteParams::default()).await.unwrap();
        back(&pods, "db-2", &uid).await;
    }
    let twice = oracle.finish().await;
    assert_eq!(twice.most, 1, "{twice:?}");
    assert_eq!(twice.outages["db-2"].len(), 2, "{twice:?}");
    let said = twice.beyond("db", ferry_testenv::disruption::Allowed::at_once(1));
    assert!(
        said.as_deref()
            .is_some_and(|said| said.contains("db-2 went down 2 times")),
        "{said:?}"
    );
}
