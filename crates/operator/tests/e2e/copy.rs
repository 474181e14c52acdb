//! Copy strategy end to end on the real control plane: the real mover in mover pods, swap by PV
//! re-binding, one replica at a time; data checked by checksum before and after.

use crate::support;

use ferry_api::quantity::quantity_bytes;
use ferry_api::{ChosenStrategy, Phase, RowStep};
use ferry_testenv::fixtures::{claim_directory, stateful_set, tree_checksum};
use ferry_testenv::{CLASS_EXPANDABLE, CLASS_FIXED};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Namespace, PersistentVolume, PersistentVolumeClaim};
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;
use std::collections::BTreeMap;
use support::Harness;
use support::disruption::DisruptionOracle;

const MI: u64 = 1 << 20;

struct Before {
    sums: BTreeMap<String, String>,
    volumes: BTreeMap<String, String>,
    pods: BTreeMap<String, String>,
}

async fn populated(harness: &Harness, class: &str, size: &str) -> Before {
    let seeded = harness
        .seeded(stateful_set("db", 3, class, size), &["data"], 80)
        .await;
    Before {
        sums: seeded
            .iter()
            .map(|s| (s.claim.clone(), s.checksum.clone()))
            .collect(),
        volumes: seeded
            .iter()
            .map(|s| (s.claim.clone(), s.volume.clone()))
            .collect(),
        pods: harness.pod_uids("db").await,
    }
}

/// Every claim is on a new volume of the wanted size and class with the same data; the old volumes
/// are retained; nothing temporary is left.
async fn assert_copied(harness: &Harness, before: &Before, size: u64, class: &str) {
    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    let volumes: Api<PersistentVolume> = Api::all(harness.client.clone());
    for replica in 0..3 {
        let name = format!("data-db-{replica}");
        let claim = claims.get(&name).await.unwrap();
        // Made by Ferry, and its managedFields say so.
        let managers: Vec<String> = claim
            .metadata
            .managed_fields
            .iter()
            .flatten()
            .filter_map(|f| f.manager.clone())
            .collect();
        assert!(
            managers.iter().any(|m| m == "ferry"),
            "{name}: managers {managers:?}"
        );
        let spec = claim.spec.clone().unwrap();
        let new_volume = spec.volume_name.clone().unwrap();
        assert_ne!(
            Some(&new_volume),
            before.volumes.get(&name),
            "{name} is on a new volume"
        );
        assert_eq!(spec.storage_class_name.as_deref(), Some(class));
        assert_eq!(
            quantity_bytes(claim.status.unwrap().capacity.unwrap().get("storage").unwrap()),
            Some(size)
        );
        let dir = claim_directory(&claims, &volumes, &name).await.unwrap();
        assert_eq!(
            Some(&tree_checksum(&dir).unwrap()),
            before.sums.get(&name),
            "{name}: data identical"
        );
        let new_pv = volumes.get(&new_volume).await.unwrap();
        assert_eq!(
            new_pv.spec.unwrap().persistent_volume_reclaim_policy.as_deref(),
            Some("Delete"),
            "policy restored"
        );
        let old_pv = volumes.get(&before.volumes[&name]).await.unwrap();
        assert_eq!(
            old_pv.spec.unwrap().persistent_volume_reclaim_policy.as_deref(),
            Some("Retain"),
            "old PV retained"
        );
    }
    harness.assert_nothing_leaked(3).await;
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
        quantity_bytes(requested.get("storage").unwrap()),
        Some(size),
        "template updated"
    );
}

async fn run_copy(harness: &Harness, before: &Before, spec: serde_json::Value) -> ferry_api::VolumeResize {
    let oracle = DisruptionOracle::start(harness.ns.api(), "db", 3).await;
    harness.create_resize("copy", spec).await;
    let resize = harness.wait_terminal("copy", "the copy to finish", 180).await;
    assert_eq!(
        resize.phase(),
        Phase::Succeeded,
        "{:?}",
        resize.status.as_ref().and_then(|s| s.message.clone())
    );
    oracle.assert_at_most(1).await;
    let after = harness.pod_uids("db").await;
    for (pod, uid) in &before.pods {
        assert_ne!(after.get(pod), Some(uid), "{pod} restarted onto its new volume");
    }
    let status = resize.status.clone().unwrap();
    assert!(
        status
            .plan
            .iter()
            .all(|row| row.strategy == Some(ChosenStrategy::Copy) && row.step == Some(RowStep::Copied))
    );
    assert_eq!(status.created_objects.retained_volumes.len(), 3);
    for row in &status.plan {
        // Each replica was stopped once, from its original pod.
        assert_eq!(
            row.restarted_pod.as_ref(),
            before.pods.get(&format!("db-{}", row.replica))
        );
        assert!(row.bytes_done.unwrap_or(0) > 0, "mover result recorded: {row:?}");
        // Nothing changed between the passes: one byte copied per byte of data.
        assert_eq!(row.bytes_copied, row.bytes_total, "{row:?}");
        let downtime = row.downtime_milliseconds.expect("replica downtime recorded");
        assert!(
            (1..120_000).contains(&downtime),
            "downtime {downtime} ms: {row:?}"
        );
        assert_eq!(row.downtime_seconds, Some((downtime + 500) / 1000));
        assert!(row.stopped_at.is_some());
        // What the downtime was made of: every step it took, together at least the whole (stopping
        // begins with the decision to stop, at or before `stoppedAt`; each part is rounded).
        let steps = row.downtime_steps.clone().expect("downtime steps recorded");
        let parts = [
            steps.stopping_replica,
            steps.final_sync,
            steps.swapping,
            steps.starting_replica,
        ];
        assert!(parts.iter().all(Option::is_some), "{steps:?}");
        let counted: i64 = parts.iter().flatten().sum();
        assert!(counted >= downtime - 4, "{steps:?} against {downtime} ms");
    }
    resize
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grow_by_copy_on_a_fixed_class_rolling() {
    let harness = Harness::start("copy-grow").await;
    // Mover and measuring pods are admitted by Pod Security `baseline`.
    let baseline = json!({"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "baseline"}}});
    Api::<Namespace>::all(harness.client.clone())
        .patch(&harness.ns.name, &PatchParams::default(), &Patch::Merge(baseline))
        .await
        .unwrap();
    let before = populated(&harness, CLASS_FIXED, "256Mi").await;
    run_copy(
        &harness,
        &before,
        json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "512Mi"}]}),
    )
    .await;
    assert_copied(&harness, &before, 512 * MI, CLASS_FIXED).await;
    // Not one reconcile failed on the way (no conflict on the first action's finalizer either).
    let metrics = harness.metrics().await;
    let failed: Vec<&str> = metrics
        .lines()
        .filter(|line| line.starts_with("ferry_reconcile_errors_total{"))
        .collect();
    assert!(failed.is_empty(), "{failed:?}");
    harness.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shrink_and_move_to_another_class() {
    let harness = Harness::start("copy-shrink").await;
    let before = populated(&harness, CLASS_EXPANDABLE, "1Gi").await;
    let spec = json!({
        "statefulSetName": "db",
        "retainOldVolumes": "20s",
        "volumes": [{"name": "data", "size": "256Mi", "storageClassName": CLASS_FIXED}],
    });
    run_copy(&harness, &before, spec).await;
    assert_copied(&harness, &before, 256 * MI, CLASS_FIXED).await;

    // After retainOldVolumes the old volumes go back to their provisioner, which deletes them.
    let volumes: Api<PersistentVolume> = Api::all(harness.client.clone());
    let mut directories = Vec::new();
    for old in before.volumes.values() {
        let pv = volumes.get(old).await.unwrap();
        directories.push(std::path::PathBuf::from(pv.spec.unwrap().host_path.unwrap().path));
    }
    for old in before.volumes.values() {
        ferry_testenv::wait_until(&format!("old volume {old} to be deleted"), 90, || async {
            volumes.get_opt(old).await.ok()?.is_none().then_some(())
        })
        .await
        .unwrap();
    }
    assert!(
        directories.iter().all(|dir| !dir.exists()),
        "their data is deleted too"
    );
    let api = harness.ns.api::<ferry_api::VolumeResize>();
    ferry_testenv::wait_until("the status to forget the deleted volumes", 30, || async {
        let status = api.get_opt("copy").await.ok().flatten()?.status?;
        status.created_objects.retained_volumes.is_empty().then_some(())
    })
    .await
    .unwrap();
    harness
        .wait_event("VolumeResize", "copy", "ReleasingOldVolumes")
        .await;
    harness.finish().await;
}
