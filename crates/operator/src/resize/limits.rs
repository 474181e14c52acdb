//! The namespace's ResourceQuotas and LimitRanges, reduced to what a claim or a pod counts against,
//! and the Pod Security level it enforces: for the prechecks, and for the pods Ferry makes there.

use crate::Error;
use ferry_api::parse_bytes;
use ferry_engine::resize::{ClaimLimitView, QuotaView};
use k8s_openapi::api::core::v1::{LimitRange, Namespace, ResourceQuota};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::{ListParams, ObjectList};
use kube::{Api, Client, ResourceExt};
use std::collections::BTreeMap;

/// Whether a quota's resource is one a claim counts against.
fn about_claims(resource: &str) -> bool {
    let plain = resource.rsplit('/').next().unwrap_or(resource);
    plain == "requests.storage" || plain == "persistentvolumeclaims"
}

fn claim_resources(quantities: Option<&BTreeMap<String, Quantity>>) -> BTreeMap<String, u64> {
    (quantities.into_iter().flatten())
        .filter(|(resource, _)| about_claims(resource))
        .filter_map(|(resource, quantity)| Some((resource.clone(), parse_bytes(&quantity.0).ok()?)))
        .collect()
}

/// A list the operator may not make (an install whose RBAC predates these prechecks, such as
/// an operator upgraded before its chart): nothing is known of them, so nothing is refused on
/// their account, and the log says once per precheck what was not checked.
fn unless_forbidden<T>(
    listed: Result<ObjectList<T>, kube::Error>,
    what: &str,
    namespace: &str,
) -> Result<Vec<T>, Error>
where
    T: Clone,
{
    match listed {
        Ok(list) => Ok(list.items),
        Err(kube::Error::Api(status)) if status.code == 403 => {
            tracing::warn!(
                namespace,
                "{what} not checked: the operator may not list them ({})",
                status.message
            );
            Ok(Vec::new())
        }
        Err(error) => Err(error.into()),
    }
}

/// The ResourceQuotas of `namespace` that limit claims.
pub async fn quotas(client: &Client, namespace: &str) -> Result<Vec<QuotaView>, Error> {
    let listed = Api::<ResourceQuota>::namespaced(client.clone(), namespace)
        .list(&ListParams::default())
        .await;
    let quotas = unless_forbidden(listed, "ResourceQuotas", namespace)?;
    Ok(quotas
        .into_iter()
        .map(|quota| QuotaView {
            name: quota.name_any(),
            hard: claim_resources(quota.spec.as_ref().and_then(|spec| spec.hard.as_ref())),
            used: claim_resources(quota.status.as_ref().and_then(|status| status.used.as_ref())),
        })
        .filter(|quota| !quota.hard.is_empty())
        .collect())
}

/// Every resource name the ResourceQuotas of `namespace` limit (`hard`): a pod must declare the
/// compute ones among them.
pub async fn quota_resources(
    client: &Client,
    namespace: &str,
) -> Result<std::collections::BTreeSet<String>, Error> {
    let listed = Api::<ResourceQuota>::namespaced(client.clone(), namespace)
        .list(&ListParams::default())
        .await;
    let quotas = unless_forbidden(listed, "ResourceQuotas", namespace)?;
    Ok(quotas
        .iter()
        .filter_map(|quota| quota.spec.as_ref()?.hard.as_ref())
        .flat_map(|hard| hard.keys().cloned())
        .collect())
}

/// The bounds the LimitRanges of `namespace` put on a claim's storage.
pub async fn claim_limits(client: &Client, namespace: &str) -> Result<Vec<ClaimLimitView>, Error> {
    let listed = Api::<LimitRange>::namespaced(client.clone(), namespace)
        .list(&ListParams::default())
        .await;
    let ranges = unless_forbidden(listed, "LimitRanges", namespace)?;
    let storage = |bounds: Option<&BTreeMap<String, Quantity>>| {
        bounds
            .and_then(|bounds| bounds.get("storage"))
            .and_then(|quantity| parse_bytes(&quantity.0).ok())
    };
    Ok(ranges
        .iter()
        .flat_map(|range| {
            let items = range.spec.iter().flat_map(|spec| spec.limits.iter());
            items
                .filter(|item| item.type_ == "PersistentVolumeClaim")
                .map(|item| ClaimLimitView {
                    name: range.name_any(),
                    min: storage(item.min.as_ref()),
                    max: storage(item.max.as_ref()),
                })
                .collect::<Vec<_>>()
        })
        .filter(|limit| limit.min.is_some() || limit.max.is_some())
        .collect())
}

/// The Pod Security level `namespace` enforces by its label (`None`: none said, or the operator
/// may not read namespaces: then nothing is refused on its account, as for the lists above).
pub async fn pod_security(client: &Client, namespace: &str) -> Result<Option<String>, Error> {
    match Api::<Namespace>::all(client.clone()).get_opt(namespace).await {
        Ok(found) => Ok(found.and_then(|ns| ns.labels().get(POD_SECURITY_ENFORCE).cloned())),
        Err(kube::Error::Api(status)) if status.code == 403 => {
            tracing::warn!(
                namespace,
                "Pod Security not checked: the operator may not read the namespace ({})",
                status.message
            );
            Ok(None)
        }
        Err(error) => Err(error.into()),
    }
}

/// The Pod Security level that admits no root pod.
const RESTRICTED: &str = "restricted";

/// Who Ferry's pods in `namespace` run as: `user` (the StatefulSet's own) where the namespace
/// enforces `restricted`, which admits no root pod; root (`None`) elsewhere.
pub async fn run_as_where_restricted(
    client: &Client,
    namespace: &str,
    user: Option<ferry_engine::pods::RunAs>,
) -> Result<Option<ferry_engine::pods::RunAs>, Error> {
    let security = pod_security(client, namespace).await?;
    Ok(user.filter(|_| security.as_deref() == Some(RESTRICTED)))
}

/// The label by which a namespace enforces a Pod Security level.
const POD_SECURITY_ENFORCE: &str = "pod-security.kubernetes.io/enforce";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_claims_count_against_is_kept_and_parsed() {
        let quantities: BTreeMap<String, Quantity> = [
            ("requests.storage", "10Gi"),
            ("persistentvolumeclaims", "4"),
            ("fast.storageclass.storage.k8s.io/requests.storage", "500Mi"),
            ("requests.cpu", "2"),
            ("pods", "10"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
        .collect();
        let kept = claim_resources(Some(&quantities));
        assert_eq!(
            kept,
            [
                (
                    "fast.storageclass.storage.k8s.io/requests.storage".to_string(),
                    500 << 20
                ),
                ("persistentvolumeclaims".to_string(), 4),
                ("requests.storage".to_string(), 10 << 30),
            ]
            .into()
        );
    }
}
