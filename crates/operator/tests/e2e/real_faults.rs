//! Faults on the real node, with a real writer whose every acknowledged record is checked: a mover
//! killed by SIGKILL (as the OOM killer kills) in the warm pass, while the replica serves, and in
//! the final pass, while it is stopped. Either way the replica is rolled back onto its own volume
//! and loses nothing, and nothing of the copy is left behind.

use crate::real_node::{assert_nothing_lost, wait_phase, writer_with};
use crate::support::Harness;
use ferry_api::{Phase, RowStep, VolumeResize};
use ferry_testenv::fixtures::wait_ready;
use ferry_testenv::{CLASS_BLOCK, CLASS_BLOCK_FIXED, MOVER_LABEL, wait_until};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::ResourceExt;
use kube::api::ListParams;
use serde_json::json;

/// Starts a copy of db's one replica onto the fixed class, its movers paced at 2 MiB/s so that a
/// pass lasts long enough to be killed in.
async fn slow_copy(harness: &Harness) {
    harness
        .create_resize(
            "copy",
            json!({"statefulSetName": "db", "mover": {"bandwidthLimit": "2Mi"}, "volumes": [
                {"name": "data", "size": "384Mi", "storageClassName": CLASS_BLOCK_FIXED}
            ]}),
        )
        .await;
}

/// Waits for row 0 to be at `step`, then SIGKILLs the mover of the pass whose pod name ends with
/// `pass` once its process runs; returns the row's source volume.
async fn kill_mover_at(harness: &Harness, step: RowStep, pass: &str) -> String {
    let at_step = harness
        .wait_resize_for(
            "copy",
            &format!("row 0 at {step:?}"),
            180,
            |resize: &VolumeResize| {
                resize
                    .status
                    .as_ref()
                    .is_some_and(|status| status.plan.first().is_some_and(|row| row.step == Some(step)))
            },
        )
        .await;
    let source = at_step.status.unwrap().plan[0].source_volume.clone().unwrap();
    let pods = harness.ns.api::<Pod>();
    let killed = wait_until(&format!("the {pass} mover killed"), 60, || async {
        let movers = pods.list(&ListParams::default().labels(MOVER_LABEL)).await.ok()?;
        let mover = movers
            .items
            .iter()
            .find(|pod| pod.name_any().ends_with(&format!("-{pass}")))?;
        let killed = ferry_testenv::processes::kill_in_pod(&mover.name_any(), "ferry-mover").ok()?;
        (!killed.is_empty()).then_some(killed)
    })
    .await
    .unwrap();
    assert!(!killed.is_empty());
    source
}

/// The copy ended Failed with the kill named, rolled back: db's replica Ready on `source`, no
/// temporary claim or mover left, every acknowledged record there.
async fn assert_rolled_back(
    harness: &Harness,
    source: &str,
    seeds: &std::collections::BTreeMap<String, String>,
) {
    let ended = wait_phase(harness, "copy", 300).await;
    let status = ended.status.unwrap();
    assert_eq!(status.phase, Some(Phase::Failed), "{:?}", status.message);
    let message = status.message.clone().unwrap_or_default();
    assert!(
        message.starts_with("rolled back") && message.contains("exit code 137"),
        "{message}"
    );
    assert_eq!(status.plan[0].step, Some(RowStep::RolledBack));
    wait_ready(&harness.ns.api::<StatefulSet>(), "db", 1, 120)
        .await
        .unwrap();
    let claim = harness
        .ns
        .api::<PersistentVolumeClaim>()
        .get("data-db-0")
        .await
        .unwrap();
    assert_eq!(
        claim.spec.unwrap().volume_name.as_deref(),
        Some(source),
        "back on its own volume"
    );
    harness.assert_nothing_leaked(1).await;
    assert_nothing_lost(harness, 1, seeds).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mover_killed_in_the_warm_pass_rolls_back_losing_nothing() {
    let harness = Harness::start("real-kill-warm").await;
    let seeds = writer_with(&harness, 1, CLASS_BLOCK, "320Mi", 32 << 10, 0).await;
    slow_copy(&harness).await;
    let source = kill_mover_at(&harness, RowStep::WarmCopy, "warm").await;
    assert_rolled_back(&harness, &source, &seeds).await;
    harness.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mover_killed_in_the_final_pass_rolls_back_losing_nothing() {
    let harness = Harness::start("real-kill-final").await;
    // 16 MiB written at shutdown (after the warm pass): the final pass has them to copy.
    let seeds = writer_with(&harness, 1, CLASS_BLOCK, "320Mi", 4 << 10, 16 << 10).await;
    slow_copy(&harness).await;
    let source = kill_mover_at(&harness, RowStep::FinalSync, "final").await;
    assert_rolled_back(&harness, &source, &seeds).await;
    harness.finish().await;
}
