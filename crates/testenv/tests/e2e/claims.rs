//! Claims as the storage tests read and grow them.

use ferry_api::quantity::quantity_bytes;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;

/// The claim's capacity in its status, once it has one.
pub async fn capacity(claims: &Api<PersistentVolumeClaim>, name: &str) -> Option<u64> {
    let claim = claims.get_opt(name).await.ok().flatten()?;
    quantity_bytes(claim.status?.capacity?.get("storage")?)
}

/// Asks for `size` (a quantity such as 480Mi).
pub async fn grow(claims: &Api<PersistentVolumeClaim>, name: &str, size: &str) {
    let patch = json!({"spec": {"resources": {"requests": {"storage": size}}}});
    claims
        .patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .unwrap();
}
