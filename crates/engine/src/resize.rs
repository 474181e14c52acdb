//! VolumeResize decisions: the one entry point [`plan`] routes a resize to its prechecks, its run
//! (in place, by copy, reverted) or its retention, each a pure planner of typed actions over one
//! [`Observed`] cluster slice.

pub mod action;
pub mod copy;
pub mod gauges;
pub mod in_place;
pub mod observed;
pub mod owner;
pub mod plan;
pub mod precheck;
pub mod progress;
pub mod readiness;
pub mod retention;
pub mod revert;
pub mod route;
pub mod run;
#[cfg(test)]
mod sim;
pub mod status;
pub mod step_timing;
pub mod strategy;
pub mod timeout;

pub use observed::{
    ClaimLimitView, ClaimView, MoverPhase, MoverView, NodeResize, NodeView, Observed, PeerResize, PodView,
    QuotaView, StatefulSetView, StorageClassView, TemplateView, VolumeView,
};
pub use plan::{Decision, Input, Scope, plan, scope};
pub use precheck::{Precheck, Verdict, precheck};

/// Replicas as messages name them, in order and once each: "0, 2".
pub(crate) fn listed(replicas: &[i32]) -> String {
    let mut replicas = replicas.to_vec();
    replicas.sort_unstable();
    replicas.dedup();
    replicas.iter().map(i32::to_string).collect::<Vec<_>>().join(", ")
}
