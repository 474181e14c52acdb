//! The ExtendedStatefulSet's one entry point, [`plan`]: the object, the configuration its pods
//! follow and what the operator read → the actions to take, in order, and the status to write.
//! The operator carries the actions out with one `match` and adds what the API server refused
//! to the status ([`Decision::status`]).

use super::action::ExtendedAction;
use super::decision::{Decision, Input, Recheck};
use super::desired::{
    ANNOTATION_STALE, ANNOTATION_VERSION, Desired, stateful_sets, version_digest, with_partition,
};
use super::existing::Start;
use super::hooks::{hook_actions, job_state};
use super::observed::{Observation, counted};
use super::rollout::{self, Observed, Progress, Step, rules};
use super::volumes::ended_under_name;
use crate::trigger::resize_name;
use ferry_api::{ExtendedStatefulSet, RequestedVolume, UnknownUpdateStep, VolumeResizeSpec};
use std::collections::{BTreeMap, BTreeSet};

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

/// The claims already here at a start (see [`existing`](super::existing)) → volume changes → the
/// rollout's next step → hook Job → StatefulSets applied → dropped zones drained and deleted.
pub fn plan(input: Input, observation: &Observation) -> Decision {
    let start = observation
        .existing
        .as_ref()
        .filter(|_| input.previous.digest.is_none())
        .map_or(Start::Fresh, |existing| {
            super::existing::start(input.ests, existing)
        });
    let found_version;
    let mut notices = Vec::new();
    let input = match start {
        Start::Refused(problem) => return refused(input, observation, problem),
        Start::Fresh => input,
        Start::AtVersion(version) => {
            // The rollout starts the version after the one recorded: this one.
            found_version = Progress {
                version: version - 1,
                ..input.previous.clone()
            };
            notices.push((
                false,
                "ClaimsFound",
                format!("version {version}'s claims are here: its StatefulSets start on them"),
            ));
            Input {
                previous: &found_version,
                ..input
            }
        }
    };
    let mut decision = if input
        .ests
        .spec
        .update_strategy
        .as_ref()
        .is_some_and(|strategy| strategy.blue_green())
    {
        super::blue_green::plan(input, observation)
    } else {
        rolling(input, observation)
    };
    decision.notices.extend(notices);
    decision
}

/// Nothing is made or changed: the status says why.
fn refused(input: Input, observation: &Observation, problem: String) -> Decision {
    let desired = stateful_sets(input.ests, input.config_digest);
    let observed = desired
        .iter()
        .map(|wanted| counted(wanted, observation.live.get(&wanted.name)))
        .collect();
    let mut problems = input.problems;
    problems.push(problem);
    Decision {
        actions: Vec::new(),
        notices: Vec::new(),
        recheck: Recheck::Refused,
        rollout: rollout::Plan {
            progress: input.previous.clone(),
            apply: false,
            partitions: Vec::new(),
            waiting: None,
            notices: Vec::new(),
            create_job: None,
        },
        observed,
        desired,
        volume_resizes: BTreeMap::new(),
        volume_claim_templates: super::volumes::recorded(input.ests),
        problems,
        handover: None,
        versions: None,
        now: input.now,
    }
}

/// The rolling plan (`updateStrategy.type: RollingUpdate`).
fn rolling(input: Input, observation: &Observation) -> Decision {
    let ests = input.ests;
    let desired = stateful_sets(ests, input.config_digest);
    let version = version_digest(ests, input.config_digest);
    let observed: Vec<Observed> = desired
        .iter()
        .map(|wanted| counted(wanted, observation.live.get(&wanted.name)))
        .collect();
    let mut actions = Vec::new();
    let mut problems = input.problems;
    let members_ready = observed.iter().all(|sts| sts.members_down() == 0);
    let taken = super::volumes::recorded(ests);
    let volumes = volume_changes(
        &desired,
        observation,
        members_ready,
        &taken,
        &mut actions,
        &mut problems,
    );
    let job = job_state(observation.job.as_ref());
    let rollout = rollout::next(input.previous, &version, &rules(ests), &observed, job, input.now);
    actions.extend(hook_actions(ests, &rollout, input.hooks_off, &mut problems));
    if rollout.apply {
        actions.extend(applied_sets(&desired, observation, &volumes.busy, &rollout));
    }
    actions.extend(dropped_zones(ests, &desired, observation, &volumes.busy));
    let volume_claim_templates = taken_now(&taken, &desired, observation);
    let recheck = match rollout.progress.step {
        Step::Canaries | Step::Rest | Step::PreUpdate | Step::PostUpdate => Recheck::Soon,
        _ if !volumes.busy.is_empty() || !volumes.waiting.is_empty() || rollout.waiting.is_some() => {
            Recheck::Soon
        }
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
        volume_claim_templates,
        problems,
        handover: None,
        versions: None,
        now: input.now,
    }
}

/// The StatefulSets a VolumeResize works on (busy: left alone until it is done), and the resize
/// of each.
struct VolumeChanges {
    busy: BTreeSet<String>,
    resizes: BTreeMap<String, String>,
    /// StatefulSets whose volumes change once the one at work is done.
    waiting: Vec<String>,
}

/// Volume claim templates: a change is a VolumeResize per StatefulSet; the StatefulSet keeps its
/// live templates until the resize re-creates it with the new ones. One StatefulSet (zone) at a
/// time, each once every member is Ready: each resize takes its own replicas down one at a time,
/// and resizes of every zone at once would take a member of each.
fn volume_changes(
    desired: &[Desired],
    observation: &Observation,
    members_ready: bool,
    taken: &BTreeMap<String, RequestedVolume>,
    actions: &mut Vec<ExtendedAction>,
    problems: &mut Vec<String>,
) -> VolumeChanges {
    let mut changed = VolumeChanges {
        busy: BTreeSet::new(),
        resizes: BTreeMap::new(),
        waiting: Vec::new(),
    };
    let mut one_at_work = desired
        .iter()
        .any(|wanted| observation.resizes.working_on(&wanted.name).is_some());
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
        let changes = match super::volumes::changes(&current.object, &wanted.object, taken) {
            Ok(changes) if changes.is_empty() => continue,
            Err(message) => {
                problems.push(format!("{}: {message}", wanted.name));
                continue;
            }
            Ok(changes) => changes,
        };
        let uid = current.object.metadata.uid.clone().unwrap_or_default();
        let resize = resize_name(&wanted.name, &uid, &changes);
        if let Some(problem) = ended_under_name(&observation.resizes, &resize, &wanted.name) {
            changed.resizes.insert(wanted.name.clone(), resize);
            problems.push(problem);
            continue;
        }
        if one_at_work || !members_ready {
            changed.waiting.push(wanted.name.clone());
            continue;
        }
        one_at_work = true;
        changed.resizes.insert(wanted.name.clone(), resize.clone());
        actions.push(ExtendedAction::CreateVolumeResize {
            stateful_set: wanted.name.clone(),
            name: resize,
            spec: Box::new(VolumeResizeSpec::for_volumes(&wanted.name, changes)),
        });
        changed.busy.insert(wanted.name.clone());
    }
    changed
}

/// The record of the volume claim templates asked for and had by every live StatefulSet.
pub(super) fn taken_now(
    previous: &BTreeMap<String, RequestedVolume>,
    desired: &[Desired],
    observation: &Observation,
) -> BTreeMap<String, RequestedVolume> {
    let Some(first) = desired.first() else {
        return previous.clone();
    };
    let lives: Vec<&k8s_openapi::api::apps::v1::StatefulSet> = desired
        .iter()
        .filter_map(|wanted| observation.live.get(&wanted.name).map(|live| &live.object))
        .collect();
    super::volumes::taken(previous, &first.object, &lives)
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
