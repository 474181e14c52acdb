//! The VolumeResize controller: read the cluster, let the engine decide, apply, write status.

mod execute;
pub mod hold;
pub mod intake;
mod objects;
mod observe;
pub mod read_floors;
mod reconcile;
pub mod refusals;
pub mod result_watch;
mod rollout;
mod run_observe;
pub mod status_write;
pub mod stop;
mod views;

pub use observe::{Observation, observe};
pub use reconcile::{error_policy, reconcile};
