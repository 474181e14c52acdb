//! The test StorageClasses on the real control plane: provisioning through the real StatefulSet
//! controller, PV binder and scheduler; online and offline-only expansion.

use crate::claims::{capacity, grow};
use ferry_api::quantity::quantity_bytes;
use ferry_testenv::fixtures::{claim_directory, stateful_set, wait_ready};
use ferry_testenv::{CLASS_EXPANDABLE, CLASS_FIXED, CLASS_OFFLINE_EXPAND, TestNamespace, client, wait_until};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use kube::api::{DeleteParams, PostParams};
use kube::{Api, ResourceExt};

const GI: u64 = 1 << 30;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateful_set_claims_are_provisioned_bound_and_pods_ready() {
    let client = client().await.unwrap();
    let ns = TestNamespace::create(&client, "storage-sts").await.unwrap();
    let sets: Api<StatefulSet> = ns.api();
    sets.create(&PostParams::default(), &stateful_set("db", 3, CLASS_FIXED, "1Gi"))
        .await
        .unwrap();
    wait_ready(&sets, "db", 3, 120).await.unwrap();

    let claims: Api<PersistentVolumeClaim> = ns.api();
    let volumes: Api<PersistentVolume> = Api::all(client.clone());
    let pods: Api<Pod> = ns.api();
    for replica in 0..3 {
        let claim_name = format!("data-db-{replica}");
        let claim = claims.get(&claim_name).await.unwrap();
        assert_eq!(
            claim.status.as_ref().unwrap().phase.as_deref(),
            Some("Bound"),
            "{claim_name}"
        );
        let volume = volumes
            .get(claim.spec.as_ref().unwrap().volume_name.as_ref().unwrap())
            .await
            .unwrap();
        assert_eq!(
            volume.spec.as_ref().unwrap().claim_ref.as_ref().unwrap().uid,
            claim.uid()
        );
        let directory = claim_directory(&claims, &volumes, &claim_name).await.unwrap();
        assert!(directory.is_dir(), "PV directory {directory:?} exists");
        // The PV is pinned to the node the scheduler chose, and the pod runs there.
        let pod = pods.get(&format!("db-{replica}")).await.unwrap();
        let node = pod.spec.unwrap().node_name.unwrap();
        let affinity = serde_json::to_value(volume.spec.unwrap().node_affinity).unwrap();
        assert_eq!(
            affinity["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"][0],
            node
        );
    }
    ns.cleanup().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn online_expansion_updates_capacity() {
    let client = client().await.unwrap();
    let ns = TestNamespace::create(&client, "storage-online").await.unwrap();
    let sets: Api<StatefulSet> = ns.api();
    sets.create(
        &PostParams::default(),
        &stateful_set("db", 1, CLASS_EXPANDABLE, "1Gi"),
    )
    .await
    .unwrap();
    wait_ready(&sets, "db", 1, 120).await.unwrap();
    let claims: Api<PersistentVolumeClaim> = ns.api();
    assert_eq!(capacity(&claims, "data-db-0").await, Some(GI));

    grow(&claims, "data-db-0", "3Gi").await;
    wait_until("online expansion to 3Gi", 60, || async {
        (capacity(&claims, "data-db-0").await == Some(3 * GI)).then_some(())
    })
    .await
    .unwrap();
    let volume_name = claims
        .get("data-db-0")
        .await
        .unwrap()
        .spec
        .unwrap()
        .volume_name
        .unwrap();
    let volume = Api::<PersistentVolume>::all(client.clone())
        .get(&volume_name)
        .await
        .unwrap();
    assert_eq!(
        quantity_bytes(volume.spec.unwrap().capacity.unwrap().get("storage").unwrap()),
        Some(3 * GI)
    );
    ns.cleanup().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offline_expansion_waits_for_the_pod_to_restart() {
    let client = client().await.unwrap();
    let ns = TestNamespace::create(&client, "storage-offline").await.unwrap();
    let sets: Api<StatefulSet> = ns.api();
    sets.create(
        &PostParams::default(),
        &stateful_set("db", 1, CLASS_OFFLINE_EXPAND, "1Gi"),
    )
    .await
    .unwrap();
    wait_ready(&sets, "db", 1, 120).await.unwrap();
    let claims: Api<PersistentVolumeClaim> = ns.api();
    let pods: Api<Pod> = ns.api();
    let first_pod = pods.get("db-0").await.unwrap().uid();

    grow(&claims, "data-db-0", "2Gi").await;
    wait_until("FileSystemResizePending", 60, || async {
        let claim = claims.get_opt("data-db-0").await.ok().flatten()?;
        let pending = claim
            .status?
            .conditions?
            .iter()
            .any(|c| c.type_ == "FileSystemResizePending" && c.status == "True");
        pending.then_some(())
    })
    .await
    .unwrap();
    // While the pod keeps running the file system cannot grow: capacity stays.
    tokio::time::sleep(std::time::Duration::from_secs(4)).await;
    assert_eq!(
        capacity(&claims, "data-db-0").await,
        Some(GI),
        "capacity must wait for a pod restart"
    );

    pods.delete("db-0", &DeleteParams::default()).await.unwrap();
    wait_until("offline expansion to 2Gi after the restart", 90, || async {
        (capacity(&claims, "data-db-0").await == Some(2 * GI)).then_some(())
    })
    .await
    .unwrap();
    let pod = pods.get("db-0").await.unwrap();
    assert_ne!(pod.uid(), first_pod, "a new pod finished the resize");
    let claim = claims.get("data-db-0").await.unwrap();
    assert!(
        claim
            .status
            .unwrap()
            .conditions
            .unwrap_or_default()
            .iter()
            .all(|c| c.type_ != "FileSystemResizePending"),
        "condition cleared"
    );
    ns.cleanup().await.unwrap();
}
