//! In-place expansion end to end on the real control plane, data checked by checksum.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use ferry_api::{ChosenStrategy, Phase};
use ferry_testenv::fixtures::{claim_directory, stateful_set, tree_checksum, wait_ready, write_sample_data};
use ferry_testenv::quantity::bytes;
use ferry_testenv::{CLASS_EXPANDABLE, CLASS_OFFLINE_EXPAND, MOVER_LABEL};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use kube::api::{ListParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use support::Harness;

const GI: u64 = 1 << 30;

/// A 3-replica StatefulSet on `class` with sample data in every volume; returns checksums by claim.
async fn populated(harness: &Harness, class: &str) -> BTreeMap<String, String> {
    let sets: Api<StatefulSet> = harness.ns.api();
    sets.create(&PostParams::default(), &stateful_set("db", 3, class, "1Gi"))
        .await
        .unwrap();
    wait_ready(&sets, "db", 3, 120).await.unwrap();
    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    let volumes: Api<PersistentVolume> = Api::all(harness.client.clone());
    let mut sums = BTreeMap::new();
    for replica in 0..3 {
        let claim = format!("data-db-{replica}");
        let dir = claim_directory(&claims, &volumes, &claim).await.unwrap();
        write_sample_data(&dir, 60).unwrap();
        sums.insert(claim, tree_checksum(&dir).unwrap());
    }
    sums
}

async fn checksums(harness: &Harness) -> BTreeMap<String, String> {
    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    let volumes: Api<PersistentVolume> = Api::all(harness.client.clone());
    let mut sums = BTreeMap::new();
    for replica in 0..3 {
        let claim = format!("data-db-{replica}");
        let dir = claim_directory(&claims, &volumes, &claim).await.unwrap();
        sums.insert(claim, tree_checksum(&dir).unwrap());
    }
    sums
}

async fn pod_uids(pods: &Api<Pod>) -> BTreeMap<String, String> {
    pods.list(&ListParams::default().labels("app=db"))
        .await
        .unwrap()
        .items
        .iter()
        .map(|pod| (pod.name_any(), pod.uid().unwrap()))
        .collect()
}

/// Samples the pods until stopped; returns the most pods that were not Ready at one moment.
fn watch_unavailable(pods: Api<Pod>, stop: Arc<AtomicBool>) -> tokio::task::JoinHandle<usize> {
    tokio::spawn(async move {
        let most = AtomicUsize::new(0);
        while !stop.load(Ordering::Relaxed) {
            if let Ok(list) = pods.list(&ListParams::default().labels("app=db")).await {
                let ready = list
                    .items
                    .iter()
                    .filter(|pod| {
                        pod.metadata.deletion_timestamp.is_none()
                            && pod
                                .status
                                .as_ref()
                                .and_then(|s| s.conditions.as_ref())
                                .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
                    })
                    .count();
                most.fetch_max(3usize.saturating_sub(ready), Ordering::Relaxed);
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        most.load(Ordering::Relaxed)
    })
}

async fn assert_grown(harness: &Harness, size: u64) {
    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    for replica in 0..3 {
        let claim = claims.get(&format!("data-db-{replica}")).await.unwrap();
        assert_eq!(
            bytes(claim.status.unwrap().capacity.unwrap().get("storage").unwrap()),
            Some(size)
        );
    }
    let sts: StatefulSet = harness.ns.api::<StatefulSet>().get("db").await.unwrap();
    let template = &sts.spec.unwrap().volume_claim_templates.unwrap()[0];
    let requested = template
        .spec
        .as_ref()
        .unwrap()
        .resources
        .as_ref()
        .unwrap()
        .requests
        .as_ref()
        .unwrap();
    assert_eq!(
        bytes(requested.get("storage").unwrap()),
        Some(size),
        "the StatefulSet template has the new size"
    );
    let movers = harness
        .ns
        .api::<Pod>()
        .list(&ListParams::default().labels(MOVER_LABEL))
        .await
        .unwrap();
    assert!(movers.items.is_empty(), "in-place expansion copies nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grow_in_place_online_restarts_nothing_and_keeps_data() {
    let harness = Harness::start("inplace-online").await;
    let before = populated(&harness, CLASS_EXPANDABLE).await;
    let pods: Api<Pod> = harness.ns.api();
    let uids = pod_uids(&pods).await;

    harness
        .create_resize(
            "grow",
            json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "2Gi"}]}),
        )
        .await;
    let resize = harness
        .wait_resize("grow", "the resize to succeed", |r| r.phase().is_terminal())
        .await;
    let status = resize.status.clone().unwrap();
    assert_eq!(resize.phase(), Phase::Succeeded, "{:?}", status.message);
    assert_eq!(status.progress.as_deref(), Some("3/3"));
    assert!(
        status
            .plan
            .iter()
            .all(|row| row.strategy == Some(ChosenStrategy::InPlace) && row.finished_at.is_some())
    );

    assert_grown(&harness, 2 * GI).await;
    assert_eq!(pod_uids(&pods).await, uids, "no pod was restarted");
    assert_eq!(checksums(&harness).await, before, "data unchanged");
    let backup = status.created_objects.backup_config_map.unwrap();
    assert!(
        harness
            .ns
            .api::<k8s_openapi::api::core::v1::ConfigMap>()
            .get_opt(&backup)
            .await
            .unwrap()
            .is_some()
    );
    harness.wait_event("VolumeResize", "grow", "Succeeded").await;
    harness.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grow_in_place_offline_only_restarts_pods_one_at_a_time() {
    let harness = Harness::start("inplace-offline").await;
    let before = populated(&harness, CLASS_OFFLINE_EXPAND).await;
    let pods: Api<Pod> = harness.ns.api();
    let uids = pod_uids(&pods).await;
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = watch_unavailable(pods.clone(), stop.clone());

    harness
        .create_resize(
            "grow",
            json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "3Gi"}]}),
        )
        .await;
    let resize = harness
        .wait_resize("grow", "the resize to succeed", |r| r.phase().is_terminal())
        .await;
    stop.store(true, Ordering::Relaxed);
    let most_unavailable = sampler.await.unwrap();
    assert_eq!(
        resize.phase(),
        Phase::Succeeded,
        "{:?}",
        resize.status.as_ref().unwrap().message
    );

    assert_grown(&harness, 3 * GI).await;
    let after = pod_uids(&pods).await;
    for (pod, uid) in &uids {
        assert_ne!(
            after.get(pod),
            Some(uid),
            "{pod} was restarted to finish its file-system resize"
        );
    }
    assert!(
        most_unavailable <= 1,
        "at most one replica down at a time, saw {most_unavailable}"
    );
    // Ferry restarted each original pod exactly once (a second restart would record the new UID).
    for row in &resize.status.as_ref().unwrap().plan {
        let pod = format!("db-{}", row.replica);
        assert_eq!(
            row.restarted_pod.as_ref(),
            uids.get(&pod),
            "{pod} restarted once, from its original"
        );
    }
    assert_eq!(checksums(&harness).await, before, "data unchanged");
    harness.finish().await;
}
