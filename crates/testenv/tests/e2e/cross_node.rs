//! The real nodes carry a cross-node copy: a node-bound volume's data moves to a volume bound to
//! another real node by two mover pods (`ferry-mover serve` on the old volume's node, `pull` on
//! the new one's), which reach each other by pod IP over mutual TLS with one authority's
//! certificates; a mover with another authority's certificate is refused.

use crate::real_pods::{finished, kubectl_ok, terminated, wait_running};
use ferry_testenv::workload::{BUSYBOX_IMAGE, FERRY_IMAGE};
use ferry_testenv::{
    CLASS_BLOCK_NODE, REAL_NODE_KEY, REAL_NODES, TestNamespace, client, kubectl, wait_until,
};
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod, Secret};
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use serde_json::{Value, json};

/// A Secret `name` with `ca.crt`, `tls.crt` and `tls.key` issued by a new authority.
async fn mover_tls(ns: &TestNamespace, name: &str) {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
    let authority = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
    let mut leaf = CertificateParams::new(vec!["ferry-mover".to_string()]).unwrap();
    leaf.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    let key = KeyPair::generate().unwrap();
    let cert = leaf.signed_by(&key, &authority).unwrap();
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": name},
        "stringData": {"ca.crt": authority.pem(), "tls.crt": cert.pem(), "tls.key": key.serialize_pem()},
    }))
    .unwrap();
    ns.api::<Secret>()
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
}

/// A claim of the node-bound class (bound where its first pod runs).
async fn node_bound_claim(ns: &TestNamespace, name: &str) {
    let claim = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": CLASS_BLOCK_NODE,
                 "resources": {"requests": {"storage": "256Mi"}}},
    }))
    .unwrap();
    ns.api::<PersistentVolumeClaim>()
        .create(&PostParams::default(), &claim)
        .await
        .unwrap();
}

/// A pod on real node `node` running `command` in `image`, with `volumes` mounted by name at
/// `/<name>` (a claim, read only when asked, or a Secret).
async fn pod_on(
    ns: &TestNamespace,
    name: &str,
    node: &str,
    image: &str,
    command: &[&str],
    volumes: &[(&str, Value)],
) {
    let mounts: Vec<Value> = (volumes.iter())
        .map(|(volume, source)| {
            let read_only =
                source["persistentVolumeClaim"]["readOnly"] == true || source.get("secret").is_some();
            json!({"name": volume, "mountPath": format!("/{volume}"), "readOnly": read_only})
        })
        .collect();
    let sources: Vec<Value> = (volumes.iter())
        .map(|(volume, source)| {
            let mut source = source.clone();
            source["name"] = json!(volume);
            source
        })
        .collect();
    let pod = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "nodeSelector": {REAL_NODE_KEY: "true", "kubernetes.io/hostname": node},
            "tolerations": [{"key": REAL_NODE_KEY, "operator": "Exists", "effect": "NoSchedule"}],
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "automountServiceAccountToken": false,
            // As the operator's mover pods: root, to keep every owner and mode.
            "securityContext": {"runAsUser": 0, "runAsGroup": 0},
            "containers": [{"name": "main", "image": image, "imagePullPolicy": "Never",
                            "command": command, "volumeMounts": mounts}],
            "volumes": sources,
        },
    }))
    .unwrap();
    ns.api::<Pod>()
        .create(&PostParams::default(), &pod)
        .await
        .unwrap();
}

fn claim(name: &str, read_only: bool) -> Value {
    json!({"persistentVolumeClaim": {"claimName": name, "readOnly": read_only}})
}

fn secret(name: &str) -> Value {
    json!({"secret": {"secretName": name}})
}

/// Waits for pod `name` to end: its phase, exit code and termination message.
async fn ended(pods: &Api<Pod>, name: &str) -> (String, i32, String) {
    let pod = finished(pods, name, 180).await;
    let phase = pod
        .status
        .as_ref()
        .and_then(|status| status.phase.clone())
        .unwrap_or_default();
    let (code, message) = terminated(&pod);
    (phase, code, message)
}

/// Every regular file below /data with its SHA-256, and the links, as the pod `pod` sees them.
async fn listing(ns: &TestNamespace, pod: &str) -> String {
    let script = "cd /data && find . -type f | sort | xargs sha256sum && readlink d/link && stat -c %h big \
                  && [ \"$(stat -c %i big)\" = \"$(stat -c %i big-link)\" ] && echo big-link is big";
    kubectl_ok(ns, &["exec", pod, "--", "sh", "-c", script]).await
}

/// The node affinity of the PV bound to `claim`, as JSON text.
async fn affinity(ns: &TestNamespace, claim: &str) -> String {
    let claims: Api<PersistentVolumeClaim> = ns.api();
    let volume = claims
        .get(claim)
        .await
        .unwrap()
        .spec
        .unwrap()
        .volume_name
        .unwrap();
    let pv = Api::<PersistentVolume>::all(ns.client.clone())
        .get(&volume)
        .await
        .unwrap();
    serde_json::to_string(&pv.spec.unwrap().node_affinity).unwrap()
}

/// Whether `affinity` binds its volume to `node` and no other real node.
fn binds_to(affinity: &str, node: &str) -> bool {
    (REAL_NODES.iter()).all(|real| affinity.contains(&format!("\"{real}\"")) == (*real == node))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_bound_volume_moves_to_another_real_node_by_two_movers_over_mutual_tls() {
    let client = client().await.unwrap();
    let ns = TestNamespace::create(&client, "cross-node").await.unwrap();
    let pods: Api<Pod> = ns.api();
    let (old_node, new_node) = (REAL_NODES[0], REAL_NODES[1]);
    mover_tls(&ns, "this-resize").await;
    mover_tls(&ns, "another-resize").await;

    // Data on a volume bound to the first node: small files, a large one, a symlink, a hard link.
    node_bound_claim(&ns, "old").await;
    let write = "mkdir -p /data/d/e && for i in $(seq 1 300); do head -c $((i * 37)) /dev/urandom > /data/d/e/f$i; done \
                 && dd if=/dev/urandom of=/data/big bs=1M count=16 2>/dev/null && ln -s e/f1 /data/d/link \
                 && ln /data/big /data/big-link && sync && touch /tmp/written && sleep 3600";
    pod_on(
        &ns,
        "writer",
        old_node,
        BUSYBOX_IMAGE,
        &["sh", "-c", write],
        &[("data", claim("old", false))],
    )
    .await;
    wait_running(&pods, "writer").await;
    wait_until("the writer to finish", 120, || async {
        let (code, _, _) = kubectl(&[
            "-n",
            &ns.name,
            "exec",
            "writer",
            "--",
            "test",
            "-e",
            "/tmp/written",
        ])
        .await
        .ok()?;
        (code == 0).then_some(())
    })
    .await
    .unwrap();
    let written = listing(&ns, "writer").await;
    pods.delete("writer", &DeleteParams::default()).await.unwrap();
    let old_affinity = affinity(&ns, "old").await;
    assert!(binds_to(&old_affinity, old_node), "{old_affinity}");

    // The serving mover on the old volume's node, which it holds read only.
    let serve = [
        "ferry-mover",
        "serve",
        "--source",
        "/source",
        "--tls",
        "/tls",
        "--listen",
        "0.0.0.0:7443",
    ];
    let serving = [("source", claim("old", true)), ("tls", secret("this-resize"))];
    pod_on(&ns, "serve", old_node, FERRY_IMAGE, &serve, &serving).await;
    let ip = wait_running(&pods, "serve").await.status.unwrap().pod_ip.unwrap();
    wait_until("the serving mover to listen", 60, || async {
        let (_, logs, _) = kubectl(&["-n", &ns.name, "logs", "serve"]).await.ok()?;
        logs.contains("listening").then_some(())
    })
    .await
    .unwrap();
    let from = format!("{ip}:7443");

    // A mover of another resize is refused and writes nothing.
    let intruder = [
        "ferry-mover",
        "pull",
        "--from",
        &from,
        "--tls",
        "/tls",
        "--target",
        "/target/copy",
    ];
    let intruding = [
        ("target", json!({"emptyDir": {}})),
        ("tls", secret("another-resize")),
    ];
    pod_on(&ns, "intruder", new_node, FERRY_IMAGE, &intruder, &intruding).await;
    let (phase, code, message) = ended(&pods, "intruder").await;
    assert_eq!((phase.as_str(), code), ("Failed", 7), "{message}");
    assert!(message.contains("\"kind\":\"transport\""), "{message}");

    // The pulling mover on the other node makes the new volume there, then stops the server.
    node_bound_claim(&ns, "new").await;
    let pull = [
        "ferry-mover",
        "pull",
        "--from",
        &from,
        "--tls",
        "/tls",
        "--target",
        "/target",
        "--delete",
        "--stop-server",
    ];
    let pulling = [("target", claim("new", false)), ("tls", secret("this-resize"))];
    pod_on(&ns, "pull", new_node, FERRY_IMAGE, &pull, &pulling).await;
    let (phase, code, result) = ended(&pods, "pull").await;
    assert_eq!((phase.as_str(), code), ("Succeeded", 0), "{result}");
    let result: Value = serde_json::from_str(&result).unwrap();
    assert_eq!(result["verify"], "checksum", "{result}");
    assert!(result["bytesCopied"].as_u64().unwrap() > 16 << 20, "{result}");
    let (phase, code, _) = ended(&pods, "serve").await;
    assert_eq!((phase.as_str(), code), ("Succeeded", 0));
    let logs = kubectl_ok(&ns, &["logs", "serve"]).await;
    assert!(logs.contains("\"refused\":1"), "{logs}");

    // The new volume lives on the other node and holds the same files, links included.
    let new_affinity = affinity(&ns, "new").await;
    assert!(binds_to(&new_affinity, new_node), "{new_affinity}");
    pod_on(
        &ns,
        "reader",
        new_node,
        BUSYBOX_IMAGE,
        &["sleep", "3600"],
        &[("data", claim("new", true))],
    )
    .await;
    wait_running(&pods, "reader").await;
    assert_eq!(listing(&ns, "reader").await, written);
    ns.cleanup().await.unwrap();
}
