//! The ConfigMaps and Secrets a pod template references (env, envFrom, volumes, projected
//! volumes), and a digest of their content: put in the pod template, a change of the content
//! rolls the pods, and nothing else does.

use k8s_openapi::api::core::v1::{Container, PodSpec};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ConfigRef {
    ConfigMap(String),
    Secret(String),
}

impl ConfigRef {
    pub fn kind(&self) -> &'static str {
        match self {
            ConfigRef::ConfigMap(_) => "ConfigMap",
            ConfigRef::Secret(_) => "Secret",
        }
    }

    pub fn name(&self) -> &str {
        match self {
            ConfigRef::ConfigMap(name) | ConfigRef::Secret(name) => name,
        }
    }
}

fn from_container(container: &Container, found: &mut BTreeSet<ConfigRef>) {
    for env in container.env.iter().flatten() {
        let Some(source) = &env.value_from else { continue };
        if let Some(key) = &source.config_map_key_ref {
            found.insert(ConfigRef::ConfigMap(key.name.clone()));
        }
        if let Some(key) = &source.secret_key_ref {
            found.insert(ConfigRef::Secret(key.name.clone()));
        }
    }
    for from in container.env_from.iter().flatten() {
        if let Some(map) = &from.config_map_ref {
            found.insert(ConfigRef::ConfigMap(map.name.clone()));
        }
        if let Some(secret) = &from.secret_ref {
            found.insert(ConfigRef::Secret(secret.name.clone()));
        }
    }
}

/// Every ConfigMap and Secret `spec` references.
pub fn references(spec: &PodSpec) -> BTreeSet<ConfigRef> {
    let mut found = BTreeSet::new();
    for container in spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
    {
        from_container(container, &mut found);
    }
    for volume in spec.volumes.iter().flatten() {
        if let Some(map) = &volume.config_map {
            found.insert(ConfigRef::ConfigMap(map.name.clone()));
        }
        if let Some(name) = volume.secret.as_ref().and_then(|s| s.secret_name.clone()) {
            found.insert(ConfigRef::Secret(name));
        }
        for source in volume.projected.iter().flat_map(|p| p.sources.iter().flatten()) {
            if let Some(map) = &source.config_map {
                found.insert(ConfigRef::ConfigMap(map.name.clone()));
            }
            if let Some(secret) = &source.secret {
                found.insert(ConfigRef::Secret(secret.name.clone()));
            }
        }
    }
    found.retain(|reference| !reference.name().is_empty());
    found
}

/// The content of one referenced object: key → bytes, or `None` if it does not exist.
pub type Content = Option<BTreeMap<String, Vec<u8>>>;

/// A digest of the referenced objects' content (names, keys and values; a missing object counts
/// as such), short enough for an annotation.
pub fn digest(contents: &BTreeMap<ConfigRef, Content>) -> String {
    let mut hasher = Sha256::new();
    for (reference, content) in contents {
        hasher.update(format!("{}\0{}\0", reference.kind(), reference.name()).as_bytes());
        match content {
            None => hasher.update(b"missing\0"),
            Some(entries) => {
                for (key, value) in entries {
                    hasher.update(key.as_bytes());
                    hasher.update(b"\0");
                    hasher.update(u64::try_from(value.len()).unwrap_or(u64::MAX).to_be_bytes());
                    hasher.update(value);
                }
            }
        }
        hasher.update(b"\x01");
    }
    crate::names::hex_digest(hasher, 8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_env_from_volumes_and_projected_volumes_are_found() {
        let spec: PodSpec = serde_json::from_value(serde_json::json!({
            "initContainers": [{"name": "init", "envFrom": [{"secretRef": {"name": "init-secret"}}]}],
            "containers": [{
                "name": "app",
                "env": [
                    {"name": "A", "valueFrom": {"configMapKeyRef": {"name": "env-map", "key": "a"}}},
                    {"name": "B", "valueFrom": {"secretKeyRef": {"name": "env-secret", "key": "b"}}},
                    {"name": "C", "value": "plain"},
                ],
                "envFrom": [{"configMapRef": {"name": "from-map"}}],
            }],
            "volumes": [
                {"name": "m", "configMap": {"name": "volume-map"}},
                {"name": "s", "secret": {"secretName": "volume-secret"}},
                {"name": "p", "projected": {"sources": [
                    {"configMap": {"name": "projected-map"}},
                    {"secret": {"name": "projected-secret"}},
                    {"downwardAPI": {"items": []}},
                ]}},
                {"name": "e", "emptyDir": {}},
            ],
        }))
        .unwrap();
        let names: Vec<String> = references(&spec)
            .iter()
            .map(|r| format!("{}/{}", r.kind(), r.name()))
            .collect();
        assert_eq!(
            names,
            vec![
                "ConfigMap/env-map",
                "ConfigMap/from-map",
                "ConfigMap/projected-map",
                "ConfigMap/volume-map",
                "Secret/env-secret",
                "Secret/init-secret",
                "Secret/projected-secret",
                "Secret/volume-secret",
            ]
        );
    }

    #[test]
    fn the_digest_changes_with_content_and_only_with_it() {
        let content = |value: &str| {
            BTreeMap::from([(
                ConfigRef::ConfigMap("app".into()),
                Some(BTreeMap::from([("key".to_string(), value.as_bytes().to_vec())])),
            )])
        };
        assert_eq!(digest(&content("1")), digest(&content("1")));
        assert_ne!(digest(&content("1")), digest(&content("2")));
        let missing = BTreeMap::from([(ConfigRef::ConfigMap("app".into()), None)]);
        assert_ne!(digest(&missing), digest(&content("")));
        assert_eq!(digest(&content("1")).len(), 16);
    }
}
