//! What only CSI volumes have, on the real node's driver behind the upstream sidecars:
//! `VolumeAttachment`s (the external-attacher), the external-provisioner's deletion finalizer, and a
//! driver and sidecars that can die mid-resize.

use crate::real_node::{assert_nothing_lost, resize_succeeds, writer};
use crate::support::Harness;
use crate::support::disruption::DisruptionOracle;
use ferry_testenv::disruption::Allowed;
use ferry_testenv::volume_dir::driver_image;
use ferry_testenv::{
    CLASS_BLOCK, CLASS_BLOCK_ATTACH, CLASS_BLOCK_NODE, CLASS_LOCAL, CSI_ATTACH_DRIVER, CSI_DRIVER,
    REAL_NODES, REAL_ZONES, wait_until,
};
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::VolumeAttachment;
use kube::Api;
use kube::api::ListParams;
use serde_json::json;

/// The external-provisioner's finalizer, on a bound volume with reclaim policy Delete: it deletes
/// the disk before the PV goes.
const PROVISIONER_FINALIZER: &str = "external-provisioner.volume.kubernetes.io/finalizer";

async fn volume_of(harness: &Harness, claim: &str) -> PersistentVolume {
    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    let volumes: Api<PersistentVolume> = Api::all(harness.client.clone());
    ferry_testenv::fixtures::bound_volume(&claims, &volumes, claim)
        .await
        .unwrap()
}

/// The `VolumeAttachment`s of a PV: (node, attached).
/// The node a pod runs on.
async fn node_of(harness: &Harness, pod: &str) -> String {
    let pod = harness.ns.api::<Pod>().get(pod).await.unwrap();
    pod.spec.unwrap().node_name.unwrap()
}

async fn attachments(harness: &Harness, volume: &str) -> Vec<(String, bool)> {
    Api::<VolumeAttachment>::all(harness.client.clone())
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|va| va.spec.source.persistent_volume_name.as_deref() == Some(volume))
        .map(|va| (va.spec.node_name, va.status.is_some_and(|s| s.attached)))
        .collect()
}

/// A replica moves off `ferry-block-attach` (its volume detached, no `VolumeAttachment` left) with
/// the old volume retained for 20 s (the provisioner never deletes it meanwhile, and deletes it with
/// its disk when retention ends), then back onto it (attached where it runs) with the
/// external-attacher and the driver killed every few seconds meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_moves_off_and_onto_an_attached_class_and_its_retained_volume_is_freed_at_expiry() {
    let harness = Harness::start("real-attach").await;
    let seeds = writer(&harness, 1, CLASS_BLOCK_ATTACH, "320Mi").await;
    // Off the class, then back onto it: the replica goes down once for each.
    harness.allow_disruption(Allowed { at_once: 1, each: 2 });
    let first = volume_of(&harness, "data-db-0").await;
    let first_name = first.metadata.name.clone().unwrap();
    let first_csi = first.spec.as_ref().unwrap().csi.clone().unwrap();
    assert_eq!(first_csi.driver, CSI_ATTACH_DRIVER);
    assert_eq!(
        attachments(&harness, &first_name).await,
        vec![(node_of(&harness, "db-0").await, true)]
    );
    assert!(
        first
            .metadata
            .finalizers
            .as_ref()
            .unwrap()
            .iter()
            .any(|f| f == PROVISIONER_FINALIZER),
        "a bound volume with reclaim policy Delete carries the provisioner's finalizer"
    );
    let first_image = driver_image(&first_csi.driver, &first_csi.volume_handle).unwrap();
    assert!(first_image.exists());

    resize_succeeds(
        &harness,
        "off-attach",
        json!({"statefulSetName": "db", "retainOldVolumes": "20s", "volumes": [
            {"name": "data", "size": "320Mi", "storageClassName": CLASS_BLOCK}
        ]}),
        300,
    )
    .await;
    let second = volume_of(&harness, "data-db-0").await;
    assert_eq!(
        second.spec.as_ref().unwrap().csi.as_ref().unwrap().driver,
        CSI_DRIVER
    );
    assert_nothing_lost(&harness, 1, &seeds).await;
    // The old volume is retained: its disk is still there and the provisioner keeps its finalizer.
    let volumes: Api<PersistentVolume> = Api::all(harness.client.clone());
    let retained = volumes.get(&first_name).await.unwrap();
    assert_eq!(
        retained
            .spec
            .as_ref()
            .unwrap()
            .persistent_volume_reclaim_policy
            .as_deref(),
        Some("Retain")
    );
    // The provisioner drops its finalizer from a volume set to Retain: nothing holds the PV object,
    // only the policy keeps the disk.
    assert!(
        !retained
            .metadata
            .finalizers
            .unwrap_or_default()
            .iter()
            .any(|f| f == PROVISIONER_FINALIZER),
        "the external-provisioner's finalizer is gone from a retained volume"
    );
    assert!(first_image.exists(), "a retained volume keeps its disk");
    wait_until("the old volume's VolumeAttachment to go", 90, || async {
        attachments(&harness, &first_name).await.is_empty().then_some(())
    })
    .await
    .unwrap();
    // Retention over: the provisioner deletes the disk, then the PV.
    wait_until("the retained volume to be deleted with its disk", 180, || async {
        (volumes.get_opt(&first_name).await.ok()?.is_none() && !first_image.exists()).then_some(())
    })
    .await
    .unwrap();

    // Back onto the attached class with the external-attacher and the driver killed meanwhile.
    resize_succeeds_while_killing(
        &harness,
        &["csi-attach-attacher", "csi-attach"],
        "onto-attach",
        json!({"statefulSetName": "db", "retainOldVolumes": "1h", "volumes": [
            {"name": "data", "size": "320Mi", "storageClassName": CLASS_BLOCK_ATTACH}
        ]}),
    )
    .await;
    let third = volume_of(&harness, "data-db-0").await;
    let third_name = third.metadata.name.clone().unwrap();
    assert_eq!(
        third.spec.as_ref().unwrap().csi.as_ref().unwrap().driver,
        CSI_ATTACH_DRIVER
    );
    assert_eq!(
        attachments(&harness, &third_name).await,
        vec![(node_of(&harness, "db-0").await, true)]
    );
    assert_nothing_lost(&harness, 1, &seeds).await;
    harness.finish().await;
}

/// Runs the VolumeResize `name` to success (within 300 s) while the supervised processes `names`
/// are killed in turn, the first a second in (before the resize can have finished), then one every
/// 3 s; asserts at least one was killed.
async fn resize_succeeds_while_killing(
    harness: &Harness,
    names: &'static [&'static str],
    name: &str,
    spec: serde_json::Value,
) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = stop.clone();
    let killer = tokio::spawn(async move {
        let mut killed = 0;
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        for process in names.iter().cycle() {
            if stopped.load(Ordering::Relaxed) {
                break;
            }
            killed += ferry_testenv::processes::kill_supervised(process).unwrap().len();
            tokio::time::sleep(std::time::Duration::from_secs(3)).await;
        }
        killed
    });
    resize_succeeds(harness, name, spec, 300).await;
    stop.store(true, Ordering::Relaxed);
    assert!(
        killer.await.unwrap() > 0,
        "one of {names:?} was killed mid-resize"
    );
}

/// Users run Ferry on `local` PVs too: a replica moves off one (served by the test agent) onto the
/// CSI driver while the driver and the external-provisioner are killed again and again, then grows
/// in place while the driver and the external-resizer are: both resizes finish, every acknowledged
/// write kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_off_local_pvs_and_a_growth_finish_with_the_driver_and_its_sidecars_killed() {
    let harness = Harness::start("real-csi-kill").await;
    let seeds = writer(&harness, 1, CLASS_LOCAL, "320Mi").await;
    let local = volume_of(&harness, "data-db-0").await;
    assert!(local.spec.unwrap().local.is_some());

    resize_succeeds_while_killing(
        &harness,
        &["csi-block", "csi-block-provisioner"],
        "to-csi",
        json!({"statefulSetName": "db", "retainOldVolumes": "1m", "volumes": [
            {"name": "data", "size": "320Mi", "storageClassName": CLASS_BLOCK}
        ]}),
    )
    .await;
    let csi = volume_of(&harness, "data-db-0").await.spec.unwrap().csi.unwrap();
    assert_eq!(csi.driver, CSI_DRIVER);
    assert_nothing_lost(&harness, 1, &seeds).await;

    resize_succeeds_while_killing(
        &harness,
        &["csi-block", "csi-block-resizer"],
        "grow",
        json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "480Mi"}]}),
    )
    .await;
    assert_eq!(capacity(&harness, "data-db-0").await, 480 << 20);
    assert_nothing_lost(&harness, 1, &seeds).await;
    harness.finish().await;
}

async fn capacity(harness: &Harness, claim: &str) -> u64 {
    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    let status = claims.get(claim).await.unwrap().status.unwrap();
    ferry_api::quantity::quantity_bytes(status.capacity.unwrap().get("storage").unwrap()).unwrap()
}

/// KEP-1790 on the real driver: a size it refuses (OUT_OF_RANGE, past its backing file system)
/// leaves the claim `ControllerResizeInfeasible`; Ferry lowers the request back to the least the
/// API server accepts, fails the resize saying why, and the replica serves on with its data.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_size_the_driver_refuses_is_lowered_back_and_the_resize_fails_saying_why() {
    let harness = Harness::start("real-infeasible").await;
    let seeds = writer(&harness, 1, CLASS_BLOCK, "320Mi").await;
    harness
        .create_resize(
            "huge",
            json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "1Ti"}]}),
        )
        .await;
    let resize = crate::real_node::wait_phase(&harness, "huge", 120).await;
    let status = resize.status.unwrap();
    assert_eq!(
        status.phase,
        Some(ferry_api::Phase::Failed),
        "{:?}",
        status.message
    );
    let message = status.message.unwrap_or_default();
    assert!(
        message.contains("cannot grow data-db-0 to 1Ti")
            && message.contains("ControllerResizeInfeasible")
            && message.contains("OutOfRange"),
        "{message}"
    );
    assert!(status.plan[0].expansion_refused.is_some(), "{:?}", status.plan[0]);
    // Said on the StatefulSet too, where its owner looks.
    let events = harness.wait_event("StatefulSet", "db", "RolledBack").await;
    assert!(
        events
            .iter()
            .any(|(kind, _, note)| kind == "Warning" && note.contains("cannot grow data-db-0 to 1Ti")),
        "{events:?}"
    );
    // The claim asks for 1 MiB above what it has, and its resize status is clear again.
    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    let claim = wait_until("the claim to leave the infeasible state", 60, || async {
        let claim = claims.get("data-db-0").await.ok()?;
        let status = claim.status.clone()?;
        let infeasible = status
            .allocated_resource_statuses
            .as_ref()
            .is_some_and(|s| s.get("storage").is_some_and(|v| v.ends_with("Infeasible")));
        (!infeasible).then_some(claim)
    })
    .await
    .unwrap();
    let requested = claim.spec.unwrap().resources.unwrap().requests.unwrap()["storage"]
        .0
        .clone();
    let requested = ferry_api::parse_bytes(&requested).unwrap();
    assert!(
        (320 << 20..1 << 30).contains(&requested),
        "asks for {requested} bytes"
    );
    assert_nothing_lost(&harness, 1, &seeds).await;
    harness.finish().await;
}

/// The PV's node affinity as "key=value" (its one term's one expression's one value).
fn bound_to(volume: &PersistentVolume) -> String {
    let affinity = volume.spec.as_ref().unwrap().node_affinity.clone().unwrap();
    let terms = affinity.required.unwrap().node_selector_terms;
    let expression = &terms[0].match_expressions.as_ref().unwrap()[0];
    format!(
        "{}={}",
        expression.key,
        expression.values.as_ref().unwrap().join(",")
    )
}

/// Replicas spread over the real nodes on node-bound volumes (`binding: node`, the local-PV case)
/// move to a zone-bound class one at a time: each replica's new volume is made in the zone of the
/// node its data was on, and the replica comes back on that node, every acknowledged write kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_on_node_bound_volumes_move_to_a_zone_bound_class_where_they_are() {
    let harness = Harness::start("real-node-bound").await;
    let seeds = writer(&harness, 2, CLASS_BLOCK_NODE, "320Mi").await;
    let mut nodes = Vec::new();
    for replica in 0..2 {
        let node = node_of(&harness, &format!("db-{replica}")).await;
        let volume = volume_of(&harness, &format!("data-db-{replica}")).await;
        assert_eq!(bound_to(&volume), format!("kubernetes.io/hostname={node}"));
        nodes.push(node);
    }
    let oracle = DisruptionOracle::start(harness.ns.api(), "db", 2).await;
    resize_succeeds(
        &harness,
        "to-zone",
        json!({"statefulSetName": "db", "volumes": [
            {"name": "data", "size": "320Mi", "storageClassName": CLASS_BLOCK}
        ]}),
        300,
    )
    .await;
    oracle.assert_at_most(1).await;
    for (replica, node) in nodes.iter().enumerate() {
        let zone = REAL_ZONES[REAL_NODES.iter().position(|real| real == node).unwrap()];
        let volume = volume_of(&harness, &format!("data-db-{replica}")).await;
        assert_eq!(
            volume.spec.as_ref().unwrap().csi.as_ref().unwrap().driver,
            CSI_DRIVER
        );
        assert_eq!(bound_to(&volume), format!("topology.kubernetes.io/zone={zone}"));
        assert_eq!(&node_of(&harness, &format!("db-{replica}")).await, node);
    }
    assert_nothing_lost(&harness, 2, &seeds).await;
    harness.finish().await;
}
