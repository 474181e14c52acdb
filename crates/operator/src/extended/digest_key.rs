//! The key of the configuration digest (docs/security.md, "What a pod reader can learn"): random,
//! one per installation, kept in a Secret of the operator's namespace that only the operator reads.
//! The chart makes the Secret empty (so uninstalling removes it); the first replica to start fills
//! it, the others and every restart read it back, so the digest stays the same across restarts and
//! replicas and pods roll only when their configuration changes.

use crate::Error;
use crate::webhook::shared_ca::SecretRef;
use ferry_engine::extended::config::DigestKey;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::{Api, Client};
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

/// Reads the key from the Secret, or makes one and stores it there when the Secret holds none:
/// into the empty Secret the chart made, or as a new Secret. Of two replicas filling it at once,
/// the write guarded by the older resourceVersion fails and that replica reads the winner's key.
pub async fn load_or_create(client: &Client, secret: &SecretRef) -> Result<DigestKey, Error> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &secret.namespace);
    let existing = secrets.get_opt(&secret.name).await?;
    if let Some(stored) = &existing
        && stored_field(stored).is_some()
    {
        return key_of(stored, secret);
    }
    let key = random();
    let data = BTreeMap::from([(KEY_FIELD.to_string(), ByteString(key.as_bytes().to_vec()))]);
    let written = match existing {
        Some(mut empty) => {
            empty.data.get_or_insert_with(BTreeMap::new).extend(data);
            secrets
                .replace(&secret.name, &crate::writes::create(), &empty)
                .await
        }
        None => {
            let stored = Secret {
                metadata: ObjectMeta {
                    name: Some(secret.name.clone()),
                    labels: Some(BTreeMap::from([(
                        "app.kubernetes.io/managed-by".to_string(),
                        "ferry".to_string(),
                    )])),
                    ..ObjectMeta::default()
                },
                data: Some(data),
                ..Secret::default()
            };
            secrets.create(&crate::writes::create(), &stored).await
        }
    };
    match written {
        Ok(_) => {
            tracing::info!(secret = %secret.name, "made the configuration digest key and stored it for the other replicas");
            Ok(key)
        }
        Err(kube::Error::Api(status)) if status.code == 409 => {
            key_of(&secrets.get(&secret.name).await?, secret)
        }
        Err(error) => Err(error.into()),
    }
}

fn stored_field(stored: &Secret) -> Option<&ByteString> {
    stored.data.as_ref().and_then(|data| data.get(KEY_FIELD))
}

fn key_of(stored: &Secret, secret: &SecretRef) -> Result<DigestKey, Error> {
    stored_field(stored)
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
