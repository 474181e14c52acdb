//! Resizes on the real node: a real kubelet runs the replicas (a writer that goes on writing during
//! its graceful shutdown) and the mover pods (containers of `ferry.local/ferry:dev`), and the
//! volumes are real file systems of their size. After every resize, every record the application
//! acknowledged is on the volume the replica ends up with.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use ferry_api::{Phase, VolumeResize};
use ferry_testenv::fixtures::{claim_directory, wait_ready};
use ferry_testenv::quantity::bytes;
use ferry_testenv::workload::{acknowledged, lost_records, writer_stateful_set};
use ferry_testenv::{CLASS_BLOCK, CLASS_BLOCK_FIXED, MOVER_LABEL, REAL_NODE, wait_until};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use kube::api::{ListParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use support::Harness;

const MI: u64 = 1 << 20;

/// A writer StatefulSet of `replicas` on the real node, Ready; returns the seed's checksum per claim.
async fn writer(harness: &Harness, replicas: i32, class: &str, size: &str) -> BTreeMap<String, String> {
    let sets: Api<StatefulSet> = harness.ns.api();
    let set = writer_stateful_set("db", replicas, &[("data", class, size)], &harness.ns.name, 8 << 10).unwrap();
    sets.create(&PostParams::default(), &set).await.unwrap();
    wait_ready(&sets, "db", replicas, 180).await.unwrap();
    let mut sums = BTreeMap::new();
    for replica in 0..replicas {
        let claim = format!("data-db-{replica}");
        sums.insert(claim.clone(), seed_checksum(harness, &claim).await);
    }
    sums
}

async fn seed_checksum(harness: &Harness, claim: &str) -> String {
    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    let volumes: Api<PersistentVolume> = Api::all(harness.client.clone());
    let dir = claim_directory(&claims, &volumes, claim).await.unwrap();
    let output = std::process::Command::new("sha256sum")
        .arg(dir.join("seed"))
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

async fn wait_phase(harness: &Harness, name: &str, seconds: u64) -> VolumeResize {
    let api = harness.ns.api::<VolumeResize>();
    wait_until(&format!("VolumeResize {name} to finish"), seconds, || async {
        let resize = api.get_opt(name).await.ok().flatten()?;
        resize
            .status
            .as_ref()
            .and_then(|s| s.phase)
            .is_some_and(Phase::is_terminal)
            .then_some(resize)
    })
    .await
    .unwrap()
}

/// Records the container IDs of every mover pod seen while the test runs.
fn watch_mover_containers(harness: &Harness) -> Arc<Mutex<BTreeMap<String, String>>> {
    let seen = Arc::new(Mutex::new(BTreeMap::new()));
    let pods: Api<Pod> = harness.ns.api();
    let record = seen.clone();
    tokio::spawn(async move {
        loop {
            if let Ok(list) = pods.list(&ListParams::default().labels(MOVER_LABEL)).await {
                for pod in list.items {
                    let node = pod.spec.as_ref().and_then(|s| s.node_name.clone()).unwrap_or_default();
                    let id = pod
                        .status
                        .as_ref()
                        .and_then(|s| s.container_statuses.as_ref())
                        .and_then(|c| c.first())
                        .and_then(|c| c.container_id.clone());
                    if let (Some(id), Ok(mut seen)) = (id, record.lock()) {
                        seen.insert(pod.name_any(), format!("{node} {id}"));
                    }
                }
            }
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        }
    });
    seen
}

/// Every acknowledged record of every replica is on the claim's current volume, the seed is intact,
/// and the writers wrote on after the resize.
async fn assert_nothing_lost(harness: &Harness, replicas: i32, seeds: &BTreeMap<String, String>) {
    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    let volumes: Api<PersistentVolume> = Api::all(harness.client.clone());
    for replica in 0..replicas {
        let claim = format!("data-db-{replica}");
        let pod = format!("db-{replica}");
        let acked = acknowledged(&harness.ns.name, &pod).unwrap().len();
        // The replica runs again on its volume and writes on.
        wait_until(&format!("{pod} to write on its volume"), 60, || async {
            (acknowledged(&harness.ns.name, &pod).ok()?.len() > acked + 10).then_some(())
        })
        .await
        .unwrap();
        let dir = claim_directory(&claims, &volumes, &claim).await.unwrap();
        assert_eq!(
            lost_records(&harness.ns.name, &pod, &dir).unwrap(),
            Vec::<u64>::new(),
            "{claim}: acknowledged records missing"
        );
        assert_eq!(Some(&seed_checksum(harness, &claim).await), seeds.get(&claim));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rolling_shrink_onto_another_class_loses_no_acknowledged_write() {
    let harness = Harness::start("real-copy").await;
    let seeds = writer(&harness, 2, CLASS_BLOCK, "320Mi").await;
    let movers = watch_mover_containers(&harness);
    harness
        .create_resize(
            "shrink",
            json!({"statefulSetName": "db", "volumes": [
                {"name": "data", "size": "96Mi", "storageClassName": CLASS_BLOCK_FIXED}
            ]}),
        )
        .await;
    let resize = wait_phase(&harness, "shrink", 300).await;
    let status = resize.status.unwrap();
    assert_eq!(status.phase, Some(Phase::Succeeded), "{:?}", status.message);

    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    for replica in 0..2 {
        let claim = claims.get(&format!("data-db-{replica}")).await.unwrap();
        assert_eq!(
            claim.spec.as_ref().unwrap().storage_class_name.as_deref(),
            Some(CLASS_BLOCK_FIXED)
        );
        let capacity = bytes(claim.status.unwrap().capacity.unwrap().get("storage").unwrap());
        assert_eq!(capacity, Some(96 * MI));
    }
    assert_nothing_lost(&harness, 2, &seeds).await;
    // The movers were real containers on the real node.
    let movers = movers.lock().unwrap().clone();
    assert!(movers.keys().any(|name| name.ends_with("-final")), "{movers:?}");
    for (name, placed) in &movers {
        assert!(
            placed.starts_with(&format!("{REAL_NODE} containerd://")),
            "{name}: {placed}"
        );
    }
    harness.finish().await;
}
