//! Parameters of every write Ferry makes: always under its field manager, so `managedFields` and
//! audit logs say which changes are Ferry's.

use ferry_api::names::FIELD_MANAGER;
use kube::api::{PatchParams, PostParams};

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
