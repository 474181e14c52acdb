use super::path::{Found, Path, Vars};
use super::*;
use serde_json::{Value, json};

fn prometheus() -> Value {
    json!({
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "Prometheus",
        "metadata": {"name": "k8s", "resourceVersion": "41", "generation": 3},
        "spec": {
            "replicas": 2,
            "storage": {"volumeClaimTemplate": {"spec": {
                "storageClassName": "fast",
                "resources": {"requests": {"storage": "10Gi"}}
            }}}
        },
        "status": {"conditions": [
            {"type": "Available", "status": "True", "observedGeneration": 2},
            {"type": "Reconciled", "status": "True", "observedGeneration": 3}
        ]}
    })
}

fn entry(kind: &str) -> OwnerKind {
    built_in()
        .into_iter()
        .find(|entry| entry.kind == kind)
        .expect("a built-in entry")
}

#[test]
fn paths_find_keys_and_picks_and_say_why_not() {
    let doc =
        json!({"spec": {"sets": [{"name": "a", "size": "1Gi"}, {"name": "b/c", "size": "2Gi"}], "n": null}});
    let vars = Vars::from([("set".to_string(), "b/c".to_string())]);
    let path = Path::parse("/spec/sets/[name={set}]/size", &vars).unwrap();
    assert_eq!(
        path.find(&doc),
        Found::Value {
            pointer: "/spec/sets/1/size".into(),
            value: &json!("2Gi")
        }
    );
    let missing = Path::parse("/spec/sets/[name=z]/size", &vars).unwrap();
    assert!(matches!(missing.find(&doc), Found::Unreachable(why) if why.contains("name=\"z\"")));
    let absent = Path::parse("/spec/n/deeper/x", &vars).unwrap();
    assert_eq!(
        absent.find(&doc),
        Found::Absent {
            existing: "/spec".into(),
            missing: vec!["n".into(), "deeper".into(), "x".into()]
        }
    );
    let through_a_string = Path::parse("/spec/sets/0/name/x", &vars);
    assert!(through_a_string.is_ok());
    assert!(Path::parse("spec", &vars).is_err());
    assert!(
        Path::parse("/spec/{nobody}", &vars)
            .unwrap_err()
            .contains("{nobody}")
    );
    assert!(Path::parse("/spec//x", &vars).is_err());
    assert!(Path::parse("/spec/[=x]", &vars).is_err());
}

#[test]
fn writes_replace_add_what_is_missing_and_skip_what_is_already_so() {
    let doc = json!({"metadata": {"name": "r", "labels": {"a": "b"}}, "spec": {"n": null}});
    let label = Path::parse("/metadata/labels/rabbitmq.com~1pause", &Vars::new()).unwrap();
    assert_eq!(
        label.write(&doc, &json!("true")).unwrap(),
        vec![json!({"op": "add", "path": "/metadata/labels/rabbitmq.com~1pause", "value": "true"})]
    );
    let annotation = Path::parse("/metadata/annotations/x", &Vars::new()).unwrap();
    assert_eq!(
        annotation.write(&doc, &json!("false")).unwrap(),
        vec![
            json!({"op": "add", "path": "/metadata/annotations", "value": {}}),
            json!({"op": "add", "path": "/metadata/annotations/x", "value": "false"}),
        ]
    );
    let through_null = Path::parse("/spec/n/x", &Vars::new()).unwrap();
    assert_eq!(
        through_null.write(&doc, &json!(1)).unwrap(),
        vec![
            json!({"op": "add", "path": "/spec/n", "value": {}}),
            json!({"op": "add", "path": "/spec/n/x", "value": 1}),
        ]
    );
    let name = Path::parse("/metadata/labels/a", &Vars::new()).unwrap();
    assert!(name.write(&doc, &json!("b")).unwrap().is_empty());
    assert_eq!(
        name.write(&doc, &json!("c")).unwrap(),
        vec![json!({"op": "replace", "path": "/metadata/labels/a", "value": "c"})]
    );
    assert_eq!(
        name.remove(&doc).unwrap(),
        vec![json!({"op": "remove", "path": "/metadata/labels/a"})]
    );
    assert!(annotation.remove(&doc).unwrap().is_empty());
}

#[test]
fn patterns_bind_words_and_keep_the_owner_fixed() {
    let owner = Vars::from([("owner".to_string(), "logs".to_string())]);
    let vars = pattern::matches("{owner}-es-{nodeSet}", "logs-es-hot-1", &owner).unwrap();
    assert_eq!(vars.get("nodeSet").map(String::as_str), Some("hot-1"));
    assert!(pattern::matches("{owner}-es-{nodeSet}", "other-es-hot", &owner).is_none());
    assert!(pattern::matches("{owner}-es-{nodeSet}", "logs-es-", &owner).is_none());
    assert!(pattern::matches("prometheus-{owner}", "prometheus-logs", &owner).is_some());
    assert!(pattern::matches("prometheus-{owner}", "prometheus-logs-shard-1", &owner).is_none());
    let shard = pattern::matches(
        "prometheus-{owner}-shard-{shard}",
        "prometheus-logs-shard-1",
        &owner,
    )
    .unwrap();
    assert_eq!(shard.get("shard").map(String::as_str), Some("1"));
}

#[test]
fn a_prometheus_is_read_paused_written_and_let_go() {
    let doc = prometheus();
    let reading = read_owner(
        &entry("Prometheus"),
        &doc,
        "prometheus-k8s",
        &["prometheus-k8s-db"],
    )
    .unwrap();
    let volume = &reading.volumes["prometheus-k8s-db"];
    assert_eq!(volume.size_now.as_deref(), Some("10Gi"));
    assert_eq!(reading.observed_generation(&doc), Some(3));
    assert_eq!(reading.pause_now(&doc), None);
    assert_eq!(
        reading.pause_ops(&doc, Some(&json!(true))).unwrap(),
        vec![
            json!({"op": "test", "path": "/metadata/resourceVersion", "value": "41"}),
            json!({"op": "add", "path": "/spec/paused", "value": true}),
        ]
    );
    let write = TemplateWriteFixture::grow("prometheus-k8s-db", "50Gi", Some("slow"));
    assert_eq!(
        reading.write_ops(&doc, &[write]).unwrap(),
        vec![
            json!({"op": "test", "path": "/metadata/resourceVersion", "value": "41"}),
            json!({"op": "replace", "path": "/spec/storage/volumeClaimTemplate/spec/resources/requests/storage", "value": "50Gi"}),
            json!({"op": "replace", "path": "/spec/storage/volumeClaimTemplate/spec/storageClassName", "value": "slow"}),
        ]
    );
    let same = TemplateWriteFixture::grow("prometheus-k8s-db", "10Gi", Some("fast"));
    assert!(reading.write_ops(&doc, &[same]).unwrap().is_empty());
    let paused = json!({"metadata": {"resourceVersion": "42"}, "spec": {"paused": true}});
    assert_eq!(reading.pause_now(&paused), Some(&json!(true)));
    assert_eq!(
        reading.pause_ops(&paused, None).unwrap(),
        vec![
            json!({"op": "test", "path": "/metadata/resourceVersion", "value": "42"}),
            json!({"op": "remove", "path": "/spec/paused"}),
        ]
    );
}

#[test]
fn a_template_the_owner_names_itself_and_shards_are_found() {
    let mut doc = prometheus();
    doc["spec"]["storage"]["volumeClaimTemplate"]["metadata"] = json!({"name": "tsdb"});
    let entry = entry("Prometheus");
    let reading = read_owner(&entry, &doc, "prometheus-k8s-shard-2", &["tsdb"]).unwrap();
    assert!(reading.volumes.contains_key("tsdb"));
    let default_name = read_owner(&entry, &doc, "prometheus-k8s", &["prometheus-k8s-db"]).unwrap();
    assert!(
        default_name.volumes.is_empty(),
        "the owner's own name replaces the default"
    );
    let stranger = read_owner(&entry, &doc, "other", &["tsdb"]).unwrap_err();
    assert!(stranger.contains("prometheus-{owner}"), "{stranger}");
}

#[test]
fn an_elasticsearch_node_set_and_a_rabbitmq_cluster_are_read_through_their_lists_and_labels() {
    let es = json!({"metadata": {"name": "logs", "resourceVersion": "7"}, "spec": {"nodeSets": [
        {"name": "hot", "volumeClaimTemplates": [{"metadata": {"name": "elasticsearch-data"},
            "spec": {"resources": {"requests": {"storage": "100Gi"}}}}]},
        {"name": "cold", "volumeClaimTemplates": []}
    ]}});
    let entry_es = entry("Elasticsearch");
    let reading = read_owner(&entry_es, &es, "logs-es-hot", &["elasticsearch-data"]).unwrap();
    let write = TemplateWriteFixture::grow("elasticsearch-data", "200Gi", Some("gp3"));
    assert_eq!(
        reading.write_ops(&es, &[write]).unwrap()[1..],
        [
            json!({"op": "replace", "path": "/spec/nodeSets/0/volumeClaimTemplates/0/spec/resources/requests/storage", "value": "200Gi"}),
            json!({"op": "add", "path": "/spec/nodeSets/0/volumeClaimTemplates/0/spec/storageClassName", "value": "gp3"}),
        ]
    );
    assert_eq!(
        reading.pause_ops(&es, Some(&json!("false"))).unwrap()[1..],
        [
            json!({"op": "add", "path": "/metadata/annotations", "value": {}}),
            json!({"op": "add", "path": "/metadata/annotations/eck.k8s.elastic.co~1managed", "value": "false"}),
        ]
    );
    let cold = read_owner(&entry_es, &es, "logs-es-cold", &["elasticsearch-data"]).unwrap_err();
    assert!(cold.contains("metadata.name=\"elasticsearch-data\""), "{cold}");

    let rabbit = json!({"metadata": {"name": "mq", "resourceVersion": "3", "labels": {}}, "spec": {"persistence": {"storage": "10Gi"}}});
    let reading = read_owner(&entry("RabbitmqCluster"), &rabbit, "mq-server", &["persistence"]).unwrap();
    assert_eq!(reading.volumes["persistence"].size_now.as_deref(), Some("10Gi"));
    assert_eq!(
        reading.pause_ops(&rabbit, Some(&json!("true"))).unwrap()[1..],
        [json!({"op": "add", "path": "/metadata/labels/rabbitmq.com~1pauseReconciliation", "value": "true"})]
    );
}

#[test]
fn an_extended_stateful_set_keeps_its_templates_for_every_zone_and_version() {
    let ests = json!({"metadata": {"name": "db", "resourceVersion": "9"}, "spec": {"template": {"spec": {
        "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"resources": {"requests": {"storage": "1Gi"}}}}]
    }}}});
    let entry = entry("ExtendedStatefulSet");
    for stateful_set in ["db", "db-z1", "db-v3", "db-z0-v2"] {
        let reading = read_owner(&entry, &ests, stateful_set, &["data"]).unwrap();
        assert_eq!(
            reading.volumes["data"].size_now.as_deref(),
            Some("1Gi"),
            "{stateful_set}"
        );
    }
    assert!(read_owner(&entry, &ests, "dbx", &["data"]).is_err());
}

#[test]
fn the_table_finds_by_group_and_kind_and_entries_read_from_an_admins_yaml_shape() {
    let table = built_in();
    assert!(find(&table, "monitoring.coreos.com", "Alertmanager").is_some());
    assert!(find(&table, "monitoring.coreos.com", "Nope").is_none());
    assert_eq!(group_of("monitoring.coreos.com/v1"), "monitoring.coreos.com");
    assert_eq!(group_of("v1"), "");
    let admins: OwnerKind = serde_json::from_value(json!({
        "group": "acid.zalan.do", "kind": "postgresql",
        "statefulSets": ["{owner}"],
        "volumes": [{"claimTemplate": "pgdata", "size": "/spec/volume/size", "storageClass": "/spec/volume/storageClass"}]
    }))
    .unwrap();
    assert_eq!(admins.pause, None);
    let typo = serde_json::from_value::<OwnerKind>(json!({
        "group": "g", "kind": "K", "statefulSet": ["{owner}"], "volumes": []
    }));
    assert!(typo.is_err(), "an unknown field is refused, not ignored");
}

/// Writes of one template.
struct TemplateWriteFixture;

impl TemplateWriteFixture {
    fn grow(template: &str, size: &str, class: Option<&str>) -> reading::TemplateWrite {
        reading::TemplateWrite {
            template: template.into(),
            size: size.into(),
            storage_class: class.map(str::to_string),
            attributes_class: None,
        }
    }
}
