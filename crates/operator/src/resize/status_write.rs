//! Writing a VolumeResize's status, the intent written before any action: server-side apply as
//! Ferry, a compare-and-swap on the resourceVersion the reconcile read (`writes::write_status`).

use crate::Error;
use crate::context::Context;
use ferry_api::{VolumeResize, VolumeResizeStatus};
use kube::{Api, ResourceExt};

/// Writes `status` as the status of `resize`, only if the object is still at the resourceVersion
/// `resize` carries (else [`Error::is_stale_read`]); returns the new resourceVersion.
pub async fn write_status(
    ctx: &Context,
    resize: &VolumeResize,
    namespace: &str,
    status: &VolumeResizeStatus,
) -> Result<Option<String>, Error> {
    let api: Api<VolumeResize> = Api::namespaced(ctx.client.clone(), namespace);
    let written = crate::writes::write_status(&api, resize, status).await?;
    Ok(written.resource_version())
}
