//! The CA every replica shares, kept in a Secret of the operator's namespace: the first replica to
//! start makes it, the others (and every restart) read it back, so the one `caBundle` in the webhook
//! configurations verifies whichever replica the API server calls.

use super::tls::Authority;
use crate::Error;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::{Api, Client};
use std::collections::BTreeMap;

const CERTIFICATE_KEY: &str = "ca.crt";
const PRIVATE_KEY_KEY: &str = "ca.key";

/// Where the shared CA is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretRef {
    pub namespace: String,
    pub name: String,
}

/// Reads the CA from the Secret, or makes it and stores it there when there is none yet (a replica
/// that loses the race to create it reads the winner's).
pub async fn load_or_create(
    client: &Client,
    secret: &SecretRef,
    today: jiff::civil::Date,
) -> Result<Authority, Error> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &secret.namespace);
    if let Some(existing) = secrets.get_opt(&secret.name).await? {
        return authority_of(&existing, secret, today);
    }
    let authority = Authority::new(today)?;
    let stored = Secret {
        metadata: ObjectMeta {
            name: Some(secret.name.clone()),
            labels: Some(BTreeMap::from([(
                "app.kubernetes.io/managed-by".to_string(),
                "ferry".to_string(),
            )])),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([
            (
                CERTIFICATE_KEY.to_string(),
                ByteString(authority.ca_pem().into_bytes()),
            ),
            (
                PRIVATE_KEY_KEY.to_string(),
                ByteString(authority.key_pem().into_bytes()),
            ),
        ])),
        ..Secret::default()
    };
    match secrets.create(&crate::writes::create(), &stored).await {
        Ok(_) => {
            tracing::info!(secret = %secret.name, "made the webhook CA and stored it for the other replicas");
            Ok(authority)
        }
        Err(kube::Error::Api(status)) if status.code == 409 => {
            let existing = secrets.get(&secret.name).await?;
            authority_of(&existing, secret, today)
        }
        Err(error) => Err(error.into()),
    }
}

fn authority_of(stored: &Secret, secret: &SecretRef, today: jiff::civil::Date) -> Result<Authority, Error> {
    let field = |key: &str| -> Result<String, Error> {
        stored
            .data
            .as_ref()
            .and_then(|data| data.get(key))
            .and_then(|bytes| String::from_utf8(bytes.0.clone()).ok())
            .ok_or_else(|| {
                Error::Tls(format!(
                    "the Secret {}/{} has no {key}; delete it and Ferry makes a new CA",
                    secret.namespace, secret.name
                ))
            })
    };
    Authority::from_pem(&field(CERTIFICATE_KEY)?, &field(PRIVATE_KEY_KEY)?, today)
}
