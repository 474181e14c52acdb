//! The VolumeAutoscaler controller: every interval, for each StatefulSet and volume it governs,
//! read usage (kubelet stats through the node proxy), decide with `ferry_engine::autoscale`, make
//! the grow an ordinary VolumeResize, and write what it saw and did to status. The record of
//! earlier grows lives in status (and is rebuilt from the VolumeResizes it made), so a restarted
//! operator keeps cooldowns and provider limits.

pub mod controller;
pub mod defaults;
mod observe;
mod summaries;

use crate::Error;
use crate::context::Context;
use crate::events::{self, Notice};
use crate::features::{Feature, Features};
use crate::metrics::{ReasonLabels, VolumeLabels};
use ferry_api::names::{FIELD_MANAGER, LABEL_AUTOSCALER_UID};
use ferry_api::{AutoscaledVolumeStatus, VolumeAutoscaler};
use ferry_engine::autoscale::record::{self, Made};
use ferry_engine::autoscale::request::{Grow, resize_name, resize_spec};
use ferry_engine::autoscale::{Reason, Verdict, decide, policy};
use ferry_engine::trigger::template_edit::Governed;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::{Api, Resource, ResourceExt};
pub use observe::Replicas;
use std::sync::Arc;
use std::time::Duration;
pub use summaries::{Summaries, node_summary};

/// How often usage is read when the operator is not told otherwise.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(60);

/// What the autoscaler controller shares across reconciles.
pub struct Autoscaling {
    pub ctx: Arc<Context>,
    pub summaries: Summaries,
    /// How often each autoscaler reads usage and decides.
    pub interval: Duration,
}

/// The Events of one pass, and where they go.
struct Outcome {
    volumes: Vec<AutoscaledVolumeStatus>,
    notices: Vec<(record::Notice, Option<ObjectReference>)>,
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
    let outcome = pass(&autoscaler, &scaling, &namespace, now).await?;
    let status = record::overall(
        autoscaler.status.as_ref(),
        outcome.volumes,
        autoscaler.metadata.generation,
        now,
    );
    let patch = serde_json::json!({
        "apiVersion": "ferry.dev/v1alpha1",
        "kind": "VolumeAutoscaler",
        "status": status,
    });
    Api::<VolumeAutoscaler>::namespaced(scaling.ctx.client.clone(), &namespace)
        .patch_status(
            &autoscaler.name_any(),
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&patch),
        )
        .await?;
    // After the status that remembers them, so a failed write does not repeat them.
    let own = autoscaler.object_ref(&());
    for (notice, stateful_set) in &outcome.notices {
        let mut objects = vec![own.clone()];
        objects.extend(stateful_set.clone());
        events::publish(
            &scaling.ctx.recorder,
            &Notice {
                warning: notice.warning,
                reason: notice.reason,
                action: "Autoscale",
                note: notice.message.clone(),
            },
            &objects,
        )
        .await;
    }
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

fn previous_of<'a>(
    autoscaler: &'a VolumeAutoscaler,
    stateful_set: &str,
    volume: &str,
) -> Option<&'a AutoscaledVolumeStatus> {
    autoscaler.status.as_ref().and_then(|status| {
        status
            .volumes
            .iter()
            .find(|v| v.stateful_set == stateful_set && v.name == volume)
    })
}

async fn pass(
    autoscaler: &VolumeAutoscaler,
    scaling: &Autoscaling,
    namespace: &str,
    now: i64,
) -> Result<Outcome, Error> {
    let client = &scaling.ctx.client;
    let mut outcome = Outcome {
        volumes: Vec::new(),
        notices: Vec::new(),
    };
    let resizes = observe::resizes(client, namespace).await?;
    let stateful_sets = match observe::stateful_sets(client, namespace, autoscaler).await? {
        Ok(found) => found,
        Err(message) => {
            let named = autoscaler.spec.stateful_set_name.clone().unwrap_or_default();
            // Ferry's own resize re-creates the StatefulSet: absent for a moment, not a mistake.
            // (An unreadable one that may be at work on it is assumed to be doing the same.)
            let message = match resizes.working_on(&named) {
                Some(resize) => format!("VolumeResize {resize} is re-creating the StatefulSet"),
                None => message,
            };
            for volume in &autoscaler.spec.volumes {
                let previous = previous_of(autoscaler, &named, &volume.name);
                outcome
                    .volumes
                    .push(record::invalid(previous, &named, &volume.name, message.clone()));
            }
            return Ok(outcome);
        }
    };
    for sts in &stateful_sets {
        let replicas = observe::replicas(client, namespace, sts).await?;
        for volume in &autoscaler.spec.volumes {
            let status = volume_pass(
                autoscaler, scaling, namespace, sts, &replicas, &resizes, volume, now,
            )
            .await?;
            outcome.volumes.push(status.0);
            let reference = sts.object_ref(&());
            outcome.notices.extend(
                status
                    .1
                    .into_iter()
                    .map(|notice| (notice, Some(reference.clone()))),
            );
        }
    }
    Ok(outcome)
}

#[allow(clippy::too_many_arguments)]
async fn volume_pass(
    autoscaler: &VolumeAutoscaler,
    scaling: &Autoscaling,
    namespace: &str,
    sts: &StatefulSet,
    replicas: &Replicas,
    resizes: &ferry_api::listed::Listing,
    volume: &ferry_api::AutoscaledVolume,
    now: i64,
) -> Result<(AutoscaledVolumeStatus, Vec<record::Notice>), Error> {
    let client = &scaling.ctx.client;
    let sts_name = sts.name_any();
    let previous = previous_of(autoscaler, &sts_name, &volume.name);
    let policy = match policy::from_spec(volume) {
        Ok(policy) => policy,
        Err(message) => {
            return Ok((
                record::invalid(previous, &sts_name, &volume.name, message),
                vec![],
            ));
        }
    };
    // Switched off: no usage is read (and `nodes/proxy` is not granted), so nothing is decided.
    if !scaling.ctx.features.enabled(Feature::KubeletStats) {
        let why = Features::switched_off(Feature::KubeletStats);
        return Ok((
            record::usage_not_read(previous, &sts_name, &volume.name, why),
            vec![],
        ));
    }
    let template_size = match observe::template_size(sts, &volume.name) {
        Ok(size) => size,
        Err(message) => {
            return Ok((
                record::invalid(previous, &sts_name, &volume.name, message),
                vec![],
            ));
        }
    };
    let (claims, largest_claim) =
        observe::claims(client, namespace, &sts_name, &volume.name, &replicas.ordinals).await?;
    let readings = observe::usage(&scaling.summaries, namespace, &replicas.pods, &claims).await;
    let uid = autoscaler.uid().unwrap_or_default();
    let situation = observe::situation(observe::Facts {
        sts: &sts_name,
        volume: &volume.name,
        current_size: template_size.max(largest_claim),
        replicas,
        readings,
        resizes,
        recorded_history: previous
            .map(|p| p.history.iter().map(|at| at.0.as_second()).collect())
            .unwrap_or_default(),
        now,
    });
    let verdict = decide(&policy, &situation);
    let metric_labels = VolumeLabels {
        namespace: namespace.to_string(),
        autoscaler: autoscaler.name_any(),
        stateful_set: sts_name.clone(),
        volume: volume.name.clone(),
    };
    let fullest = situation
        .readings
        .iter()
        .filter(|r| r.capacity_bytes > 0)
        .map(|r| r.used_bytes as f64 / r.capacity_bytes as f64)
        .fold(None, |most: Option<f64>, ratio| {
            Some(most.map_or(ratio, |m| m.max(ratio)))
        });
    if let Some(ratio) = fullest {
        scaling
            .ctx
            .metrics
            .autoscale_usage_ratio
            .get_or_create(&metric_labels)
            .set(ratio);
    }

    let mut made_name = None;
    match &verdict {
        Verdict::Grow {
            to, reason, replicas, ..
        } => {
            let grow = Grow {
                autoscaler_uid: &uid,
                stateful_set: &sts_name,
                volume: &volume.name,
                to_bytes: *to,
                reason: *reason,
                strategy: volume.strategy.unwrap_or_default(),
                previous_grow: situation.history.last().copied(),
            };
            let name = resize_name(&grow);
            create_resize(scaling, namespace, &name, &grow, &uid).await?;
            if *reason == Reason::Rescue {
                tracing::warn!(stateful_set = %sts_name, volume = %volume.name, ?replicas, resize = %name,
                    "rescue: growing a full volume of a crashing replica; the Ready gate does not apply to this resize");
            } else {
                tracing::info!(stateful_set = %sts_name, volume = %volume.name, ?replicas, resize = %name, reason = reason.label(), "autoscale: growing");
            }
            scaling
                .ctx
                .metrics
                .autoscale_resizes
                .get_or_create(&ReasonLabels {
                    reason: reason.label().to_string(),
                })
                .inc();
            made_name = Some(name);
        }
        Verdict::Skip(skip) => {
            scaling
                .ctx
                .metrics
                .autoscale_skipped
                .get_or_create(&ReasonLabels {
                    reason: skip.label().to_string(),
                })
                .inc();
        }
    }
    let made = match (&verdict, &made_name) {
        (Verdict::Grow { to, .. }, Some(name)) => Some(Made {
            resize: name,
            from: situation.current_size,
            to: *to,
        }),
        _ => None,
    };
    Ok(record::record(
        previous,
        &sts_name,
        &volume.name,
        &policy,
        &situation,
        &verdict,
        made.as_ref(),
    ))
}

/// Creates the grow's VolumeResize; one already there under the same name is this same grow.
async fn create_resize(
    scaling: &Autoscaling,
    namespace: &str,
    name: &str,
    grow: &Grow<'_>,
    autoscaler_uid: &str,
) -> Result<(), Error> {
    let origin = crate::resize_create::Origin {
        trigger: observe::TRIGGER_AUTOSCALE,
        stateful_set: grow.stateful_set,
        asked_by: Some((LABEL_AUTOSCALER_UID, autoscaler_uid)),
    };
    crate::resize_create::create_resize(&scaling.ctx.client, namespace, name, resize_spec(grow), &origin)
        .await?;
    Ok(())
}

pub fn error_policy(autoscaler: Arc<VolumeAutoscaler>, error: &Error, scaling: Arc<Autoscaling>) -> Action {
    tracing::warn!(autoscaler = %autoscaler.name_any(), %error, "VolumeAutoscaler: retrying");
    Action::requeue(scaling.interval.min(Duration::from_secs(10)))
}

/// The templates of StatefulSet `name` (with `labels`) that the autoscalers given govern:
/// template → VolumeAutoscaler.
pub fn governed_templates(
    autoscalers: &[VolumeAutoscaler],
    name: &str,
    labels: &std::collections::BTreeMap<String, String>,
) -> std::collections::BTreeMap<String, String> {
    use kube::core::{Selector, SelectorExt};
    autoscalers
        .iter()
        .filter(|vas| match (&vas.spec.stateful_set_name, &vas.spec.selector) {
            (Some(named), _) => named == name,
            (None, Some(selector)) => {
                Selector::try_from(selector.clone()).is_ok_and(|selector| selector.matches(labels))
            }
            (None, None) => false,
        })
        .flat_map(|vas| {
            vas.spec
                .volumes
                .iter()
                .map(|volume| (volume.name.clone(), vas.name_any()))
        })
        .collect()
}

/// The templates of a StatefulSet autoscalers govern, read from the API server; unknown (and a
/// warning in the log) if they cannot be read within 2 s: the webhook then keeps every shrink aside.
pub async fn governed_templates_of(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    labels: &std::collections::BTreeMap<String, String>,
) -> Governed {
    let api = Api::<VolumeAutoscaler>::namespaced(client.clone(), namespace);
    match tokio::time::timeout(Duration::from_secs(2), api.list(&Default::default())).await {
        Ok(Ok(list)) => Governed::Known(governed_templates(&list.items, name, labels)),
        Ok(Err(error)) => {
            tracing::warn!(%error, "cannot read VolumeAutoscalers for a template edit; shrinks kept aside");
            Governed::Unknown(error.to_string())
        }
        Err(_) => {
            tracing::warn!("VolumeAutoscalers not read within 2s for a template edit; shrinks kept aside");
            Governed::Unknown("not read within 2 s".to_string())
        }
    }
}
