//! A move to another node with the pod network between the two nodes cut for 30 s while the warm
//! pass runs: the move completes (the kernel's retransmissions ride the cut out, or the copy starts
//! again), the other replica never goes down, and nothing acknowledged is lost.

use crate::move_node::{move_replica_one, node_of};
use crate::real_node::{assert_nothing_lost, writer_with};
use crate::support::Harness;
use crate::support::disruption::DisruptionOracle;
use ferry_testenv::CLASS_BLOCK_NODE;
use ferry_testenv::network_cut::cut_between;
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::{Api, ResourceExt};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Once a warm mover of the move runs, cuts the network between its node and the serving mover's
/// for `seconds`; the cut's nodes once done.
fn cut_during_the_warm_pass(harness: &Harness, seconds: u64) -> Arc<Mutex<Option<(String, String)>>> {
    let cut = Arc::new(Mutex::new(None));
    let pods: Api<Pod> = harness.ns.api();
    let record = cut.clone();
    tokio::spawn(async move {
        loop {
            let movers = (pods.list(&ListParams::default().labels("ferry.dev/mover")).await)
                .map(|list| list.items)
                .unwrap_or_default();
            let node = |suffix: &str| {
                movers.iter().find_map(|pod| {
                    let running = pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running");
                    (running && pod.name_any().ends_with(suffix))
                        .then(|| pod.spec.as_ref()?.node_name.clone())?
                })
            };
            if let (Some(serving), Some(pulling)) = (node("-serve"), node("-warm")) {
                let fault = cut_between(&serving, &pulling).unwrap();
                tokio::time::sleep(Duration::from_secs(seconds)).await;
                drop(fault);
                *record.lock().unwrap() = Some((serving, pulling));
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    cut
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_across_a_network_cut_of_30_s_in_its_warm_pass_completes_and_loses_nothing() {
    let harness = Harness::start("move-cut").await;
    // 160 MiB of seed: the warm pass is still at work when the cut comes.
    let seeds = writer_with(&harness, 2, CLASS_BLOCK_NODE, "320Mi", 160 << 10, 0).await;
    let old_node = node_of(&harness, "db-1").await;
    let cut = cut_during_the_warm_pass(&harness, 30);
    let oracle = DisruptionOracle::start(harness.ns.api(), "db", 2).await;
    let status = move_replica_one(&harness, 420).await;
    oracle.assert_at_most(1).await;
    let (serving, pulling) = cut.lock().unwrap().clone().expect("the cut never came");
    assert_eq!(serving, old_node);
    let moved = status.plan.iter().find(|row| row.replica == 1).unwrap();
    assert_eq!(moved.target_node.as_deref(), Some(pulling.as_str()));
    eprintln!(
        "across a 30 s cut: {:?} restarts, warm passes {:?} ms, down {:?} ms",
        moved.transport_restarts, moved.warm_pass_milliseconds, moved.downtime_milliseconds
    );
    assert_eq!(node_of(&harness, "db-1").await, pulling);
    assert_nothing_lost(&harness, 2, &seeds).await;
    harness.finish().await;
}
