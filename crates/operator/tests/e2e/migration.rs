//! A VolumeMigration on the real nodes: writers on one class move to another, at most two at a
//! time, one StatefulSet that is not Ready is reported as not moved (the others go on), a claim no
//! StatefulSet owns is listed and left alone, and the operator is killed while moves run.

use crate::real_node::{ready_while_unmarked, seed_checksum};
use crate::support::Harness;
use ferry_api::names::LABEL_MIGRATION_UID;
use ferry_api::{MigrationItemPhase, MigrationPhase, Phase, VolumeMigration, VolumeResize};
use ferry_testenv::fixtures::{claim_directory, wait_ready};
use ferry_testenv::wait::wait_for_object;
use ferry_testenv::workload::{acknowledged, acks_dir, lost_records, writer_stateful_set};
use ferry_testenv::{CLASS_BLOCK_FIXED, CLASS_BLOCK_FIXED_OTHER, wait_until};
use futures::StreamExt;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use kube::api::{PostParams, WatchEvent, WatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

const MOVING: [&str; 3] = ["alpha", "bravo", "charlie"];
const NOT_READY: &str = "delta";

/// A one-replica writer `name` on the old class, Ready, under the oracle; its seed's checksum.
async fn writer(harness: &Harness, name: &str) -> String {
    let sets: Api<StatefulSet> = harness.ns.api();
    let mut set = writer_stateful_set(
        name,
        1,
        &[("data", CLASS_BLOCK_FIXED, "96Mi")],
        &harness.ns.name,
        1 << 10,
        0,
    )
    .unwrap();
    // Ready only while no marker is on the host: the test makes `delta` not Ready.
    ready_while_unmarked(&mut set);
    sets.create(&PostParams::default(), &set).await.unwrap();
    wait_ready(&sets, name, 1, 180).await.unwrap();
    harness.watch_disruption(name, 1).await;
    seed_checksum(harness, &format!("data-{name}-0")).await
}

/// The most of the migration's VolumeResizes unfinished at once, from their creation to a
/// terminal phase, followed event by event.
fn most_at_once(harness: &Harness, uid: String) -> Arc<Mutex<usize>> {
    let most = Arc::new(Mutex::new(0));
    let api: Api<VolumeResize> = harness.ns.api();
    let seen = most.clone();
    tokio::spawn(async move {
        let params = WatchParams::default().labels(&format!("{LABEL_MIGRATION_UID}={uid}"));
        let mut stream = api.watch(&params, "0").await.unwrap().boxed();
        let mut open = BTreeSet::new();
        while let Some(Ok(event)) = stream.next().await {
            let (WatchEvent::Added(resize) | WatchEvent::Modified(resize)) = event else {
                continue;
            };
            let ended = (resize.status.as_ref())
                .and_then(|s| s.phase)
                .is_some_and(Phase::is_terminal);
            if ended {
                open.remove(&resize.name_any());
            } else {
                open.insert(resize.name_any());
            }
            let mut most = seen.lock().unwrap();
            *most = (*most).max(open.len());
        }
    });
    most
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_migration_moves_the_stateful_sets_on_a_class_two_at_a_time_and_reports_the_one_not_ready() {
    let mut harness = Harness::start("migration").await;
    let mut seeds = BTreeMap::new();
    for name in MOVING.into_iter().chain([NOT_READY]) {
        seeds.insert(name, writer(&harness, name).await);
    }
    // delta goes not Ready: its move's precheck refuses it.
    std::fs::write(
        acks_dir(&harness.ns.name).join(format!("{NOT_READY}-0.unready")),
        b"",
    )
    .unwrap();
    let sets: Api<StatefulSet> = harness.ns.api();
    wait_for_object(&sets, NOT_READY, "delta not Ready", 60, |sts| {
        sts.status.as_ref().and_then(|s| s.ready_replicas).unwrap_or(0) == 0
    })
    .await
    .unwrap();
    // A claim on the old class that no StatefulSet owns.
    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    let scratch: PersistentVolumeClaim = serde_json::from_value(json!({
        "metadata": {"name": "scratch"},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": CLASS_BLOCK_FIXED,
                 "resources": {"requests": {"storage": "16Mi"}}}
    }))
    .unwrap();
    claims.create(&PostParams::default(), &scratch).await.unwrap();

    let migrations: Api<VolumeMigration> = harness.ns.api();
    let migration: VolumeMigration = serde_json::from_value(json!({
        "apiVersion": "ferry.dev/v1alpha1", "kind": "VolumeMigration",
        "metadata": {"name": "off-fixed"},
        "spec": {"fromStorageClassName": CLASS_BLOCK_FIXED, "toStorageClassName": CLASS_BLOCK_FIXED_OTHER,
                 "maxConcurrent": 2, "failurePolicy": "Continue"}
    }))
    .unwrap();
    let created = migrations
        .create(&PostParams::default(), &migration)
        .await
        .unwrap();
    let most = most_at_once(&harness, created.uid().unwrap());
    // Killed while two move.
    wait_for_object(&migrations, "off-fixed", "two moves running", 120, |m| {
        (m.status.iter().flat_map(|s| s.items.iter()))
            .filter(|i| i.phase == MigrationItemPhase::Running)
            .count()
            == 2
    })
    .await
    .unwrap();
    harness.restart_operator();
    let ended = wait_for_object(&migrations, "off-fixed", "the migration to end", 600, |m| {
        m.status
            .as_ref()
            .is_some_and(|s| matches!(s.phase, MigrationPhase::Succeeded | MigrationPhase::Failed))
    })
    .await
    .unwrap();
    let status = ended.status.unwrap();
    let phases: BTreeMap<&str, MigrationItemPhase> = (status.items.iter())
        .map(|i| (i.stateful_set.as_str(), i.phase))
        .collect();
    assert_eq!(
        phases,
        BTreeMap::from([
            ("alpha", MigrationItemPhase::Succeeded),
            ("bravo", MigrationItemPhase::Succeeded),
            ("charlie", MigrationItemPhase::Succeeded),
            (NOT_READY, MigrationItemPhase::Failed),
        ]),
        "{status:?}"
    );
    assert_eq!(status.phase, MigrationPhase::Failed, "{status:?}");
    assert_eq!(status.progress.as_deref(), Some("3/4"));
    let refused = status.items.iter().find(|i| i.stateful_set == NOT_READY).unwrap();
    assert!(
        refused.message.as_deref().is_some_and(|m| m.contains("Ready")),
        "{refused:?}"
    );
    let not_handled: Vec<&str> = status.not_handled.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(not_handled, vec!["scratch"]);
    assert!(*most.lock().unwrap() <= 2, "more than two moved at once");
    // One VolumeResize per StatefulSet moved, never two; none for delta, refused at its turn.
    let resizes: Api<VolumeResize> = harness.ns.api();
    let made = resizes.list(&Default::default()).await.unwrap().items;
    let per_set: BTreeSet<String> = made.iter().map(|r| r.spec.stateful_set_name.clone()).collect();
    assert_eq!(per_set, MOVING.map(String::from).into(), "{made:?}");
    assert_eq!(made.len(), MOVING.len(), "{made:?}");
    for item in &status.items {
        eprintln!(
            "{}: {:?}, {:?} bytes copied, down at most {:?} ms",
            item.stateful_set, item.phase, item.bytes_copied, item.max_downtime_milliseconds
        );
    }

    // The moved ones are on the new class with every acknowledged write; delta and the bare
    // claim are where they were.
    let volumes: Api<PersistentVolume> = Api::all(harness.client.clone());
    for name in MOVING {
        let pod = format!("{name}-0");
        let claim = format!("data-{pod}");
        let class = claims.get(&claim).await.unwrap().spec.unwrap().storage_class_name;
        assert_eq!(class.as_deref(), Some(CLASS_BLOCK_FIXED_OTHER), "{claim}");
        let acked = acknowledged(&harness.ns.name, &pod).unwrap().len();
        wait_until(&format!("{pod} to write on its new volume"), 60, || async {
            (acknowledged(&harness.ns.name, &pod).ok()?.len() > acked + 10).then_some(())
        })
        .await
        .unwrap();
        let dir = claim_directory(&claims, &volumes, &claim).await.unwrap();
        assert_eq!(
            lost_records(&harness.ns.name, &pod, &dir).unwrap(),
            Vec::<u64>::new(),
            "{claim}"
        );
        assert_eq!(seed_checksum(&harness, &claim).await, seeds[name], "{claim}");
    }
    for claim in [format!("data-{NOT_READY}-0"), "scratch".to_string()] {
        let class = claims.get(&claim).await.unwrap().spec.unwrap().storage_class_name;
        assert_eq!(class.as_deref(), Some(CLASS_BLOCK_FIXED), "{claim}");
    }
    harness.finish().await;
}
