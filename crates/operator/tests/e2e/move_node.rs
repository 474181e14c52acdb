//! Moving a replica's volumes to another node (`spec.placement`) on the real nodes: the old volume
//! is bound to its node (the node-bound class, as a local PV is), a mover serves it there and the
//! movers on the new node pull it over mutual TLS with a key made for that copy alone. The other
//! replica never goes down, every acknowledged write is on the new volume, the replica runs on its
//! new node, the old volume stays on the old one, and the key is gone with the copy.

use crate::real_node::{assert_nothing_lost, resize_succeeds, watch_mover_containers, writer, writer_with};
use crate::support::Harness;
use crate::support::disruption::DisruptionOracle;
use ferry_api::Phase;
use ferry_testenv::fixtures::wait_ready;
use ferry_testenv::{CLASS_BLOCK, CLASS_BLOCK_NODE, REAL_NODES, REAL_ZONES, wait_until};
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod, Secret};
use kube::api::ListParams;
use kube::{Api, ResourceExt};
use serde_json::json;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

/// Where a volume is bound (its PV's required affinity on `key`: `kubernetes.io/hostname` for a
/// node-bound volume, `topology.kubernetes.io/zone` for a zone-bound one).
fn volume_affinity(volume: &PersistentVolume, key: &str) -> Option<String> {
    let terms = &volume
        .spec
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required
        .as_ref()?
        .node_selector_terms;
    terms
        .iter()
        .flat_map(|term| term.match_expressions.iter().flatten())
        .find(|e| e.key == key)
        .and_then(|e| e.values.as_ref()?.first().cloned())
}

/// The node a node-bound volume lives on.
fn volume_node(volume: &PersistentVolume) -> Option<String> {
    volume_affinity(volume, "kubernetes.io/hostname")
}

/// The zone a zone-bound volume lives in.
fn volume_zone(volume: &PersistentVolume) -> Option<String> {
    volume_affinity(volume, "topology.kubernetes.io/zone")
}

pub(crate) async fn node_of(harness: &Harness, pod: &str) -> String {
    let pods: Api<Pod> = harness.ns.api();
    pods.get(pod).await.unwrap().spec.unwrap().node_name.unwrap()
}

/// Moves replica 1 of `db` (320Mi volumes) to another node, within `seconds`; its status.
pub(crate) async fn move_replica_one(harness: &Harness, seconds: u64) -> ferry_api::VolumeResizeStatus {
    let spec = json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "320Mi"}],
                      "placement": {"replicas": [1]}});
    resize_succeeds(harness, "move", spec, seconds).await
}

/// The names of the Secrets seen in the namespace while this lives, from a watch: a key that
/// exists for a moment is seen too.
pub(crate) struct SecretsSeen {
    seen: Arc<Mutex<BTreeSet<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for SecretsSeen {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts watching the namespace's Secrets; returns once the watch's first list is in.
pub(crate) async fn watch_secrets(harness: &Harness) -> SecretsSeen {
    use futures::StreamExt;
    use kube::runtime::{WatchStreamExt, watcher};
    let seen = Arc::new(Mutex::new(BTreeSet::new()));
    let secrets: Api<Secret> = harness.ns.api();
    let record = seen.clone();
    let (listed, first_list) = tokio::sync::oneshot::channel();
    let task = tokio::spawn(async move {
        let mut listed = Some(listed);
        let mut events = watcher::watcher(secrets, watcher::Config::default())
            .default_backoff()
            .boxed();
        while let Some(event) = events.next().await {
            match event {
                Ok(watcher::Event::Apply(secret) | watcher::Event::InitApply(secret)) => {
                    record.lock().unwrap().insert(secret.name_any());
                }
                Ok(watcher::Event::InitDone) => {
                    if let Some(listed) = listed.take() {
                        let _ = listed.send(());
                    }
                }
                _ => {}
            }
        }
    });
    tokio::time::timeout(std::time::Duration::from_secs(60), first_list)
        .await
        .expect("the Secrets' first list within a minute")
        .unwrap();
    SecretsSeen { seen, task }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_moved_to_another_node_keeps_every_acknowledged_write_and_its_key_goes_with_the_copy() {
    let harness = Harness::start("move-node").await;
    let seeds = writer(&harness, 2, CLASS_BLOCK_NODE, "320Mi").await;
    let old_node = node_of(&harness, "db-1").await;
    let movers = watch_mover_containers(&harness);
    let secrets = watch_secrets(&harness).await;
    let oracle = DisruptionOracle::start(harness.ns.api(), "db", 2).await;
    let status = move_replica_one(&harness, 300).await;
    oracle.assert_at_most(1).await;

    let moved = status.plan.iter().find(|row| row.replica == 1).unwrap();
    assert_eq!(moved.source_node.as_deref(), Some(old_node.as_str()));
    let new_node = moved.target_node.clone().unwrap();
    assert_ne!(new_node, old_node);
    eprintln!(
        "replica 1 moved from {old_node} to {new_node}: down {:?} ms ({:?}); interim pulls {:?} \
         ({:?} bytes), final pull {:?} bytes",
        moved.downtime_milliseconds,
        moved.downtime_steps,
        moved.final_interim_passes,
        moved.final_interim_bytes_copied,
        moved.final_bytes_copied
    );
    // The final pull read only what changed since the last warm pull (its serving mover tracked
    // the source from its start), not both trees whole.
    assert_eq!(
        moved.final_change_tracking.as_deref(),
        Some("used"),
        "visited {:?} entries",
        moved.final_entries_visited
    );
    // The final pull waited on standby pulling what changed meanwhile (interim pulls), as a
    // local standby does: its result counts them, however many the stop's timing allowed.
    assert!(
        moved.final_interim_passes.is_some(),
        "a standby pull reports its interim pulls: {moved:?}"
    );
    let stayed = status.plan.iter().find(|row| row.replica == 0).unwrap();
    assert_eq!(
        (stayed.strategy, &stayed.target_node),
        (None, &None),
        "replica 0 stays"
    );

    // The replica runs on its new node, on a volume bound there; the old one is kept on its node.
    assert_eq!(node_of(&harness, "db-1").await, new_node);
    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    let volumes: Api<PersistentVolume> = Api::all(harness.client.clone());
    let bound = claims
        .get("data-db-1")
        .await
        .unwrap()
        .spec
        .unwrap()
        .volume_name
        .unwrap();
    assert_eq!(
        volume_node(&volumes.get(&bound).await.unwrap()).as_deref(),
        Some(new_node.as_str())
    );
    let old_volume = moved.source_volume.clone().unwrap();
    assert!(status.created_objects.retained_volumes.contains(&old_volume));
    assert_eq!(
        volume_node(&volumes.get(&old_volume).await.unwrap()).as_deref(),
        Some(old_node.as_str())
    );
    assert_nothing_lost(&harness, 2, &seeds).await;

    // The old volume was served from its node and pulled on the new one.
    let movers = movers.lock().unwrap().clone();
    let serving = "data-db-1-ferry-";
    let server = movers
        .iter()
        .find(|(name, _)| name.starts_with(serving) && name.ends_with("-serve"));
    let (_, placed) = server.unwrap_or_else(|| panic!("no serving mover: {movers:?}"));
    assert!(placed.starts_with(&format!("{old_node} ")), "{placed}");
    assert!(placed.contains("ferry-mover serve"), "{placed}");
    let pulls: Vec<_> = movers
        .iter()
        .filter(|(name, _)| {
            name.starts_with(serving) && (name.ends_with("-warm") || name.ends_with("-final"))
        })
        .collect();
    assert!(
        pulls.iter().any(|(name, _)| name.ends_with("-final")),
        "{movers:?}"
    );
    for (name, placed) in &pulls {
        assert!(placed.starts_with(&format!("{new_node} ")), "{name}: {placed}");
        assert!(placed.contains("ferry-mover pull --from "), "{name}: {placed}");
    }
    keys_gone(&harness, &secrets, 1).await;
    harness.finish().await;
}

/// The copy's keys existed while it ran (`count`, one per serving mover), and went with them.
pub(crate) async fn keys_gone(harness: &Harness, seen: &SecretsSeen, count: usize) {
    let keys: Vec<String> = (seen.seen.lock().unwrap().iter())
        .filter(|name| name.starts_with("data-db-1-ferry-") && name.contains("-key-"))
        .cloned()
        .collect();
    assert_eq!(keys.len(), count, "{keys:?}");
    let all: Api<Secret> = harness.ns.api();
    for key in &keys {
        wait_until(
            "the copy's key to be deleted with its serving mover",
            60,
            || async { all.get_opt(key).await.ok()?.is_none().then_some(()) },
        )
        .await
        .unwrap();
    }
}

/// Deletes (at once, grace 0) the first mover whose name ends with `suffix` seen running while a
/// warm pass runs and replica `db-1`'s first pod is Ready (`-serve`: the source node lost for a
/// moment; `-warm`: the target's): never at the stop or after it, where a serving mover killed
/// as the final pass begins may still answer it, and one still ending after the move is no break.
/// Returns whether it did.
async fn kill_mover_once(harness: &Harness, suffix: &'static str) -> Arc<Mutex<bool>> {
    let killed = Arc::new(Mutex::new(false));
    let pods: Api<Pod> = harness.ns.api();
    let done = killed.clone();
    let first = pods.get("db-1").await.unwrap().uid();
    tokio::spawn(async move {
        loop {
            let movers = (pods.list(&ListParams::default().labels("ferry.dev/mover")).await)
                .map(|list| list.items)
                .unwrap_or_default();
            let replica_ready = (pods.get_opt("db-1").await.ok().flatten()).is_some_and(|pod| {
                pod.uid() == first
                    && ferry_engine::pods::ready(&pod)
                    && pod.metadata.deletion_timestamp.is_none()
            });
            let running = |suffix: &str| {
                movers.iter().find(|pod| {
                    pod.name_any().ends_with(suffix)
                        && pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
                })
            };
            let warm_pass = running("-warm").is_some();
            if let (Some(pod), true, true) = (running(suffix), warm_pass, replica_ready) {
                let now = kube::api::DeleteParams::default().grace_period(0);
                if pods.delete(&pod.name_any(), &now).await.is_ok() {
                    *done.lock().unwrap() = true;
                    return;
                }
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    });
    killed
}

/// The serving mover killed while the replica still serves: the copy starts again with a new
/// serving mover and a new key, and the move completes with nothing lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_whose_serving_mover_is_killed_while_the_replica_serves_starts_again_and_completes() {
    let harness = Harness::start("move-killed").await;
    // 16 MiB at 4 MiB/s: the serving mover is at work for seconds while the replica serves.
    let seeds = writer_with(&harness, 2, CLASS_BLOCK_NODE, "320Mi", 16 << 10, 0).await;
    let secrets = watch_secrets(&harness).await;
    let killed = kill_mover_once(&harness, "-serve").await;
    let oracle = DisruptionOracle::start(harness.ns.api(), "db", 2).await;
    let spec = json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "320Mi"}],
                      "mover": {"bandwidthLimit": "4Mi"}, "placement": {"replicas": [1]}});
    let status = resize_succeeds(&harness, "move", spec, 300).await;
    oracle.assert_at_most(1).await;
    assert!(
        *killed.lock().unwrap(),
        "the serving mover was never seen running"
    );
    let moved = status.plan.iter().find(|row| row.replica == 1).unwrap();
    assert_eq!(moved.transport_restarts, Some(1), "{moved:?}");
    assert_eq!(
        node_of(&harness, "db-1").await,
        moved.target_node.clone().unwrap()
    );
    assert_nothing_lost(&harness, 2, &seeds).await;
    keys_gone(&harness, &secrets, 2).await;
    harness.finish().await;
}

/// The operator killed (and started afresh) at each kind of step of a move, and the mover pulling
/// the warm pass killed on the new node: the move completes where it was planned to go, with
/// nothing lost and one replica down at most.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_completes_after_the_operator_and_its_warm_mover_are_killed_along_the_way() {
    let mut harness = Harness::start("move-operator-killed").await;
    let seeds = writer(&harness, 2, CLASS_BLOCK_NODE, "320Mi").await;
    let secrets = watch_secrets(&harness).await;
    let killed = kill_mover_once(&harness, "-warm").await;
    let oracle = DisruptionOracle::start(harness.ns.api(), "db", 2).await;
    let spec = json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "320Mi"}],
                      "placement": {"replicas": [1]}});
    harness.create_resize("move", spec).await;
    let (resize, killed_at) = harness
        .finish_killing_at_each_step("move", &Harness::COPY_STEPS, 300)
        .await;
    let status = resize.status.unwrap();
    assert_eq!(status.phase, Some(Phase::Succeeded), "{:?}", status.message);
    assert!(
        killed_at.len() >= 4,
        "killed at several kinds of step: {killed_at:?}"
    );
    oracle.assert_at_most(1).await;
    let moved = status.plan.iter().find(|row| row.replica == 1).unwrap();
    eprintln!(
        "killed at {killed_at:?}; warm mover killed: {}; restarts {:?}",
        *killed.lock().unwrap(),
        moved.transport_restarts
    );
    wait_ready(&harness.ns.api(), "db", 2, 60).await.unwrap();
    assert_eq!(
        node_of(&harness, "db-1").await,
        moved.target_node.clone().unwrap()
    );
    assert_nothing_lost(&harness, 2, &seeds).await;
    let keys = moved.transport_restarts.unwrap_or(0) as usize + 1;
    keys_gone(&harness, &secrets, keys).await;
    harness.finish().await;
}

/// A zone rebalance: replica 0's volume, bound to its zone (the zone-bound class, as a cloud disk
/// is), moves into a zone none of the StatefulSet's replicas is in, chosen by a node selector on
/// the zone label. Replica 1 never goes down (the harness's oracle), every acknowledged write is
/// on the new volume, which lives in the new zone; the old one stays in the old zone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_rebalanced_into_another_zone_keeps_every_acknowledged_write() {
    let harness = Harness::start("move-zone").await;
    let seeds = writer(&harness, 2, CLASS_BLOCK, "320Mi").await;
    let nodes: Vec<String> = vec![node_of(&harness, "db-0").await, node_of(&harness, "db-1").await];
    let zone_of = |node: &str| REAL_ZONES[REAL_NODES.iter().position(|n| *n == node).unwrap()];
    let empty = (REAL_NODES.iter())
        .find(|node| !nodes.iter().any(|n| n == *node))
        .map(|node| zone_of(node))
        .unwrap();
    let spec = json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "320Mi"}],
                      "placement": {"replicas": [0],
                                    "nodeSelector": {"topology.kubernetes.io/zone": empty}}});
    let status = resize_succeeds(&harness, "rebalance", spec, 300).await;

    let moved = status.plan.iter().find(|row| row.replica == 0).unwrap();
    let target = moved.target_node.clone().unwrap();
    assert_eq!(zone_of(&target), empty, "{moved:?}");
    assert_eq!(node_of(&harness, "db-0").await, target);
    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    let volumes: Api<PersistentVolume> = Api::all(harness.client.clone());
    let bound = (claims.get("data-db-0").await.unwrap().spec)
        .and_then(|spec| spec.volume_name)
        .unwrap();
    assert_eq!(
        volume_zone(&volumes.get(&bound).await.unwrap()).as_deref(),
        Some(empty)
    );
    let old_volume = moved.source_volume.clone().unwrap();
    assert_eq!(
        volume_zone(&volumes.get(&old_volume).await.unwrap()).as_deref(),
        Some(zone_of(&nodes[0]))
    );
    let stayed = status.plan.iter().find(|row| row.replica == 1).unwrap();
    assert_eq!(
        (stayed.strategy, &stayed.target_node),
        (None, &None),
        "replica 1 stays"
    );
    assert_nothing_lost(&harness, 2, &seeds).await;
    harness.finish().await;
}
