//! A mover failure during a copy rolls the replica back automatically: the StatefulSet is restored
//! from its backup, the replica runs on its old volume with its data, and nothing is left behind.

use crate::support;

use ferry_api::quantity::quantity_bytes;
use ferry_api::{Phase, RowStep};
use ferry_testenv::CLASS_FIXED;
use ferry_testenv::executor::MOVER_ENV_ANNOTATION;
use ferry_testenv::fixtures::{claim_directory, stateful_set, tree_checksum, wait_ready};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Namespace, PersistentVolume, PersistentVolumeClaim};
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;
use support::Harness;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_verification_rolls_the_replica_back_with_data_intact() {
    let harness = Harness::start("copy-rollback").await;
    // Every mover in this namespace corrupts d0/f0 after writing it, before verifying it.
    let corrupt =
        json!({"metadata": {"annotations": {MOVER_ENV_ANNOTATION: "FERRY_MOVER_TEST_CORRUPT=d0/f0"}}});
    Api::<Namespace>::all(harness.client.clone())
        .patch(&harness.ns.name, &PatchParams::default(), &Patch::Merge(corrupt))
        .await
        .unwrap();

    let before = harness
        .seeded(stateful_set("db", 3, CLASS_FIXED, "256Mi"), &["data"], 40)
        .await;
    let sets: Api<StatefulSet> = harness.ns.api();
    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    let volumes: Api<PersistentVolume> = Api::all(harness.client.clone());

    // No warm copy: the failure comes in the final pass, with the replica stopped and the
    // StatefulSet deleted — the hardest point to roll back from. Without change tracking, so the
    // final pass itself writes every file (a tracking standby's catch-up pass, which takes no
    // test hook, would have written them before the stop).
    let spec = json!({"statefulSetName": "db", "warmCopy": false, "mover": {"trackChanges": false},
        "volumes": [{"name": "data", "size": "512Mi"}]});
    harness.create_resize("copy", spec).await;
    let resize = harness
        .wait_terminal("copy", "the copy to fail and roll back", 120)
        .await;
    let status = resize.status.clone().unwrap();
    assert_eq!(resize.phase(), Phase::Failed);
    let message = status.message.clone().unwrap();
    assert!(
        message.starts_with("rolled back")
            && message.contains("data-db-0")
            && message.contains("exit code 3"),
        "{message}"
    );
    assert_eq!(status.plan[0].step, Some(RowStep::RolledBack));

    // The StatefulSet is back as it was, every replica Ready on its original volume and data.
    let sts = wait_ready(&sets, "db", 3, 60).await.unwrap();
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
        Some(256 << 20),
        "original template restored"
    );
    for entry in &before {
        let (claim, volume) = (&entry.claim, &entry.volume);
        let current = claims.get(claim).await.unwrap();
        assert_eq!(
            current.spec.unwrap().volume_name.as_ref(),
            Some(volume),
            "{claim} on its original volume"
        );
        let dir = claim_directory(&claims, &volumes, claim).await.unwrap();
        assert_eq!(
            tree_checksum(&dir).unwrap(),
            entry.checksum,
            "{claim}: data intact"
        );
        let pv = volumes.get(volume).await.unwrap();
        assert_eq!(
            pv.spec.unwrap().persistent_volume_reclaim_policy.as_deref(),
            Some("Delete"),
            "untouched policy"
        );
    }
    // Nothing leaked: no temporary claim, no mover pod.
    harness.assert_nothing_leaked(3).await;
    harness.wait_event("VolumeResize", "copy", "RollingBack").await;
    harness.wait_event("VolumeResize", "copy", "RolledBack").await;
    harness.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_on_request_puts_replicas_back_on_their_old_volumes() {
    let harness = Harness::start("copy-revert").await;
    let before = harness
        .seeded(stateful_set("db", 2, CLASS_FIXED, "256Mi"), &["data"], 30)
        .await;
    let sets: Api<StatefulSet> = harness.ns.api();
    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    let volumes: Api<PersistentVolume> = Api::all(harness.client.clone());
    harness
        .create_resize(
            "copy",
            json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "512Mi"}]}),
        )
        .await;
    let api = harness.ns.api::<ferry_api::VolumeResize>();
    let done = harness.wait_terminal("copy", "the copy to succeed", 120).await;
    assert_eq!(done.phase(), Phase::Succeeded);
    // A write after the swap lands on the new volume only.
    let new_dir = claim_directory(&claims, &volumes, "data-db-0").await.unwrap();
    std::fs::write(new_dir.join("written-after-swap"), "new").unwrap();
    let new_volumes: Vec<String> = done
        .status
        .as_ref()
        .unwrap()
        .plan
        .iter()
        .map(|row| row.target_volume.clone().unwrap())
        .collect();

    // What `kubectl ferry rollback copy` does.
    let request =
        json!({"metadata": {"annotations": {ferry_api::names::ANNOTATION_ROLLBACK_REQUESTED: "true"}}});
    api.patch("copy", &PatchParams::default(), &Patch::Merge(request))
        .await
        .unwrap();
    let reverted = ferry_testenv::wait_until("the rollback to finish", 120, || async {
        let resize = api.get_opt("copy").await.ok().flatten()?;
        let message = resize.status.as_ref()?.message.clone()?;
        message.starts_with("rolled back on request").then_some(resize)
    })
    .await
    .unwrap();
    assert_eq!(reverted.phase(), Phase::Failed);

    let sts = wait_ready(&sets, "db", 2, 60).await.unwrap();
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
        Some(256 << 20),
        "original template restored"
    );
    for entry in &before {
        let (claim, volume) = (&entry.claim, &entry.volume);
        let current = claims.get(claim).await.unwrap();
        assert_eq!(
            current.spec.unwrap().volume_name.as_ref(),
            Some(volume),
            "{claim} back on its old volume"
        );
        let dir = claim_directory(&claims, &volumes, claim).await.unwrap();
        assert_eq!(
            tree_checksum(&dir).unwrap(),
            entry.checksum,
            "{claim}: data as before the resize"
        );
    }
    // The new volumes are kept (with the later write) and listed as retained.
    for new in &new_volumes {
        let pv = volumes.get(new).await.unwrap();
        assert_eq!(
            pv.spec.unwrap().persistent_volume_reclaim_policy.as_deref(),
            Some("Retain")
        );
    }
    assert!(
        new_dir.join("written-after-swap").exists(),
        "the later write is still on the new volume"
    );
    let mut retained = reverted.status.unwrap().created_objects.retained_volumes;
    retained.sort();
    let mut expected = new_volumes.clone();
    expected.sort();
    assert_eq!(retained, expected);
    harness.finish().await;
}
