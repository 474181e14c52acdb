//! Faults on the real node, with a real writer whose every acknowledged record is checked: a mover
//! killed by SIGKILL (as the OOM killer kills) in the warm pass, while the replica serves, and in
//! the final pass, while it is stopped; the target filling up in the warm pass. Either way the
//! replica is rolled back onto its own volume and loses nothing, and nothing of the copy is left
//! behind.

use crate::real_node::{assert_nothing_lost, wait_phase, writer_with};
use crate::support::Harness;
use crate::support::disruption::DisruptionOracle;
use crate::support::down_webhook::DownWebhook;
use ferry_api::names::LABEL_MOVER_PASS;
use ferry_api::{Phase, RowStep, VolumeResize};
use ferry_testenv::disruption::Allowed;
use ferry_testenv::fixtures::{claim_directory, wait_ready};
use ferry_testenv::{CLASS_BLOCK, CLASS_BLOCK_FIXED, wait_until};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use kube::{Api, ResourceExt};
use serde_json::json;

/// Starts a copy of db's one replica onto the fixed class, its movers paced at 2 MiB/s so that a
/// pass lasts long enough to be killed in.
pub(crate) async fn slow_copy(harness: &Harness) {
    harness
        .create_resize(
            "copy",
            json!({"statefulSetName": "db", "mover": {"bandwidthLimit": "2Mi"}, "volumes": [
                {"name": "data", "size": "384Mi", "storageClassName": CLASS_BLOCK_FIXED}
            ]}),
        )
        .await;
}

/// The pod of the mover of claim `claim`'s `pass` (warm or final), once it exists.
pub(crate) async fn mover_pod(harness: &Harness, claim: &str, pass: &str) -> Option<String> {
    harness
        .mover_pods()
        .await
        .ok()?
        .iter()
        .map(|pod| pod.name_any())
        .find(|name| name.starts_with(&format!("{claim}-ferry-")) && name.ends_with(&format!("-{pass}")))
}

/// SIGKILLs the mover of claim `claim`'s `pass` (warm or final) as soon as its process runs.
async fn kill_mover(harness: &Harness, claim: &str, pass: &str, seconds: u64) {
    let killed = wait_until(
        &format!("the {pass} mover of {claim} killed"),
        seconds,
        || async {
            let mover = mover_pod(harness, claim, pass).await?;
            let killed = ferry_testenv::processes::kill_in_pod(&mover, "ferry-mover").ok()?;
            (!killed.is_empty()).then_some(killed)
        },
    )
    .await
    .unwrap();
    assert!(!killed.is_empty());
}

/// The copy once its row 0 is at `step`.
pub(crate) async fn copy_at(harness: &Harness, step: RowStep) -> VolumeResize {
    harness
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
        .await
}

/// Waits for row 0 to be at `step`, then SIGKILLs the mover of its `pass`; returns the row's
/// source volume.
async fn kill_mover_at(harness: &Harness, step: RowStep, pass: &str) -> String {
    let at_step = copy_at(harness, step).await;
    let source = at_step.status.unwrap().plan[0].source_volume.clone().unwrap();
    kill_mover(harness, "data-db-0", pass, 60).await;
    source
}

/// The copy ended Failed with `because` in its message, rolled back: db's replica Ready on `source`, no
/// temporary claim or mover left, every acknowledged record there.
async fn assert_rolled_back(
    harness: &Harness,
    source: &str,
    seeds: &std::collections::BTreeMap<String, String>,
    because: &str,
) {
    let ended = wait_phase(harness, "copy", 300).await;
    let status = ended.status.unwrap();
    assert_eq!(status.phase, Some(Phase::Failed), "{:?}", status.message);
    let message = status.message.clone().unwrap_or_default();
    assert!(
        message.starts_with("rolled back") && message.contains(because),
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
    assert_rolled_back(&harness, &source, &seeds, "exit code 137").await;
    harness.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mover_killed_in_the_final_pass_rolls_back_losing_nothing() {
    let harness = Harness::start("real-kill-final").await;
    // 16 MiB written at shutdown (after the warm pass): the final pass has them to copy.
    let seeds = writer_with(&harness, 1, CLASS_BLOCK, "320Mi", 4 << 10, 16 << 10).await;
    slow_copy(&harness).await;
    let source = kill_mover_at(&harness, RowStep::FinalSync, "final").await;
    assert_rolled_back(&harness, &source, &seeds, "exit code 137").await;
    harness.finish().await;
}

/// The target filling up in the warm pass, while the replica serves. Its data grew past the
/// shrink's size after the precheck measured it: here while a webhook that is down held the warm
/// mover back with 500s, which the status and an Event report, retried and not fatal. The warm
/// mover then meets ENOSPC, and the copy rolls back without ever stopping the replica.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_filled_in_the_warm_pass_rolls_back_without_stopping_the_replica() {
    let harness = Harness::start("real-full-warm").await;
    // 40 MiB in use passes the shrink check for 64Mi (ext4 leaves about 54 MiB of it).
    let seeds = writer_with(&harness, 1, CLASS_BLOCK_FIXED, "256Mi", 40 << 10, 0).await;
    let serving = harness.pod_uids("db").await;
    let oracle = DisruptionOracle::start(harness.ns.api(), "db", 1).await;
    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    let source = claims
        .get("data-db-0")
        .await
        .unwrap()
        .spec
        .unwrap()
        .volume_name
        .unwrap();
    let down = DownWebhook::install(
        &harness.client,
        &harness.ns.name,
        "pods",
        json!({"matchLabels": {LABEL_MOVER_PASS: "warm"}}),
    )
    .await;
    harness
        .create_resize(
            "copy",
            json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "64Mi"}]}),
        )
        .await;
    let held = harness
        .wait_message(
            "copy",
            "the failing request in the status",
            120,
            "failed on the API server's side",
        )
        .await;
    let message = held.status.as_ref().unwrap().message.clone().unwrap();
    assert!(message.contains("failed calling webhook"), "{message}");
    assert!(!held.phase().is_terminal(), "not fatal: {message}");
    let events = harness
        .wait_event("VolumeResize", "copy", "RetryingAfterError")
        .await;
    assert!(
        events
            .iter()
            .any(|(kind, _, note)| kind == "Warning" && note.contains("failed calling webhook")),
        "{events:?}"
    );

    // 30 MiB more while the mover is held: 70 MiB no longer fit.
    let volumes: Api<PersistentVolume> = Api::all(harness.client.clone());
    let grown: Vec<u8> = (0..30 << 20).map(|i: u32| (i % 241) as u8).collect();
    {
        let dir = claim_directory(&claims, &volumes, "data-db-0").await.unwrap();
        std::fs::write(dir.join("grown-after-the-precheck"), &grown).unwrap();
    }
    down.remove().await;

    assert_rolled_back(&harness, &source, &seeds, "No space left on device").await;
    assert_eq!(
        harness.pod_uids("db").await,
        serving,
        "the replica was never stopped"
    );
    // Nor ever unavailable, as the watch saw it.
    oracle.assert_at_most(0).await;
    let dir = claim_directory(&claims, &volumes, "data-db-0").await.unwrap();
    assert!(std::fs::read(dir.join("grown-after-the-precheck")).unwrap() == grown);
    harness.finish().await;
}

/// Offline, one mover at a time: two replicas are swapped (or swapping) when the last one's final
/// sync is killed. Every replica ends exactly on one side, with all its data: the swapped ones on
/// their new volume (the old one retained and listed), the last one back on its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mover_killed_after_part_of_an_offline_batch_swapped_leaves_each_replica_on_one_side() {
    let harness = Harness::start("real-kill-batch").await;
    // 16 MiB each at 2 MiB/s: a final sync lasts 8 s, long enough to be caught.
    let seeds = writer_with(&harness, 3, CLASS_BLOCK, "320Mi", 16 << 10, 0).await;
    // Offline: the batch down together, once.
    harness.allow_disruption(Allowed { at_once: 3, each: 1 });
    harness
        .create_resize(
            "copy",
            json!({"statefulSetName": "db", "mode": "Offline", "warmCopy": false,
                   "mover": {"concurrency": 1, "bandwidthLimit": "2Mi"}, "volumes": [
                {"name": "data", "size": "384Mi", "storageClassName": CLASS_BLOCK_FIXED}
            ]}),
        )
        .await;
    // The movers go one at a time, in no set order: the last row is the one still to be synced
    // once two are past their final sync.
    let past_final = |row: &ferry_api::VolumePlan| {
        matches!(
            row.step,
            Some(RowStep::Swapping | RowStep::StartingReplica | RowStep::Copied)
        )
    };
    let two_swapped = harness
        .wait_resize_for("copy", "two rows past their final sync", 240, |resize| {
            resize
                .status
                .as_ref()
                .is_some_and(|status| status.plan.iter().filter(|row| past_final(row)).count() == 2)
        })
        .await;
    let last = two_swapped
        .status
        .unwrap()
        .plan
        .into_iter()
        .find(|row| !past_final(row))
        .unwrap();
    kill_mover(&harness, &last.claim_name, "final", 60).await;
    let ended = wait_phase(&harness, "copy", 300).await;
    let status = ended.status.unwrap();
    assert_eq!(status.phase, Some(Phase::Failed), "{:?}", status.message);
    let message = status.message.clone().unwrap_or_default();
    assert!(
        message.contains(&last.claim_name) && message.contains("exit code 137"),
        "{message}"
    );
    wait_ready(&harness.ns.api::<StatefulSet>(), "db", 3, 120)
        .await
        .unwrap();
    let claims = harness.ns.api::<PersistentVolumeClaim>();
    let retained = &status.created_objects.retained_volumes;
    let mut swapped = 0;
    for row in &status.plan {
        let claim = claims.get(&row.claim_name).await.unwrap();
        let volume = claim.spec.unwrap().volume_name;
        match row.step {
            Some(RowStep::Copied) => {
                swapped += 1;
                assert_eq!(volume, row.target_volume, "{}: on its new volume", row.claim_name);
                assert!(
                    retained.contains(row.source_volume.as_ref().unwrap()),
                    "{}: old volume retained and listed: {retained:?}",
                    row.claim_name
                );
            }
            step => {
                assert_eq!(step, Some(RowStep::RolledBack), "{}", row.claim_name);
                assert_eq!(
                    volume, row.source_volume,
                    "{}: back on its own volume",
                    row.claim_name
                );
            }
        }
    }
    let killed = status
        .plan
        .iter()
        .find(|row| row.replica == last.replica)
        .unwrap();
    assert_eq!(killed.step, Some(RowStep::RolledBack));
    assert_eq!(
        swapped, 2,
        "the two swapped before the kill stay swapped: {:?}",
        status.plan
    );
    assert_nothing_lost(&harness, 3, &seeds).await;
    harness.finish().await;
}
