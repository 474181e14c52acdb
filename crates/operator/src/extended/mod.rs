//! The ExtendedStatefulSet controller: reads the ExtendedStatefulSet, its StatefulSets and pods,
//! the configuration its pods reference and the VolumeResizes in the namespace; plans with
//! `ferry_engine::extended`; applies the StatefulSets (server-side apply under Ferry's field
//! manager, so edits to them are put back), starts a VolumeResize per StatefulSet for a changed
//! volume claim template, and writes status.

pub mod config;

use crate::context::Context;
use crate::events::{self, Notice};
use crate::features::{Feature, Features};
use crate::{Error, writes};
use ferry_api::listed::Listing;
use ferry_api::names::FIELD_MANAGER;
use ferry_api::{ExtendedStatefulSet, ExtendedStatefulSetStatus, UnknownUpdateStep, VolumeResizeSpec};
use ferry_engine::extended::config::{ConfigRef, digest, references};
use ferry_engine::extended::desired::{
    ANNOTATION_STALE, ANNOTATION_VERSION, Desired, LABEL_EXTENDED, stateful_sets, version_digest,
    with_partition,
};
use ferry_engine::extended::rollout::{self, Hook, JobState, Observed, Progress, Rules, Step};
use ferry_engine::extended::status::status_of;
use ferry_engine::trigger::resize_name;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::{Api, Resource, ResourceExt};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

/// The finalizer older Ferry versions put on an ExtendedStatefulSet referencing configuration;
/// removed wherever found.
pub const FINALIZER_RELEASE_CONFIG: &str = "ferry.dev/release-config";
/// While an update is under way, look again this often (pods' readiness, watch times).
const UPDATING_RECHECK: Duration = Duration::from_secs(3);
const RECHECK: Duration = Duration::from_secs(120);
/// A status write refused because the object changed since it was read: read it again soon.
const STALE_RETRY: Duration = Duration::from_millis(200);
/// How often an ExtendedStatefulSet at an unknown step is looked at again (an upgrade may be on its way).
const UNKNOWN_STEP_RECHECK: Duration = Duration::from_secs(60);

fn rules(ests: &ExtendedStatefulSet) -> Rules {
    let strategy = ests.spec.update_strategy.clone().unwrap_or_default();
    let seconds = |text: Option<&String>, default: i64| {
        text.and_then(|text| ferry_engine::duration::seconds(text))
            .unwrap_or(default)
    };
    Rules {
        canaries: strategy.canaries.unwrap_or(0),
        canary_watch_seconds: seconds(
            strategy.canary_watch_time.as_ref(),
            Rules::DEFAULT_CANARY_WATCH_SECONDS,
        ),
        update_watch_seconds: seconds(
            strategy.update_watch_time.as_ref(),
            Rules::DEFAULT_UPDATE_WATCH_SECONDS,
        ),
        update_not_ready: strategy.update_not_ready.unwrap_or(false),
        pre_update: ests.spec.pre_update.is_some(),
        post_update: ests.spec.post_update.is_some(),
    }
}

fn job_name(ests: &str, hook: Hook, version: i64) -> String {
    match hook {
        Hook::PreUpdate => format!("{ests}-pre-update-v{version}"),
        Hook::PostUpdate => format!("{ests}-post-update-v{version}"),
    }
}

async fn job_state(jobs: &Api<Job>, name: &str) -> Result<JobState, Error> {
    let Some(job) = jobs.get_opt(name).await? else {
        return Ok(JobState::Absent);
    };
    let holds = |type_: &str| {
        job.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == type_ && c.status == "True"))
    };
    Ok(if holds("Complete") {
        JobState::Succeeded
    } else if holds("Failed") {
        JobState::Failed
    } else {
        JobState::Running
    })
}

/// Creates the version's pre- or post-update Job from its template, owned by the
/// ExtendedStatefulSet; without a `backoffLimit` of its own, `retryCount` (default 0) is it.
async fn create_job(
    jobs: &Api<Job>,
    ests: &ExtendedStatefulSet,
    hook: Hook,
    version: i64,
) -> Result<(), Error> {
    let Some(template) = (match hook {
        Hook::PreUpdate => ests.spec.pre_update.clone(),
        Hook::PostUpdate => ests.spec.post_update.clone(),
    }) else {
        return Ok(());
    };
    let name = ests.name_any();
    let mut spec = template.spec.unwrap_or_default();
    if spec.backoff_limit.is_none() {
        spec.backoff_limit = Some(
            ests.spec
                .update_strategy
                .as_ref()
                .and_then(|s| s.retry_count)
                .unwrap_or(0),
        );
    }
    let mut metadata = template.metadata.unwrap_or_default();
    metadata.name = Some(job_name(&name, hook, version));
    metadata.namespace = ests.namespace();
    metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(LABEL_EXTENDED.to_string(), name.clone());
    metadata.owner_references = ests.controller_owner_ref(&()).map(|owner| vec![owner]);
    let job = Job {
        metadata,
        spec: Some(spec),
        status: None,
    };
    match jobs.create(&writes::create(), &job).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
        Err(error) => Err(error.into()),
    }
}

fn progress_of(status: Option<&ExtendedStatefulSetStatus>) -> Result<Progress, UnknownUpdateStep> {
    Ok(Progress {
        version: status.map_or(0, |s| s.version),
        digest: status.and_then(|s| s.template_digest.clone()),
        step: Step::from_status(status.and_then(|s| s.update_step.as_deref()))?,
        step_started: status
            .and_then(|s| s.step_started_at.as_ref())
            .map(|t| t.0.as_second()),
        stale_at: status.and_then(|s| s.stale_at.clone()),
    })
}

/// One StatefulSet as the rollout sees it: pods on its newest revision count only once the
/// StatefulSet controller has seen the latest spec (before that its revision is the old one).
async fn observe(pods: &Api<Pod>, desired: &Desired, live: Option<&StatefulSet>) -> Result<Observed, Error> {
    let Some(live) = live else {
        return Ok(Observed {
            name: desired.name.clone(),
            exists: false,
            replicas: desired.replicas,
            live_replicas: 0,
            ready: 0,
            updated_ready: 0,
            updated: 0,
        });
    };
    let status = live.status.clone().unwrap_or_default();
    let current = status.observed_generation == live.metadata.generation;
    let selector = live
        .spec
        .as_ref()
        .and_then(|spec| spec.selector.match_labels.clone())
        .unwrap_or_default();
    let selector_text: Vec<String> = selector.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let mut updated = 0;
    let mut updated_ready = 0;
    if current && let Some(revision) = status.update_revision.as_deref() {
        for pod in pods
            .list(&ListParams::default().labels(&selector_text.join(",")))
            .await?
            .items
        {
            let owned = pod
                .owner_references()
                .iter()
                .any(|o| o.controller == Some(true) && Some(&o.uid) == live.metadata.uid.as_ref());
            if owned && pod.labels().get("controller-revision-hash").map(String::as_str) == Some(revision) {
                updated += 1;
                if ferry_engine::pods::ready(&pod) && pod.metadata.deletion_timestamp.is_none() {
                    updated_ready += 1;
                }
            }
        }
    }
    Ok(Observed {
        name: desired.name.clone(),
        exists: true,
        replicas: desired.replicas,
        live_replicas: crate::ordinals::replicas(live),
        ready: status.ready_replicas.unwrap_or(0),
        updated_ready,
        updated,
    })
}

/// Why the resize named `resize` cannot be made, when one by that name is already there: it ended
/// (nothing is at work on the StatefulSet, see `listing::working_on`), or cannot be read by this
/// Ferry.
fn ended_under_name(resizes: &Listing, resize: &str, stateful_set: &str) -> Option<String> {
    if let Some(ended) = resizes.readable.iter().find(|r| r.name_any() == resize) {
        return Some(format!(
            "VolumeResize {resize} of {stateful_set} ended {:?}; delete it to try again",
            ended.phase()
        ));
    }
    resizes
        .unreadable
        .iter()
        .find(|r| r.name() == resize)
        .map(|unreadable| {
            format!(
                "VolumeResize {resize} of {stateful_set} cannot be read by this Ferry ({}); delete it to try again",
                unreadable.error
            )
        })
}

/// Guard → configuration → observe → volume changes → plan (the engine's rollout) → hook Job →
/// apply → prune zones → status (a compare-and-swap) → Events.
pub async fn reconcile(ests: Arc<ExtendedStatefulSet>, ctx: Arc<Context>) -> Result<Action, Error> {
    let namespace = ests.namespace().ok_or_else(|| Error::NotNamespaced {
        kind: "ExtendedStatefulSet",
        name: ests.name_any(),
    })?;
    let name = ests.name_any();
    let client = &ctx.client;
    let api = Api::<ExtendedStatefulSet>::namespaced(client.clone(), &namespace);
    let previous = match guard(&ests, &api, &ctx).await? {
        Guarded::Go(previous) => previous,
        Guarded::Stop(action) => return Ok(action),
    };
    let configuration = configuration(&ests, &ctx, &namespace).await?;
    let version = version_digest(&ests, configuration.digest.as_deref());
    let desired = stateful_sets(&ests, configuration.digest.as_deref());
    let sets = Api::<StatefulSet>::namespaced(client.clone(), &namespace);
    let pods = Api::<Pod>::namespaced(client.clone(), &namespace);
    // One this Ferry cannot read does not fail the list; one that may be at work on a StatefulSet
    // counts as running there (no second resize beside it).
    let resizes = crate::listing::list(client, &namespace).await?;
    let mut live: BTreeMap<String, StatefulSet> = BTreeMap::new();
    let mut observed = Vec::new();
    for wanted in &desired {
        let found = sets.get_opt(&wanted.name).await?;
        observed.push(observe(&pods, wanted, found.as_ref()).await?);
        if let Some(found) = found {
            live.insert(wanted.name.clone(), found);
        }
    }
    let mut report = Report::default();
    if !configuration.unfollowed.is_empty() {
        report.problems.push(format!(
            "a change to Secret {} does not roll the pods: {}",
            configuration.unfollowed.join(", "),
            Features::switched_off(Feature::SecretReferences)
        ));
    }
    let volumes = volume_changes(&ests, &ctx, &namespace, &desired, &live, &resizes, &mut report).await?;
    let now = Timestamp::now().as_second();
    let jobs = Api::<Job>::namespaced(client.clone(), &namespace);
    let job = match previous.step {
        // (Switched off, no Job is made or read: `jobs` is not granted.)
        _ if !ctx.features.enabled(Feature::UpdateHooks) => JobState::Absent,
        Step::PreUpdate => job_state(&jobs, &job_name(&name, Hook::PreUpdate, previous.version)).await?,
        Step::PostUpdate => job_state(&jobs, &job_name(&name, Hook::PostUpdate, previous.version)).await?,
        _ => JobState::Absent,
    };
    let plan = rollout::next(&previous, &version, &rules(&ests), &observed, job, now);
    report.notices.extend(plan.notices.iter().cloned());
    hook_job(&ests, &ctx, &jobs, &plan, &mut report).await?;
    if plan.apply {
        apply_sets(&sets, &desired, &live, &volumes.busy, &plan, &mut report).await?;
    }
    prune_zones(&sets, &ests, &desired, &volumes.busy).await?;
    let status = status_of(
        &ests,
        &plan,
        &observed,
        &desired,
        volumes.resizes,
        &report.problems,
        now,
    );
    if let Some(action) = write_status(&api, &ests, status).await? {
        return Ok(action);
    }
    let reference = ests.object_ref(&());
    for (warning, reason, message) in report.notices {
        events::publish(
            &ctx.recorder,
            &Notice {
                warning,
                reason,
                action: "Update",
                note: message,
            },
            std::slice::from_ref(&reference),
        )
        .await;
    }
    Ok(Action::requeue(match plan.progress.step {
        Step::Canaries | Step::Rest | Step::PreUpdate | Step::PostUpdate => UPDATING_RECHECK,
        _ if !volumes.busy.is_empty() || plan.waiting.is_some() => UPDATING_RECHECK,
        _ => RECHECK,
    }))
}

/// What a reconcile says: Events (warning, reason, message) and the problems its status lists.
#[derive(Default)]
struct Report {
    notices: Vec<(bool, &'static str, String)>,
    problems: Vec<String>,
}

/// Whether the reconcile goes on (from the update progress recorded) or stops here.
enum Guarded {
    Go(Progress),
    Stop(Action),
}

/// An older Ferry's finalizer goes; a deleted one is left to its owner references; a step this
/// Ferry does not know is not guessed at (taken for `Done`, it would roll the next version over an
/// update a newer Ferry is in the middle of): nothing is touched.
async fn guard(
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
    match progress_of(ests.status.as_ref()) {
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

/// The configuration the pods follow: its digest (when its changes roll the pods), and the Secrets
/// left unfollowed because the feature is switched off.
struct Configuration {
    digest: Option<String>,
    unfollowed: Vec<String>,
}

/// Configuration: the referenced ConfigMaps and Secrets marked and read into a digest (only when
/// their changes roll the pods).
async fn configuration(
    ests: &ExtendedStatefulSet,
    ctx: &Context,
    namespace: &str,
) -> Result<Configuration, Error> {
    let client = &ctx.client;
    let pod_spec = ests.spec.template.spec.template.spec.clone().unwrap_or_default();
    let mut referenced = if ests.spec.update_on_config_change {
        references(&pod_spec)
    } else {
        BTreeSet::new()
    };
    // Switched off: Secrets are neither read nor marked; their changes do not roll the pods.
    let secrets_followed = ctx.features.enabled(Feature::SecretReferences);
    let unfollowed: Vec<String> = referenced
        .iter()
        .filter_map(|reference| match reference {
            ConfigRef::Secret(secret) if !secrets_followed => Some(secret.clone()),
            _ => None,
        })
        .collect();
    referenced.retain(|reference| secrets_followed || !matches!(reference, ConfigRef::Secret(_)));
    config::protect(client, namespace, &ests.name_any(), &referenced, secrets_followed).await?;
    let digest = if ests.spec.update_on_config_change {
        Some(digest(
            &ctx.config_digest_key,
            &config::contents(client, namespace, &referenced).await?,
        ))
    } else {
        None
    };
    Ok(Configuration { digest, unfollowed })
}

/// The StatefulSets a VolumeResize works on (busy: left alone until it is done), and the resize
/// of each.
struct VolumeChanges {
    busy: BTreeSet<String>,
    resizes: BTreeMap<String, String>,
}

/// Volume claim templates: a change is a VolumeResize per StatefulSet; the StatefulSet keeps its
/// live templates until the resize re-creates it with the new ones.
async fn volume_changes(
    ests: &ExtendedStatefulSet,
    ctx: &Context,
    namespace: &str,
    desired: &[Desired],
    live: &BTreeMap<String, StatefulSet>,
    resizes: &Listing,
    report: &mut Report,
) -> Result<VolumeChanges, Error> {
    let name = ests.name_any();
    let mut changed = VolumeChanges {
        busy: BTreeSet::new(),
        resizes: BTreeMap::new(),
    };
    for wanted in desired {
        if let Some(running) = crate::listing::working_on(resizes, &wanted.name) {
            changed.busy.insert(wanted.name.clone());
            changed.resizes.insert(wanted.name.clone(), running);
            continue;
        }
        let Some(current) = live.get(&wanted.name) else {
            continue;
        };
        let changes = match ferry_engine::extended::volumes::changes(current, &wanted.object) {
            Ok(changes) if changes.is_empty() => continue,
            Err(message) => {
                report.problems.push(format!("{}: {message}", wanted.name));
                continue;
            }
            Ok(changes) => changes,
        };
        let resize = resize_name(&wanted.name, &current.uid().unwrap_or_default(), &changes);
        changed.resizes.insert(wanted.name.clone(), resize.clone());
        if let Some(problem) = ended_under_name(resizes, &resize, &wanted.name) {
            report.problems.push(problem);
            continue;
        }
        let origin = crate::resize_create::Origin {
            trigger: "extended-stateful-set",
            stateful_set: &wanted.name,
            asked_by: Some((LABEL_EXTENDED, &name)),
        };
        let spec = VolumeResizeSpec::for_volumes(&wanted.name, changes);
        if crate::resize_create::create_resize(&ctx.client, namespace, &resize, spec, &origin).await?
            == crate::resize_create::Created::New
        {
            report.notices.push((
                false,
                "VolumeResizeStarted",
                format!(
                    "volume claim templates of {} change: VolumeResize {resize}",
                    wanted.name
                ),
            ));
        }
        changed.busy.insert(wanted.name.clone());
    }
    Ok(changed)
}

/// The hook Job the rollout asks for, created; refused (or switched off), it is a problem and the
/// rollout waits at the hook: an update never goes ahead without the Job it asked for.
async fn hook_job(
    ests: &ExtendedStatefulSet,
    ctx: &Context,
    jobs: &Api<Job>,
    plan: &rollout::Plan,
    report: &mut Report,
) -> Result<(), Error> {
    let Some(hook) = plan.create_job else {
        return Ok(());
    };
    let job = job_name(&ests.name_any(), hook, plan.progress.version);
    if !ctx.features.enabled(Feature::UpdateHooks) {
        report.problems.push(format!(
            "{job}: not created: {}",
            Features::switched_off(Feature::UpdateHooks)
        ));
        return Ok(());
    }
    if let Err(error) = create_job(jobs, ests, hook, plan.progress.version).await {
        match error.refusal() {
            Some(message) => report.problems.push(format!("{job}: {message}")),
            None => return Err(error),
        }
    }
    Ok(())
}

/// Each desired StatefulSet not busy with a resize, applied (server-side) with its partition, its
/// live volume claim templates and the version annotations; a refusal is a problem, not an error.
async fn apply_sets(
    sets: &Api<StatefulSet>,
    desired: &[Desired],
    live: &BTreeMap<String, StatefulSet>,
    busy: &BTreeSet<String>,
    plan: &rollout::Plan,
    report: &mut Report,
) -> Result<(), Error> {
    for wanted in desired {
        if busy.contains(&wanted.name) {
            continue;
        }
        let partition = plan
            .partitions
            .iter()
            .find(|(sts, _)| *sts == wanted.name)
            .map_or(0, |(_, p)| *p);
        let mut object = with_partition(wanted.object.clone(), partition);
        if let (Some(current), Some(spec)) = (live.get(&wanted.name), object.spec.as_mut()) {
            spec.volume_claim_templates = current
                .spec
                .as_ref()
                .and_then(|s| s.volume_claim_templates.clone());
        }
        let annotations = object.metadata.annotations.get_or_insert_with(BTreeMap::new);
        annotations.insert(ANNOTATION_VERSION.to_string(), plan.progress.version.to_string());
        if plan.progress.step == Step::Stale {
            annotations.insert(ANNOTATION_STALE.to_string(), plan.progress.version.to_string());
        }
        let mut body = serde_json::to_value(&object).map_err(|source| Error::Serialize {
            what: "StatefulSet",
            source,
        })?;
        body["apiVersion"] = "apps/v1".into();
        body["kind"] = "StatefulSet".into();
        if let Err(error) = sets
            .patch(
                &wanted.name,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(&body),
            )
            .await
        {
            let refused = Error::from(error);
            match refused.refusal() {
                Some(message) => report.problems.push(format!("{}: {message}", wanted.name)),
                None => return Err(refused),
            }
        }
    }
    Ok(())
}

/// StatefulSets of zones no longer listed (the API server lets zones go only from the end of the
/// list) are drained, then go: scaled to 0 (their controller stops the pods highest ordinal first),
/// deleted once no pod is left. Their claims stay, as with any StatefulSet.
async fn prune_zones(
    sets: &Api<StatefulSet>,
    ests: &ExtendedStatefulSet,
    desired: &[Desired],
    busy: &BTreeSet<String>,
) -> Result<(), Error> {
    let wanted_names: BTreeSet<&str> = desired.iter().map(|d| d.name.as_str()).collect();
    let selector = format!("{LABEL_EXTENDED}={}", ests.name_any());
    for owned in sets.list(&ListParams::default().labels(&selector)).await?.items {
        let ours = owned
            .owner_references()
            .iter()
            .any(|o| Some(&o.uid) == ests.metadata.uid.as_ref());
        let name = owned.name_any();
        if !ours || wanted_names.contains(name.as_str()) || busy.contains(&name) {
            continue;
        }
        let pods_left = owned.status.as_ref().map_or(0, |status| status.replicas);
        if owned.spec.as_ref().and_then(|spec| spec.replicas) != Some(0) {
            let drain = serde_json::json!({"spec": {"replicas": 0}});
            sets.patch(&name, &writes::patch(), &Patch::Merge(&drain)).await?;
        } else if pods_left == 0 {
            sets.delete(&name, &DeleteParams::background()).await?;
        }
    }
    Ok(())
}

/// The status, written as a compare-and-swap on the resourceVersion this reconcile read: one that
/// read an older status (an update step since changed) must not write it back over the newer one.
/// Refused so, the reconcile decides again from the newer object (the action returned).
async fn write_status(
    api: &Api<ExtendedStatefulSet>,
    ests: &ExtendedStatefulSet,
    status: ExtendedStatefulSetStatus,
) -> Result<Option<Action>, Error> {
    let patch = serde_json::json!({
        "apiVersion": "ferry.dev/v1alpha1", "kind": "ExtendedStatefulSet",
        "metadata": {"resourceVersion": ests.resource_version()},
        "status": status,
    });
    match api
        .patch_status(
            &ests.name_any(),
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&patch),
        )
        .await
        .map_err(Error::from)
    {
        Ok(_) => Ok(None),
        Err(error) if error.is_stale_read() => Ok(Some(Action::requeue(STALE_RETRY))),
        Err(error) => Err(error),
    }
}

pub fn error_policy(ests: Arc<ExtendedStatefulSet>, error: &Error, _ctx: Arc<Context>) -> Action {
    tracing::warn!(extended_stateful_set = %ests.name_any(), %error, "ExtendedStatefulSet: retrying");
    Action::requeue(Duration::from_secs(5))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn listing() -> Listing {
        let object = |name: &str, phase: &str, step: &str| -> kube::api::DynamicObject {
            serde_json::from_value(json!({
                "apiVersion": "ferry.dev/v1alpha1", "kind": "VolumeResize",
                "metadata": {"name": name, "namespace": "ns"},
                "spec": {"statefulSetName": "db", "volumes": [{"name": "data", "size": "2Gi"}]},
                "status": {"phase": phase, "plan": [{"replica": 0, "volume": "data",
                    "claimName": "data-db-0", "targetSize": "2Gi", "step": step}]},
            }))
            .unwrap()
        };
        // `Teleporting`: a row step only a newer Ferry knows.
        Listing::from_objects([
            object("db-resize-failed", "Failed", "RolledBack"),
            object("db-resize-future", "Succeeded", "Teleporting"),
        ])
    }

    #[test]
    fn a_resize_already_there_under_the_name_is_reported_readable_or_not() {
        let listing = listing();
        assert_eq!(listing.unreadable.len(), 1);
        assert!(
            ended_under_name(&listing, "db-resize-failed", "db")
                .is_some_and(|problem| problem.contains("ended Failed"))
        );
        assert!(
            ended_under_name(&listing, "db-resize-future", "db")
                .is_some_and(|problem| problem.contains("cannot be read") && problem.contains("Teleporting"))
        );
        assert_eq!(ended_under_name(&listing, "db-resize-new", "db"), None);
    }
}
