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

/// Reads the CA from the Secret, or makes it and stores it there when there is none yet: into the
/// empty Secret an installer made (the chart, so that uninstalling removes it), or as a new Secret.
/// A replica that loses the race to store it reads the winner's.
pub async fn load_or_create(
    client: &Client,
    secret: &SecretRef,
    today: jiff::civil::Date,
) -> Result<Authority, Error> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &secret.namespace);
    let existing = secrets.get_opt(&secret.name).await?;
    if let Some(stored) = &existing
        && holds_a_ca(stored)
    {
        return authority_of(stored, secret, today);
    }
    let authority = Authority::new(today)?;
    let data = BTreeMap::from([
        (
            CERTIFICATE_KEY.to_string(),
            ByteString(authority.ca_pem().into_bytes()),
        ),
        (
            PRIVATE_KEY_KEY.to_string(),
            ByteString(authority.key_pem().into_bytes()),
        ),
    ]);
    let written = match existing {
        // Guarded by its resourceVersion: of two replicas filling it, one wins.
        Some(mut empty) => {
            empty.data = Some(data);
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
            tracing::info!(secret = %secret.name, "made the webhook CA and stored it for the other replicas");
            Ok(authority)
        }
        Err(kube::Error::Api(status)) if status.code == 409 => {
            let stored = secrets.get(&secret.name).await?;
            authority_of(&stored, secret, today)
        }
        Err(error) => Err(error.into()),
    }
}

fn holds_a_ca(stored: &Secret) -> bool {
    stored
        .data
        .as_ref()
        .is_some_and(|data| data.contains_key(CERTIFICATE_KEY) && data.contains_key(PRIVATE_KEY_KEY))
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
