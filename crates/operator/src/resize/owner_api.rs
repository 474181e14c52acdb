//! The API of a StatefulSet's owner (`status.owner`, or its controller owner reference): its kind
//! is known only at run time, so its resource is found through discovery, the same way for the
//! observation that reads it and the action that patches it.

use kube::api::{Api, DynamicObject};
use kube::core::GroupVersionKind;

/// The namespaced API of `kind` in `api_version` (`monitoring.coreos.com/v1`, or `v1` for the core
/// group), as the API server serves it.
pub async fn owner_api(
    client: &kube::Client,
    namespace: &str,
    api_version: &str,
    kind: &str,
) -> Result<Api<DynamicObject>, kube::Error> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let (resource, _) = kube::discovery::pinned_kind(client, &gvk).await?;
    Ok(Api::namespaced_with(client.clone(), namespace, &resource))
}
