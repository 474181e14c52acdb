//! The ExtendedStatefulSet controller, in the resize wing's shape: guard → observe (the
//! configuration its pods follow, its StatefulSets and pods, the VolumeResizes, the hook Job) →
//! plan (`ferry_engine::extended::plan`: typed actions and a status) → apply (VolumeResizes for
//! changed claim templates, hook Jobs, the StatefulSets applied server-side under Ferry's field
//! manager so edits to them are put back, dropped zones drained and deleted) → report (status,
//! then Events).
//!
//! Status safety: this wing acts first, then writes its status (the resize wing writes its intent
//! first), because the status reports what the API server refused of those actions. Every action
//! is idempotent (StatefulSets applied server-side as desired; VolumeResizes and hook Jobs created
//! under names the plan derives, one already there taken as done; guarded deletes and volume
//! writes), and the status write is a compare-and-swap on the resourceVersion read: a pass that
//! read an older status writes nothing and decides again. A blue/green move's writes are the
//! exception that needs a record first, and get it: one pass records the move in status, only
//! the next ones carry it out.

mod apply;
pub mod config;
pub mod controller;
mod guard;
mod handover;
mod observe;
mod report;

use crate::Error;
use crate::context::Context;
use crate::features::{Feature, Features};
use ferry_api::ExtendedStatefulSet;
use ferry_engine::extended::decision::{Input, Recheck};
use ferry_engine::extended::plan::plan;
use guard::{Guarded, guard};
use k8s_openapi::jiff::Timestamp;
use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};
use report::Written;
use std::sync::Arc;
use std::time::Duration;

/// While an update is under way, look again this often (pods' readiness, watch times).
const UPDATING_RECHECK: Duration = Duration::from_secs(3);
/// While a replica moves between versions (it is down): its claims and volumes are not watched.
const MOVING_RECHECK: Duration = Duration::from_millis(300);
const RECHECK: Duration = Duration::from_secs(120);
/// Refused at its start over claims already here (not watched): look again this often.
const REFUSED_RECHECK: Duration = Duration::from_secs(10);
/// A status write refused because the object changed since it was read: read it again soon.
const STALE_RETRY: Duration = Duration::from_millis(200);

pub async fn reconcile(ests: Arc<ExtendedStatefulSet>, ctx: Arc<Context>) -> Result<Action, Error> {
    let namespace = ests.namespace().ok_or_else(|| Error::NotNamespaced {
        kind: "ExtendedStatefulSet",
        name: ests.name_any(),
    })?;
    let api = Api::<ExtendedStatefulSet>::namespaced(ctx.client.clone(), &namespace);
    let previous = match guard(&ests, &api, &ctx).await? {
        Guarded::Go(previous) => previous,
        Guarded::Stop(action) => return Ok(action),
    };
    let configuration = observe::configuration(&ests, &ctx, &namespace).await?;
    let config_digest = configuration.digest.as_deref();
    let observation = observe::observe(&ctx, &ests, &namespace, config_digest, &previous).await?;
    let hooks_off =
        (!ctx.features.enabled(Feature::UpdateHooks)).then(|| Features::switched_off(Feature::UpdateHooks));
    let service_off = (!ctx.features.enabled(Feature::BlueGreenService))
        .then(|| Features::switched_off(Feature::BlueGreenService));
    let input = Input {
        ests: &ests,
        previous: &previous,
        config_digest,
        hooks_off: hooks_off.as_deref(),
        service_off: service_off.as_deref(),
        problems: configuration.problems,
        now: Timestamp::now().as_second(),
    };
    let decision = plan(input, &observation);
    let applied = apply::apply(&ctx, &ests, &namespace, &decision.actions).await?;
    let status = decision.status(&ests, &applied.refused);
    if report::write_status(&api, &ests, status).await? == Written::Stale {
        // It read an older status: decide again from the newer object.
        return Ok(Action::requeue(STALE_RETRY));
    }
    report::publish(
        &ctx,
        &ests,
        applied.notices.into_iter().chain(decision.notices).collect(),
    )
    .await;
    Ok(Action::requeue(match decision.recheck {
        Recheck::Soon => UPDATING_RECHECK,
        Recheck::Moving => MOVING_RECHECK,
        Recheck::Idle => RECHECK,
        Recheck::Refused => REFUSED_RECHECK,
    }))
}

pub fn error_policy(ests: Arc<ExtendedStatefulSet>, error: &Error, _ctx: Arc<Context>) -> Action {
    tracing::warn!(extended_stateful_set = %ests.name_any(), %error, "ExtendedStatefulSet: retrying");
    Action::requeue(Duration::from_secs(5))
}
