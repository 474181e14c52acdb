//! Copies in a namespace that enforces Pod Security `restricted` (no root pod, no capability), on
//! the real node: Ferry's pods run as the StatefulSet's own non-root user, so a replica whose files
//! are all that user's moves to another class with every owner, mode and byte kept; a file of
//! another owner, which that user could not recreate, fails the resize before anything is touched.

use crate::support::Harness;
use ferry_testenv::fixtures::{bound_volume, claim_directory, tree_checksum, wait_ready};
use ferry_testenv::workload::BUSYBOX_IMAGE;
use ferry_testenv::{CLASS_BLOCK, CLASS_BLOCK_FIXED, REAL_NODE_KEY};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Namespace, PersistentVolume, PersistentVolumeClaim, Pod};
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use std::path::Path;

const USER: u32 = 999;

/// Seeds its volume once as user 999 (a tree with modes, a symlink and a hard link), then serves.
const SEED: &str = "[ -e /data/seeded ] || { mkdir -p /data/d/e && head -c 300000 /dev/urandom > /data/d/f1 \
     && head -c 5000 /dev/urandom > /data/d/e/f2 && chmod 0640 /data/d/f1 && chmod 0750 /data/d/e \
     && ln -s d/f1 /data/link && ln /data/d/f1 /data/hard && touch /data/seeded; }; \
     trap 'exit 0' TERM; while true; do sleep 1; done";

/// One replica on the real node that `restricted` admits: non-root user and group 999 (fsGroup 999
/// makes its volume writable), no capability, no escalation, the runtime's seccomp profile. The
/// kubelet gives group 999 to the volume's files only where the root's group is not yet it
/// (`OnRootMismatch`): with `Always` it would add g+rw to every file at each mount, restart or copy.
fn restricted_stateful_set() -> StatefulSet {
    serde_json::from_value(json!({
        "metadata": {"name": "db"},
        "spec": {
            "replicas": 1,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {
                    "securityContext": {"runAsNonRoot": true, "runAsUser": USER, "runAsGroup": USER,
                        "fsGroup": USER, "fsGroupChangePolicy": "OnRootMismatch",
                        "seccompProfile": {"type": "RuntimeDefault"}},
                    "nodeSelector": {REAL_NODE_KEY: "true"},
                    "tolerations": [{"key": REAL_NODE_KEY, "operator": "Exists", "effect": "NoSchedule"}],
                    "terminationGracePeriodSeconds": 5,
                    "containers": [{
                        "name": "app",
                        "image": BUSYBOX_IMAGE,
                        "imagePullPolicy": "Never",
                        "command": ["sh", "-c", SEED],
                        "securityContext": {"allowPrivilegeEscalation": false,
                            "capabilities": {"drop": ["ALL"]}},
                        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                        "startupProbe": {"exec": {"command": ["test", "-e", "/data/seeded"]},
                            "periodSeconds": 1, "failureThreshold": 600},
                    }],
                },
            },
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                "accessModes": ["ReadWriteOnce"], "storageClassName": CLASS_BLOCK_FIXED,
                "resources": {"requests": {"storage": "320Mi"}}}}],
        },
    }))
    .unwrap()
}

/// Every entry but the root and `lost+found` (the file system's own): path, type, owner and mode.
fn owners_and_modes(dir: &Path) -> String {
    let output = std::process::Command::new("sh")
        .arg("-c")
        .arg("find . -mindepth 1 -path ./lost+found -prune -o -printf '%P %y %U:%G %m\\n' | LC_ALL=C sort")
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).unwrap()
}

async fn volume_of(harness: &Harness) -> String {
    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    let volumes: Api<PersistentVolume> = Api::all(harness.client.clone());
    bound_volume(&claims, &volumes, "data-db-0")
        .await
        .unwrap()
        .name_any()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_restricted_namespace_a_copy_runs_as_the_stateful_sets_user_or_refuses_what_it_could_not_keep() {
    let harness = Harness::start("restricted-copy").await;
    let restricted = json!({"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "restricted"}}});
    Api::<Namespace>::all(harness.client.clone())
        .patch(
            &harness.ns.name,
            &PatchParams::default(),
            &Patch::Merge(restricted),
        )
        .await
        .unwrap();
    let sets = harness.ns.api::<StatefulSet>();
    sets.create(&PostParams::default(), &restricted_stateful_set())
        .await
        .unwrap();
    wait_ready(&sets, "db", 1, 120).await.unwrap();
    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    let volumes: Api<PersistentVolume> = Api::all(harness.client.clone());
    let (checksum, listing) = {
        let dir = claim_directory(&claims, &volumes, "data-db-0").await.unwrap();
        (tree_checksum(&dir).unwrap(), owners_and_modes(&dir))
    };
    assert!(listing.contains("d/e d 999:999 750"), "{listing}");

    // ext4 (with its root-owned lost+found) onto XFS: the copy's pods, as user 999, are admitted.
    crate::real_node::resize_succeeds(
        &harness,
        "to-xfs",
        json!({"statefulSetName": "db", "volumes": [
            {"name": "data", "size": "320Mi", "storageClassName": CLASS_BLOCK}
        ]}),
        300,
    )
    .await;
    wait_ready(&sets, "db", 1, 120).await.unwrap();
    let moved = volume_of(&harness).await;
    {
        let dir = claim_directory(&claims, &volumes, "data-db-0").await.unwrap();
        assert_eq!(tree_checksum(&dir).unwrap(), checksum, "every byte kept");
        assert_eq!(owners_and_modes(&dir), listing, "every owner and mode kept");
        // A file of another owner, which user 999 could not give its owner back.
        std::os::unix::fs::chown(dir.join("d/e/f2"), Some(0), Some(0)).unwrap();
    }
    let pod_uid = harness.ns.api::<Pod>().get("db-0").await.unwrap().uid();

    harness
        .create_resize(
            "to-ext4",
            json!({"statefulSetName": "db", "volumes": [
                {"name": "data", "size": "320Mi", "storageClassName": CLASS_BLOCK_FIXED}
            ]}),
        )
        .await;
    let resize = crate::real_node::wait_phase(&harness, "to-ext4", 180).await;
    let status = resize.status.unwrap();
    assert_eq!(
        status.phase,
        Some(ferry_api::Phase::Failed),
        "{:?}",
        status.message
    );
    let message = status.message.unwrap_or_default();
    assert!(
        message.contains("runs as the StatefulSet's own user") && message.contains("d/e/f2: owner 0:0"),
        "{message}"
    );
    assert_eq!(volume_of(&harness).await, moved, "nothing touched");
    assert_eq!(
        harness.ns.api::<Pod>().get("db-0").await.unwrap().uid(),
        pod_uid,
        "the replica never stopped"
    );
    harness.finish().await;
}
