//! Mover pods run as real local processes that see the PV's files and end like a kubelet reports.

use crate::real_pods::{finished, terminated};
use ferry_testenv::fixtures::claim_directory;
use ferry_testenv::{CLASS_FIXED, MOVER_LABEL, TestNamespace, client, wait_until};
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use kube::Api;
use kube::api::PostParams;
use serde_json::json;

fn claim(name: &str) -> PersistentVolumeClaim {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": CLASS_FIXED, "resources": {"requests": {"storage": "1Gi"}}},
    }))
    .unwrap()
}

fn mover_pod(name: &str, claim: &str, script: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {MOVER_LABEL: "true"}},
        "spec": {
            "restartPolicy": "Never",
            "automountServiceAccountToken": false,
            "containers": [{
                "name": "mover", "image": "ferry:test",
                "command": ["sh", "-c", script],
                "volumeMounts": [{"name": "data", "mountPath": "/data"}],
            }],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}],
        },
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mover_pod_runs_a_real_process_on_the_volume() {
    let client = client().await.unwrap();
    let ns = TestNamespace::create(&client, "executor").await.unwrap();
    let claims: Api<PersistentVolumeClaim> = ns.api();
    let pods: Api<Pod> = ns.api();
    claims
        .create(&PostParams::default(), &claim("work"))
        .await
        .unwrap();

    // The first pod writes into the volume and succeeds; the volume binds when it is scheduled.
    let writer = mover_pod(
        "writer",
        "work",
        "echo hello-from-pod > /data/greeting && echo wrote > /dev/termination-log",
    );
    pods.create(&PostParams::default(), &writer).await.unwrap();
    let pod = finished(&pods, "writer", 90).await;
    assert_eq!(pod.status.as_ref().unwrap().phase.as_deref(), Some("Succeeded"));
    assert_eq!(terminated(&pod), (0, "wrote\n".to_string()));

    // The file really is in the PV's directory on this machine.
    let volumes: Api<PersistentVolume> = Api::all(client.clone());
    let directory = claim_directory(&claims, &volumes, "work").await.unwrap();
    assert_eq!(
        std::fs::read_to_string(directory.join("greeting")).unwrap(),
        "hello-from-pod\n"
    );

    // A second pod sees the file, reports it in its termination message and fails with its code.
    std::fs::write(directory.join("from-host"), "placed on the host").unwrap();
    let reader = mover_pod(
        "reader",
        "work",
        "cat /data/from-host > /dev/termination-log; ls /data >&2; exit 3",
    );
    pods.create(&PostParams::default(), &reader).await.unwrap();
    let pod = finished(&pods, "reader", 90).await;
    assert_eq!(pod.status.as_ref().unwrap().phase.as_deref(), Some("Failed"));
    assert_eq!(terminated(&pod), (3, "placed on the host".to_string()));
    ns.cleanup().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ordinary_pods_are_left_to_kwok() {
    let client = client().await.unwrap();
    let ns = TestNamespace::create(&client, "executor-plain").await.unwrap();
    let pods: Api<Pod> = ns.api();
    let mut pod = mover_pod("plain", "none", "exit 7");
    pod.metadata.labels = None;
    pod.spec.as_mut().unwrap().volumes = None;
    pod.spec.as_mut().unwrap().containers[0].volume_mounts = None;
    pods.create(&PostParams::default(), &pod).await.unwrap();
    // kwok fakes it as Running and Ready; no process runs, so it never fails with code 7.
    let pod = wait_until("kwok to mark the pod Running", 60, || async {
        let pod = pods.get_opt("plain").await.ok().flatten()?;
        (pod.status.as_ref()?.phase.as_deref() == Some("Running")).then_some(pod)
    })
    .await
    .unwrap();
    assert!(
        pod.status.unwrap().container_statuses.unwrap()[0]
            .state
            .as_ref()
            .unwrap()
            .running
            .is_some()
    );
    ns.cleanup().await.unwrap();
}
