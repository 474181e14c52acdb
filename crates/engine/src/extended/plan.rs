//! The ExtendedStatefulSet's one entry point, [`plan`]: the object, the configuration its pods
//! follow and what the operator read → the actions to take, in order, and the status to write.
//! The operator carries the actions out with one `match` and adds what the API server refused
//! to the status ([`Decision::status`]).

use super::desired::{
    ANNOTATION_STALE, ANNOTATION_VERSION, Desired, stateful_sets, version_digest, with_partition,
};
use super::handover::{Cluster, HandoverAction};
use super::hooks::{hook_job, job_name, job_state};
use super::rollout::{self, Observed, Progress, Rules, Step};
use super::status::status_of;
use crate::trigger::resize_name;
use ferry_api::listed::Listing;
use ferry_api::{
    ExtendedStatefulSet, ExtendedStatefulSetStatus, Handover, UnknownUpdateStep, VolumeResizeSpec,
};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, Service};
use std::collections::{BTreeMap, BTreeSet};

/// What the plan works from besides the cluster.
pub struct Input<'a> {
    pub ests: &'a ExtendedStatefulSet,
    /// The update progress its status records ([`progress`]).
    pub previous: &'a Progress,
    /// The digest of the referenced configuration, when its changes roll the pods.
    pub config_digest: Option<&'a str>,
    /// Why hook Jobs cannot be made, when they cannot (the feature switched off).
    pub hooks_off: Option<&'a str>,
    /// Problems found before planning (configuration left unfollowed), listed in the status.
    pub problems: Vec<String>,
    pub now: i64,
}

/// One live StatefulSet and the pods its selector picks.
#[derive(Debug, Clone, Default)]
pub struct LiveSet {
    pub object: StatefulSet,
    pub pods: Vec<Pod>,
}

/// What the operator read for one ExtendedStatefulSet.
#[derive(Debug, Clone, Default)]
pub struct Observation {
    /// Each desired StatefulSet that exists, by name.
    pub live: BTreeMap<String, LiveSet>,
    /// The StatefulSets labelled as this ExtendedStatefulSet's (those of dropped zones among them).
    pub labelled: Vec<StatefulSet>,
    /// The VolumeResizes of the namespace.
    pub resizes: Listing,
    /// The Job the recorded step waits on ([`super::hooks::job_to_read`]), when there is one.
    pub job: Option<Job>,
    /// Blue/green: the claims and volumes of the replicas that can move next, and the pods.
    pub cluster: Cluster,
    /// Blue/green: the Service `updateStrategy.service` names.
    pub service: Option<Service>,
}

/// One write the plan asks for, in the order they are listed.
#[derive(Debug, Clone, PartialEq)]
pub enum ExtendedAction {
    /// A changed volume claim template of `stateful_set`: its VolumeResize (the StatefulSet is
    /// left alone until it is done).
    CreateVolumeResize {
        stateful_set: String,
        name: String,
        spec: Box<VolumeResizeSpec>,
    },
    /// The current version's pre- or post-update Job.
    CreateHookJob { job: Box<Job> },
    /// A desired StatefulSet, applied server-side: its partition, its live volume claim templates
    /// and the version annotations set.
    ApplyStatefulSet { object: Box<StatefulSet> },
    /// The StatefulSet of a zone no longer listed: scaled to 0 (its controller stops the pods
    /// highest ordinal first).
    DrainStatefulSet { name: String },
    /// A drained one with no pod left: deleted (its claims stay, as with any StatefulSet).
    DeleteStatefulSet { name: String },
    /// Blue/green: the ordinals a version's StatefulSet runs (`ordinals.start`, `replicas`).
    ShapeStatefulSet { name: String, start: i32, replicas: i32 },
    /// Blue/green: one write of a replica's move between versions.
    Handover(HandoverAction),
    /// Blue/green: the Service's selector label `ferry.dev/version` set (`None`: removed).
    SelectVersion {
        service: String,
        version: Option<String>,
    },
}

/// When to look again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recheck {
    /// An update, a resize or a wait is under way: pods' readiness and watch times move.
    Soon,
    /// Nothing under way: only a change (or the periodic look) wakes it.
    Idle,
    /// Blue/green: a replica is moving between versions, down while it moves; each of its steps
    /// waits on a claim or volume no watch reports.
    Moving,
}

/// What to do now, and what the status will say.
#[derive(Debug, Clone)]
pub struct Decision {
    pub actions: Vec<ExtendedAction>,
    /// Events: (warning, reason, message).
    pub notices: Vec<(bool, &'static str, String)>,
    pub recheck: Recheck,
    pub(super) rollout: rollout::Plan,
    pub(super) observed: Vec<Observed>,
    pub(super) desired: Vec<Desired>,
    pub(super) volume_resizes: BTreeMap<String, String>,
    pub(super) problems: Vec<String>,
    /// Blue/green: the move to record (`None`: none under way).
    pub(super) handover: Option<Handover>,
    /// Blue/green: each version's StatefulSet and whether it runs (else from the rollout).
    pub(super) versions: Option<BTreeMap<String, bool>>,
    pub(super) now: i64,
}

impl Decision {
    /// The status to write, with what the API server refused of the actions among its problems.
    pub fn status(&self, ests: &ExtendedStatefulSet, refused: &[String]) -> ExtendedStatefulSetStatus {
        let problems: Vec<String> = self.problems.iter().chain(refused).cloned().collect();
        let mut status = status_of(
            ests,
            &self.rollout,
            &self.observed,
            &self.desired,
            self.volume_resizes.clone(),
            &problems,
            self.now,
        );
        if let Some(versions) = &self.versions {
            status.versions = versions.clone();
        }
        status.handover = self.handover.clone();
        status
    }

    /// The move recorded by this pass (blue/green).
    pub fn handover(&self) -> Option<&Handover> {
        self.handover.as_ref()
    }
}

/// The update progress an ExtendedStatefulSet's status records; an error for a step this Ferry
/// does not know (written by a newer one), which it must not guess at.
pub fn progress(ests: &ExtendedStatefulSet) -> Result<Progress, UnknownUpdateStep> {
    let status = ests.status.as_ref();
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

/// Volume changes → the rollout's next step → hook Job → StatefulSets applied → dropped zones
/// drained and deleted.
pub fn plan(input: Input, observation: &Observation) -> Decision {
    if input
        .ests
        .spec
        .update_strategy
        .as_ref()
        .is_some_and(|strategy| strategy.blue_green())
    {
        return super::blue_green::plan(input, observation);
    }
    let ests = input.ests;
    let desired = stateful_sets(ests, input.config_digest);
    let version = version_digest(ests, input.config_digest);
    let observed: Vec<Observed> = desired
        .iter()
        .map(|wanted| counted(wanted, observation.live.get(&wanted.name)))
        .collect();
    let mut actions = Vec::new();
    let mut problems = input.problems;
    let volumes = volume_changes(&desired, observation, &mut actions, &mut problems);
    let job = job_state(observation.job.as_ref());
    let rollout = rollout::next(input.previous, &version, &rules(ests), &observed, job, input.now);
    actions.extend(hook_actions(ests, &rollout, input.hooks_off, &mut problems));
    if rollout.apply {
        actions.extend(applied_sets(&desired, observation, &volumes.busy, &rollout));
    }
    actions.extend(dropped_zones(ests, &desired, observation, &volumes.busy));
    let recheck = match rollout.progress.step {
        Step::Canaries | Step::Rest | Step::PreUpdate | Step::PostUpdate => Recheck::Soon,
        _ if !volumes.busy.is_empty() || rollout.waiting.is_some() => Recheck::Soon,
        _ => Recheck::Idle,
    };
    Decision {
        actions,
        notices: rollout.notices.clone(),
        recheck,
        rollout,
        observed,
        desired,
        volume_resizes: volumes.resizes,
        problems,
        handover: None,
        versions: None,
        now: input.now,
    }
}

/// The current version's hook Job the rollout asks for, or why it cannot be made (a problem).
pub(super) fn hook_actions(
    ests: &ExtendedStatefulSet,
    rollout: &rollout::Plan,
    hooks_off: Option<&str>,
    problems: &mut Vec<String>,
) -> Vec<ExtendedAction> {
    let Some(hook) = rollout.create_job else {
        return Vec::new();
    };
    let version = rollout.progress.version;
    if let Some(why) = hooks_off {
        let name = ests.metadata.name.as_deref().unwrap_or_default();
        problems.push(format!("{}: not created: {why}", job_name(name, hook, version)));
        return Vec::new();
    }
    hook_job(ests, hook, version)
        .map(|job| ExtendedAction::CreateHookJob { job: Box::new(job) })
        .into_iter()
        .collect()
}

pub(super) fn rules(ests: &ExtendedStatefulSet) -> Rules {
    let strategy = ests.spec.update_strategy.clone().unwrap_or_default();
    let seconds = |text: Option<&String>, default: i64| {
        text.and_then(|text| crate::duration::seconds(text))
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

/// Whether a StatefulSet's pods count yet: only once its controller has seen the latest spec and
/// names the newest revision (before that its revision is the old one). The operator lists the
/// pods only then.
pub fn counts_pods(sts: &StatefulSet) -> bool {
    sts.status.as_ref().is_some_and(|status| {
        status.observed_generation == sts.metadata.generation && status.update_revision.is_some()
    })
}

/// One StatefulSet as the rollout sees it: pods on its newest revision count only once
/// [`counts_pods`].
pub(super) fn counted(desired: &Desired, live: Option<&LiveSet>) -> Observed {
    let Some(live) = live else {
        return Observed {
            name: desired.name.clone(),
            exists: false,
            replicas: desired.replicas,
            live_replicas: 0,
            ready: 0,
            updated_ready: 0,
            updated: 0,
        };
    };
    let sts = &live.object;
    let status = sts.status.clone().unwrap_or_default();
    let revision = status.update_revision.as_deref().filter(|_| counts_pods(sts));
    let on_revision: Vec<&Pod> =
        live.pods
            .iter()
            .filter(|pod| {
                let owned = pod.metadata.owner_references.iter().flatten().any(|owner| {
                    owner.controller == Some(true) && Some(&owner.uid) == sts.metadata.uid.as_ref()
                });
                let hash = pod
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get("controller-revision-hash"));
                owned && revision.is_some() && hash.map(String::as_str) == revision
            })
            .collect();
    let updated_ready = on_revision
        .iter()
        .filter(|pod| crate::pods::ready(pod) && pod.metadata.deletion_timestamp.is_none())
        .count();
    Observed {
        name: desired.name.clone(),
        exists: true,
        replicas: desired.replicas,
        live_replicas: sts.spec.as_ref().and_then(|spec| spec.replicas).unwrap_or(1),
        ready: status.ready_replicas.unwrap_or(0),
        updated_ready: i32::try_from(updated_ready).unwrap_or(i32::MAX),
        updated: i32::try_from(on_revision.len()).unwrap_or(i32::MAX),
    }
}

/// The StatefulSets a VolumeResize works on (busy: left alone until it is done), and the resize
/// of each.
struct VolumeChanges {
    busy: BTreeSet<String>,
    resizes: BTreeMap<String, String>,
}

/// Volume claim templates: a change is a VolumeResize per StatefulSet; the StatefulSet keeps its
/// live templates until the resize re-creates it with the new ones.
fn volume_changes(
    desired: &[Desired],
    observation: &Observation,
    actions: &mut Vec<ExtendedAction>,
    problems: &mut Vec<String>,
) -> VolumeChanges {
    let mut changed = VolumeChanges {
        busy: BTreeSet::new(),
        resizes: BTreeMap::new(),
    };
    for wanted in desired {
        // One this Ferry cannot read that may be at work counts as running there.
        if let Some(running) = observation.resizes.working_on(&wanted.name) {
            changed.busy.insert(wanted.name.clone());
            changed.resizes.insert(wanted.name.clone(), running);
            continue;
        }
        let Some(current) = observation.live.get(&wanted.name) else {
            continue;
        };
        let changes = match super::volumes::changes(&current.object, &wanted.object) {
            Ok(changes) if changes.is_empty() => continue,
            Err(message) => {
                problems.push(format!("{}: {message}", wanted.name));
                continue;
            }
            Ok(changes) => changes,
        };
        let uid = current.object.metadata.uid.clone().unwrap_or_default();
        let resize = resize_name(&wanted.name, &uid, &changes);
        changed.resizes.insert(wanted.name.clone(), resize.clone());
        if let Some(problem) = ended_under_name(&observation.resizes, &resize, &wanted.name) {
            problems.push(problem);
            continue;
        }
        actions.push(ExtendedAction::CreateVolumeResize {
            stateful_set: wanted.name.clone(),
            name: resize,
            spec: Box::new(VolumeResizeSpec::for_volumes(&wanted.name, changes)),
        });
        changed.busy.insert(wanted.name.clone());
    }
    changed
}

/// Why the resize named `resize` cannot be made, when one by that name is already there: it ended
/// (nothing is at work on the StatefulSet, see [`Listing::working_on`]), or cannot be read by this
/// Ferry.
pub(super) fn ended_under_name(resizes: &Listing, resize: &str, stateful_set: &str) -> Option<String> {
    if let Some(ended) = resizes
        .readable
        .iter()
        .find(|r| r.metadata.name.as_deref() == Some(resize))
    {
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

/// Each desired StatefulSet not busy with a resize, with its partition, its live volume claim
/// templates and the version annotations.
fn applied_sets(
    desired: &[Desired],
    observation: &Observation,
    busy: &BTreeSet<String>,
    rollout: &rollout::Plan,
) -> Vec<ExtendedAction> {
    desired
        .iter()
        .filter(|wanted| !busy.contains(&wanted.name))
        .map(|wanted| {
            let partition = rollout
                .partitions
                .iter()
                .find(|(sts, _)| *sts == wanted.name)
                .map_or(0, |(_, p)| *p);
            let mut object = with_partition(wanted.object.clone(), partition);
            if let (Some(current), Some(spec)) = (observation.live.get(&wanted.name), object.spec.as_mut()) {
                spec.volume_claim_templates = current
                    .object
                    .spec
                    .as_ref()
                    .and_then(|s| s.volume_claim_templates.clone());
            }
            let annotations = object.metadata.annotations.get_or_insert_with(BTreeMap::new);
            let version = rollout.progress.version.to_string();
            annotations.insert(ANNOTATION_VERSION.to_string(), version.clone());
            if rollout.progress.step == Step::Stale {
                annotations.insert(ANNOTATION_STALE.to_string(), version);
            }
            ExtendedAction::ApplyStatefulSet {
                object: Box::new(object),
            }
        })
        .collect()
}

/// StatefulSets of zones no longer listed (the API server lets zones go only from the end of the
/// list) are drained, then go once no pod is left.
fn dropped_zones(
    ests: &ExtendedStatefulSet,
    desired: &[Desired],
    observation: &Observation,
    busy: &BTreeSet<String>,
) -> Vec<ExtendedAction> {
    let wanted: BTreeSet<&str> = desired.iter().map(|d| d.name.as_str()).collect();
    let mut actions = Vec::new();
    for owned in &observation.labelled {
        let ours = owned
            .metadata
            .owner_references
            .iter()
            .flatten()
            .any(|o| Some(&o.uid) == ests.metadata.uid.as_ref());
        let name = owned.metadata.name.clone().unwrap_or_default();
        if !ours || wanted.contains(name.as_str()) || busy.contains(&name) {
            continue;
        }
        let pods_left = owned.status.as_ref().map_or(0, |status| status.replicas);
        if owned.spec.as_ref().and_then(|spec| spec.replicas) != Some(0) {
            actions.push(ExtendedAction::DrainStatefulSet { name });
        } else if pods_left == 0 {
            actions.push(ExtendedAction::DeleteStatefulSet { name });
        }
    }
    actions
}

#[cfg(test)]
#[path = "plan_tests.rs"]
pub(in crate::extended) mod tests;
