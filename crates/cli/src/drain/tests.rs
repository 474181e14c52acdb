use super::*;

const HOST: &str = "kubernetes.io/hostname";
const ZONE: &str = "topology.kubernetes.io/zone";

fn node(name: &str, zone: &str) -> NodeView {
    NodeView {
        name: name.into(),
        labels: [
            (HOST.to_string(), name.to_string()),
            (ZONE.to_string(), zone.to_string()),
        ]
        .into(),
        ready: true,
        ..NodeView::default()
    }
}

fn bound_to(key: &str, value: &str) -> NodeSelector {
    NodeSelector {
        node_selector_terms: vec![NodeSelectorTerm {
            match_expressions: Some(vec![NodeSelectorRequirement {
                key: key.into(),
                operator: "In".into(),
                values: Some(vec![value.into()]),
            }]),
            match_fields: None,
        }],
    }
}

/// Nodes n0, n1 (zone a) and n2 (zone b); StatefulSet `db` in `apps` with replicas 0..3, all
/// Ready, one template `data` on the node-bound class `local`, replica r on node n<r>.
fn facts() -> DrainFacts {
    let mut facts = DrainFacts {
        nodes: vec![node("n0", "a"), node("n1", "a"), node("n2", "b")],
        sets: vec![SetFacts {
            namespace: "apps".into(),
            name: "db".into(),
            ordinals: 0..3,
            ready_replicas: 3,
            templates: vec![TemplateFacts {
                name: "data".into(),
                uncopyable: None,
            }],
            ..SetFacts::default()
        }],
        ..DrainFacts::default()
    };
    for replica in 0..3 {
        facts.claims.insert(
            ("apps".into(), format!("data-db-{replica}")),
            ClaimFacts {
                affinity: Some(bound_to(HOST, &format!("n{replica}"))),
                capacity_bytes: (10 + replica as u64) << 30,
                storage_class: Some("local".into()),
            },
        );
    }
    facts.first_use_classes.insert("local".into(), true);
    facts
}

#[test]
fn a_replica_whose_volume_is_bound_to_the_node_moves_asking_for_each_templates_largest_claim() {
    let drained = plan("n1", &facts());
    assert_eq!(
        drained.moves,
        [Move {
            namespace: "apps".into(),
            stateful_set: "db".into(),
            replicas: vec![1],
            volumes: vec![("data".into(), 12 << 30)],
        }]
    );
    assert!(
        drained.refusals.is_empty() && drained.notes.is_empty(),
        "{drained:?}"
    );
    assert_eq!(
        plan("n9", &facts()),
        DrainPlan::default(),
        "nothing is on a node of no volume"
    );
}

#[test]
fn a_zone_bound_volume_moves_only_when_no_other_usable_node_is_in_its_zone() {
    let mut facts = facts();
    for replica in 0..3 {
        let claim = facts
            .claims
            .get_mut(&("apps".to_string(), format!("data-db-{replica}")))
            .unwrap();
        claim.affinity = Some(bound_to(ZONE, if replica == 2 { "b" } else { "a" }));
    }
    // n0 is in zone a with n1: replica 0's and 1's pods can go there.
    let drained = plan("n1", &facts);
    assert!(drained.moves.is_empty(), "{drained:?}");
    assert_eq!(drained.notes.len(), 2, "{drained:?}");
    assert!(drained.notes[0].contains("reachable from n0"), "{drained:?}");
    // n2 is alone in zone b: replica 2 must move.
    assert_eq!(plan("n2", &facts).moves[0].replicas, [2]);
    // With n0 cordoned, n1 is zone a's last usable node.
    facts.nodes[0].unschedulable = true;
    assert_eq!(plan("n1", &facts).moves[0].replicas, [0, 1]);
}

#[test]
fn a_drain_that_would_take_a_replica_down_or_cannot_copy_or_place_is_refused_saying_why() {
    let refused = |facts: &DrainFacts| {
        let drained = plan("n1", facts);
        assert!(drained.moves.is_empty(), "{drained:?}");
        drained.refusals.join("\n")
    };
    let mut unready = facts();
    unready.sets[0].ready_replicas = 2;
    assert!(refused(&unready).contains("2 of 3 replicas Ready"));

    let mut block = facts();
    block.sets[0].templates[0].uncopyable = Some("is volumeMode Block");
    assert!(refused(&block).contains("\"data\" is volumeMode Block"));

    let mut immediate = facts();
    immediate.first_use_classes.insert("local".into(), false);
    assert!(refused(&immediate).contains("binds volumes at once"));

    let mut alone = facts();
    alone.nodes[0].unschedulable = true;
    alone.nodes[2].ready = false;
    assert!(refused(&alone).contains("no other node can run its replicas"));
}

#[test]
fn node_affinity_is_read_as_the_scheduler_reads_it() {
    let n = node("n1", "a");
    let requirement = |operator: &str, values: &[&str]| NodeSelectorRequirement {
        key: ZONE.into(),
        operator: operator.into(),
        values: Some(values.iter().map(|v| v.to_string()).collect()),
    };
    let term = |requirements: Vec<NodeSelectorRequirement>| NodeSelector {
        node_selector_terms: vec![NodeSelectorTerm {
            match_expressions: Some(requirements),
            match_fields: None,
        }],
    };
    assert!(selects(&term(vec![requirement("NotIn", &["b"])]), &n));
    assert!(!selects(&term(vec![requirement("NotIn", &["a"])]), &n));
    assert!(selects(&term(vec![requirement("Exists", &[])]), &n));
    assert!(!selects(&term(vec![requirement("DoesNotExist", &[])]), &n));
    assert!(
        !selects(
            &term(vec![requirement("In", &["a"]), requirement("In", &["b"])]),
            &n
        ),
        "all of a term"
    );
    let mut numbered = n.clone();
    numbered.labels.insert(ZONE.into(), "7".into());
    assert!(selects(&term(vec![requirement("Gt", &["5"])]), &numbered));
    assert!(!selects(&term(vec![requirement("Lt", &["5"])]), &numbered));
    let by_name = NodeSelector {
        node_selector_terms: vec![
            NodeSelectorTerm {
                match_expressions: Some(vec![requirement("In", &["z"])]),
                match_fields: None,
            },
            NodeSelectorTerm {
                match_expressions: None,
                match_fields: Some(vec![NodeSelectorRequirement {
                    key: "metadata.name".into(),
                    operator: "In".into(),
                    values: Some(vec!["n1".into()]),
                }]),
            },
        ],
    };
    assert!(selects(&by_name, &n), "any term");
}
