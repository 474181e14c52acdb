//! A value every replica shares (the webhook CA, the configuration digest key), kept in a Secret of
//! the operator's namespace: the first replica to start makes it, the others and every restart read
//! it back. The chart makes the Secret empty, so uninstalling removes it; without one it is created.

use crate::Error;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::{Api, Client};
use std::collections::BTreeMap;

/// Where a shared value is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretRef {
    pub namespace: String,
    pub name: String,
}

/// The Secret's data once it holds the value, and who put it there.
pub struct Filled {
    pub data: BTreeMap<String, ByteString>,
    /// This call made the value (false: it was there, or another replica stored it first).
    pub made_here: bool,
}

/// Returns the Secret's data when `holds` says it has the value; otherwise stores `make()`'s fields
/// in it (beside any others it has; creating it when missing) and returns them. The write is guarded
/// by the resourceVersion read (or by the name, for a create): of two replicas filling it at once
/// one wins, and the other reads the winner's value back.
pub async fn fill_once(
    client: &Client,
    secret: &SecretRef,
    holds: impl Fn(&BTreeMap<String, ByteString>) -> bool,
    make: impl FnOnce() -> Result<BTreeMap<String, ByteString>, Error>,
) -> Result<Filled, Error> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &secret.namespace);
    let existing = secrets.get_opt(&secret.name).await?;
    if let Some(data) = existing.as_ref().and_then(|stored| stored.data.as_ref())
        && holds(data)
    {
        return Ok(Filled {
            data: data.clone(),
            made_here: false,
        });
    }
    let fields = make()?;
    let written = match existing {
        Some(mut unfilled) => {
            unfilled.data.get_or_insert_with(BTreeMap::new).extend(fields);
            secrets
                .replace(&secret.name, &crate::writes::create(), &unfilled)
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
                data: Some(fields),
                ..Secret::default()
            };
            secrets.create(&crate::writes::create(), &stored).await
        }
    };
    match written {
        Ok(stored) => Ok(Filled {
            data: stored.data.unwrap_or_default(),
            made_here: true,
        }),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(Filled {
            data: secrets.get(&secret.name).await?.data.unwrap_or_default(),
            made_here: false,
        }),
        Err(error) => Err(error.into()),
    }
}
