//! A copy to another node (`spec.placement`): a serving mover on the old volume's node, movers
//! that pull from it on the new one's, its end with the final pass, and its removal at the swap.

use super::*;

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
    let mut inspect = |decision: &Decision, cluster: &Cluster| {
        // The swap removes the serving mover with the others: it mounts the claim being deleted.
        for action in &decision.actions {
            if let ResizeAction::Volume(VolumeWrite::DeleteClaim { claim, .. }) = action
                && !claim.contains("-ferry-")
            {
                let serving = format!("{claim}-ferry-{SUFFIX}-serve");
                serving_at_swap.push(cluster.observed.movers.contains_key(&serving));
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
        assert_eq!(from.as_deref(), Some("10.2.0.7:7443"), "{pod}");
    }
    assert!(
        cluster.final_tracking.iter().all(|(_, tracks)| !tracks),
        "a pull tracks no changes: {:?}",
        cluster.final_tracking
    );
    assert_eq!(
        serving_at_swap, [false; REPLICAS as usize],
        "the final pass stopped each server"
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

/// A serving mover that fails (its node lost, its volume gone) rolls the replica back, and every
/// mover of the row goes.
#[test]
fn a_failed_serving_mover_rolls_the_replica_back() {
    let mut cluster = Cluster::new();
    let mut failed = false;
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
        if !failed && let Some(mover) = cluster.observed.movers.get_mut(&serving) {
            mover.phase = MoverPhase::Failed {
                exit_code: 7,
                message: "transport: connection reset".into(),
            };
            failed = true;
        }
    }
    assert!(failed);
    assert_eq!(status.phase, Some(Phase::Failed), "{:?}", status.message);
    let message = status.message.clone().unwrap_or_default();
    assert!(message.contains("serving mover for data-db-0"), "{message}");
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
