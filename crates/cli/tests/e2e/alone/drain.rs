//! `kubectl ferry drain NODE` on the real nodes, with the operator: a 3-replica StatefulSet on the
//! node-bound class, one replica per node; draining one node cordons it and moves the replica
//! whose volume only that node holds to another node, with nothing acknowledged lost and no other
//! replica down (the disruption oracle). It cordons a real node, so it runs alone.

use crate::support::Env;
use ferry_testenv::CLASS_BLOCK_NODE;
use ferry_testenv::disruption::{Allowed, DisruptionOracle};
use ferry_testenv::fixtures::{claim_directory, wait_ready};
use ferry_testenv::workload::{acknowledged, lost_records, writer_stateful_set};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod};
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};

/// Uncordons the node when the test ends, passed or failed: the nodes are shared by every test.
struct Uncordon(Client, String);

impl Drop for Uncordon {
    fn drop(&mut self) {
        let (client, node) = (self.0.clone(), self.1.clone());
        let undone = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                let patch = serde_json::json!({"spec": {"unschedulable": null}});
                Api::<Node>::all(client)
                    .patch(&node, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map(|_| ())
            })
        });
        if let Ok(Err(error)) = undone.join() {
            eprintln!("could not uncordon {}: {error}", self.1);
        }
    }
}

const PODS: [&str; 3] = ["db-0", "db-1", "db-2"];

/// One replica per real node, as the scheduler prefers it (not required: the drained replica must
/// still find a node, and every other one has a replica).
fn spread_over_nodes(set: &mut StatefulSet) {
    let pod = set.spec.as_mut().unwrap().template.spec.as_mut().unwrap();
    pod.affinity = Some(
        serde_json::from_value(serde_json::json!({"podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": {
                "topologyKey": "kubernetes.io/hostname",
                "labelSelector": {"matchLabels": {"app": "db"}}}}]}}))
        .unwrap(),
    );
}

async fn node_of(env: &Env, pod: &str) -> String {
    let pods: Api<Pod> = env.ns.api();
    pods.get(pod).await.unwrap().spec.unwrap().node_name.unwrap()
}

async fn cordoned(env: &Env, node: &str) -> bool {
    let nodes: Api<Node> = Api::all(env.client.clone());
    nodes.get(node).await.unwrap().spec.unwrap().unschedulable == Some(true)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drain_moves_each_replica_whose_volume_the_node_alone_holds_and_loses_no_write() {
    let mut env = Env::start("cli-drain").await;
    let sets: Api<StatefulSet> = env.ns.api();
    let templates = [("data", CLASS_BLOCK_NODE, "320Mi")];
    let mut set = writer_stateful_set("db", 3, &templates, &env.ns.name, 8 << 10, 0).unwrap();
    spread_over_nodes(&mut set);
    sets.create(&PostParams::default(), &set).await.unwrap();
    wait_ready(&sets, "db", 3, 180).await.unwrap();
    // Under the oracle: one replica down at a time, each once.
    let oracle = DisruptionOracle::start(env.ns.api(), "db", 3).await.unwrap();
    env.start_operator().await;
    let mut nodes = Vec::new();
    for pod in PODS {
        nodes.push(node_of(&env, pod).await);
    }
    let node = nodes[1].clone();
    let _uncordon = Uncordon(env.client.clone(), node.clone());
    let on_node: Vec<&str> = (PODS.iter().zip(&nodes))
        .filter(|(_, on)| **on == node)
        .map(|(pod, _)| *pod)
        .collect();
    let distinct: std::collections::BTreeSet<&String> = nodes.iter().collect();
    assert_eq!(distinct.len(), 3, "one replica per node: {nodes:?}");
    assert_eq!(on_node, ["db-1"]);
    let ns = env.ns.name.clone();

    let run = env.ferry(&["drain", "no-such-node"]).await;
    assert_eq!(run.code, 3, "{run:?}");
    assert!(
        run.stderr.contains("node \"no-such-node\" does not exist"),
        "{run:?}"
    );

    // A dry run says what would move and changes nothing.
    let run = env.ferry(&["drain", &node, "--dry-run"]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout
            .contains(&format!("StatefulSet {ns}/db: would move replica")),
        "{run:?}"
    );
    assert!(!cordoned(&env, &node).await);
    assert!(env.resize_names().await.is_empty());

    let acked: Vec<usize> = (on_node.iter())
        .map(|pod| acknowledged(&ns, pod).unwrap().len())
        .collect();
    let run = env.ferry(&["drain", &node, "--watch"]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains(&format!("node/{node} cordoned")), "{run:?}");
    assert!(cordoned(&env, &node).await);
    wait_ready(&sets, "db", 3, 120).await.unwrap();
    let claims: Api<PersistentVolumeClaim> = env.ns.api();
    let volumes: Api<PersistentVolume> = Api::all(env.client.clone());
    for (pod, acked) in on_node.iter().zip(acked) {
        assert_ne!(node_of(&env, pod).await, node, "{pod} moved off {node}");
        // It writes on, on its new volume, with every acknowledged record there.
        ferry_testenv::wait_until(&format!("{pod} to write on"), 60, || async {
            (acknowledged(&ns, pod).ok()?.len() > acked + 10).then_some(())
        })
        .await
        .unwrap();
        let dir = claim_directory(&claims, &volumes, &format!("data-{pod}"))
            .await
            .unwrap();
        assert_eq!(lost_records(&ns, pod, &dir).unwrap(), Vec::<u64>::new(), "{pod}");
    }

    // Drained: nothing is left to move.
    let run = env.ferry(&["drain", &node]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("nothing to move"), "{run:?}");
    let worst = oracle.finish().await.unwrap();
    let beyond = worst.beyond("db", Allowed::at_once(1));
    assert!(beyond.is_none(), "{beyond:?}");
    assert_eq!(
        worst.outages.len(),
        on_node.len(),
        "only the moved replicas went down: {worst:?}"
    );
    env.finish().await;
}
