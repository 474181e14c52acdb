//! The JSON Patch of the StatefulSet's owner (`status.owner`), through its API as discovery finds
//! it (`owner_api`). The patch tests the resourceVersion it was made from, so an edit since the
//! reconcile read the owner fails it and the next reconcile decides afresh.

use crate::Error;
use crate::resize::owner_api::owner_api;
use ferry_api::VolumeResize;
use kube::Client;
use kube::api::Patch;

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
    let operations: json_patch::Patch = serde_json::from_str(patch).map_err(|source| Error::Serialize {
        what: "the owner's patch",
        source,
    })?;
    owner_api(&client, namespace, &owner.api_version, &owner.kind)
        .await?
        .patch(
            &owner.name,
            &crate::writes::patch(),
            &Patch::<()>::Json(operations),
        )
        .await?;
    Ok(())
}
