//! A copy to another node (`spec.placement`): a serving mover on the old volume's node, movers
//! that pull from it on the new one's, its end with the final pass, and its removal at the swap.

use super::*;
use crate::resize::copy::remote::TRANSPORT_RESTARTS;

/// The plan with every replica moving from node-a to node-b.
fn planned_remote() -> VolumeResizeStatus {
    let mut status = planned();
    for row in &mut status.plan {
        row.source_node = Some("node-a".into());
        row.target_node = Some("node-b".into());
    }
    status
}

fn run_remote(
    resize: &Resize,
    cluster: &mut Cluster,
    crash_at: Option<usize>,
) -> (VolumeResizeStatus, usize) {
    let (status, executed) = drive(resize, cluster, planned_remote(), crash_at, 500, &mut |_, _| {});
    assert!(
        status.phase.is_some_and(Phase::is_terminal),
        "did not converge (crash at {crash_at:?}): {status:?}"
    );
    (status, executed)
}

#[test]
fn a_copy_to_another_node_pulls_from_a_serving_mover_made_on_the_old_volumes_node() {
    let mut cluster = Cluster::new();
    let mut serving_at_swap = Vec::new();
    let mut inspect = |decision: &Decision, _: &Cluster| {
        // The swap removes the serving mover with the others (it mounts the claim being deleted),
        // at once: the final pass stopped it, whether or not its kubelet reported the exit yet.
        for action in &decision.actions {
            if let ResizeAction::Volume(VolumeWrite::DeleteClaim { claim, .. }) = action
                && !claim.contains("-ferry-")
            {
                let serving = format!("{claim}-ferry-{SUFFIX}-serve");
                let deleted = decision.actions.iter().find_map(|action| match action {
                    ResizeAction::DeleteMover { pod, exited } if *pod == serving => Some(exited.is_some()),
                    _ => None,
                });
                serving_at_swap.push(deleted);
            }
        }
    };
    let (status, _) = drive(&resize(), &mut cluster, planned_remote(), None, 500, &mut inspect);
    assert_copied(&cluster, &status);
    let servers: Vec<String> = (0..REPLICAS)
        .map(|r| format!("data-db-{r}-ferry-{SUFFIX}-serve"))
        .collect();
    assert_eq!(
        cluster.servers_started, servers,
        "one serving mover per row, once"
    );
    assert!(
        cluster
            .target_nodes
            .iter()
            .all(|(_, node)| node.as_deref() == Some("node-b")),
        "{:?}",
        cluster.target_nodes
    );
    assert!(!cluster.pulls.is_empty());
    for (pod, from) in &cluster.pulls {
        let from = from.as_ref().unwrap();
        assert_eq!(from.address, "10.2.0.7:7443", "{pod}");
        let claim = &pod[..pod.rfind("-ferry-").unwrap()];
        assert_eq!(from.key, format!("{claim}-ferry-{SUFFIX}-key-0"), "{pod}");
    }
    assert!(
        cluster.final_tracking.iter().all(|(_, tracks)| !tracks),
        "a pull tracks no changes: {:?}",
        cluster.final_tracking
    );
    assert_eq!(
        serving_at_swap,
        [Some(true); REPLICAS as usize],
        "each server, stopped by its final pass but its exit not yet seen, deleted at once"
    );
    assert!(
        cluster.observed.movers.is_empty(),
        "{:?}",
        cluster.observed.movers
    );
}

/// A serving mover does not take a mover slot: with one slot, the row's mover still runs beside it.
#[test]
fn a_serving_mover_leaves_the_one_mover_slot_to_the_mover_it_serves() {
    let resize = resize().with(|spec| {
        spec.mover = Some(ferry_api::MoverSettings {
            concurrency: Some(1),
            ..ferry_api::MoverSettings::default()
        })
    });
    let (status, _) = run_remote(&resize, &mut Cluster::new(), None);
    assert_eq!(status.phase, Some(Phase::Succeeded), "{:?}", status.message);
}

/// Killed after any action, the operator finishes the move with every row's data on its new volume.
#[test]
fn a_move_to_another_node_survives_the_operator_killed_after_any_action() {
    let (_, total) = run_remote(&resize(), &mut Cluster::new(), None);
    for crash_at in 0..total {
        let mut cluster = Cluster::new();
        let (status, _) = run_remote(&resize(), &mut cluster, Some(crash_at));
        assert_copied(&cluster, &status);
        assert!(cluster.observed.movers.is_empty(), "crash at {crash_at}");
    }
}

/// Runs the move with data-db-0's serving mover failing each of the first `failures` times it
/// runs (its node lost for a moment, the network cut): (the status, how many failed).
fn run_with_failing_server(failures: u32) -> (Cluster, VolumeResizeStatus, u32) {
    let mut cluster = Cluster::new();
    let mut failed = 0;
    let mut status = planned_remote();
    for _ in 0..500 {
        let now = cluster.tick();
        let Some(decision) = resize().step(&status, &cluster.observed, &now) else {
            break;
        };
        status = decision.status.clone();
        if status.phase.is_some_and(Phase::is_terminal) {
            break;
        }
        for action in &decision.actions {
            cluster.apply(action);
        }
        cluster.settle();
        let serving = format!("data-db-0-ferry-{SUFFIX}-serve");
        let replica_up = cluster.observed.pods.contains_key("db-0");
        if failed < failures
            && replica_up
            && let Some(mover) = cluster.observed.movers.get_mut(&serving)
            && mover.phase == MoverPhase::Running
        {
            mover.phase = MoverPhase::Failed {
                exit_code: 7,
                message: "transport: connection reset".into(),
            };
            failed += 1;
        }
    }
    (cluster, status, failed)
}

/// A serving mover that fails while the replica serves is started again with the row's other
/// movers, and the move completes; each break is counted once.
#[test]
fn a_copy_whose_serving_mover_fails_while_the_replica_serves_starts_again_and_completes() {
    let (cluster, status, failed) = run_with_failing_server(2);
    assert_eq!(failed, 2);
    assert_copied(&cluster, &status);
    let row = &status.plan[0];
    assert_eq!(row.transport_restarts, Some(2), "{row:?}");
    // Each serving mover has a key of its own: the last movers pulled with the third.
    let (_, last) = (cluster.pulls.iter())
        .rfind(|(pod, _)| pod.starts_with("data-db-0-"))
        .unwrap();
    assert_eq!(
        last.as_ref().unwrap().key,
        format!("data-db-0-ferry-{SUFFIX}-key-2")
    );
    assert_eq!(status.plan[1].transport_restarts, None);
    assert!(
        cluster.observed.movers.is_empty(),
        "{:?}",
        cluster.observed.movers
    );
}

/// Past its restarts, a serving mover that keeps failing rolls the replica back, and every mover
/// of the row goes.
#[test]
fn a_serving_mover_that_keeps_failing_rolls_the_replica_back() {
    let (cluster, status, failed) = run_with_failing_server(TRANSPORT_RESTARTS + 1);
    assert_eq!(failed, TRANSPORT_RESTARTS + 1);
    assert_eq!(status.phase, Some(Phase::Failed), "{:?}", status.message);
    let message = status.message.clone().unwrap_or_default();
    assert!(message.contains("serving mover for data-db-0"), "{message}");
    assert_eq!(status.plan[0].transport_restarts, Some(TRANSPORT_RESTARTS));
    assert_eq!(
        cluster.observed.claims["data-db-0"].volume_name.as_deref(),
        Some("pv-old-0")
    );
    assert!(
        cluster.observed.movers.is_empty(),
        "{:?}",
        cluster.observed.movers
    );
}
