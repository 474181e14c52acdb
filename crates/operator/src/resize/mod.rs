//! The VolumeResize controller: read the cluster, let the engine decide, apply, write status.

mod execute;
mod observe;
mod reconcile;
mod run_observe;

pub use observe::{Observation, observe};
pub use reconcile::{error_policy, reconcile};
