//! The CA every replica shares, kept in a Secret of the operator's namespace: the first replica to
//! start makes it, the others (and every restart) read it back, so the one `caBundle` in the webhook
//! configurations verifies whichever replica the API server calls.

use super::tls::Authority;
use crate::Error;
use crate::shared_secret::SecretRef;
use crate::shared_secret::fill_once;
use k8s_openapi::ByteString;
use kube::Client;
use std::collections::BTreeMap;

const CERTIFICATE_KEY: &str = "ca.crt";
const PRIVATE_KEY_KEY: &str = "ca.key";

/// Reads the CA from the Secret, or makes it and stores it there when there is none yet
/// (`shared_secret::fill_once`: a replica that loses the race to store it reads the winner's).
pub async fn load_or_create(
    client: &Client,
    secret: &SecretRef,
    today: jiff::civil::Date,
) -> Result<Authority, Error> {
    let filled = fill_once(
        client,
        secret,
        |data| data.contains_key(CERTIFICATE_KEY) && data.contains_key(PRIVATE_KEY_KEY),
        || {
            let authority = Authority::new(today)?;
            Ok(BTreeMap::from([
                (
                    CERTIFICATE_KEY.to_string(),
                    ByteString(authority.ca_pem().into_bytes()),
                ),
                (
                    PRIVATE_KEY_KEY.to_string(),
                    ByteString(authority.key_pem().into_bytes()),
                ),
            ]))
        },
    )
    .await?;
    let authority = authority_of(&filled.data, secret, today)?;
    if filled.made_here {
        tracing::info!(secret = %secret.name, "made the webhook CA and stored it for the other replicas");
    }
    Ok(authority)
}

fn authority_of(
    data: &BTreeMap<String, ByteString>,
    secret: &SecretRef,
    today: jiff::civil::Date,
) -> Result<Authority, Error> {
    let field = |key: &str| -> Result<String, Error> {
        data.get(key)
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
