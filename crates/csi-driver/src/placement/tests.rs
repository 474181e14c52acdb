use super::*;

fn segment(pairs: &[(&str, &str)]) -> Topology {
    Topology {
        segments: pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    }
}

fn node(node: &str, zone: &str) -> Topology {
    segment(&[(ZONE_KEY, zone), (HOSTNAME_KEY, node)])
}

fn requirement(requisite: Vec<Topology>, preferred: Vec<Topology>) -> TopologyRequirement {
    TopologyRequirement { requisite, preferred }
}

fn here() -> NodePlace {
    NodePlace {
        node: "node-real".into(),
        zone: "zone-r".into(),
    }
}

fn zone(zone: &str) -> Placement {
    Placement {
        zone: zone.into(),
        node: None,
    }
}

fn on(node: &str, zone: &str) -> Placement {
    Placement {
        zone: zone.into(),
        node: Some(node.into()),
    }
}

#[test]
fn a_new_volume_goes_where_the_scheduler_put_its_pod() {
    // The external-provisioner lists every node's segment as requisite and the selected node first
    // in preferred.
    let all = vec![
        node("node-real", "zone-r"),
        node("node-real-2", "zone-r2"),
        node("node-real-3", "zone-r3"),
    ];
    let wanted = requirement(all.clone(), vec![node("node-real-2", "zone-r2"), all[0].clone()]);
    assert_eq!(
        choose(Some(&wanted), Binding::Zone, &here()).unwrap(),
        zone("zone-r2")
    );
    assert_eq!(
        choose(Some(&wanted), Binding::Node, &here()).unwrap(),
        on("node-real-2", "zone-r2")
    );
    // Only a requisite: its first segment.
    let requisite_only = requirement(vec![node("node-real-3", "zone-r3")], vec![]);
    assert_eq!(
        choose(Some(&requisite_only), Binding::Zone, &here()).unwrap(),
        zone("zone-r3")
    );
    // A preferred segment the requisite does not allow is passed over.
    let odd = requirement(
        vec![node("node-real-3", "zone-r3")],
        vec![node("node-real-2", "zone-r2")],
    );
    assert_eq!(
        choose(Some(&odd), Binding::Zone, &here()).unwrap(),
        zone("zone-r3")
    );
}

#[test]
fn no_requirement_places_the_volume_with_this_driver_node() {
    assert_eq!(choose(None, Binding::Zone, &here()).unwrap(), zone("zone-r"));
    assert_eq!(
        choose(Some(&requirement(vec![], vec![])), Binding::Node, &here()).unwrap(),
        on("node-real", "zone-r")
    );
}

#[test]
fn a_requirement_without_the_keys_a_binding_needs_is_refused() {
    let zone_only = requirement(vec![segment(&[(ZONE_KEY, "zone-r2")])], vec![]);
    assert!(matches!(
        choose(Some(&zone_only), Binding::Node, &here()),
        Err(Error::ResourceExhausted(_))
    ));
    let node_only = requirement(vec![segment(&[(HOSTNAME_KEY, "node-real-2")])], vec![]);
    assert!(matches!(
        choose(Some(&node_only), Binding::Zone, &here()),
        Err(Error::ResourceExhausted(_))
    ));
}

#[test]
fn a_volume_is_reachable_only_from_its_zone_or_its_node() {
    let second = NodePlace {
        node: "node-real-2".into(),
        zone: "zone-r2".into(),
    };
    let neighbour = NodePlace {
        node: "node-real-9".into(),
        zone: "zone-r2".into(),
    };
    assert!(zone("zone-r2").reachable_from(&second));
    assert!(zone("zone-r2").reachable_from(&neighbour));
    assert!(!zone("zone-r2").reachable_from(&here()));
    assert!(on("node-real-2", "zone-r2").reachable_from(&second));
    assert!(!on("node-real-2", "zone-r2").reachable_from(&neighbour));
}

#[test]
fn a_volume_topology_names_its_zone_or_its_node_only() {
    assert_eq!(zone("zone-r2").topology(), segment(&[(ZONE_KEY, "zone-r2")]));
    assert_eq!(
        on("node-real-2", "zone-r2").topology(),
        segment(&[(HOSTNAME_KEY, "node-real-2")])
    );
    assert_eq!(here().topology(), node("node-real", "zone-r"));
}

#[test]
fn a_clone_is_made_where_its_source_lives_or_refused() {
    let source = zone("zone-r2");
    let there = requirement(vec![node("node-real-2", "zone-r2")], vec![]);
    let elsewhere = requirement(vec![node("node-real-3", "zone-r3")], vec![]);
    assert_eq!(
        clone_placement(Some(&there), Binding::Zone, &source, &here()).unwrap(),
        zone("zone-r2")
    );
    assert_eq!(
        clone_placement(None, Binding::Zone, &source, &here()).unwrap(),
        zone("zone-r2")
    );
    assert!(matches!(
        clone_placement(Some(&elsewhere), Binding::Zone, &source, &here()),
        Err(Error::ResourceExhausted(_))
    ));
    // A node-bound clone: the source's node, or the preferred node of the source's zone.
    assert_eq!(
        clone_placement(
            Some(&there),
            Binding::Node,
            &on("node-real-2", "zone-r2"),
            &here()
        )
        .unwrap(),
        on("node-real-2", "zone-r2")
    );
    assert_eq!(
        clone_placement(Some(&there), Binding::Node, &source, &here()).unwrap(),
        on("node-real-2", "zone-r2")
    );
    assert!(matches!(
        clone_placement(None, Binding::Node, &source, &here()),
        Err(Error::ResourceExhausted(_))
    ));
}

#[test]
fn the_binding_parameter_is_zone_or_node() {
    let parameters = |value: &str| HashMap::from([(BINDING_PARAMETER.to_string(), value.to_string())]);
    assert_eq!(Binding::parse(&HashMap::new()).unwrap(), Binding::Zone);
    assert_eq!(Binding::parse(&parameters("node")).unwrap(), Binding::Node);
    assert!(matches!(
        Binding::parse(&parameters("rack")),
        Err(Error::InvalidArgument(_))
    ));
}
