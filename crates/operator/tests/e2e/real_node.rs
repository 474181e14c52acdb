//! Resizes on the real node: a real kubelet runs the replicas (a writer that goes on writing during
//! its graceful shutdown) and the mover pods (containers of `ferry.local/ferry:dev`), and the
//! volumes are real file systems of their size. After every resize, every record the application
//! acknowledged is on the volume the replica ends up with.

use crate::support;

use ferry_api::names::ANNOTATION_FINAL_PASS;
use ferry_api::quantity::quantity_bytes;
use ferry_api::{Phase, RowStep, VolumeResize};
use ferry_engine::resize::copy::is_result_line;
use ferry_testenv::disruption::Allowed;
use ferry_testenv::fixtures::{claim_directory, wait_ready};
use ferry_testenv::workload::{acknowledged, df_bytes, lost_records, writer_stateful_set};
use ferry_testenv::{
    CLASS_BLOCK, CLASS_BLOCK_FIXED, CLASS_BLOCK_OFFLINE, MOVER_LABEL, REAL_NODES, wait_until,
};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use kube::api::{ListParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use support::Harness;
use support::disruption::DisruptionOracle;

const MI: u64 = 1 << 20;

/// A writer StatefulSet of `replicas` on the real node (8 MiB of seed data, no shutdown
/// checkpoint), Ready; returns the seed's checksum per claim.
pub(crate) async fn writer(
    harness: &Harness,
    replicas: i32,
    class: &str,
    size: &str,
) -> BTreeMap<String, String> {
    writer_with(harness, replicas, class, size, 8 << 10, 0).await
}

pub(crate) async fn writer_with(
    harness: &Harness,
    replicas: i32,
    class: &str,
    size: &str,
    seed_kib: u64,
    checkpoint_kib: u64,
) -> BTreeMap<String, String> {
    writer_shaped(harness, replicas, class, size, seed_kib, checkpoint_kib, |_| {}).await
}

/// [`writer_with`], with the StatefulSet changed by `shape` before it is created (seeds recorded
/// for the ordinals it then has).
pub(crate) async fn writer_shaped(
    harness: &Harness,
    replicas: i32,
    class: &str,
    size: &str,
    seed_kib: u64,
    checkpoint_kib: u64,
    shape: impl FnOnce(&mut StatefulSet),
) -> BTreeMap<String, String> {
    let sets: Api<StatefulSet> = harness.ns.api();
    let templates = [("data", class, size)];
    let mut set = writer_stateful_set(
        "db",
        replicas,
        &templates,
        &harness.ns.name,
        seed_kib,
        checkpoint_kib,
    )
    .unwrap();
    shape(&mut set);
    sets.create(&PostParams::default(), &set).await.unwrap();
    wait_ready(&sets, "db", replicas, 180).await.unwrap();
    // From here to the test's end, under the oracle (one member down at a time, once each, unless
    // the test allows more).
    harness
        .watch_disruption("db", usize::try_from(replicas).unwrap())
        .await;
    let mut sums = BTreeMap::new();
    for replica in ferry_operator::ordinals::ordinals(&set) {
        let claim = format!("data-db-{replica}");
        sums.insert(claim.clone(), seed_checksum(harness, &claim).await);
    }
    sums
}

/// A writer StatefulSet on `class` whose replicas are Ready only while no `<pod>.unready` marker
/// is beside their acknowledgements (on the host, so a test sets it without a pod and no copy
/// carries it): [`writer_shaped`] with that readiness probe.
pub(crate) async fn writer_with_unready_marker(
    harness: &Harness,
    replicas: i32,
    class: &str,
    size: &str,
    seed_kib: u64,
) -> BTreeMap<String, String> {
    writer_shaped(harness, replicas, class, size, seed_kib, 0, ready_while_unmarked).await
}

/// Makes a writer's replicas Ready only while no `<pod>.unready` marker is beside their
/// acknowledgements on the host: its startup probe becomes a readiness probe (checked every
/// second, for the pod's whole life).
pub(crate) fn ready_while_unmarked(set: &mut StatefulSet) {
    let pod = set
        .spec
        .as_mut()
        .and_then(|spec| spec.template.spec.as_mut())
        .unwrap();
    let container = &mut pod.containers[0];
    let mut probe = container.startup_probe.take().unwrap();
    probe.failure_threshold = None;
    probe.exec.as_mut().unwrap().command = Some(
        [
            "sh",
            "-c",
            "test -s /data/records && test ! -e /acks/$(hostname).unready",
        ]
        .map(String::from)
        .to_vec(),
    );
    container.readiness_probe = Some(probe);
}

pub(crate) async fn seed_checksum(harness: &Harness, claim: &str) -> String {
    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    let volumes: Api<PersistentVolume> = Api::all(harness.client.clone());
    let dir = claim_directory(&claims, &volumes, claim).await.unwrap();
    let output = std::process::Command::new("sha256sum")
        .arg(dir.join("seed"))
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

pub(crate) async fn wait_phase(harness: &Harness, name: &str, seconds: u64) -> VolumeResize {
    harness
        .wait_terminal(name, &format!("VolumeResize {name} to finish"), seconds)
        .await
}

/// Creates the VolumeResize `name` and waits (up to `seconds`) for it to end Succeeded.
pub(crate) async fn resize_succeeds(
    harness: &Harness,
    name: &str,
    spec: serde_json::Value,
    seconds: u64,
) -> ferry_api::VolumeResizeStatus {
    harness.create_resize(name, spec).await;
    let resize = wait_phase(harness, name, seconds).await;
    let status = resize.status.unwrap();
    assert_eq!(status.phase, Some(Phase::Succeeded), "{:?}", status.message);
    status
}

/// Records the container IDs of every mover pod seen while the test runs, as
/// `<node> <container ID> [<added capabilities>] <command>`.
pub(crate) fn watch_mover_containers(harness: &Harness) -> Arc<Mutex<BTreeMap<String, String>>> {
    let seen = Arc::new(Mutex::new(BTreeMap::new()));
    let pods: Api<Pod> = harness.ns.api();
    let record = seen.clone();
    tokio::spawn(async move {
        loop {
            if let Ok(list) = pods.list(&ListParams::default().labels(MOVER_LABEL)).await {
                for pod in list.items {
                    let node = pod
                        .spec
                        .as_ref()
                        .and_then(|s| s.node_name.clone())
                        .unwrap_or_default();
                    let id = pod
                        .status
                        .as_ref()
                        .and_then(|s| s.container_statuses.as_ref())
                        .and_then(|c| c.first())
                        .and_then(|c| c.container_id.clone());
                    let command = pod
                        .spec
                        .as_ref()
                        .and_then(|s| s.containers.first())
                        .and_then(|c| c.command.clone())
                        .unwrap_or_default()
                        .join(" ");
                    let capabilities = pod
                        .spec
                        .as_ref()
                        .and_then(|s| s.containers.first())
                        .and_then(|c| c.security_context.as_ref()?.capabilities.as_ref()?.add.clone())
                        .unwrap_or_default()
                        .join(",");
                    if let (Some(id), Ok(mut seen)) = (id, record.lock()) {
                        seen.insert(pod.name_any(), format!("{node} {id} [{capabilities}] {command}"));
                    }
                }
            }
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        }
    });
    seen
}

/// The result line of every final mover seen while the test runs, by pod name, read from its log
/// as the operator reads it (the pod is deleted the moment its result is seen).
pub(crate) fn follow_final_results(harness: &Harness) -> Arc<Mutex<BTreeMap<String, serde_json::Value>>> {
    use futures::{AsyncBufReadExt, StreamExt};
    let results = Arc::new(Mutex::new(BTreeMap::new()));
    let pods: Api<Pod> = harness.ns.api();
    let record = results.clone();
    tokio::spawn(async move {
        let followed = Arc::new(Mutex::new(std::collections::BTreeSet::new()));
        loop {
            let list = pods.list(&ListParams::default().labels(MOVER_LABEL)).await;
            for pod in list.map(|list| list.items).unwrap_or_default() {
                let name = pod.name_any();
                let running = (pod.status.as_ref().and_then(|s| s.phase.as_deref())) == Some("Running");
                if !name.ends_with("-final") || !running || !followed.lock().unwrap().insert(name.clone()) {
                    continue;
                }
                let (pods, record, followed) = (pods.clone(), record.clone(), followed.clone());
                tokio::spawn(async move {
                    let params = kube::api::LogParams {
                        follow: true,
                        ..Default::default()
                    };
                    if let Ok(log) = pods.log_stream(&name, &params).await {
                        let mut lines = log.lines();
                        while let Some(Ok(line)) = lines.next().await {
                            if is_result_line(&line)
                                && let Ok(result) = serde_json::from_str::<serde_json::Value>(&line)
                            {
                                record.lock().unwrap().insert(name.clone(), result);
                            }
                        }
                    }
                    // Followed again if it is still there (the log ended early).
                    followed.lock().unwrap().remove(&name);
                });
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    });
    results
}

/// Every acknowledged record of every replica is on the claim's current volume, the seed is intact,
/// and the writers wrote on after the resize.
pub(crate) async fn assert_nothing_lost(harness: &Harness, replicas: i32, seeds: &BTreeMap<String, String>) {
    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    let volumes: Api<PersistentVolume> = Api::all(harness.client.clone());
    assert_eq!(seeds.len(), replicas as usize, "a seed per replica: {seeds:?}");
    for claim in seeds.keys() {
        let pod = claim.trim_start_matches("data-");
        let acked = acknowledged(&harness.ns.name, pod).unwrap().len();
        // The replica runs again on its volume and writes on.
        wait_until(&format!("{pod} to write on its volume"), 60, || async {
            (acknowledged(&harness.ns.name, pod).ok()?.len() > acked + 10).then_some(())
        })
        .await
        .unwrap();
        let dir = claim_directory(&claims, &volumes, claim).await.unwrap();
        assert_eq!(
            lost_records(&harness.ns.name, pod, &dir).unwrap(),
            Vec::<u64>::new(),
            "{claim}: acknowledged records missing"
        );
        assert_eq!(Some(&seed_checksum(harness, claim).await), seeds.get(claim));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rolling_shrink_onto_another_class_loses_no_acknowledged_write() {
    let harness = Harness::start("real-copy").await;
    let seeds = writer(&harness, 2, CLASS_BLOCK, "320Mi").await;
    let movers = watch_mover_containers(&harness);
    let results = follow_final_results(&harness);
    let oracle = DisruptionOracle::start(harness.ns.api(), "db", 2).await;
    let status = resize_succeeds(
        &harness,
        "shrink",
        json!({"statefulSetName": "db", "volumes": [
            {"name": "data", "size": "96Mi", "storageClassName": CLASS_BLOCK_FIXED}
        ]}),
        300,
    )
    .await;
    // One replica at a time.
    oracle.assert_at_most(1).await;

    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    for replica in 0..2 {
        let claim = claims.get(&format!("data-db-{replica}")).await.unwrap();
        assert_eq!(
            claim.spec.as_ref().unwrap().storage_class_name.as_deref(),
            Some(CLASS_BLOCK_FIXED)
        );
        let capacity = quantity_bytes(claim.status.unwrap().capacity.unwrap().get("storage").unwrap());
        assert_eq!(capacity, Some(96 * MI));
    }
    assert_nothing_lost(&harness, 2, &seeds).await;
    // The movers were real containers on the real node.
    let movers = movers.lock().unwrap().clone();
    assert!(movers.keys().any(|name| name.ends_with("-final")), "{movers:?}");
    for (name, placed) in &movers {
        assert!(
            REAL_NODES
                .iter()
                .any(|node| placed.starts_with(&format!("{node} containerd://"))),
            "{name}: {placed}"
        );
        // Only the final pass, with the replica stopped, is strict about a changing source.
        assert_eq!(
            placed.contains(" --strict"),
            name.ends_with("-final"),
            "{name}: {placed}"
        );
        // The writer's plain files need no device, set-id or file-capability rights.
        let capabilities = mover_capabilities(placed);
        assert!(
            capabilities.contains(&"DAC_OVERRIDE".to_string()),
            "{name}: {placed}"
        );
        for needless in ["FSETID", "MKNOD", "SETFCAP"] {
            assert!(!capabilities.contains(&needless.to_string()), "{name}: {placed}");
        }
    }
    // Each final pass began on the operator's line through the chart's `pods/attach` grant, not
    // on the kubelet's later rewrite of the annotation file.
    let results = results.lock().unwrap().clone();
    let finals: Vec<_> = movers.keys().filter(|name| name.ends_with("-final")).collect();
    assert_eq!(
        results.len(),
        finals.len(),
        "a result per final mover: {results:?}"
    );
    for (name, result) in &results {
        assert_eq!(result["goBy"], "line", "{name}: {result}");
    }
    for row in &status.plan {
        let recorded = row.mover_capabilities.clone().unwrap();
        assert!(
            movers
                .iter()
                .filter(|(name, _)| name.starts_with(&row.claim_name) && !name.ends_with("-usage"))
                .all(|(_, placed)| mover_capabilities(placed) == recorded),
            "{}: recorded {recorded:?}, movers {movers:?}",
            row.claim_name
        );
    }
    harness.finish().await;
}

/// The capabilities in a record of [`watch_mover_containers`].
fn mover_capabilities(placed: &str) -> Vec<String> {
    let inside = placed
        .split_once('[')
        .and_then(|(_, rest)| rest.split_once(']'))
        .map(|(inside, _)| inside)
        .unwrap_or_default();
    inside
        .split(',')
        .filter(|c| !c.is_empty())
        .map(String::from)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_keeps_owners_set_id_bits_and_device_nodes_with_only_the_capabilities_they_need() {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let harness = Harness::start("real-special").await;
    let seeds = writer(&harness, 1, CLASS_BLOCK, "320Mi").await;
    // Entries only a privileged copy keeps: another owner, a set-user-ID file, a device node.
    let script = "mknod /data/null c 1 3 && echo x > /data/owned && chown 999:998 /data/owned \
                  && echo y > /data/tool && chmod 4755 /data/tool";
    let (code, out, err) =
        ferry_testenv::kubectl(&["-n", &harness.ns.name, "exec", "db-0", "--", "sh", "-c", script])
            .await
            .unwrap();
    assert_eq!(code, 0, "{out} {err}");
    let movers = watch_mover_containers(&harness);
    let status = resize_succeeds(
        &harness,
        "special",
        json!({"statefulSetName": "db", "volumes": [
            {"name": "data", "size": "384Mi", "storageClassName": CLASS_BLOCK_FIXED}
        ]}),
        300,
    )
    .await;
    let needed = ["CHOWN", "FOWNER", "DAC_OVERRIDE", "FSETID", "MKNOD"].map(String::from);
    assert_eq!(status.plan[0].mover_capabilities.as_deref(), Some(&needed[..]));
    let movers = movers.lock().unwrap().clone();
    let copies: Vec<_> = movers
        .iter()
        .filter(|(name, _)| !name.ends_with("-usage"))
        .collect();
    assert!(
        copies.iter().any(|(name, _)| name.ends_with("-final")),
        "{movers:?}"
    );
    for (name, placed) in copies {
        assert_eq!(
            mover_capabilities(placed),
            needed,
            "{name}: {placed} (no SETFCAP)"
        );
    }

    // On the new volume, each entry is what it was.
    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    let volumes: Api<PersistentVolume> = Api::all(harness.client.clone());
    let dir = claim_directory(&claims, &volumes, "data-db-0").await.unwrap();
    let owned = std::fs::symlink_metadata(dir.join("owned")).unwrap();
    assert_eq!((owned.uid(), owned.gid()), (999, 998));
    let tool = std::fs::symlink_metadata(dir.join("tool")).unwrap();
    assert_eq!(tool.mode() & 0o7777, 0o4755);
    let null = std::fs::symlink_metadata(dir.join("null")).unwrap();
    assert!(null.file_type().is_char_device());
    assert_eq!(null.rdev(), (1 << 8) | 3, "device 1:3 (Linux's makedev)");
    assert_nothing_lost(&harness, 1, &seeds).await;
    harness.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_place_online_growth_keeps_every_replica_running() {
    let harness = Harness::start("real-inplace").await;
    let seeds = writer(&harness, 2, CLASS_BLOCK, "320Mi").await;
    let before = harness.pod_uids("db").await;
    let oracle = DisruptionOracle::start(harness.ns.api(), "db", 2).await;
    let status = resize_succeeds(
        &harness,
        "grow",
        json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "480Mi"}]}),
        180,
    )
    .await;
    // Online: no replica was ever unavailable.
    oracle.assert_at_most(0).await;
    assert!(
        status
            .plan
            .iter()
            .all(|row| row.strategy == Some(ferry_api::ChosenStrategy::InPlace))
    );
    // Online: the same pods see the bigger file system, nobody restarted.
    assert_eq!(harness.pod_uids("db").await, before);
    for replica in 0..2 {
        let size = df_bytes(&harness.ns.name, &format!("db-{replica}"), "/data")
            .await
            .unwrap();
        assert!(
            size > 400 * MI && size <= 480 * MI,
            "db-{replica}: df size {size}"
        );
    }
    assert_nothing_lost(&harness, 2, &seeds).await;
    harness.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offline_copy_grows_onto_a_fixed_class_losing_nothing() {
    let harness = Harness::start("real-offline").await;
    let seeds = writer(&harness, 2, CLASS_BLOCK_FIXED, "64Mi").await;
    // Offline: both replicas down together, once.
    harness.allow_disruption(Allowed { at_once: 2, each: 1 });
    resize_succeeds(
        &harness,
        "offline",
        json!({"statefulSetName": "db", "mode": "Offline", "volumes": [{"name": "data", "size": "128Mi"}]}),
        300,
    )
    .await;
    for replica in 0..2 {
        let size = df_bytes(&harness.ns.name, &format!("db-{replica}"), "/data")
            .await
            .unwrap();
        assert!(
            size > 100 * MI && size <= 128 * MI,
            "db-{replica}: df size {size}"
        );
    }
    assert_nothing_lost(&harness, 2, &seeds).await;
    harness.finish().await;
}

/// A StatefulSet whose claims go with it (`persistentVolumeClaimRetentionPolicy` Delete when
/// deleted and when scaled): Ferry's orphan delete, its re-create and taking every replica down
/// at once (Offline) must never let the StatefulSet controller or the garbage collector delete a
/// claim. The policy itself is kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateful_set_that_deletes_its_claims_keeps_them_through_an_offline_copy() {
    use k8s_openapi::api::apps::v1::StatefulSetPersistentVolumeClaimRetentionPolicy;
    let harness = Harness::start("real-retention").await;
    let deletes_claims = || StatefulSetPersistentVolumeClaimRetentionPolicy {
        when_deleted: Some("Delete".into()),
        when_scaled: Some("Delete".into()),
    };
    let seeds = writer_shaped(&harness, 2, CLASS_BLOCK_FIXED, "64Mi", 8 << 10, 0, |set| {
        set.spec
            .as_mut()
            .unwrap()
            .persistent_volume_claim_retention_policy = Some(deletes_claims());
    })
    .await;
    // Offline: both replicas down together, once.
    harness.allow_disruption(Allowed { at_once: 2, each: 1 });
    resize_succeeds(
        &harness,
        "offline",
        json!({"statefulSetName": "db", "mode": "Offline", "volumes": [{"name": "data", "size": "96Mi"}]}),
        300,
    )
    .await;
    let set = harness.ns.api::<StatefulSet>().get("db").await.unwrap();
    assert_eq!(
        set.spec.unwrap().persistent_volume_claim_retention_policy,
        Some(deletes_claims()),
        "the re-created StatefulSet keeps its retention policy"
    );
    assert_nothing_lost(&harness, 2, &seeds).await;
    harness.assert_nothing_leaked(2).await;
    harness.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_filled_by_the_shutdown_checkpoint_rolls_back_losing_nothing() {
    let harness = Harness::start("real-enospc").await;
    // 40 MiB in use passes the shrink check for 64Mi (ext4 leaves about 54 MiB of it), but the
    // 20 MiB checkpoint the application writes when it stops does not fit: the final pass meets a
    // real ENOSPC.
    let seeds = writer_with(&harness, 1, CLASS_BLOCK_FIXED, "256Mi", 40 << 10, 20 << 10).await;
    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    let original = claims
        .get("data-db-0")
        .await
        .unwrap()
        .spec
        .unwrap()
        .volume_name
        .unwrap();
    harness
        .create_resize(
            "shrink",
            json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "64Mi"}]}),
        )
        .await;
    let resize = wait_phase(&harness, "shrink", 300).await;
    let status = resize.status.unwrap();
    assert_eq!(status.phase, Some(Phase::Failed), "{:?}", status.message);
    let message = status.message.clone().unwrap_or_default();
    assert!(
        message.starts_with("rolled back") && message.contains("No space left on device"),
        "{message}"
    );
    // Back on its original volume, with every write, the checkpoint included.
    wait_ready(&harness.ns.api::<StatefulSet>(), "db", 1, 120)
        .await
        .unwrap();
    let claim = claims.get("data-db-0").await.unwrap();
    assert_eq!(claim.spec.unwrap().volume_name, Some(original));
    assert_nothing_lost(&harness, 1, &seeds).await;
    let volumes: Api<PersistentVolume> = Api::all(harness.client.clone());
    let dir = claim_directory(&claims, &volumes, "data-db-0").await.unwrap();
    let checkpoints = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|entry| {
            entry
                .as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("checkpoint-")
        })
        .count();
    assert!(
        checkpoints >= 1,
        "the shutdown checkpoint is on the original volume"
    );
    harness.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_completes_after_the_operator_is_killed_at_each_step_on_the_real_node() {
    let mut harness = Harness::start("real-killed").await;
    let seeds = writer(&harness, 2, CLASS_BLOCK_FIXED, "64Mi").await;
    let oracle = DisruptionOracle::start(harness.ns.api(), "db", 2).await;
    harness
        .create_resize(
            "copy",
            json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "96Mi"}]}),
        )
        .await;
    let steps = [
        RowStep::WarmCopy,
        RowStep::StoppingReplica,
        RowStep::FinalSync,
        RowStep::Swapping,
        RowStep::StartingReplica,
    ];
    let (resize, killed_at) = harness.finish_killing_at_each_step("copy", &steps, 300).await;
    // Killed at every kind of step, still one replica at a time.
    oracle.assert_at_most(1).await;
    let status = resize.status.unwrap();
    assert_eq!(status.phase, Some(Phase::Succeeded), "{:?}", status.message);
    assert!(
        killed_at.len() >= 4,
        "killed at several kinds of step: {killed_at:?}"
    );
    assert_nothing_lost(&harness, 2, &seeds).await;
    harness.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shrink_below_the_data_in_use_is_refused_and_changes_nothing() {
    let harness = Harness::start("real-refused").await;
    let seeds = writer_with(&harness, 1, CLASS_BLOCK_FIXED, "128Mi", 40 << 10, 0).await;
    // Refused: nothing restarts.
    harness.allow_disruption(Allowed { at_once: 0, each: 0 });
    let before = harness.pod_uids("db").await;
    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    let original = claims.get("data-db-0").await.unwrap().spec.unwrap().volume_name;
    harness
        .create_resize(
            "shrink",
            json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "32Mi"}]}),
        )
        .await;
    let resize = wait_phase(&harness, "shrink", 120).await;
    let status = resize.status.unwrap();
    assert_eq!(status.phase, Some(Phase::Failed));
    let message = status.message.unwrap_or_default();
    assert!(
        message.contains("data-db-0 holds") && message.contains("leaves no room"),
        "{message}"
    );
    // Nothing was touched: same pod, same volume, no temporary claim.
    assert_eq!(harness.pod_uids("db").await, before);
    assert_eq!(
        claims.get("data-db-0").await.unwrap().spec.unwrap().volume_name,
        original
    );
    assert_eq!(claims.list(&ListParams::default()).await.unwrap().items.len(), 1);
    assert_nothing_lost(&harness, 1, &seeds).await;
    harness.finish().await;
}

/// `ferry-block-offline`: the real driver grows a volume only while no pod uses it (the upstream
/// external-resizer waits, then reports FAILED_PRECONDITION). Each replica in turn is kept down
/// until its volume has grown, once, never two at a time, every acknowledged write kept, even with
/// the operator killed at each step (expanding, waiting for capacity, a replica kept down).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_place_growth_completes_after_the_operator_is_killed_at_each_step_on_the_real_node() {
    let mut harness = Harness::start("real-inplace-killed").await;
    let seeds = writer(&harness, 2, CLASS_BLOCK_OFFLINE, "320Mi").await;
    let before = harness.pod_uids("db").await;
    let oracle = DisruptionOracle::start(harness.ns.api(), "db", 2).await;
    let second_asked = pod_when_claim_asks(&harness, "data-db-1", "db-1", 480 * MI);
    harness
        .create_resize(
            "grow",
            json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "480Mi"}]}),
        )
        .await;
    let steps = [
        RowStep::Expanding,
        RowStep::WaitingForCapacity,
        RowStep::RestartingPod,
    ];
    let (resize, killed_at) = harness.finish_killing_at_each_step("grow", &steps, 360).await;
    // At most one replica down at a time.
    oracle.assert_at_most(1).await;
    let status = resize.status.unwrap();
    assert_eq!(status.phase, Some(Phase::Succeeded), "{:?}", status.message);
    assert_eq!(killed_at.len(), 3, "killed at every kind of step: {killed_at:?}");
    // Once db-0's claim was refused in use, db-1's was asked to grow only with its pod gone: the
    // external-resizer took it at once, not after a backoff that doubles up to minutes.
    let pod_then = second_asked.await.unwrap();
    assert_ne!(
        pod_then.as_ref(),
        before.get("db-1"),
        "db-1 still ran when its claim was asked to grow"
    );
    assert_eq!(status.plan[0].refused_in_use, Some(true), "{:?}", status.plan[0]);
    let after = harness.pod_uids("db").await;
    for row in &status.plan {
        let pod = format!("db-{}", row.replica);
        assert_eq!(row.strategy, Some(ferry_api::ChosenStrategy::InPlace));
        assert_eq!(
            row.restarted_pod.as_ref(),
            before.get(&pod),
            "{pod} stopped once, from its original"
        );
        assert_ne!(after.get(&pod), before.get(&pod), "{pod} came back as a new pod");
        let size = df_bytes(&harness.ns.name, &pod, "/data").await.unwrap();
        assert!(size > 400 * MI && size <= 480 * MI, "{pod}: df size {size}");
    }
    assert_nothing_lost(&harness, 2, &seeds).await;
    harness.finish().await;
}

/// Watches the claim `claim` until it asks for `least` bytes or more; then returns the UID of the pod
/// `pod`, read at once (`None`: no such pod).
fn pod_when_claim_asks(
    harness: &Harness,
    claim: &str,
    pod: &str,
    least: u64,
) -> tokio::task::JoinHandle<Option<String>> {
    use futures::StreamExt;
    use kube::runtime::{WatchStreamExt, watcher};
    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    let pods: Api<Pod> = harness.ns.api();
    let config = watcher::Config::default().fields(&format!("metadata.name={claim}"));
    let pod = pod.to_string();
    tokio::spawn(async move {
        let mut claims = watcher::watcher(claims, config)
            .default_backoff()
            .applied_objects()
            .boxed();
        while let Some(event) = claims.next().await {
            // A failed watch is retried after a backoff.
            let Ok(claim) = event else { continue };
            let asked = claim.spec.as_ref().and_then(|spec| {
                spec.resources
                    .as_ref()?
                    .requests
                    .as_ref()?
                    .get("storage")
                    .and_then(quantity_bytes)
            });
            if asked.is_some_and(|asked| asked >= least) {
                return pods.get_opt(&pod).await.unwrap().and_then(|pod| pod.uid());
            }
        }
        panic!("the watch on {pod}'s claim ended");
    })
}

/// The final mover waits on standby, its volumes mounted, while the replica serves, and begins its
/// pass only on its go, once the replica's pod is gone. The operator is killed while that pod
/// terminates (before any go could be given): the mover, left alone, never starts by itself; a
/// fresh operator gives the go and the copy completes with every acknowledged record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standby_final_mover_waits_for_its_go_through_an_operator_killed_between_stop_and_go() {
    let mut harness = Harness::start("real-standby").await;
    let seeds = writer(&harness, 1, CLASS_BLOCK_FIXED, "64Mi").await;
    let pods: Api<Pod> = harness.ns.api();
    let replica = pods.get("db-0").await.unwrap().uid().unwrap();
    harness
        .create_resize(
            "copy",
            json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "96Mi"}]}),
        )
        .await;
    let is_final = |pod: &Pod| pod.name_any().ends_with("-final");
    // The stop: the replica's pod terminating (its writer goes on for a second), its final mover on
    // standby already.
    let standby = wait_until(
        "db-0 to be stopped with its final mover on standby",
        240,
        || async {
            let db = pods.get_opt("db-0").await.ok()??;
            if db.uid()? != replica || db.metadata.deletion_timestamp.is_none() {
                return None;
            }
            harness.mover_pods().await.ok()?.into_iter().find(is_final)
        },
    )
    .await
    .unwrap();
    harness.stop_operator().await;
    let running = |pod: &Pod| {
        pod.status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .and_then(|c| c.first())
            .is_some_and(|c| c.state.as_ref().is_some_and(|s| s.running.is_some()))
    };
    assert_eq!(
        standby
            .annotations()
            .get(ANNOTATION_FINAL_PASS)
            .map(String::as_str),
        Some(""),
        "no go while the replica's pod exists"
    );
    wait_until("db-0 to be gone", 60, || async {
        pods.get_opt("db-0").await.ok()?.is_none().then_some(())
    })
    .await
    .unwrap();
    // Nothing but the operator starts the pass: a while later the mover still waits.
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    let waiting = pods.get(&standby.name_any()).await.unwrap();
    assert_eq!(waiting.uid(), standby.uid(), "the same standby mover");
    assert!(
        running(&waiting),
        "the standby mover runs, waiting: {:?}",
        waiting.status
    );
    assert_eq!(
        waiting
            .annotations()
            .get(ANNOTATION_FINAL_PASS)
            .map(String::as_str),
        Some("")
    );

    // The line its go may come by is only this operator's: the one restarted has no key for it, so
    // the annotation gives the go.
    let results = follow_final_results(&harness);
    harness.restart_operator();
    let resize = wait_phase(&harness, "copy", 180).await;
    let status = resize.status.unwrap();
    assert_eq!(status.phase, Some(Phase::Succeeded), "{:?}", status.message);
    let results = results.lock().unwrap().clone();
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[&standby.name_any()]["goBy"], "file", "{results:?}");
    assert_nothing_lost(&harness, 1, &seeds).await;
    harness.finish().await;
}

/// Files the tracked-copy test puts beside the writer's: a final pass that walked both trees would
/// visit every one of them.
const MANY_FILES: u64 = 2000;

/// Watches the namespace's pods, event by event, and records for each replica pod the moment it is
/// first seen going away (Terminating or deleted): whether its final mover was Ready (armed) then.
fn standby_ready_at_stop(harness: &Harness) -> Arc<Mutex<BTreeMap<String, bool>>> {
    use futures::StreamExt;
    use kube::runtime::{WatchStreamExt, watcher};
    let seen = Arc::new(Mutex::new(BTreeMap::new()));
    let record = seen.clone();
    let pods: Api<Pod> = harness.ns.api();
    tokio::spawn(async move {
        let mut ready: BTreeMap<String, bool> = BTreeMap::new();
        let mut events = watcher::watcher(pods, watcher::Config::default())
            .default_backoff()
            .boxed();
        while let Some(event) = events.next().await {
            let (pod, gone) = match event {
                Ok(watcher::Event::Apply(pod) | watcher::Event::InitApply(pod)) => (pod, false),
                Ok(watcher::Event::Delete(pod)) => (pod, true),
                _ => continue,
            };
            let name = pod.name_any();
            ready.insert(name.clone(), ferry_engine::pods::ready(&pod));
            let going = gone || pod.metadata.deletion_timestamp.is_some();
            if !going || !name.starts_with("db-") {
                continue;
            }
            let prefix = format!("data-{name}-ferry-");
            let armed = ready
                .iter()
                .any(|(mover, ready)| mover.starts_with(&prefix) && mover.ends_with("-final") && *ready);
            record.lock().unwrap().entry(name).or_insert(armed);
        }
    });
    seen
}

/// Change tracking (on by default): each replica's standby final mover watches its volume while the
/// replica serves, the replica stops only once that standby is Ready (its catch-up pass over), and
/// the final pass, the downtime, visits only what the writer changed since, not the thousands of
/// files beside it. Nothing acknowledged is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tracked_final_pass_visits_only_what_changed_and_loses_nothing() {
    let harness = Harness::start("real-tracked").await;
    let seeds = writer_shaped(&harness, 2, CLASS_BLOCK, "320Mi", 8 << 10, 0, |set| {
        let spec = set.spec.as_mut().unwrap().template.spec.as_mut().unwrap();
        let fill = format!(
            "mkdir -p /data/many && cd /data/many && i=0; while [ $i -lt {MANY_FILES} ]; do echo $i > f$i; i=$((i+1)); done"
        );
        spec.init_containers = Some(vec![
            serde_json::from_value(json!({
                "name": "many-files",
                "image": ferry_testenv::workload::BUSYBOX_IMAGE,
                "imagePullPolicy": "Never",
                "command": ["sh", "-c", fill],
                "volumeMounts": [{"name": "data", "mountPath": "/data"}],
            }))
            .unwrap(),
        ]);
    })
    .await;
    let results = follow_final_results(&harness);
    let armed_at_stop = standby_ready_at_stop(&harness);
    let oracle = DisruptionOracle::start(harness.ns.api(), "db", 2).await;
    let status = resize_succeeds(
        &harness,
        "tracked",
        json!({"statefulSetName": "db", "volumes": [
            {"name": "data", "size": "384Mi", "storageClassName": CLASS_BLOCK_FIXED}
        ]}),
        300,
    )
    .await;
    oracle.assert_at_most(1).await;
    assert_nothing_lost(&harness, 2, &seeds).await;
    for row in &status.plan {
        assert_eq!(
            row.final_change_tracking.as_deref(),
            Some("used"),
            "{}: {row:?}",
            row.claim_name
        );
        let visited = row.final_entries_visited.unwrap();
        assert!(visited < 100, "{}: visited {visited} entries", row.claim_name);
        assert!(row.files_total.unwrap() > MANY_FILES, "{row:?}");
        // The mover's own clock of its final pass, within the downtime step that holds it.
        let pass = row.final_pass_milliseconds.expect("final pass timed") as i64;
        let step = row
            .downtime_steps
            .as_ref()
            .and_then(|s| s.final_sync)
            .unwrap_or(0);
        assert!(
            pass <= step,
            "{}: pass {pass} ms, final sync step {step} ms",
            row.claim_name
        );
    }
    let results = results.lock().unwrap().clone();
    assert_eq!(results.len(), 2, "a result per final mover: {results:?}");
    for (name, result) in &results {
        assert_eq!(result["changeTracking"], "used", "{name}: {result}");
        // Not read whole: no digest; the mover verified what it wrote.
        assert_eq!(result["digest"], "", "{name}: {result}");
    }
    let armed_at_stop = armed_at_stop.lock().unwrap().clone();
    for replica in ["db-0", "db-1"] {
        assert_eq!(
            armed_at_stop.get(replica),
            Some(&true),
            "{replica} stopped before its standby was armed: {armed_at_stop:?}"
        );
    }
    harness.finish().await;
}
