//! Pods on the real node, for the tests of its storage.

use ferry_testenv::workload::BUSYBOX_IMAGE;
use ferry_testenv::{REAL_NODE_KEY, TestNamespace, kubectl, wait_until};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::Api;
use kube::api::PostParams;
use serde_json::json;

/// A claim of `class` and a busybox pod on the real node mounting it at /data, running `script`.
pub async fn pod_with_claim(ns: &TestNamespace, name: &str, class: &str, size: &str, script: &str) {
    let claims: Api<PersistentVolumeClaim> = ns.api();
    let claim = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": class,
                 "resources": {"requests": {"storage": size}}},
    }))
    .unwrap();
    claims.create(&PostParams::default(), &claim).await.unwrap();
    start_pod(ns, name, name, script).await;
}

/// A busybox pod on the real node mounting `claim` at /data, running `script`.
pub async fn start_pod(ns: &TestNamespace, name: &str, claim: &str, script: &str) {
    start_pod_on(ns, name, claim, script, None).await;
}

/// [`start_pod`] on the real node `node` if given (a claim made from another, which the driver
/// makes where its source lives: the scheduler, which does not know that, may keep picking
/// other nodes).
pub async fn start_pod_on(ns: &TestNamespace, name: &str, claim: &str, script: &str, node: Option<&str>) {
    let mut selector = json!({REAL_NODE_KEY: "true"});
    if let Some(node) = node {
        selector["kubernetes.io/hostname"] = json!(node);
    }
    let pod = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "nodeSelector": selector,
            "tolerations": [{"key": REAL_NODE_KEY, "operator": "Exists", "effect": "NoSchedule"}],
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "main", "image": BUSYBOX_IMAGE, "imagePullPolicy": "Never",
                            "command": ["sh", "-c", script],
                            "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}],
        },
    }))
    .unwrap();
    ns.api::<Pod>()
        .create(&PostParams::default(), &pod)
        .await
        .unwrap();
}

pub async fn wait_running(pods: &Api<Pod>, name: &str) -> Pod {
    wait_until(&format!("pod {name} Running"), 120, || async {
        let pod = pods.get_opt(name).await.ok().flatten()?;
        (pod.status.as_ref()?.phase.as_deref() == Some("Running")).then_some(pod)
    })
    .await
    .unwrap()
}

/// `kubectl` in the namespace, returning stdout; panics with stderr when it fails.
pub async fn kubectl_ok(ns: &TestNamespace, args: &[&str]) -> String {
    let mut all = vec!["-n", ns.name.as_str()];
    all.extend_from_slice(args);
    let (code, stdout, stderr) = kubectl(&all).await.unwrap();
    assert_eq!(code, 0, "kubectl {args:?}: {stderr}");
    stdout
}

/// Waits at most `seconds` for pod `name` to end (Succeeded or Failed).
pub async fn finished(pods: &Api<Pod>, name: &str, seconds: u64) -> Pod {
    wait_until(&format!("pod {name} to finish"), seconds, || async {
        let pod = pods.get_opt(name).await.ok().flatten()?;
        let phase = pod.status.as_ref()?.phase.clone()?;
        (phase == "Succeeded" || phase == "Failed").then_some(pod)
    })
    .await
    .unwrap()
}

/// The exit code and termination message of an ended pod's first container.
pub fn terminated(pod: &Pod) -> (i32, String) {
    let state = pod.status.as_ref().unwrap().container_statuses.as_ref().unwrap()[0]
        .state
        .clone()
        .unwrap();
    let terminated = state.terminated.unwrap();
    (terminated.exit_code, terminated.message.unwrap_or_default())
}
