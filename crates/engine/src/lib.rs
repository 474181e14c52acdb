//! ferry-engine: Ferry's pure planner. It takes what the operator observed in the cluster and the
//! VolumeResize, and decides the next status and actions. No I/O: everything here is unit-tested.

pub mod action;
pub mod autoscale;
pub mod cluster_support;
pub mod conditions;
pub mod copy;
pub mod duration;
pub mod extended;
pub mod gauges;
pub mod history;
pub mod in_place;
pub mod names;
pub mod observed;
pub mod plan;
pub mod pods;
pub mod precheck;
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
pub mod trigger;

pub use observed::{
    ClaimView, MoverPhase, MoverView, NodeResize, NodeView, Observed, PeerResize, PodView, StatefulSetView,
    StorageClassView, TemplateView, VolumeView,
};
pub use plan::{Decision, Input, Scope, plan, scope};
pub use precheck::{Precheck, Verdict, precheck};
