//! Availability on the real node: a copy never stops a replica while another is down or while a
//! PodDisruptionBudget allows no disruption; it waits for the others to be Ready and for the budget
//! (the rows the simulator and kwok covered, here with real pods, a real kubelet and the real
//! disruption controller).

use crate::real_node::{assert_nothing_lost, wait_phase, writer_with_unready_marker};
use crate::support::Harness;
use crate::support::disruption::DisruptionOracle;
use ferry_api::{Phase, RowStep};
use ferry_testenv::disruption::Allowed;
use ferry_testenv::workload::acks_dir;
use ferry_testenv::{CLASS_BLOCK, CLASS_BLOCK_FIXED};
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{Patch, PatchParams};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_waits_for_the_other_replicas_and_the_disruption_budget_before_a_stop() {
    let harness = Harness::start("real-ready").await;
    let seeds = writer_with_unready_marker(&harness, 2, CLASS_BLOCK, "320Mi", 16 << 10).await;
    // The test takes db-1 down once itself, and the copy stops each replica once.
    let allowed = Allowed { at_once: 1, each: 2 };
    harness.allow_disruption(allowed);
    let marker = acks_dir(&harness.ns.name).join("db-1.unready");
    let pods = harness.ns.api::<Pod>();

    // Watched all along (the disruption oracle): at most one replica down at any moment.
    let oracle = DisruptionOracle::start(pods.clone(), "db", 2).await;
    // A slow warm copy (16 MiB at 2 MiB/s), so db-1 goes down while db-0 is still being copied.
    harness
        .create_resize(
            "grow",
            json!({"statefulSetName": "db", "mover": {"bandwidthLimit": "2Mi"}, "volumes": [
                {"name": "data", "size": "384Mi", "storageClassName": CLASS_BLOCK_FIXED}
            ]}),
        )
        .await;
    harness
        .wait_resize_for("grow", "the warm copy of db-0", 120, |resize| {
            resize.status.as_ref().is_some_and(|status| {
                status
                    .plan
                    .iter()
                    .any(|row| row.replica == 0 && row.step == Some(RowStep::WarmCopy))
            })
        })
        .await;
    std::fs::write(&marker, b"").unwrap();
    let waiting = harness
        .wait_message(
            "grow",
            "the copy to wait for db-1 before stopping db-0",
            120,
            "waiting for replica(s) 1 to be Ready before stopping",
        )
        .await;
    let db0 = pods.get("db-0").await.unwrap().uid();
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    assert_eq!(
        pods.get("db-0").await.unwrap().uid(),
        db0,
        "db-0 kept serving while db-1 was down: {:?}",
        waiting.status
    );

    // db-1 serves again, but a budget now wants both replicas up: the stop still waits.
    let budgets = harness.budget_allowing_no_disruption(2).await;
    std::fs::remove_file(&marker).unwrap();
    let held = harness
        .wait_message(
            "grow",
            "the copy to wait for the budget",
            120,
            "PodDisruptionBudget",
        )
        .await;
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    assert_eq!(
        pods.get("db-0").await.unwrap().uid(),
        db0,
        "db-0 kept serving while the budget allowed no disruption: {:?}",
        held.status
    );
    let relax = json!({"spec": {"minAvailable": 1}});
    budgets
        .patch("db", &PatchParams::default(), &Patch::Merge(relax))
        .await
        .unwrap();
    let done = wait_phase(&harness, "grow", 300).await;
    let status = done.status.unwrap();
    assert_eq!(status.phase, Some(Phase::Succeeded), "{:?}", status.message);
    let worst = oracle.assert_within(allowed).await;
    assert_eq!(worst.most, 1, "db-1 was seen down: {worst:?}");
    assert_nothing_lost(&harness, 2, &seeds).await;
    harness.finish().await;
}
