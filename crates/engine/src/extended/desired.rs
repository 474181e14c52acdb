//! The StatefulSets an ExtendedStatefulSet runs, as Ferry applies them: one per zone (or one),
//! labelled and owned, pinned to its zone, its pods told their zone, the configuration digest in
//! the pod template.

use super::zones::{spread, stateful_set_name};
use ferry_api::ExtendedStatefulSet;
use k8s_openapi::api::apps::v1::{
    RollingUpdateStatefulSetStrategy, StatefulSet, StatefulSetSpec, StatefulSetUpdateStrategy,
};
use k8s_openapi::api::core::v1::{
    Affinity, EnvVar, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// Label on every StatefulSet and pod of an ExtendedStatefulSet: its name.
pub const LABEL_EXTENDED: &str = "ferry.dev/extended-stateful-set";
/// Pod label: the zone (a `topology.kubernetes.io/zone` value).
pub const LABEL_ZONE: &str = "ferry.dev/zone";
/// Pod and selector label: the zone's index in `spec.zones`.
pub const LABEL_ZONE_INDEX: &str = "ferry.dev/zone-index";
/// Pod template annotation: the digest of the referenced ConfigMaps and Secrets.
pub const ANNOTATION_CONFIG_DIGEST: &str = "ferry.dev/config-digest";
/// StatefulSet annotation: the version it runs (or moves to).
pub const ANNOTATION_VERSION: &str = "ferry.dev/version";
/// StatefulSet annotation: the version whose update failed on it.
pub const ANNOTATION_STALE: &str = "ferry.dev/stale";
pub const ZONE_KEY: &str = "topology.kubernetes.io/zone";

/// One StatefulSet to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Desired {
    pub name: String,
    /// The zone (and its index), if the ExtendedStatefulSet has zones.
    pub zone: Option<(usize, String)>,
    pub replicas: i32,
    /// The whole object, with the template's volume claim templates and no partition yet.
    pub object: StatefulSet,
}

/// The digest of everything that makes a new version: the template (except replicas, the update
/// strategy and the volume claim templates, which change without one), the zones and the
/// configuration digest.
pub fn version_digest(ests: &ExtendedStatefulSet, config_digest: Option<&str>) -> String {
    let mut spec = ests.spec.template.spec.clone();
    spec.replicas = None;
    spec.update_strategy = None;
    spec.volume_claim_templates = None;
    let material = serde_json::json!({
        "metadata": ests.spec.template.metadata,
        "spec": spec,
        "zones": ests.spec.zones,
        "config": config_digest,
    });
    let mut hasher = Sha256::new();
    hasher.update(material.to_string().as_bytes());
    crate::names::hex_digest(hasher, 8)
}

fn pin_to_zone(affinity: Option<Affinity>, zone: &str) -> Affinity {
    let requirement = NodeSelectorRequirement {
        key: ZONE_KEY.to_string(),
        operator: "In".to_string(),
        values: Some(vec![zone.to_string()]),
    };
    let mut affinity = affinity.unwrap_or_default();
    let node = affinity.node_affinity.get_or_insert_with(NodeAffinity::default);
    let required = node
        .required_during_scheduling_ignored_during_execution
        .get_or_insert_with(|| NodeSelector {
            node_selector_terms: Vec::new(),
        });
    if required.node_selector_terms.is_empty() {
        required.node_selector_terms.push(NodeSelectorTerm::default());
    }
    // Terms are ORed: the zone must hold in each.
    for term in &mut required.node_selector_terms {
        term.match_expressions
            .get_or_insert_with(Vec::new)
            .push(requirement.clone());
    }
    affinity
}

fn set_env(env: &mut Option<Vec<EnvVar>>, name: &str, value: &str) {
    let env = env.get_or_insert_with(Vec::new);
    env.retain(|var| var.name != name);
    env.push(EnvVar {
        name: name.to_string(),
        value: Some(value.to_string()),
        value_from: None,
    });
}

/// What every object an ExtendedStatefulSet makes names as its controlling owner (none before the
/// API server gave it a UID).
pub fn owner(ests: &ExtendedStatefulSet) -> Option<OwnerReference> {
    ests.metadata.uid.clone().map(|uid| OwnerReference {
        api_version: "ferry.dev/v1alpha1".to_string(),
        kind: "ExtendedStatefulSet".to_string(),
        name: ests.metadata.name.clone().unwrap_or_default(),
        uid,
        controller: Some(true),
        block_owner_deletion: Some(true),
    })
}

/// The StatefulSets `ests` runs, in zone order.
pub fn stateful_sets(ests: &ExtendedStatefulSet, config_digest: Option<&str>) -> Vec<Desired> {
    let name = ests.metadata.name.clone().unwrap_or_default();
    let zones: Vec<Option<(usize, String)>> = if ests.spec.zones.is_empty() {
        vec![None]
    } else {
        ests.spec.zones.iter().cloned().enumerate().map(Some).collect()
    };
    let replicas = spread(ests.spec.replicas, zones.len());
    let owner = owner(ests);
    let template_metadata = ests.spec.template.metadata.clone().unwrap_or_default();
    zones
        .into_iter()
        .zip(replicas)
        .map(|(zone, replicas)| {
            let sts_name = stateful_set_name(&name, zone.as_ref().map(|(index, _)| *index));
            let mut labels = template_metadata.labels.clone();
            labels.insert(LABEL_EXTENDED.to_string(), name.clone());
            let mut spec: StatefulSetSpec = ests.spec.template.spec.clone();
            spec.replicas = Some(replicas);
            spec.update_strategy = Some(StatefulSetUpdateStrategy {
                type_: Some("RollingUpdate".to_string()),
                rolling_update: Some(RollingUpdateStatefulSetStrategy {
                    partition: Some(0),
                    max_unavailable: None,
                }),
            });
            let pod_labels = spec.template.metadata.get_or_insert_with(ObjectMeta::default);
            let pod_labels_map = pod_labels.labels.get_or_insert_with(BTreeMap::new);
            pod_labels_map.insert(LABEL_EXTENDED.to_string(), name.clone());
            if let Some(digest) = config_digest {
                pod_labels
                    .annotations
                    .get_or_insert_with(BTreeMap::new)
                    .insert(ANNOTATION_CONFIG_DIGEST.to_string(), digest.to_string());
            }
            if let Some((index, zone)) = &zone {
                pin_spec_to_zone(&mut spec, *index, zone);
            }
            let object = StatefulSet {
                metadata: ObjectMeta {
                    name: Some(sts_name.clone()),
                    namespace: ests.metadata.namespace.clone(),
                    labels: Some(labels),
                    annotations: Some(template_metadata.annotations.clone()).filter(|a| !a.is_empty()),
                    owner_references: owner.clone().map(|owner| vec![owner]),
                    ..ObjectMeta::default()
                },
                spec: Some(spec),
                status: None,
            };
            Desired {
                name: sts_name,
                zone,
                replicas,
                object,
            }
        })
        .collect()
}

/// A zone's StatefulSet: its pods labelled with the zone, selected by its index alone, pinned to
/// the zone, and told it in their environment.
fn pin_spec_to_zone(spec: &mut StatefulSetSpec, index: usize, zone: &str) {
    let index_text = index.to_string();
    if let Some(labels) = spec.template.metadata.as_mut().and_then(|m| m.labels.as_mut()) {
        labels.insert(LABEL_ZONE.to_string(), zone.to_string());
        labels.insert(LABEL_ZONE_INDEX.to_string(), index_text.clone());
    }
    // Each zone's StatefulSet selects only its own pods.
    spec.selector
        .match_labels
        .get_or_insert_with(BTreeMap::new)
        .insert(LABEL_ZONE_INDEX.to_string(), index_text.clone());
    if let Some(pod) = spec.template.spec.as_mut() {
        pod.affinity = Some(pin_to_zone(pod.affinity.take(), zone));
        for container in pod
            .containers
            .iter_mut()
            .chain(pod.init_containers.iter_mut().flatten())
        {
            set_env(&mut container.env, "FERRY_ZONE", zone);
            set_env(&mut container.env, "FERRY_ZONE_INDEX", &index_text);
        }
    }
}

/// Sets the partition of a desired StatefulSet (pods with an ordinal at or above it update).
pub fn with_partition(mut object: StatefulSet, partition: i32) -> StatefulSet {
    if let Some(rolling) = object
        .spec
        .as_mut()
        .and_then(|spec| spec.update_strategy.as_mut())
        .and_then(|strategy| strategy.rolling_update.as_mut())
    {
        rolling.partition = Some(partition.max(0));
    }
    object
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ests(zones: &[&str], replicas: i32) -> ExtendedStatefulSet {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "ferry.dev/v1alpha1", "kind": "ExtendedStatefulSet",
            "metadata": {"name": "db", "namespace": "apps", "uid": "uid-1"},
            "spec": {
                "replicas": replicas, "zones": zones,
                "template": {
                    "metadata": {"labels": {"team": "data"}},
                    "spec": {
                        "serviceName": "db",
                        "selector": {"matchLabels": {"app": "db"}},
                        "template": {
                            "metadata": {"labels": {"app": "db"}},
                            "spec": {"containers": [{"name": "db", "image": "db:1"}]},
                        },
                        "volumeClaimTemplates": [{"metadata": {"name": "data"},
                            "spec": {"resources": {"requests": {"storage": "1Gi"}}}}],
                    },
                },
            },
        }))
        .unwrap()
    }

    #[test]
    fn without_zones_one_stateful_set_of_the_same_name() {
        let desired = stateful_sets(&ests(&[], 3), Some("abc"));
        assert_eq!(desired.len(), 1);
        let sts = &desired[0].object;
        assert_eq!(desired[0].name, "db");
        assert_eq!(sts.spec.as_ref().unwrap().replicas, Some(3));
        let owner = &sts.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.controller),
            ("ExtendedStatefulSet", Some(true))
        );
        let pod = sts.spec.as_ref().unwrap().template.metadata.as_ref().unwrap();
        assert_eq!(pod.annotations.as_ref().unwrap()[ANNOTATION_CONFIG_DIGEST], "abc");
        assert_eq!(sts.metadata.labels.as_ref().unwrap()["team"], "data");
    }

    #[test]
    fn zones_get_a_pinned_stateful_set_each_with_env_labels_and_an_even_spread() {
        let desired = stateful_sets(&ests(&["zone-a", "zone-b", "zone-c"], 5), None);
        let names: Vec<&str> = desired.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, vec!["db-z0", "db-z1", "db-z2"]);
        let replicas: Vec<i32> = desired.iter().map(|d| d.replicas).collect();
        assert_eq!(replicas, vec![2, 2, 1]);
        let spec = desired[1].object.spec.as_ref().unwrap();
        assert_eq!(
            spec.selector.match_labels.as_ref().unwrap()[LABEL_ZONE_INDEX],
            "1"
        );
        let labels = spec.template.metadata.as_ref().unwrap().labels.as_ref().unwrap();
        assert_eq!(labels[LABEL_ZONE], "zone-b");
        let pod = spec.template.spec.as_ref().unwrap();
        let env: Vec<(String, String)> = pod.containers[0]
            .env
            .iter()
            .flatten()
            .map(|e| (e.name.clone(), e.value.clone().unwrap_or_default()))
            .collect();
        assert!(env.contains(&("FERRY_ZONE".into(), "zone-b".into())));
        assert!(env.contains(&("FERRY_ZONE_INDEX".into(), "1".into())));
        let term = &pod
            .affinity
            .as_ref()
            .unwrap()
            .node_affinity
            .as_ref()
            .unwrap()
            .required_during_scheduling_ignored_during_execution
            .as_ref()
            .unwrap()
            .node_selector_terms[0];
        let expression = &term.match_expressions.as_ref().unwrap()[0];
        assert_eq!(expression.key, ZONE_KEY);
        assert_eq!(expression.values, Some(vec!["zone-b".to_string()]));
    }

    #[test]
    fn a_new_version_is_a_template_or_config_change_not_replicas_or_volumes() {
        let base = ests(&[], 3);
        let digest = version_digest(&base, Some("c1"));
        let mut scaled = base.clone();
        scaled.spec.replicas = 5;
        assert_eq!(version_digest(&scaled, Some("c1")), digest);
        let mut volumes = base.clone();
        volumes.spec.template.spec.volume_claim_templates = None;
        assert_eq!(version_digest(&volumes, Some("c1")), digest);
        assert_ne!(version_digest(&base, Some("c2")), digest);
        let mut image = base;
        image
            .spec
            .template
            .spec
            .template
            .spec
            .as_mut()
            .unwrap()
            .containers[0]
            .image = Some("db:2".into());
        assert_ne!(version_digest(&image, Some("c1")), digest);
    }
}
