//! The VolumeResize controller: read the cluster, let the engine decide, apply, write status.

mod observe;
mod reconcile;

pub use observe::{Observation, observe};
pub use reconcile::{error_policy, reconcile};
