//! The real node's CSI storage: Ferry's test CSI driver behind the upstream external-provisioner,
//! -resizer, -attacher and -snapshotter (with the snapshot-controller), registered with the real
//! kubelet. Volumes are `spec.csi` PVs the
//! provisioner made, the kubelet stages, publishes and grows them through the driver, and the
//! bytes on them are checked by checksum.

use crate::claims::{capacity, grow};
use crate::real_pods::{kubectl_ok, pod_with_claim, start_pod, start_pod_on, wait_running};
use ferry_testenv::workload::df_bytes;
use ferry_testenv::{
    CLASS_BLOCK, CLASS_BLOCK_ATTACH, CLASS_BLOCK_OFFLINE, CSI_ATTACH_DRIVER, CSI_DRIVER, REAL_NODES,
    REAL_ZONES, SNAPSHOT_CLASS, TestNamespace, client, wait_until,
};
use k8s_openapi::api::core::v1::{Event, Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::{CSINode, VolumeAttachment};
use kube::api::{DeleteParams, ListParams};
use kube::{Api, Client};

const MI: u64 = 1 << 20;

/// The claim's PV, checked to be a CSI volume of `driver` in the real node's zone.
async fn csi_volume(
    client: &Client,
    claims: &Api<PersistentVolumeClaim>,
    claim: &str,
    driver: &str,
) -> PersistentVolume {
    let volumes: Api<PersistentVolume> = Api::all(client.clone());
    let volume = ferry_testenv::fixtures::bound_volume(claims, &volumes, claim)
        .await
        .unwrap();
    let spec = volume.spec.clone().unwrap();
    let csi = spec.csi.clone().expect("a spec.csi volume");
    assert_eq!(csi.driver, driver);
    assert_eq!(csi.fs_type.as_deref(), Some("xfs"));
    let annotations = volume.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(
        annotations
            .get("pv.kubernetes.io/provisioned-by")
            .map(String::as_str),
        Some(driver)
    );
    // Bound to the zone of one real node, as a cloud disk is.
    let affinity = serde_json::to_string(&spec.node_affinity).unwrap();
    assert!(affinity.contains("topology.kubernetes.io/zone"), "{affinity}");
    assert_eq!(
        REAL_ZONES
            .iter()
            .filter(|zone| affinity.contains(&format!("\"{zone}\"")))
            .count(),
        1,
        "{affinity}"
    );
    volume
}

/// The sha256 of /data/kept in the pod, as `sha256sum` prints it.
async fn kept_checksum(ns: &TestNamespace, pod: &str) -> String {
    kubectl_ok(ns, &["exec", pod, "--", "sha256sum", "/data/kept"]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_real_kubelet_lists_both_csi_drivers_with_their_zone_and_node() {
    let client = client().await.unwrap();
    for (real, zone) in REAL_NODES.iter().zip(REAL_ZONES) {
        let node = Api::<CSINode>::all(client.clone()).get(real).await.unwrap();
        let drivers = node.spec.drivers;
        for name in [CSI_DRIVER, CSI_ATTACH_DRIVER] {
            let driver = drivers
                .iter()
                .find(|d| d.name == name)
                .unwrap_or_else(|| panic!("{name} in {drivers:?}"));
            assert_eq!(driver.node_id, *real);
            let mut keys = driver.topology_keys.clone().unwrap_or_default();
            keys.sort();
            assert_eq!(keys, ["kubernetes.io/hostname", "topology.kubernetes.io/zone"]);
        }
        // The kubelet labels the node with the driver's topology.
        let labels = Api::<Node>::all(client.clone())
            .get(real)
            .await
            .unwrap()
            .metadata
            .labels
            .unwrap();
        assert_eq!(
            labels.get("topology.kubernetes.io/zone").map(String::as_str),
            Some(zone)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attached_csi_volume_fills_up_grows_online_and_is_detached_and_freed() {
    let client = client().await.unwrap();
    let ns = TestNamespace::create(&client, "csi-attach").await.unwrap();
    let script = "dd if=/dev/urandom of=/data/kept bs=1M count=20 && sync && \
                  dd if=/dev/zero of=/data/fill bs=1M 2>&1; echo dd-exit=$?; rm -f /data/fill; sleep 3600";
    pod_with_claim(&ns, "att", CLASS_BLOCK_ATTACH, "300Mi", script).await;
    let pods: Api<Pod> = ns.api();
    wait_running(&pods, "att").await;
    let claims: Api<PersistentVolumeClaim> = ns.api();
    let volume = csi_volume(&client, &claims, "att", CSI_ATTACH_DRIVER).await;
    let volume_name = volume.metadata.name.clone().unwrap();

    // Attached through a VolumeAttachment the external-attacher marked attached.
    let attachments: Api<VolumeAttachment> = Api::all(client.clone());
    let of_volume = |list: Vec<VolumeAttachment>| {
        list.into_iter()
            .filter(|a| a.spec.source.persistent_volume_name.as_deref() == Some(volume_name.as_str()))
            .collect::<Vec<_>>()
    };
    let attached = of_volume(attachments.list(&ListParams::default()).await.unwrap().items);
    assert_eq!(attached.len(), 1, "{attached:?}");
    let running_on = pods.get("att").await.unwrap().spec.unwrap().node_name.unwrap();
    assert_eq!(attached[0].spec.node_name, running_on);
    assert_eq!(attached[0].status.as_ref().map(|s| s.attached), Some(true));

    // Writing past the claim's size fails with ENOSPC.
    let logs = wait_until("dd to hit the end of the volume", 90, || async {
        let (_, text, _) = ferry_testenv::kubectl(&["-n", &ns.name, "logs", "att"])
            .await
            .ok()?;
        text.contains("dd-exit=").then_some(text)
    })
    .await
    .unwrap();
    assert!(
        logs.contains("No space left on device") && logs.contains("dd-exit=1"),
        "{logs}"
    );
    let kept = kept_checksum(&ns, "att").await;
    let size = df_bytes(&ns.name, "att", "/data").await.unwrap();
    // XFS keeps a 64 MiB log and its metadata out of what df shows.
    assert!((200 * MI..=300 * MI).contains(&size), "df size {size}");

    // Grown online: the running pod's `df` sees it.
    grow(&claims, "att", "480Mi").await;
    wait_until("the claim's capacity to reach 480Mi", 90, || async {
        (capacity(&claims, "att").await? == 480 * MI).then_some(())
    })
    .await
    .unwrap();
    let size = wait_until("df in the pod to show the growth", 60, || async {
        let size = df_bytes(&ns.name, "att", "/data").await.ok()?;
        (size > 380 * MI).then_some(size)
    })
    .await
    .unwrap();
    assert!(size <= 480 * MI, "df size after growth {size}");
    assert_eq!(kept_checksum(&ns, "att").await, kept);

    // The pod gone: detached, no VolumeAttachment left; the claim gone: the PV and its disk too.
    pods.delete("att", &DeleteParams::default()).await.unwrap();
    wait_until("the VolumeAttachment to be gone", 120, || async {
        of_volume(attachments.list(&ListParams::default()).await.ok()?.items)
            .is_empty()
            .then_some(())
    })
    .await
    .unwrap();
    claims.delete("att", &DeleteParams::default()).await.unwrap();
    let volumes: Api<PersistentVolume> = Api::all(client.clone());
    wait_until("the released PV to be deleted", 120, || async {
        volumes.get_opt(&volume_name).await.ok()?.is_none().then_some(())
    })
    .await
    .unwrap();
    let image = ferry_testenv::paths::state_dir()
        .join("csi/attach/state/volumes")
        .join(format!("{}.img", volume.spec.unwrap().csi.unwrap().volume_handle));
    assert!(!image.exists(), "disk image {image:?} deleted");
    ns.cleanup().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_offline_csi_volume_grows_once_its_pod_is_gone_and_back() {
    let client = client().await.unwrap();
    let ns = TestNamespace::create(&client, "csi-offline").await.unwrap();
    let script = "[ -f /data/kept ] || dd if=/dev/urandom of=/data/kept bs=1M count=20; sync; sleep 3600";
    pod_with_claim(&ns, "off", CLASS_BLOCK_OFFLINE, "300Mi", script).await;
    let pods: Api<Pod> = ns.api();
    wait_running(&pods, "off").await;
    let claims: Api<PersistentVolumeClaim> = ns.api();
    csi_volume(&client, &claims, "off", CSI_DRIVER).await;
    let kept = wait_until("the pod to write its file", 60, || async {
        let (code, out, _) =
            ferry_testenv::kubectl(&["-n", &ns.name, "exec", "off", "--", "sha256sum", "/data/kept"])
                .await
                .ok()?;
        (code == 0).then_some(out)
    })
    .await
    .unwrap();

    // While the pod runs, the driver refuses and the external-resizer says it waits for the pod.
    grow(&claims, "off", "480Mi").await;
    let events: Api<Event> = ns.api();
    wait_until("the resizer's in-use event", 90, || async {
        let list = events.list(&ListParams::default()).await.ok()?.items;
        list.iter()
            .any(|e| {
                e.involved_object.name.as_deref() == Some("off")
                    && e.message
                        .as_deref()
                        .is_some_and(|m| m.contains("offline expansion"))
            })
            .then_some(())
    })
    .await
    .unwrap();
    assert_eq!(capacity(&claims, "off").await, Some(300 * MI));
    assert!(df_bytes(&ns.name, "off", "/data").await.unwrap() <= 300 * MI);

    // The pod gone: the volume grows, and the claim waits for the node to grow its file system.
    pods.delete("off", &DeleteParams::default()).await.unwrap();
    wait_until("the claim to wait for the file-system resize", 120, || async {
        let claim = claims.get_opt("off").await.ok().flatten()?;
        let conditions = claim.status?.conditions.unwrap_or_default();
        conditions
            .iter()
            .any(|c| c.type_ == "FileSystemResizePending")
            .then_some(())
    })
    .await
    .unwrap();
    wait_until("the old pod to be gone", 60, || async {
        pods.get_opt("off").await.ok()?.is_none().then_some(())
    })
    .await
    .unwrap();
    start_pod(&ns, "off", "off", script).await;
    wait_running(&pods, "off").await;
    wait_until("the claim's capacity to reach 480Mi", 90, || async {
        (capacity(&claims, "off").await? == 480 * MI).then_some(())
    })
    .await
    .unwrap();
    let size = df_bytes(&ns.name, "off", "/data").await.unwrap();
    assert!(size > 380 * MI && size <= 480 * MI, "df size after growth {size}");
    assert_eq!(kept_checksum(&ns, "off").await, kept);
    ns.cleanup().await.unwrap();
}

/// A claim with a `dataSource`, as users write it.
async fn claim_from(ns: &TestNamespace, name: &str, size: &str, source: serde_json::Value) {
    let claim = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": CLASS_BLOCK,
                 "resources": {"requests": {"storage": size}}, "dataSource": source},
    }))
    .unwrap();
    ns.api::<PersistentVolumeClaim>()
        .create(&kube::api::PostParams::default(), &claim)
        .await
        .unwrap();
}

/// Through the upstream external-snapshotter and snapshot-controller: a VolumeSnapshot of a claim in
/// use becomes ready, a bigger claim restored from it holds the same bytes and a file system of its
/// own size, and a clone of the claim (a `PersistentVolumeClaim` data source) holds them too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshots_restores_and_clones_go_through_the_upstream_snapshotter_and_provisioner() {
    let client = client().await.unwrap();
    let ns = TestNamespace::create(&client, "csi-snap").await.unwrap();
    let script = "dd if=/dev/urandom of=/data/kept bs=1M count=20 && sync && sleep 3600";
    pod_with_claim(&ns, "src", CLASS_BLOCK, "300Mi", script).await;
    let pods: Api<Pod> = ns.api();
    let source_node = wait_running(&pods, "src")
        .await
        .spec
        .and_then(|spec| spec.node_name)
        .expect("the source pod's node");
    let kept = wait_until("the pod to write its file", 60, || async {
        let (code, out, _) =
            ferry_testenv::kubectl(&["-n", &ns.name, "exec", "src", "--", "sha256sum", "/data/kept"])
                .await
                .ok()?;
        (code == 0).then_some(out)
    })
    .await
    .unwrap();

    let resource = kube::discovery::ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk(
        "snapshot.storage.k8s.io",
        "v1",
        "VolumeSnapshot",
    ));
    let snapshots: Api<kube::api::DynamicObject> = Api::namespaced_with(client.clone(), &ns.name, &resource);
    let snapshot: kube::api::DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
        "metadata": {"name": "snap"},
        "spec": {"volumeSnapshotClassName": SNAPSHOT_CLASS, "source": {"persistentVolumeClaimName": "src"}},
    }))
    .unwrap();
    snapshots
        .create(&kube::api::PostParams::default(), &snapshot)
        .await
        .unwrap();
    wait_until("the VolumeSnapshot to be ready", 120, || async {
        let snapshot = snapshots.get("snap").await.ok()?;
        (snapshot.data["status"]["readyToUse"] == serde_json::json!(true)).then_some(())
    })
    .await
    .unwrap();

    claim_from(
        &ns,
        "restored",
        "400Mi",
        serde_json::json!({
            "apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "snap"
        }),
    )
    .await;
    claim_from(
        &ns,
        "clone",
        "300Mi",
        serde_json::json!({"kind": "PersistentVolumeClaim", "name": "src"}),
    )
    .await;
    for name in ["restored", "clone"] {
        start_pod_on(&ns, name, name, "sleep 3600", Some(&source_node)).await;
        wait_running(&pods, name).await;
        assert_eq!(
            kept_checksum(&ns, name).await,
            kept,
            "{name} holds the source's bytes"
        );
    }
    let claims: Api<PersistentVolumeClaim> = ns.api();
    assert_eq!(capacity(&claims, "restored").await, Some(400 * MI));
    let size = df_bytes(&ns.name, "restored", "/data").await.unwrap();
    assert!(
        size > 330 * MI && size <= 400 * MI,
        "the restored file system fills its volume: df {size}"
    );
    let restored = csi_volume(&client, &claims, "restored", CSI_DRIVER).await;
    assert!(
        restored
            .spec
            .unwrap()
            .csi
            .unwrap()
            .volume_handle
            .starts_with("pvc-")
    );
    ns.cleanup().await.unwrap();
}

/// `sh -c script` in the pod: (exit code, stderr).
async fn exec(ns: &TestNamespace, pod: &str, script: &str) -> (i32, String) {
    let (code, _, stderr) = ferry_testenv::kubectl(&["-n", &ns.name, "exec", pod, "--", "sh", "-c", script])
        .await
        .unwrap();
    (code, stderr)
}

/// Sets the claim's VolumeAttributesClass and waits for what its status then says.
async fn modify(claims: &Api<PersistentVolumeClaim>, claim: &str, class: &str, until: &str) {
    let patch = serde_json::json!({"spec": {"volumeAttributesClassName": class}});
    claims
        .patch(
            claim,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(patch),
        )
        .await
        .unwrap();
    wait_until(&format!("claim {claim}: {until}"), 90, || async {
        let status = claims.get(claim).await.ok()?.status?;
        let current = status.current_volume_attributes_class_name.as_deref();
        let modify = status.modify_volume_status.as_ref().map(|m| m.status.as_str());
        let reached = match until {
            "Infeasible" => modify == Some("Infeasible"),
            _ => current == Some(until) && modify.is_none(),
        };
        reached.then_some(())
    })
    .await
    .unwrap();
}

/// A VolumeAttributesClass change goes through the upstream external-resizer to the driver's
/// ControllerModifyVolume, which really applies its one mutable parameter: the mounted file system
/// turns read-only (writes in the running pod fail) and writable again; a class with a parameter
/// the driver does not have is reported Infeasible and changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_volume_attributes_class_change_is_applied_to_the_mounted_volume() {
    use ferry_testenv::{ATTRIBUTES_READ_ONLY, ATTRIBUTES_WRITABLE};
    let client = client().await.unwrap();
    let ns = TestNamespace::create(&client, "csi-vac").await.unwrap();
    let claim = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "tiered"},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": CLASS_BLOCK,
                 "volumeAttributesClassName": ATTRIBUTES_WRITABLE,
                 "resources": {"requests": {"storage": "300Mi"}}},
    }))
    .unwrap();
    let claims: Api<PersistentVolumeClaim> = ns.api();
    claims
        .create(&kube::api::PostParams::default(), &claim)
        .await
        .unwrap();
    start_pod(&ns, "tiered", "tiered", "sleep 3600").await;
    wait_running(&ns.api::<Pod>(), "tiered").await;
    assert_eq!(exec(&ns, "tiered", "echo before > /data/before").await.0, 0);

    modify(&claims, "tiered", ATTRIBUTES_READ_ONLY, ATTRIBUTES_READ_ONLY).await;
    let (code, stderr) = exec(&ns, "tiered", "echo during > /data/during").await;
    assert_ne!(code, 0, "a write to a read-only volume fails");
    assert!(stderr.contains("Read-only file system"), "{stderr}");
    assert_eq!(exec(&ns, "tiered", "grep -q before /data/before").await.0, 0);

    modify(&claims, "tiered", ATTRIBUTES_WRITABLE, ATTRIBUTES_WRITABLE).await;
    assert_eq!(exec(&ns, "tiered", "echo after > /data/after").await.0, 0);

    // A parameter this driver does not have: Infeasible, and the volume stays as it was.
    let unknown = format!("{}-iops", ns.name);
    let class = serde_json::from_value(serde_json::json!({
        "metadata": {"name": unknown},
        "driverName": CSI_DRIVER,
        "parameters": {"iops": "9000"},
    }))
    .unwrap();
    let classes: Api<k8s_openapi::api::storage::v1::VolumeAttributesClass> = Api::all(client.clone());
    classes
        .create(&kube::api::PostParams::default(), &class)
        .await
        .unwrap();
    modify(&claims, "tiered", &unknown, "Infeasible").await;
    let status = claims.get("tiered").await.unwrap().status.unwrap();
    assert_eq!(
        status.current_volume_attributes_class_name.as_deref(),
        Some(ATTRIBUTES_WRITABLE)
    );
    assert_eq!(exec(&ns, "tiered", "echo still > /data/still").await.0, 0);
    ns.cleanup().await.unwrap();
    // Deleted once no claim names it (the API server's protection finalizer).
    classes.delete(&unknown, &DeleteParams::default()).await.unwrap();
}
