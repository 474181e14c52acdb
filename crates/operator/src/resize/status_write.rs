//! Writing a VolumeResize's status: server-side apply as Ferry, a compare-and-swap on the
//! resourceVersion the reconcile read.

use crate::Error;
use crate::context::Context;
use ferry_api::names::FIELD_MANAGER;
use ferry_api::{VolumeResize, VolumeResizeStatus};
use kube::api::{Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};
use serde_json::json;

/// Writes `status` as the status of `resize`, only if the object is still at the resourceVersion
/// `resize` carries (else [`Error::is_stale_read`]); returns the new resourceVersion.
pub async fn write_status(
    ctx: &Context,
    resize: &VolumeResize,
    namespace: &str,
    status: &VolumeResizeStatus,
) -> Result<Option<String>, Error> {
    let api: Api<VolumeResize> = Api::namespaced(ctx.client.clone(), namespace);
    // The resourceVersion makes the write a compare-and-swap: a reconcile that read a stale copy
    // fails here (409) before acting, instead of overwriting newer intent.
    let patch = json!({
        "apiVersion": VolumeResize::api_version(&()),
        "kind": VolumeResize::kind(&()),
        "metadata": {"resourceVersion": resize.resource_version()},
        "status": status,
    });
    let written = api
        .patch_status(
            &resize.name_any(),
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&patch),
        )
        .await?;
    Ok(written.resource_version())
}
