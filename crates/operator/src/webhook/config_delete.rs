//! The review of a delete of a ConfigMap or Secret that an ExtendedStatefulSet references (Ferry
//! marks those with `ferry.dev/referenced` and names the users in `ferry.dev/used-by`): refused
//! while a user still exists, so its pods never lose their configuration by accident. It is a
//! refusal, not a finalizer: with Ferry down or uninstalled nothing waits (the webhook's failure
//! policy is Ignore), and a namespace deletion or the garbage collector is never refused. Pure.

use super::review::BadReview;
use crate::extended::config::ANNOTATION_USED_BY;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, Operation};
use std::collections::BTreeSet;

/// Who deletes for a namespace deletion or for a deleted owner (kube-controller-manager with and
/// without per-controller credentials): never refused.
const CLUSTER_DELETERS: [&str; 3] = [
    "system:kube-controller-manager",
    "system:serviceaccount:kube-system:namespace-controller",
    "system:serviceaccount:kube-system:generic-garbage-collector",
];

/// A delete to look at: the object, and the ExtendedStatefulSets its annotation names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkedDelete {
    /// `ConfigMap app-config`.
    pub object: String,
    pub users: BTreeSet<String>,
}

/// The delete to look at, if this review is one: a DELETE of a ConfigMap or Secret that names
/// users, by someone other than the cluster's own deleters.
pub fn marked_delete(request: &AdmissionRequest<DynamicObject>) -> Result<Option<MarkedDelete>, BadReview> {
    let kind = request.kind.kind.as_str();
    if !request.kind.group.is_empty() || !matches!(kind, "ConfigMap" | "Secret") {
        return Err(BadReview(format!(
            "this endpoint reviews ConfigMaps and Secrets, not {}/{kind}",
            request.kind.group
        )));
    }
    if request.operation != Operation::Delete
        || request
            .user_info
            .username
            .as_deref()
            .is_some_and(|user| CLUSTER_DELETERS.contains(&user))
    {
        return Ok(None);
    }
    let users: BTreeSet<String> = request
        .old_object
        .as_ref()
        .and_then(|old| old.metadata.annotations.as_ref())
        .and_then(|annotations| annotations.get(ANNOTATION_USED_BY))
        .map(|list| {
            list.split(',')
                .filter(|name| !name.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    Ok((!users.is_empty()).then(|| MarkedDelete {
        object: format!("{kind} {}", request.name),
        users,
    }))
}

/// The answer: refused while any of `live` (the users that exist and are not being deleted)
/// references the object.
pub fn answer(
    request: &AdmissionRequest<DynamicObject>,
    delete: &MarkedDelete,
    live: &BTreeSet<String>,
) -> AdmissionResponse {
    let response = AdmissionResponse::from(request);
    if live.is_empty() {
        return response;
    }
    let names = live.iter().map(String::as_str).collect::<Vec<_>>().join(", ");
    response.deny(format!(
        "{} is referenced by ExtendedStatefulSet {names} (updateOnConfigChange): deleting it would leave those pods without it. Remove the reference first (or set updateOnConfigChange: false), or delete the ExtendedStatefulSet",
        delete.object
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(
        operation: &str,
        kind: &str,
        user: &str,
        used_by: Option<&str>,
    ) -> AdmissionRequest<DynamicObject> {
        let mut annotations = serde_json::Map::new();
        if let Some(users) = used_by {
            annotations.insert(ANNOTATION_USED_BY.into(), users.into());
        }
        let review = json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {
                "uid": "u1", "kind": {"group": "", "version": "v1", "kind": kind},
                "resource": {"group": "", "version": "v1", "resource": "configmaps"},
                "name": "app-config", "namespace": "ns", "operation": operation,
                "userInfo": {"username": user},
                "oldObject": {"apiVersion": "v1", "kind": kind,
                    "metadata": {"name": "app-config", "namespace": "ns", "annotations": annotations}},
            },
        });
        let review: kube::core::admission::AdmissionReview<DynamicObject> =
            serde_json::from_value(review).unwrap();
        review.try_into().unwrap()
    }

    #[test]
    fn a_delete_of_a_referenced_object_is_refused_while_a_user_exists() {
        let request = request("DELETE", "ConfigMap", "alice", Some("db,web"));
        let delete = marked_delete(&request).unwrap().unwrap();
        assert_eq!(delete.object, "ConfigMap app-config");
        assert_eq!(
            delete.users,
            BTreeSet::from(["db".to_string(), "web".to_string()])
        );
        let refused = answer(&request, &delete, &BTreeSet::from(["db".to_string()]));
        assert!(!refused.allowed);
        assert!(
            refused
                .result
                .message
                .contains("referenced by ExtendedStatefulSet db")
        );
        assert!(
            answer(&request, &delete, &BTreeSet::new()).allowed,
            "no user left"
        );
    }

    #[test]
    fn namespace_deletion_the_garbage_collector_and_unmarked_objects_pass() {
        for user in CLUSTER_DELETERS {
            assert_eq!(
                marked_delete(&request("DELETE", "Secret", user, Some("db"))).unwrap(),
                None
            );
        }
        assert_eq!(
            marked_delete(&request("DELETE", "ConfigMap", "alice", None)).unwrap(),
            None
        );
        assert_eq!(
            marked_delete(&request("UPDATE", "ConfigMap", "alice", Some("db"))).unwrap(),
            None
        );
        assert!(marked_delete(&request("DELETE", "Pod", "alice", Some("db"))).is_err());
    }
}
