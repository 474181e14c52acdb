use super::*;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use serde_json::json;

fn ests(strategy: &str, zones: &[&str]) -> ExtendedStatefulSet {
    serde_json::from_value(json!({
        "apiVersion": "ferry.dev/v1alpha1", "kind": "ExtendedStatefulSet",
        "metadata": {"name": "db", "namespace": "apps"},
        "spec": {
            "replicas": 2, "zones": zones,
            "updateStrategy": {"type": strategy},
            "template": {"spec": {
                "selector": {"matchLabels": {"app": "db"}},
                "template": {"metadata": {"labels": {"app": "db"}},
                    "spec": {"containers": [{"name": "db", "image": "db:1"}]}},
                "volumeClaimTemplates": [
                    {"metadata": {"name": "data"}, "spec": {}},
                    {"metadata": {"name": "wal"}, "spec": {}},
                ],
            }},
        },
    }))
    .unwrap()
}

/// Claims (each bound to `pv-<claim>`) and, for those given a zone, their volumes.
fn cluster(claims: &[(&str, Option<&str>)]) -> Cluster {
    let mut cluster = Cluster::default();
    for (claim, zone) in claims {
        let volume = format!("pv-{claim}");
        let object: PersistentVolumeClaim = serde_json::from_value(json!({
            "metadata": {"name": claim}, "spec": {"volumeName": volume},
        }))
        .unwrap();
        cluster.claims.insert(claim.to_string(), object);
        if let Some(zone) = zone {
            let pv: PersistentVolume = serde_json::from_value(json!({
                "metadata": {"name": volume},
                "spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}]}]}}},
            }))
            .unwrap();
            cluster.volumes.insert(volume, pv);
        }
    }
    cluster
}

fn refusal(start: Start) -> String {
    match start {
        Start::Refused(why) => why,
        other => panic!("not refused: {other:?}"),
    }
}

#[test]
fn claim_names_say_zone_version_and_ordinal_of_its_own_templates_only() {
    let object = ests("BlueGreen", &["a", "b"]);
    let of = |claim: &str| claim_of(&object, claim).map(|of| (of.zone, of.version, of.ordinal));
    assert_eq!(of("data-db-z1-v3-2"), Some((Some(1), Some(3), 2)));
    assert_eq!(of("wal-db-v12-0"), Some((None, Some(12), 0)));
    assert_eq!(of("data-db-z0-4"), Some((Some(0), None, 4)));
    assert_eq!(of("data-db-7"), Some((None, None, 7)));
    for other in [
        "data-db",
        "data-db-",
        "data-db-x",
        "data-db-v-1",
        "data-db-z1-v2-3-4",
        "data-db-v2-z1-3",
        "data-dbx-0",
        "logs-db-0",
        "data-web-0",
        "data-db-0a",
    ] {
        assert_eq!(of(other), None, "{other}");
    }
}

#[test]
fn nothing_here_or_claims_in_the_same_layout_start_fresh() {
    assert_eq!(start(&ests("RollingUpdate", &[]), &cluster(&[])), Start::Fresh);
    let rolling = cluster(&[("data-db-0", None), ("wal-db-1", None), ("data-web-v2-0", None)]);
    assert_eq!(start(&ests("RollingUpdate", &[]), &rolling), Start::Fresh);
    let zoned = cluster(&[("data-db-z0-0", Some("a")), ("data-db-z1-0", Some("b"))]);
    assert_eq!(start(&ests("RollingUpdate", &["a", "b"]), &zoned), Start::Fresh);
}

#[test]
fn blue_green_claims_of_one_version_start_it() {
    let claims = cluster(&[("data-db-z0-v3-0", Some("a")), ("wal-db-z1-v3-0", Some("b"))]);
    assert_eq!(
        start(&ests("BlueGreen", &["a", "b"]), &claims),
        Start::AtVersion(3)
    );
}

#[test]
fn claims_of_two_versions_are_refused_named_by_version() {
    let claims = cluster(&[
        ("data-db-v2-0", None),
        ("data-db-v3-1", None),
        ("wal-db-v3-1", None),
    ]);
    let why = refusal(start(&ests("BlueGreen", &[]), &claims));
    assert!(
        why.contains("version 2: data-db-v2-0; version 3: data-db-v3-1, wal-db-v3-1"),
        "{why}"
    );
}

#[test]
fn claims_of_another_layout_are_refused_not_started_beside() {
    let why = refusal(start(
        &ests("RollingUpdate", &["a"]),
        &cluster(&[("data-db-0", None)]),
    ));
    assert!(
        why.contains("data-db-0") && why.contains("without zones"),
        "{why}"
    );
    let why = refusal(start(
        &ests("RollingUpdate", &[]),
        &cluster(&[("data-db-z0-0", None)]),
    ));
    assert!(why.contains("with zones"), "{why}");
    let why = refusal(start(
        &ests("RollingUpdate", &[]),
        &cluster(&[("data-db-v2-0", None)]),
    ));
    assert!(why.contains("blue/green version"), "{why}");
    let why = refusal(start(&ests("BlueGreen", &[]), &cluster(&[("data-db-0", None)])));
    assert!(why.contains("without a version"), "{why}");
}

#[test]
fn zones_in_another_order_than_the_volumes_are_refused() {
    let claims = cluster(&[("data-db-z0-v2-0", Some("a")), ("data-db-z1-v2-0", Some("b"))]);
    let why = refusal(start(&ests("BlueGreen", &["b", "a"]), &claims));
    assert!(
        why.contains("data-db-z0-v2-0's volume is in a, zone 0 is now b")
            && why.contains("data-db-z1-v2-0's volume is in b, zone 1 is now a"),
        "{why}"
    );
    // A zone removed from the end: its claims are a dropped zone's, as after an edit.
    assert_eq!(start(&ests("BlueGreen", &["a"]), &claims), Start::AtVersion(2));
    // A volume without a zone (or not read) says nothing against it.
    let unplaced = cluster(&[("data-db-z0-0", None)]);
    assert_eq!(start(&ests("RollingUpdate", &["b"]), &unplaced), Start::Fresh);
}

#[test]
fn a_refusal_names_at_most_eight_claims() {
    let names: Vec<String> = (0..11).map(|i| format!("data-db-{i}")).collect();
    let claims: Vec<(&str, Option<&str>)> = names.iter().map(|n| (n.as_str(), None)).collect();
    let why = refusal(start(&ests("BlueGreen", &[]), &cluster(&claims)));
    assert!(why.contains("and 3 more"), "{why}");
}
