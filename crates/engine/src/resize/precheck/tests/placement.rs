//! `spec.placement`: the node each moved replica's volumes go to, or why none can take them.

use super::*;
use crate::resize::observed::NodeView;
use ferry_api::Placement;
use k8s_openapi::api::core::v1::{Taint, Toleration};

const ZONE: &str = "topology.kubernetes.io/zone";

fn node(name: &str, zone: &str) -> NodeView {
    NodeView {
        name: name.into(),
        labels: [(ZONE.to_string(), zone.to_string())].into(),
        ready: true,
        ..NodeView::default()
    }
}

/// `observed()` with a node-bound class `local` (binds on first use), replicas 0..3 on nodes
/// n0..n2 in zones a, b, c, and a fourth node n3 in zone c.
fn cluster() -> Observed {
    let mut o = observed();
    o.storage_classes.insert(
        "local".into(),
        StorageClassView {
            waits_for_first_consumer: true,
            ..StorageClassView::default()
        },
    );
    for claim in o.claims.values_mut() {
        claim.storage_class = Some("local".into());
    }
    for (name, zone) in [("n0", "a"), ("n1", "b"), ("n2", "c"), ("n3", "c")] {
        o.nodes.insert(name.into(), node(name, zone));
    }
    for replica in 0..3 {
        o.replica_nodes
            .insert(replica, o.nodes[&format!("n{replica}")].clone());
    }
    o
}

fn moving(placement: Placement) -> VolumeResizeSpec {
    let mut spec = spec(&[("data", "10Gi", Some("local"))]);
    spec.placement = Some(placement);
    spec
}

fn targets(check: &Precheck) -> Vec<(i32, Option<&str>, Option<&str>)> {
    (check.plan.iter())
        .map(|row| {
            (
                row.replica,
                row.source_node.as_deref(),
                row.target_node.as_deref(),
            )
        })
        .collect()
}

#[test]
fn a_moved_replica_goes_to_the_least_loaded_node_it_may_use_and_its_rows_copy() {
    let placement = Placement {
        replicas: Some(vec![1]),
        ..Placement::default()
    };
    let check = precheck(&moving(placement), &cluster());
    assert_eq!(check.verdict, Verdict::Passed, "{check:?}");
    // n3 holds no replica; n0 and n2 hold one each.
    assert_eq!(
        targets(&check),
        [(0, None, None), (1, Some("n1"), Some("n3")), (2, None, None)]
    );
    let moved = &check.plan[1];
    assert_eq!(moved.strategy, Some(ChosenStrategy::Copy));
    // Same size, same class: the others have nothing to do.
    assert_eq!(check.plan[0].strategy, None);
}

#[test]
fn every_replica_moves_by_default_each_to_a_node_of_its_own_where_it_can() {
    let placement = Placement {
        avoid_nodes: vec!["n3".into()],
        ..Placement::default()
    };
    let check = precheck(&moving(placement), &cluster());
    assert_eq!(check.verdict, Verdict::Passed, "{check:?}");
    let chosen: Vec<_> = targets(&check)
        .into_iter()
        .map(|(_, from, to)| (from, to))
        .collect();
    // Replica 0 takes the emptiest node by name (n1, as n1's own replica moves away), and so on:
    // never its own node, never n3.
    assert_eq!(
        chosen,
        [
            (Some("n0"), Some("n1")),
            (Some("n1"), Some("n0")),
            (Some("n2"), Some("n0"))
        ]
    );
}

#[test]
fn a_zone_selector_a_cordon_and_untolerated_taints_narrow_the_choice() {
    let mut o = cluster();
    o.nodes.get_mut("n3").unwrap().unschedulable = true;
    let placement = Placement {
        node_selector: Some([(ZONE.to_string(), "c".to_string())].into()),
        replicas: Some(vec![0]),
        ..Placement::default()
    };
    let check = precheck(&moving(placement.clone()), &o);
    assert_eq!(targets(&check)[0], (0, Some("n0"), Some("n2")));

    o.nodes.get_mut("n2").unwrap().taints = vec![Taint {
        key: "dedicated".into(),
        value: Some("other".into()),
        effect: "NoSchedule".into(),
        ..Taint::default()
    }];
    let check = precheck(&moving(placement.clone()), &o);
    assert_eq!(reason(&check), REASON_PLACEMENT);
    let Verdict::Reject { message, .. } = &check.verdict else {
        panic!("{check:?}")
    };
    assert!(message.contains("n3 is cordoned"), "{message}");
    assert!(message.contains("n2 has taint dedicated"), "{message}");
    assert!(
        message.contains("n1 lacks label topology.kubernetes.io/zone=c"),
        "{message}"
    );
    assert!(message.contains("n0 is the replica's own node"), "{message}");
    assert!(check.plan.is_empty(), "a refused request plans nothing");

    // The replica tolerates the taint: the node is fine again.
    if let Some(sts) = o.stateful_set.as_mut() {
        sts.pod_tolerations = vec![Toleration {
            key: Some("dedicated".into()),
            operator: Some("Exists".into()),
            ..Toleration::default()
        }];
    }
    let check = precheck(&moving(placement), &o);
    assert_eq!(targets(&check)[0], (0, Some("n0"), Some("n2")));
}

#[test]
fn a_class_that_binds_at_once_a_missing_template_a_stopped_replica_or_an_unknown_ordinal_is_refused() {
    let only = |replica| Placement {
        replicas: Some(vec![replica]),
        ..Placement::default()
    };
    let mut o = cluster();
    o.storage_classes
        .get_mut("local")
        .unwrap()
        .waits_for_first_consumer = false;
    let check = precheck(&moving(only(0)), &o);
    assert_eq!(reason(&check), REASON_PLACEMENT);
    assert!(format!("{check:?}").contains("WaitForFirstConsumer"));

    let mut o = cluster();
    o.replica_nodes.remove(&2);
    let check = precheck(&moving(only(2)), &o);
    assert_eq!(reason(&check), REASON_PLACEMENT);
    assert!(format!("{check:?}").contains("replica 2 is not running"));

    let check = precheck(&moving(only(7)), &cluster());
    assert_eq!(reason(&check), REASON_PLACEMENT);
    assert!(format!("{check:?}").contains("names replica 7"));

    let mut o = cluster();
    if let Some(sts) = o.stateful_set.as_mut() {
        sts.templates
            .insert("logs".into(), TemplateView::sized(GI, Some("local")));
    }
    let check = precheck(&moving(only(0)), &o);
    assert_eq!(reason(&check), REASON_PLACEMENT);
    assert!(format!("{check:?}").contains("missing: logs"));
}
