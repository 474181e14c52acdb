//! Offline mode with two volume claim templates: every replica down together, all volumes copied
//! (movers limited by the concurrency setting), the StatefulSet back with its replica count.

use crate::support;

use ferry_api::Phase;
use ferry_api::quantity::quantity_bytes;
use ferry_testenv::fixtures::{
    claim_directory, stateful_set_with, tree_checksum, wait_ready, write_sample_data,
};
use ferry_testenv::{CLASS_EXPANDABLE, CLASS_FIXED, MOVER_LABEL};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use kube::Api;
use kube::api::{ListParams, PostParams};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use support::Harness;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offline_mode_copies_two_templates_with_all_replicas_down_together() {
    let harness = Harness::start("copy-offline").await;
    let sets: Api<StatefulSet> = harness.ns.api();
    let sts = stateful_set_with(
        "db",
        2,
        &[
            ("data", CLASS_FIXED, "256Mi"),
            ("logs", CLASS_EXPANDABLE, "128Mi"),
        ],
    );
    sets.create(&PostParams::default(), &sts).await.unwrap();
    wait_ready(&sets, "db", 2, 120).await.unwrap();
    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    let volumes: Api<PersistentVolume> = Api::all(harness.client.clone());
    let mut sums = Vec::new();
    for template in ["data", "logs"] {
        for replica in 0..2 {
            let claim = format!("{template}-db-{replica}");
            let dir = claim_directory(&claims, &volumes, &claim).await.unwrap();
            write_sample_data(&dir, 25).unwrap();
            sums.push((claim, tree_checksum(&dir).unwrap()));
        }
    }

    // Sample how many replicas and mover pods are up at once.
    let pods: Api<Pod> = harness.ns.api();
    let stop = Arc::new(AtomicBool::new(false));
    let (most_down, most_movers) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let sampler = {
        let (pods, stop, most_down, most_movers) =
            (pods.clone(), stop.clone(), most_down.clone(), most_movers.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                if let Ok(list) = pods.list(&ListParams::default().labels("app=db")).await {
                    let up = list
                        .items
                        .iter()
                        .filter(|p| p.metadata.deletion_timestamp.is_none())
                        .count();
                    most_down.fetch_max(2usize.saturating_sub(up), Ordering::Relaxed);
                }
                if let Ok(list) = pods.list(&ListParams::default().labels(MOVER_LABEL)).await {
                    let running = list
                        .items
                        .iter()
                        .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
                        .count();
                    most_movers.fetch_max(running, Ordering::Relaxed);
                }
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        })
    };
    let spec = json!({
        "statefulSetName": "db",
        "mode": "Offline",
        "mover": {"concurrency": 2},
        "volumes": [{"name": "data", "size": "512Mi"}, {"name": "logs", "size": "256Mi", "storageClassName": CLASS_FIXED}],
    });
    harness.create_resize("offline", spec).await;
    let resize = harness
        .wait_terminal("offline", "the offline copy to finish", 240)
        .await;
    stop.store(true, Ordering::Relaxed);
    sampler.await.unwrap();
    assert_eq!(
        resize.phase(),
        Phase::Succeeded,
        "{:?}",
        resize.status.and_then(|s| s.message)
    );
    assert_eq!(
        most_down.load(Ordering::Relaxed),
        2,
        "offline: both replicas were down together"
    );
    assert!(
        most_movers.load(Ordering::Relaxed) <= 2,
        "at most 2 movers at once"
    );

    let sts = wait_ready(&sets, "db", 2, 60).await.unwrap();
    assert_eq!(
        sts.spec.as_ref().unwrap().replicas,
        Some(2),
        "replica count restored"
    );
    for (claim, sum) in &sums {
        let dir = claim_directory(&claims, &volumes, claim).await.unwrap();
        assert_eq!(&tree_checksum(&dir).unwrap(), sum, "{claim}: data intact");
        let status = claims.get(claim).await.unwrap().status.unwrap();
        let wanted = if claim.starts_with("data") {
            512u64 << 20
        } else {
            256 << 20
        };
        assert_eq!(
            quantity_bytes(status.capacity.unwrap().get("storage").unwrap()),
            Some(wanted),
            "{claim}"
        );
    }
    harness.finish().await;
}
