//! The one place a VolumeResize is created for a trigger (a StatefulSet's request, an autoscaler, an
//! ExtendedStatefulSet): the same labels for all, and a name already taken is the same
//! request, made by an earlier pass that did not get to record it (names are digests of the
//! request, so another request never has it). Each new one prunes the finished ones of the same
//! StatefulSet and trigger past the newest few ([`ferry_engine::history`]).

use crate::{Error, writes};
use ferry_api::names::{LABEL_MANAGED_BY, LABEL_STATEFUL_SET, LABEL_TRIGGER, MANAGED_BY_VALUE};
use ferry_api::{VolumeResize, VolumeResizeSpec};
use ferry_engine::history::{self, KEEP_FINISHED};
use kube::api::{DeleteParams, Preconditions};
use kube::{Api, Client, ResourceExt};

/// What asks for a resize, as its labels say.
pub struct Origin<'a> {
    /// The label `ferry.dev/trigger`: which trigger made it.
    pub trigger: &'a str,
    /// The StatefulSet whose volumes change (`ferry.dev/stateful-set`).
    pub stateful_set: &'a str,
    /// One more label naming the object that asked (an autoscaler's UID, an ExtendedStatefulSet).
    pub asked_by: Option<(&'a str, &'a str)>,
    /// What the asker records on it (an autoscaler's decision), as annotations.
    pub annotations: std::collections::BTreeMap<String, String>,
}

/// Whether the create made it or found it made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Created {
    New,
    AlreadyThere,
}

/// Creates VolumeResize `name` in `namespace` for `origin`.
pub async fn create_resize(
    client: &Client,
    namespace: &str,
    name: &str,
    spec: VolumeResizeSpec,
    origin: &Origin<'_>,
) -> Result<Created, Error> {
    let mut resize = VolumeResize::new(name, spec);
    resize.metadata.namespace = Some(namespace.to_string());
    let mut labels: std::collections::BTreeMap<String, String> = [
        (LABEL_TRIGGER.to_string(), origin.trigger.to_string()),
        (LABEL_STATEFUL_SET.to_string(), origin.stateful_set.to_string()),
        (LABEL_MANAGED_BY.to_string(), MANAGED_BY_VALUE.to_string()),
    ]
    .into();
    if let Some((key, value)) = origin.asked_by {
        labels.insert(key.to_string(), value.to_string());
    }
    resize.metadata.labels = Some(labels);
    if !origin.annotations.is_empty() {
        resize.metadata.annotations = Some(origin.annotations.clone());
    }
    match Api::<VolumeResize>::namespaced(client.clone(), namespace)
        .create(&writes::create(), &resize)
        .await
    {
        Ok(_) => {
            prune_history(client, namespace, origin).await;
            Ok(Created::New)
        }
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(Created::AlreadyThere),
        Err(error) => Err(error.into()),
    }
}

/// Deletes the finished VolumeResizes `origin`'s trigger made for its StatefulSet, past the
/// newest [`KEEP_FINISHED`]. Each delete is guarded by the UID it was listed with. A failure only
/// delays the pruning to the next resize made, so it is logged, not returned: the resize it
/// follows was made.
async fn prune_history(client: &Client, namespace: &str, origin: &Origin<'_>) {
    let listing = match crate::listing::list(client, namespace).await {
        Ok(listing) => listing,
        Err(error) => {
            tracing::warn!(namespace, stateful_set = origin.stateful_set, %error, "finished VolumeResizes not pruned (listing failed)");
            return;
        }
    };
    let made_by_origin: Vec<&VolumeResize> = listing
        .readable
        .iter()
        .filter(|resize| {
            let label = |key: &str| resize.labels().get(key).map(String::as_str);
            label(LABEL_TRIGGER) == Some(origin.trigger)
                && label(LABEL_STATEFUL_SET) == Some(origin.stateful_set)
                && label(LABEL_MANAGED_BY) == Some(MANAGED_BY_VALUE)
        })
        .collect();
    let api = Api::<VolumeResize>::namespaced(client.clone(), namespace);
    for old in history::to_prune(&made_by_origin, KEEP_FINISHED) {
        let name = old.name_any();
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: old.uid(),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match api.delete(&name, &params).await {
            Ok(_) => {
                tracing::info!(namespace, resize = %name, trigger = origin.trigger, "finished VolumeResize pruned (history limit)")
            }
            // Gone already, or re-made under the same name since the listing.
            Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => {}
            Err(error) => {
                tracing::warn!(namespace, resize = %name, %error, "finished VolumeResize not pruned")
            }
        }
    }
}
