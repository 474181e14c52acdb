//! The operator killed during a copy, at several kinds of step, and started afresh each time: the
//! resize completes with the data intact and nothing leaked. (Every single action is covered by the
//! planner simulation in ferry-engine; this is the representative set on the real control plane.)

use crate::support;

use ferry_api::Phase;
use ferry_testenv::fixtures::{stateful_set, wait_ready};
use ferry_testenv::{CLASS_FIXED, wait_until};
use k8s_openapi::api::apps::v1::StatefulSet;
use serde_json::json;
use support::Harness;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_completes_after_the_operator_is_killed_at_each_kind_of_step() {
    let mut harness = Harness::start("copy-killed").await;
    let seeded = harness
        .seeded(stateful_set("db", 2, CLASS_FIXED, "256Mi"), &["data"], 40)
        .await;

    harness
        .create_resize(
            "copy",
            json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "512Mi"}]}),
        )
        .await;
    // Kill the operator the first time each of a copy's steps shows up in the status.
    let (resize, killed_at) = harness
        .finish_killing_at_each_step("copy", &Harness::COPY_STEPS, 240)
        .await;
    assert_eq!(
        resize.phase(),
        Phase::Succeeded,
        "{:?}",
        resize.status.and_then(|s| s.message)
    );
    assert!(
        killed_at.len() >= 4,
        "the operator was killed at several kinds of step: {killed_at:?}"
    );

    wait_ready(&harness.ns.api::<StatefulSet>(), "db", 2, 60)
        .await
        .unwrap();
    harness.assert_data_intact(&seeded).await;
    wait_until("mover pods to be gone", 30, || async {
        harness.mover_pods().await.ok()?.is_empty().then_some(())
    })
    .await
    .unwrap();
    harness.assert_nothing_leaked(2).await;
    harness.finish().await;
}
