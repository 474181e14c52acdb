//! The owners Ferry knows without being told: prometheus-operator's three StatefulSet owners, the
//! RabbitMQ cluster operator, ECK's Elasticsearch, and Ferry's own ExtendedStatefulSet. Each entry
//! is checked against its operator's CRD schema in the tests (`owners/tests.rs`).

use crate::owners::{OwnerKind, OwnerVolume, PauseSwitch};
use serde_json::json;

/// The built-in table.
pub fn built_in() -> Vec<OwnerKind> {
    vec![
        prometheus_family(
            "Prometheus",
            "prometheus",
            "db",
            &["prometheus-{owner}", "prometheus-{owner}-shard-{shard}"],
        ),
        prometheus_family("Alertmanager", "alertmanager", "db", &["alertmanager-{owner}"]),
        prometheus_family("ThanosRuler", "thanos-ruler", "data", &["thanos-ruler-{owner}"]),
        rabbitmq_cluster(),
        elasticsearch(),
        extended_stateful_set(),
    ]
}

/// prometheus-operator keeps one template in `spec.storage.volumeClaimTemplate`, named
/// `<prefix>-<name>-<suffix>` unless the template names itself, and pauses on `spec.paused`.
fn prometheus_family(kind: &str, prefix: &str, suffix: &str, stateful_sets: &[&str]) -> OwnerKind {
    let template = "/spec/storage/volumeClaimTemplate";
    OwnerKind {
        group: "monitoring.coreos.com".into(),
        kind: kind.into(),
        stateful_sets: stateful_sets.iter().map(|name| name.to_string()).collect(),
        volumes: vec![OwnerVolume {
            claim_template: format!("{prefix}-{{owner}}-{suffix}"),
            claim_template_name: Some(format!("{template}/metadata/name")),
            size: format!("{template}/spec/resources/requests/storage"),
            storage_class: Some(format!("{template}/spec/storageClassName")),
            attributes_class: Some(format!("{template}/spec/volumeAttributesClassName")),
        }],
        pause: Some(PauseSwitch {
            path: "/spec/paused".into(),
            value: json!(true),
        }),
        observed_generation: Some("/status/conditions/[type=Reconciled]/observedGeneration".into()),
    }
}

/// The RabbitMQ cluster operator: `<name>-server`, one `persistence` template, paused by a label.
fn rabbitmq_cluster() -> OwnerKind {
    OwnerKind {
        group: "rabbitmq.com".into(),
        kind: "RabbitmqCluster".into(),
        stateful_sets: vec!["{owner}-server".into()],
        volumes: vec![OwnerVolume {
            claim_template: "persistence".into(),
            claim_template_name: None,
            size: "/spec/persistence/storage".into(),
            storage_class: Some("/spec/persistence/storageClassName".into()),
            attributes_class: None,
        }],
        pause: Some(PauseSwitch {
            path: "/metadata/labels/rabbitmq.com~1pauseReconciliation".into(),
            value: json!("true"),
        }),
        observed_generation: Some("/status/observedGeneration".into()),
    }
}

/// ECK: one StatefulSet per node set (`<name>-es-<nodeSet>`), its templates in the node set's
/// `volumeClaimTemplates`; unmanaged while annotated `eck.k8s.elastic.co/managed: "false"`.
fn elasticsearch() -> OwnerKind {
    let template = "/spec/nodeSets/[name={nodeSet}]/volumeClaimTemplates/[metadata.name={template}]/spec";
    OwnerKind {
        group: "elasticsearch.k8s.elastic.co".into(),
        kind: "Elasticsearch".into(),
        stateful_sets: vec!["{owner}-es-{nodeSet}".into()],
        volumes: vec![OwnerVolume {
            claim_template: "{template}".into(),
            claim_template_name: None,
            size: format!("{template}/resources/requests/storage"),
            storage_class: Some(format!("{template}/storageClassName")),
            attributes_class: Some(format!("{template}/volumeAttributesClassName")),
        }],
        pause: Some(PauseSwitch {
            path: "/metadata/annotations/eck.k8s.elastic.co~1managed".into(),
            value: json!("false"),
        }),
        observed_generation: Some("/status/observedGeneration".into()),
    }
}

/// Ferry's own: the StatefulSet `<name>`, its templates in the ExtendedStatefulSet's template (a
/// zone's or a version's StatefulSet, `<name>-…`, is read too, but a resize of one is not written
/// into the template every member shares: `resize::owner`). It has no pause switch: what Ferry writes into it is what
/// its StatefulSet already has.
fn extended_stateful_set() -> OwnerKind {
    let template = "/spec/template/spec/volumeClaimTemplates/[metadata.name={template}]/spec";
    OwnerKind {
        group: ferry_api::names::GROUP.into(),
        kind: "ExtendedStatefulSet".into(),
        stateful_sets: vec!["{owner}".into(), "{owner}-{suffix}".into()],
        volumes: vec![OwnerVolume {
            claim_template: "{template}".into(),
            claim_template_name: None,
            size: format!("{template}/resources/requests/storage"),
            storage_class: Some(format!("{template}/storageClassName")),
            attributes_class: Some(format!("{template}/volumeAttributesClassName")),
        }],
        pause: None,
        // Its controller makes the VolumeResizes of its own volume changes and may wait for them
        // before it moves its status on: nothing to wait for here.
        observed_generation: None,
    }
}
