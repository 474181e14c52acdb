//! The VolumeResize controller, in the shape of every wing: guard (`guard`) → observe (`observe`:
//! the engine's one model of what the resize looks at) → plan (`ferry_engine::resize::plan`) →
//! write the status (the intent, `status_write`) → apply (`apply`: the one match over the actions)
//! → report (`report`: Events, metrics). `reconcile` is that pipeline; `finalizer` the safe-point
//! stop of a deleted resize; `controller` and `wakes` what wakes a resize.

pub mod apply;
pub mod controller;
mod direct_go;
mod finalizer;
mod guard;
pub mod hold;
pub(crate) mod limits;
mod observe;
mod owner_api;
pub mod read_floors;
mod reconcile;
pub mod refusals;
mod report;
pub mod result_watch;
pub mod status_write;
pub mod wakes;

pub use observe::{Observation, observe};
pub use reconcile::{error_policy, reconcile};

use crate::context::Context;
use std::sync::Arc;

/// The resize controller's context: what every controller gets (through `Deref`), and what only
/// this one keeps from one reconcile to the next.
pub struct Resizing {
    pub shared: Arc<Context>,
    /// Refused requests in a row per VolumeResize, for the retry's backoff.
    pub refusals: refusals::Refusals,
    /// Movers' logs followed for their results, which wake the resize controller.
    pub results: result_watch::ResultWatch,
    /// Keys and attach streams of standby final movers, for a go sooner than their annotation.
    pub direct_go: direct_go::DirectGo,
    /// What each running resize's lists last saw, so the next are served from the API server's
    /// cache without going back in time.
    pub read_floors: read_floors::ReadFloors,
}

impl Resizing {
    /// Movers' results in their logs wake the resize controller through `results`.
    /// Standby movers' streams that open wake it the same way.
    pub fn with_result_watch(mut self, results: result_watch::ResultWatch) -> Self {
        self.direct_go = std::mem::take(&mut self.direct_go).waking(results.waker());
        self.results = results;
        self
    }
}

/// A context for the resize wing's building blocks outside its controller (the webhook observes a
/// request as a reconcile would): nothing kept yet, no result wakes anyone.
impl From<Arc<Context>> for Resizing {
    fn from(shared: Arc<Context>) -> Self {
        Resizing {
            refusals: Default::default(),
            results: Default::default(),
            read_floors: Default::default(),
            direct_go: direct_go::DirectGo::new(shared.features.enabled(crate::features::Feature::DirectGo)),
            shared,
        }
    }
}

impl std::ops::Deref for Resizing {
    type Target = Context;

    fn deref(&self) -> &Context {
        &self.shared
    }
}
