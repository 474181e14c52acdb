//! The VolumeAutoscaler controller, in the resize wing's shape: every interval, guard → observe
//! (its StatefulSets, their pods and claims, usage from kubelet stats through the node proxy or
//! from Prometheus, the VolumeResizes) → plan (`ferry_engine::autoscale::plan`: each volume's
//! status and the grows) → apply (each grow an ordinary VolumeResize) → report (status, then
//! Events, metrics). The record of earlier grows lives in status (and is rebuilt from the
//! VolumeResizes autoscalers made), so a restarted operator keeps cooldowns and provider limits.
//!
//! Status safety: this wing acts first, then writes its status (the resize wing writes its intent
//! first). Its one action, a VolumeResize, is its own record: created under a name the plan
//! derives, so a repeat after a lost status write is the same request (AlreadyExists), and the
//! record of grows is rebuilt from those VolumeResizes. The status, written after, remembers them
//! before the Events tell.

mod apply;
pub mod controller;
pub mod defaults;
mod governed;
mod observe;
mod report;

use crate::Error;
use crate::context::Context;
pub use crate::usage::summaries::{Summaries, node_summary};
use ferry_api::VolumeAutoscaler;
use ferry_engine::autoscale::plan::{Input, plan};
pub use governed::{governed_templates, governed_templates_of};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::runtime::controller::Action;
use std::sync::Arc;
use std::time::Duration;

/// How often usage is read when the operator is not told otherwise.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(60);

/// What the autoscaler controller shares across reconciles.
pub struct Autoscaling {
    pub ctx: Arc<Context>,
    pub summaries: Summaries,
    /// How often each autoscaler reads usage and decides.
    pub interval: Duration,
}

pub async fn reconcile(
    autoscaler: Arc<VolumeAutoscaler>,
    scaling: Arc<Autoscaling>,
) -> Result<Action, Error> {
    if autoscaler.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let namespace = autoscaler.namespace().ok_or_else(|| Error::NotNamespaced {
        kind: "VolumeAutoscaler",
        name: autoscaler.name_any(),
    })?;
    let now = Timestamp::now().as_second();
    // Every pass writes status, which wakes the controller again: polls are at most one per
    // interval unless the spec changed.
    if let Some(wait) = polled_recently(&autoscaler, scaling.interval, now) {
        return Ok(Action::requeue(wait));
    }
    let ctx = &scaling.ctx;
    let observation = observe::observe(ctx, &scaling.summaries, &autoscaler, &namespace).await?;
    let usage_not_read = observe::usage_not_read(ctx);
    let input = Input {
        autoscaler: &autoscaler,
        usage_not_read: usage_not_read.as_deref(),
        now,
    };
    let decision = plan(input, &observation);
    apply::apply(ctx, &autoscaler, &namespace, &decision.actions).await?;
    report::write_status(ctx, &autoscaler, &namespace, &decision, now).await?;
    // After the status that remembers them, so a failed write does not repeat them.
    report::publish(ctx, &autoscaler, &observation, &decision).await;
    report::count(ctx, &autoscaler, &namespace, &decision);
    Ok(Action::requeue(scaling.interval))
}

/// How long until the next poll is due, if the last one (of this spec) was less than an interval ago.
fn polled_recently(autoscaler: &VolumeAutoscaler, interval: Duration, now: i64) -> Option<Duration> {
    let status = autoscaler.status.as_ref()?;
    if status.observed_generation != autoscaler.metadata.generation {
        return None;
    }
    let polled = status.last_polled_at.as_ref()?.0.as_second();
    let interval = i64::try_from(interval.as_secs()).unwrap_or(i64::MAX);
    let due = polled.saturating_add(interval);
    (due > now).then(|| Duration::from_secs(u64::try_from(due - now).unwrap_or(1)))
}

pub fn error_policy(autoscaler: Arc<VolumeAutoscaler>, error: &Error, scaling: Arc<Autoscaling>) -> Action {
    tracing::warn!(autoscaler = %autoscaler.name_any(), %error, "VolumeAutoscaler: retrying");
    Action::requeue(scaling.interval.min(Duration::from_secs(10)))
}
