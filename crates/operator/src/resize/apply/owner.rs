//! The JSON Patch of the StatefulSet's owner (`status.owner`): its kind is known only at run time,
//! so its API is found through discovery. The patch tests the resourceVersion it was made from, so
//! an edit since the reconcile read the owner fails it and the next reconcile decides afresh.

use crate::Error;
use ferry_api::VolumeResize;
use kube::api::{DynamicObject, Patch};
use kube::core::GroupVersionKind;
use kube::{Api, Client};

pub(super) async fn patch_owner(
    client: Client,
    resize: &VolumeResize,
    namespace: &str,
    patch: &str,
) -> Result<(), Error> {
    let Some(owner) = resize.status.as_ref().and_then(|status| status.owner.as_ref()) else {
        return Err(Error::Invariant(
            "an owner patch for a resize that records no owner".into(),
        ));
    };
    let (group, version) = owner
        .api_version
        .rsplit_once('/')
        .unwrap_or(("", &owner.api_version));
    let gvk = GroupVersionKind::gvk(group, version, &owner.kind);
    let (resource, _) = kube::discovery::pinned_kind(&client, &gvk).await?;
    let operations: json_patch::Patch = serde_json::from_str(patch).map_err(|source| Error::Serialize {
        what: "the owner's patch",
        source,
    })?;
    Api::<DynamicObject>::namespaced_with(client, namespace, &resource)
        .patch(
            &owner.name,
            &crate::writes::patch(),
            &Patch::<()>::Json(operations),
        )
        .await?;
    Ok(())
}
