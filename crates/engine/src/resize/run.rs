//! What every run planner (in place, copy, revert) decides, and what each refuses alike.

use crate::resize::action::ResizeAction;
use ferry_api::{VolumePlan, VolumeResizeStatus};

/// The next status and actions of a running resize.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub status: VolumeResizeStatus,
    pub actions: Vec<ResizeAction>,
    /// Human-readable summary of what happens now, for Events.
    pub summary: String,
}

/// Why a row cannot be run at all: its target size is not a size (never written so by Ferry's
/// precheck, but a status can be edited).
pub(crate) fn unsized_target(row: &VolumePlan) -> Option<String> {
    row.target_bytes().is_none().then(|| {
        format!(
            "target size {:?} of {} is not a size",
            row.target_size, row.claim_name
        )
    })
}
