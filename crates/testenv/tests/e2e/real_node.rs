//! The real node of the local control plane: a real kubelet and containerd run the pods, its volumes
//! are real file systems of the requested size, and logs, exec and the stats summary work through
//! the API server as on a cluster.

use crate::claims::{capacity, grow};
use crate::real_pods::{kubectl_ok, pod_with_claim, wait_running};
use ferry_testenv::fixtures::claim_directory;
use ferry_testenv::workload::{acknowledged, df_bytes, records, writer_stateful_set};
use ferry_testenv::{CLASS_BLOCK_FIXED, CLASS_LOCAL, REAL_NODES, TestNamespace, client, kubectl, wait_until};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use kube::api::{DeleteParams, PostParams};
use kube::{Api, Client};

const MI: u64 = 1 << 20;

/// The claim's volume entry in a real node's stats summary, read through the API server.
async fn volume_stats(
    client: &Client,
    node: &str,
    namespace: &str,
    claim: &str,
) -> Option<serde_json::Value> {
    let request = http::Request::get(format!("/api/v1/nodes/{node}/proxy/stats/summary"))
        .body(Vec::new())
        .ok()?;
    let summary: serde_json::Value = client.request(request).await.ok()?;
    summary["pods"]
        .as_array()?
        .iter()
        .flat_map(|pod| pod["volume"].as_array().cloned().unwrap_or_default())
        .find(|volume| volume["pvcRef"]["name"] == claim && volume["pvcRef"]["namespace"] == namespace)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_disk_fills_up_and_reports_usage_logs_and_exec() {
    let client = client().await.unwrap();
    let ns = TestNamespace::create(&client, "real-enospc").await.unwrap();
    let script = "dd if=/dev/zero of=/data/fill bs=1M 2>&1; echo dd-exit=$?; df -k /data; sleep 3600";
    pod_with_claim(&ns, "filler", CLASS_BLOCK_FIXED, "64Mi", script).await;
    let pods: Api<Pod> = ns.api();
    let pod = wait_running(&pods, "filler").await;
    let node = pod.spec.as_ref().unwrap().node_name.clone().unwrap();
    assert!(REAL_NODES.contains(&node.as_str()), "{node}");
    let container_id = pod.status.as_ref().unwrap().container_statuses.as_ref().unwrap()[0]
        .container_id
        .clone()
        .unwrap_or_default();
    assert!(container_id.starts_with("containerd://"), "{container_id}");

    // `kubectl logs` through the API server: dd stopped at the disk's end.
    let logs = wait_until("dd to hit the end of the disk", 60, || async {
        let (_, text, _) = kubectl(&["-n", &ns.name, "logs", "filler"]).await.ok()?;
        text.contains("dd-exit=").then_some(text)
    })
    .await
    .unwrap();
    assert!(logs.contains("No space left on device"), "{logs}");
    assert!(logs.contains("dd-exit=1"), "{logs}");
    // `kubectl exec`: the file system is the requested size (less ext4's own metadata).
    let size = df_bytes(&ns.name, "filler", "/data").await.unwrap();
    assert!((50 * MI..=64 * MI).contains(&size), "df size {size}");
    let filled = kubectl_ok(&ns, &["exec", "filler", "--", "stat", "-c", "%s", "/data/fill"]).await;
    let filled: u64 = filled.trim().parse().unwrap();
    assert!(filled > 50 * MI && filled <= 64 * MI, "filled {filled}");

    // The kubelet's stats summary, through the API server's node proxy, sees the same.
    let stats = wait_until("the claim in the stats summary", 90, || async {
        let stats = volume_stats(&client, &node, &ns.name, "filler").await?;
        (stats["usedBytes"].as_u64()? > 50 * MI).then_some(stats)
    })
    .await
    .unwrap();
    let capacity = stats["capacityBytes"].as_u64().unwrap();
    assert!((50 * MI..=64 * MI).contains(&capacity), "{stats}");
    assert!(stats["inodesUsed"].as_u64().unwrap() >= 2, "{stats}");
    ns.cleanup().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_disk_expands_online_and_is_freed_when_released() {
    let client = client().await.unwrap();
    let ns = TestNamespace::create(&client, "real-expand").await.unwrap();
    // XFS (ext4 cannot grow online here), whose minimum size is 300Mi.
    pod_with_claim(&ns, "grower", CLASS_LOCAL, "320Mi", "sleep 3600").await;
    let pods: Api<Pod> = ns.api();
    wait_running(&pods, "grower").await;
    assert!(df_bytes(&ns.name, "grower", "/data").await.unwrap() <= 320 * MI);

    let claims: Api<PersistentVolumeClaim> = ns.api();
    let volumes: Api<PersistentVolume> = Api::all(client.clone());
    let disk = claim_directory(&claims, &volumes, "grower").await.unwrap();
    let volume_name = claims
        .get("grower")
        .await
        .unwrap()
        .spec
        .unwrap()
        .volume_name
        .unwrap();
    grow(&claims, "grower", "480Mi").await;
    wait_until("the claim's capacity to reach 480Mi", 60, || async {
        (capacity(&claims, "grower").await? == 480 * MI).then_some(())
    })
    .await
    .unwrap();
    // Online: the running pod sees the bigger file system without a restart.
    let size = df_bytes(&ns.name, "grower", "/data").await.unwrap();
    assert!(
        size > 400 * MI && size <= 480 * MI,
        "df size after expansion {size}"
    );

    // Released with reclaim policy Delete: the PV goes, and so do its mount and its disk.
    pods.delete("grower", &DeleteParams::default()).await.unwrap();
    claims.delete("grower", &DeleteParams::default()).await.unwrap();
    wait_until("the released PV to be deleted", 90, || async {
        volumes.get_opt(&volume_name).await.ok()?.is_none().then_some(())
    })
    .await
    .unwrap();
    assert!(!disk.exists(), "mount point {disk:?} removed");
    let image = disk
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join(format!("{volume_name}.img"));
    assert!(!image.exists(), "disk image {image:?} deleted");
    ns.cleanup().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_pod_terminates_gracefully_while_its_writer_finishes() {
    let client = client().await.unwrap();
    let ns = TestNamespace::create(&client, "real-graceful").await.unwrap();
    let sets: Api<StatefulSet> = ns.api();
    let set = writer_stateful_set("w", 1, &[("data", CLASS_BLOCK_FIXED, "64Mi")], &ns.name, 64, 0).unwrap();
    sets.create(&PostParams::default(), &set).await.unwrap();
    ferry_testenv::fixtures::wait_ready(&sets, "w", 1, 120)
        .await
        .unwrap();
    let pods: Api<Pod> = ns.api();
    let uid = pods.get("w-0").await.unwrap().metadata.uid.unwrap();
    let before = acknowledged(&ns.name, "w-0").unwrap().len();
    pods.delete("w-0", &DeleteParams::default()).await.unwrap();

    // Unlike a kwok node, the pod stays Terminating while the application shuts down, and it
    // goes on writing in that time.
    let terminating = pods.get("w-0").await.unwrap();
    assert_eq!(terminating.metadata.uid.as_deref(), Some(uid.as_str()));
    assert!(terminating.metadata.deletion_timestamp.is_some());
    wait_until("the old pod to be gone", 60, || async {
        let pod = pods.get_opt("w-0").await.ok()?;
        (pod.and_then(|p| p.metadata.uid) != Some(uid.clone())).then_some(())
    })
    .await
    .unwrap();
    let acked = acknowledged(&ns.name, "w-0").unwrap();
    assert!(
        acked.len() >= before + 20,
        "records written during the grace period"
    );

    // Everything acknowledged is on the volume.
    let claims: Api<PersistentVolumeClaim> = ns.api();
    let volumes: Api<PersistentVolume> = Api::all(client.clone());
    let dir = claim_directory(&claims, &volumes, "data-w-0").await.unwrap();
    let on_volume = records(&dir).unwrap();
    assert!(acked.iter().all(|n| on_volume.contains(n)));
    ns.cleanup().await.unwrap();
}
