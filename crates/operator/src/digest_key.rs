//! The key of the configuration digest (docs/security.md, "What a pod reader can learn"): random,
//! one per installation, kept in a Secret of the operator's namespace that only the operator reads.
//! The chart makes the Secret empty (so uninstalling removes it); the first replica to start fills
//! it, the others and every restart read it back, so the digest stays the same across restarts and
//! replicas and pods roll only when their configuration changes.

use crate::Error;
use crate::shared_secret::{SecretRef, fill_once};
use ferry_engine::extended::config::DigestKey;
use k8s_openapi::ByteString;
use kube::Client;
use rand::RngCore;
use std::collections::BTreeMap;

/// The Secret's field that holds the key's bytes.
pub const KEY_FIELD: &str = "config-digest.key";

/// A new random key (the operating system's randomness through a CSPRNG).
pub fn random() -> DigestKey {
    let mut bytes = [0u8; DigestKey::LEN];
    rand::rng().fill_bytes(&mut bytes);
    DigestKey::from_array(bytes)
}

/// Reads the key from the Secret, or makes one and stores it there when the Secret holds none
/// (`shared_secret::fill_once`: of two replicas filling it at once, both end with the winner's key).
pub async fn load_or_create(client: &Client, secret: &SecretRef) -> Result<DigestKey, Error> {
    let filled = fill_once(
        client,
        secret,
        |data| data.contains_key(KEY_FIELD),
        || {
            let key = random();
            Ok(BTreeMap::from([(
                KEY_FIELD.to_string(),
                ByteString(key.as_bytes().to_vec()),
            )]))
        },
    )
    .await?;
    let key = key_of(&filled.data, secret)?;
    if filled.made_here {
        tracing::info!(secret = %secret.name, "made the configuration digest key and stored it for the other replicas");
    }
    Ok(key)
}

fn key_of(data: &BTreeMap<String, ByteString>, secret: &SecretRef) -> Result<DigestKey, Error> {
    data.get(KEY_FIELD)
        .and_then(|bytes| DigestKey::from_bytes(&bytes.0))
        .ok_or_else(|| {
            Error::DigestKey(format!(
                "the Secret {}/{} has no {}-byte {KEY_FIELD}; remove that field and Ferry makes a new key (every ExtendedStatefulSet with updateOnConfigChange then rolls once)",
                secret.namespace,
                secret.name,
                DigestKey::LEN
            ))
        })
}
