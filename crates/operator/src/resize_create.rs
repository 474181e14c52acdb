//! The one place a VolumeResize is created for a trigger (a StatefulSet's request, an autoscaler, an
//! ExtendedStatefulSet): the same labels for all, and a name already taken is the same
//! request, made by an earlier pass that did not get to record it (names are digests of the
//! request, so another request never has it).

use crate::{Error, writes};
use ferry_api::names::{LABEL_MANAGED_BY, LABEL_STATEFUL_SET, LABEL_TRIGGER, MANAGED_BY_VALUE};
use ferry_api::{VolumeResize, VolumeResizeSpec};
use kube::{Api, Client};

/// What asks for a resize, as its labels say.
pub struct Origin<'a> {
    /// The label `ferry.dev/trigger`: which trigger made it.
    pub trigger: &'a str,
    /// The StatefulSet whose volumes change (`ferry.dev/stateful-set`).
    pub stateful_set: &'a str,
    /// One more label naming the object that asked (an autoscaler's UID, an ExtendedStatefulSet).
    pub asked_by: Option<(&'a str, &'a str)>,
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
    match Api::<VolumeResize>::namespaced(client.clone(), namespace)
        .create(&writes::create(), &resize)
        .await
    {
        Ok(_) => Ok(Created::New),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(Created::AlreadyThere),
        Err(error) => Err(error.into()),
    }
}
