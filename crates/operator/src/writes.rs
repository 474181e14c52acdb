//! Parameters of every write Ferry makes: always under its field manager, so `managedFields` and
//! audit logs say which changes are Ferry's; what a repeated write takes as done; and the status
//! write every controller that keeps intent in status makes.

use crate::Error;
use ferry_api::names::FIELD_MANAGER;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::{Api, Resource, ResourceExt};

/// For a create.
pub fn create() -> PostParams {
    PostParams {
        field_manager: Some(FIELD_MANAGER.to_string()),
        ..PostParams::default()
    }
}

/// For a merge patch.
pub fn patch() -> PatchParams {
    PatchParams {
        field_manager: Some(FIELD_MANAGER.to_string()),
        ..PatchParams::default()
    }
}

/// A UID in a patch is a precondition: the patch fails (409) on an object re-created under the
/// same name, instead of changing it. Added to whatever `metadata` the patch already sets.
pub fn with_uid_precondition(mut patch: serde_json::Value, uid: Option<&str>) -> serde_json::Value {
    if let Some(uid) = uid {
        match patch
            .get_mut("metadata")
            .and_then(serde_json::Value::as_object_mut)
        {
            Some(metadata) => {
                metadata.insert("uid".into(), uid.into());
            }
            None => patch["metadata"] = serde_json::json!({"uid": uid}),
        }
    }
    patch
}

/// Writes `status` as the status of `object`, only if it is still at the resourceVersion `object`
/// carries: a compare-and-swap, so a reconcile that read a stale copy fails here (409,
/// [`Error::is_stale_read`]) instead of writing older intent over newer. Server-side apply as Ferry.
pub async fn write_status<K>(api: &Api<K>, object: &K, status: &impl serde::Serialize) -> Result<K, Error>
where
    K: Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let patch = serde_json::json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "metadata": {"resourceVersion": object.resource_version()},
        "status": status,
    });
    let params = PatchParams::apply(FIELD_MANAGER).force();
    Ok(api
        .patch_status(&object.name_any(), &params, &Patch::Apply(&patch))
        .await?)
}

/// A create whose object is already there (409) is done.
pub fn ignore_conflict<T>(result: Result<T, kube::Error>) -> Result<(), Error> {
    match result {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
        Err(error) => Err(error.into()),
    }
}

/// A delete or guarded patch of an object already gone, or already replaced, is done.
pub fn ignore_gone(result: Result<(), kube::Error>) -> Result<(), Error> {
    match result {
        Ok(()) => Ok(()),
        // 404: already gone; 409: the UID precondition failed, i.e. it was already replaced.
        Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => Ok(()),
        Err(error) => Err(error.into()),
    }
}

/// Deletes the object only if it still has `uid` (it may have been replaced under the same name);
/// already gone counts as done.
pub async fn delete_if_same<K>(api: &Api<K>, name: &str, uid: Option<String>) -> Result<(), Error>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid,
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    ignore_gone(api.delete(name, &params).await.map(|_| ()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_uid_joins_the_metadata_the_patch_sets() {
        assert_eq!(
            with_uid_precondition(json!({"metadata": {"labels": {"a": "b"}}}), Some("u")),
            json!({"metadata": {"labels": {"a": "b"}, "uid": "u"}})
        );
        assert_eq!(
            with_uid_precondition(json!({"spec": {"x": 1}}), Some("u")),
            json!({"spec": {"x": 1}, "metadata": {"uid": "u"}})
        );
        assert_eq!(
            with_uid_precondition(json!({"spec": {}}), None),
            json!({"spec": {}})
        );
    }
}
