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
