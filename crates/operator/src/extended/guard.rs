//! Before anything is read: an older Ferry's finalizer goes, a deleted ExtendedStatefulSet is left
//! to its owner references, and a step this Ferry does not know is not guessed at (taken for
//! `Done`, it would roll the next version over an update a newer Ferry is in the middle of).

use crate::context::Context;
use crate::events::{self, Notice};
use crate::{Error, writes};
use ferry_api::ExtendedStatefulSet;
use ferry_engine::extended::plan::progress;
use ferry_engine::extended::rollout::Progress;
use kube::api::Patch;
use kube::runtime::controller::Action;
use kube::{Api, Resource, ResourceExt};
use std::time::Duration;

/// The finalizer older Ferry versions put on an ExtendedStatefulSet referencing configuration;
/// removed wherever found.
pub const FINALIZER_RELEASE_CONFIG: &str = "ferry.dev/release-config";
/// How often an ExtendedStatefulSet at an unknown step is looked at again (an upgrade may be on
/// its way).
const UNKNOWN_STEP_RECHECK: Duration = Duration::from_secs(60);

/// Whether the reconcile goes on (from the update progress recorded) or stops here.
pub enum Guarded {
    Go(Progress),
    Stop(Action),
}

pub async fn guard(
    ests: &ExtendedStatefulSet,
    api: &Api<ExtendedStatefulSet>,
    ctx: &Context,
) -> Result<Guarded, Error> {
    let name = ests.name_any();
    // A finalizer of an older Ferry made deleting this (and its namespace) wait on Ferry: it goes.
    if ests.finalizers().iter().any(|f| f == FINALIZER_RELEASE_CONFIG) {
        let finalizers: Vec<&String> = ests
            .finalizers()
            .iter()
            .filter(|f| *f != FINALIZER_RELEASE_CONFIG)
            .collect();
        let patch = serde_json::json!({"metadata": {"resourceVersion": ests.resource_version(), "finalizers": finalizers}});
        api.patch(&name, &writes::patch(), &Patch::Merge(&patch)).await?;
        return Ok(Guarded::Stop(Action::requeue(Duration::from_millis(100))));
    }
    if ests.metadata.deletion_timestamp.is_some() {
        // Its StatefulSets go with it (owner references); the webhook no longer counts it as a
        // user of its configuration, whose marks the next reconcile in the namespace removes.
        return Ok(Guarded::Stop(Action::await_change()));
    }
    match progress(ests) {
        Ok(previous) => Ok(Guarded::Go(previous)),
        Err(unknown) => {
            tracing::warn!(extended_stateful_set = %name, %unknown, "ExtendedStatefulSet left as it is");
            events::publish(
                &ctx.recorder,
                &Notice {
                    warning: true,
                    reason: "UnknownUpdateStep",
                    action: "Update",
                    note: format!("{unknown}: left as it is until a Ferry that knows the step runs"),
                },
                &[ests.object_ref(&())],
            )
            .await;
            Ok(Guarded::Stop(Action::requeue(UNKNOWN_STEP_RECHECK)))
        }
    }
}
