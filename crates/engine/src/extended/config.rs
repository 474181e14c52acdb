//! The ConfigMaps and Secrets a pod template references (env, envFrom, volumes, projected
//! volumes), and a digest of their content: put in the pod template, a change of the content
//! rolls the pods, and nothing else does. The digest is keyed (HMAC-SHA-256 with a per-install
//! key), so a reader of pods cannot test guesses of a Secret's value against it.

use hmac::{Hmac, Mac};
use k8s_openapi::api::core::v1::{Container, PodSpec};
use sha2::Sha256;
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

/// The secret key of the configuration digest: random, one per installation, kept where only the
/// operator reads it. Its bytes never appear in `Debug` output.
#[derive(Clone, PartialEq, Eq)]
pub struct DigestKey([u8; DigestKey::LEN]);

impl DigestKey {
    /// Bytes in a key (the output size of SHA-256, what HMAC-SHA-256 wants).
    pub const LEN: usize = 32;

    pub fn from_array(bytes: [u8; Self::LEN]) -> Self {
        DigestKey(bytes)
    }

    /// The key in `bytes`, which must be exactly [`DigestKey::LEN`] long (`None` otherwise).
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        <[u8; Self::LEN]>::try_from(bytes).ok().map(DigestKey)
    }

    pub fn as_bytes(&self) -> &[u8; Self::LEN] {
        &self.0
    }
}

impl std::fmt::Debug for DigestKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DigestKey(..)")
    }
}

/// A keyed digest of the referenced objects' content (names, keys and values; a missing object
/// counts as such), short enough for an annotation: HMAC-SHA-256 under `key`, first 8 bytes in hex.
pub fn digest(key: &DigestKey, contents: &BTreeMap<ConfigRef, Content>) -> String {
    // HMAC takes a key of any length, so `new_from_slice` cannot fail for 32 bytes.
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(key.as_bytes()) else {
        return String::new();
    };
    for (reference, content) in contents {
        mac.update(format!("{}\0{}\0", reference.kind(), reference.name()).as_bytes());
        match content {
            None => mac.update(b"missing\0"),
            Some(entries) => {
                for (key, value) in entries {
                    mac.update(key.as_bytes());
                    mac.update(b"\0");
                    mac.update(&u64::try_from(value.len()).unwrap_or(u64::MAX).to_be_bytes());
                    mac.update(value);
                }
            }
        }
        mac.update(b"\x01");
    }
    mac.finalize()
        .into_bytes()
        .iter()
        .take(8)
        .map(|byte| format!("{byte:02x}"))
        .collect()
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

    fn content(value: &str) -> BTreeMap<ConfigRef, Content> {
        BTreeMap::from([(
            ConfigRef::Secret("app".into()),
            Some(BTreeMap::from([("pin".to_string(), value.as_bytes().to_vec())])),
        )])
    }

    fn key(byte: u8) -> DigestKey {
        DigestKey::from_bytes(&[byte; DigestKey::LEN]).unwrap()
    }

    #[test]
    fn the_digest_changes_with_content_and_only_with_it() {
        let k = key(7);
        assert_eq!(digest(&k, &content("1")), digest(&k, &content("1")));
        assert_ne!(digest(&k, &content("1")), digest(&k, &content("2")));
        let missing = BTreeMap::from([(ConfigRef::Secret("app".into()), None)]);
        assert_ne!(digest(&k, &missing), digest(&k, &content("")));
        assert_eq!(digest(&k, &content("1")).len(), 16);
    }

    /// What a reader of pods could do with an unkeyed digest: hash every 4-digit PIN the same way
    /// and find the one in the annotation. Under a key they do not have, no guess matches.
    #[test]
    fn without_the_key_a_guess_of_the_secret_cannot_be_checked() {
        let annotation = digest(&key(7), &content("4711"));
        let guesses_under_other_keys = (0..10_000)
            .map(|pin| format!("{pin:04}"))
            .flat_map(|pin| [digest(&key(0), &content(&pin)), digest(&key(8), &content(&pin))]);
        assert!(
            guesses_under_other_keys
                .into_iter()
                .all(|guess| guess != annotation)
        );
        // Keyed the same, the same content gives the same digest (what rolling on change needs).
        assert_eq!(digest(&key(7), &content("4711")), annotation);
    }

    #[test]
    fn a_key_has_exactly_32_bytes_and_never_prints() {
        assert!(DigestKey::from_bytes(&[1; 31]).is_none());
        assert!(DigestKey::from_bytes(&[1; 33]).is_none());
        assert_eq!(format!("{:?}", key(9)), "DigestKey(..)");
    }
}
