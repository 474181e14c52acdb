//! The blue/green plan (`updateStrategy.type: BlueGreen`): each version runs as a StatefulSet of its
//! own (`<base>-v<N>`, see `versions`), and the rollout's steps (pre-update Job, canaries, the
//! rest, post-update Job, stale) are those of a rolling update, with the partition read as the
//! split: ordinals from it up run on the new version. Replicas move one at a time, highest first,
//! each with its volumes (`handover`); a version that goes stale before its post-update Job moves
//! them back. One move at a time in the whole ExtendedStatefulSet, recorded in status before its
//! first write.

use super::desired::{ANNOTATION_STALE, ANNOTATION_VERSION, Desired, stateful_sets, version_digest};
use super::handover::{self, Cluster, HandoverAction, NotYet};
use super::hooks::job_state;
use super::plan::{
    Decision, ExtendedAction, Input, LiveSet, Observation, Recheck, counted, ended_under_name, hook_actions,
    rules,
};
use super::rollout::{self, Observed, Step};
use super::versions::{LABEL_VERSION, Range, Zone, annotated_version, zone};
use crate::trigger::resize_name;
use ferry_api::{ExtendedStatefulSet, Handover, VolumeResizeSpec};
use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetOrdinals};
use std::collections::{BTreeMap, BTreeSet};

/// The zones' StatefulSets at `version`.
fn zones<'a>(
    ests: &ExtendedStatefulSet,
    desired: &[Desired],
    version: i64,
    progress: &rollout::Progress,
    observation: &'a Observation,
    recorded: Option<&Handover>,
) -> Vec<Zone<'a>> {
    let moving: Vec<&str> = recorded
        .iter()
        .flat_map(|h| [h.from.as_str(), h.to.as_str()])
        .collect();
    // The old version is kept (replicas may move back to it) until the update is over.
    let keep_old = match progress.step {
        Step::Done => false,
        Step::Stale => !stale_after_update(progress),
        _ => true,
    };
    desired
        .iter()
        .map(|d| {
            zone(
                ests,
                &d.name,
                d.replicas,
                version,
                &observation.live,
                &moving,
                keep_old,
            )
        })
        .collect()
}

/// Only the post-update Job failed: every replica runs the version, and stays on it.
fn stale_after_update(progress: &rollout::Progress) -> bool {
    progress
        .stale_at
        .as_deref()
        .is_some_and(|at| at.starts_with("PostUpdate"))
}

/// Whether a zone runs replicas on two versions.
fn split(zone: &Zone) -> bool {
    let holds = |set: Option<&LiveSet>| set.is_some_and(|s| Range::of(&s.object).replicas() > 0);
    holds(zone.old) && holds(zone.new)
}

/// The zone as the rollout sees it: both versions' pods count, those of the new one as updated.
fn observed_zone(zone: &Zone) -> Observed {
    let desired_stub = Desired {
        name: zone.new_name.clone(),
        zone: None,
        replicas: zone.replicas,
        object: StatefulSet::default(),
    };
    let new = counted(&desired_stub, zone.new);
    let old_live = zone.old.map_or(0, |o| Range::of(&o.object).replicas());
    let old_ready = zone
        .old
        .and_then(|o| o.object.status.as_ref())
        .and_then(|s| s.ready_replicas)
        .unwrap_or(0);
    Observed {
        exists: zone.new.is_some() || zone.old.is_some(),
        live_replicas: if new.exists { new.live_replicas } else { 0 } + old_live,
        ready: if new.exists { new.ready } else { 0 } + old_ready,
        ..new
    }
}

/// Where the split should go now: the partition of the rolling steps; back to every replica on
/// the old version once the version is stale (unless only its post-update Job failed: every
/// replica runs it then); where it is while nothing may move.
fn target(zone: &Zone, plan: &rollout::Plan) -> i32 {
    if plan.progress.step == Step::Stale && !stale_after_update(&plan.progress) {
        return zone.replicas;
    }
    if !plan.apply {
        return zone.split().min(zone.replicas);
    }
    plan.partitions
        .iter()
        .find(|(name, _)| *name == zone.new_name)
        .map_or(0, |(_, partition)| *partition)
}

/// The new version's StatefulSet as applied: the version's pod template (labelled with its version
/// where the StatefulSet is a version's own), the volume claim templates of the StatefulSet the
/// replicas come from, and its range.
fn new_object(zone: &Zone, desired: &Desired, version: i64, stale: bool, range: Range) -> StatefulSet {
    let mut object = desired.object.clone();
    object.metadata.name = Some(zone.new_name.clone());
    let version_text = version.to_string();
    let annotations = object.metadata.annotations.get_or_insert_with(BTreeMap::new);
    annotations.insert(ANNOTATION_VERSION.to_string(), version_text.clone());
    if stale {
        annotations.insert(ANNOTATION_STALE.to_string(), version_text.clone());
    }
    let templates_from = zone.new.or(zone.old).map(|set| &set.object);
    let own_set = zone.new_name != zone.base;
    if let Some(spec) = object.spec.as_mut() {
        spec.replicas = Some(range.replicas());
        spec.ordinals = Some(StatefulSetOrdinals {
            start: Some(range.start),
        });
        if let Some(live) = templates_from.and_then(|s| s.spec.as_ref()) {
            spec.volume_claim_templates = live.volume_claim_templates.clone();
        }
        if own_set {
            spec.selector
                .match_labels
                .get_or_insert_with(BTreeMap::new)
                .insert(LABEL_VERSION.to_string(), version_text.clone());
            if let Some(labels) = spec
                .template
                .metadata
                .as_mut()
                .map(|m| m.labels.get_or_insert_with(BTreeMap::new))
            {
                labels.insert(LABEL_VERSION.to_string(), version_text);
            }
        }
    }
    object
}

fn shape(set: &LiveSet, range: Range) -> Option<ExtendedAction> {
    (Range::of(&set.object) != range).then(|| ExtendedAction::ShapeStatefulSet {
        name: set.object.metadata.name.clone().unwrap_or_default(),
        start: range.start,
        replicas: range.replicas(),
    })
}

/// The selector labels of a StatefulSet (which its controller gives the claims it makes).
fn selector_labels(set: &StatefulSet) -> BTreeMap<String, String> {
    set.spec
        .as_ref()
        .and_then(|spec| spec.selector.match_labels.clone())
        .unwrap_or_default()
}

/// What the zones ask for this pass.
#[derive(Default)]
struct Moves {
    actions: Vec<ExtendedAction>,
    problems: Vec<String>,
    waiting: Vec<String>,
    handover: Option<Handover>,
    busy: bool,
    /// VolumeResizes at work, by StatefulSet.
    resizes: BTreeMap<String, String>,
    /// Why no replica moves forward now (a pod not Ready: a move takes another one down).
    hold_forward: Option<String>,
}

/// The recorded move, carried on: the ordinal leaves its old StatefulSet once its volumes are
/// retained, and joins the new one once they are bound there.
fn carry_on(moves: &mut Moves, handover: &Handover, observation: &Observation, now: i64) {
    let (Some(from), Some(to)) = (
        observation.live.get(&handover.from),
        observation.live.get(&handover.to),
    ) else {
        moves.problems.push(format!(
            "moving replica {} from {} to {}: a StatefulSet of the move is gone",
            handover.ordinal, handover.from, handover.to
        ));
        moves.handover = Some(handover.clone());
        return;
    };
    let cluster = &observation.cluster;
    if handover::retained(handover, cluster) {
        match Range::of(&from.object).without(handover.ordinal) {
            Some(range) => moves.actions.extend(shape(from, range)),
            None => moves.problems.push(format!(
                "{} runs ordinals on both sides of {}: it cannot leave alone",
                handover.from, handover.ordinal
            )),
        }
    }
    let labels = selector_labels(&to.object);
    match handover::advance(handover, &labels, cluster, now) {
        handover::Step::Act(actions) => {
            moves
                .actions
                .extend(actions.into_iter().map(ExtendedAction::Handover));
            moves.handover = Some(handover.clone());
        }
        handover::Step::Wait(why) => {
            moves.waiting.push(format!(
                "replica {} moving to {}: waiting for {why}",
                handover.ordinal, handover.to
            ));
            moves.handover = Some(handover.clone());
        }
        handover::Step::Stuck(why) => {
            moves.problems.push(format!(
                "replica {} moving to {}: {why}",
                handover.ordinal, handover.to
            ));
            moves.handover = Some(handover.clone());
        }
        handover::Step::Done => match Range::of(&to.object).with(handover.ordinal) {
            Some(range) => moves.actions.extend(shape(to, range)),
            None => {
                moves.problems.push(format!(
                    "{} cannot take ordinal {}: it is not next to its own",
                    handover.to, handover.ordinal
                ));
                moves.handover = Some(handover.clone());
            }
        },
    }
}

/// One zone with no move recorded: its StatefulSets fitted to its replicas, the new one made,
/// and the next move recorded (nothing else is written for it until the next pass).
fn fit_and_move(
    moves: &mut Moves,
    zone: &Zone,
    desired: &Desired,
    plan: &rollout::Plan,
    observation: &Observation,
    apply_new: bool,
) {
    let replicas = zone.replicas;
    let split = zone.split().min(replicas);
    if let Some(old) = zone.old {
        let start = Range::of(&old.object).start;
        moves.actions.extend(shape(
            old,
            Range {
                start,
                end: split.max(start),
            },
        ));
    }
    let new_range = Range {
        start: split,
        end: split.max(replicas),
    };
    let stale = plan.progress.step == Step::Stale;
    if apply_new {
        moves.actions.push(ExtendedAction::ApplyStatefulSet {
            object: Box::new(new_object(zone, desired, plan.progress.version, stale, new_range)),
        });
    } else if let Some(new) = zone.new {
        moves.actions.extend(shape(new, new_range));
    }
    if moves.handover.is_some() {
        return;
    }
    let goal = target(zone, plan);
    if split > goal
        && let Some(why) = &moves.hold_forward
    {
        moves.waiting.push(why.clone());
        return;
    }
    let next = if split > goal {
        zone.old.zip(zone.new).map(|(old, new)| (old, new, split - 1))
    } else if split < goal {
        zone.new.zip(zone.old).map(|(new, old)| (new, old, split))
    } else {
        None
    };
    let Some((from, to, ordinal)) = next else {
        if split < goal && zone.old.is_none() {
            moves.problems.push(format!(
                "{}: no older version's StatefulSet is left to move replicas back to",
                zone.new_name
            ));
        }
        return;
    };
    let to_name = to.object.metadata.name.clone().unwrap_or_default();
    match handover::intent(&from.object, &to_name, ordinal, &observation.cluster) {
        Ok(record) => moves.handover = Some(record),
        Err(NotYet::Wait(why)) => moves.waiting.push(why),
        Err(NotYet::Refused(why)) => moves.problems.push(why),
    }
}

/// A volume claim template change: a VolumeResize of the StatefulSet holding every replica of the
/// zone; while replicas run on two versions it waits (a resize of one would miss the other's).
fn volume_change(moves: &mut Moves, zone: &Zone, desired: &Desired, observation: &Observation) {
    let holder = match (zone.old, zone.new) {
        _ if split(zone) => None,
        (Some(old), new) if new.is_none_or(|n| Range::of(&n.object).replicas() == 0) => Some(old),
        (_, Some(new)) => Some(new),
        _ => None,
    };
    let running = [zone.old, zone.new].into_iter().flatten().find_map(|set| {
        let name = set.object.metadata.name.clone().unwrap_or_default();
        observation.resizes.working_on(&name).map(|resize| (name, resize))
    });
    if let Some((name, running)) = running {
        moves.busy = true;
        moves.waiting.push(format!("VolumeResize {running} to finish"));
        moves.resizes.insert(name, running);
        return;
    }
    let Some(holder) = holder.or(zone.old).or(zone.new) else {
        return;
    };
    let changes = match super::volumes::changes(&holder.object, &desired.object) {
        Ok(changes) if changes.is_empty() => return,
        Err(message) => {
            moves.problems.push(format!("{}: {message}", zone.base));
            return;
        }
        Ok(changes) => changes,
    };
    let name = holder.object.metadata.name.clone().unwrap_or_default();
    if split(zone) {
        moves.problems.push(format!(
            "{}: a volume claim template change waits until every replica runs one version (they run on {} and {} now)",
            zone.base,
            zone.old.and_then(|s| s.object.metadata.name.clone()).unwrap_or_default(),
            zone.new_name
        ));
        return;
    }
    let uid = holder.object.metadata.uid.clone().unwrap_or_default();
    let resize = resize_name(&name, &uid, &changes);
    if let Some(problem) = ended_under_name(&observation.resizes, &resize, &name) {
        moves.problems.push(problem);
        return;
    }
    moves.resizes.insert(name.clone(), resize.clone());
    moves.actions.push(ExtendedAction::CreateVolumeResize {
        stateful_set: name.clone(),
        name: resize,
        spec: Box::new(VolumeResizeSpec::for_volumes(&name, changes)),
    });
    moves.busy = true;
}

/// Each version and whether it runs (at least one pod of it).
fn versions(zones: &[Zone], version: i64) -> BTreeMap<String, bool> {
    let mut versions = BTreeMap::from([(version.to_string(), false)]);
    for set in zones.iter().flat_map(|z| [z.old, z.new]).flatten() {
        let pods = set.object.status.as_ref().map_or(0, |s| s.replicas);
        if let Some(v) = annotated_version(&set.object) {
            let running = versions.entry(v.to_string()).or_insert(false);
            *running |= pods > 0;
        }
    }
    versions
}

/// Where the Service sends traffic: the new version once its canaries passed and a pod of it is
/// Ready, else the old one (the label value, `None` for a StatefulSet made before blue/green, whose
/// pods carry no version label).
fn service_version(zones: &[Zone], plan: &rollout::Plan) -> Option<Option<String>> {
    let passed = match plan.progress.step {
        Step::Rest | Step::PostUpdate | Step::Done => true,
        Step::Stale => stale_after_update(&plan.progress),
        _ => false,
    };
    let label = |set: &LiveSet| {
        set.object
            .spec
            .as_ref()
            .and_then(|spec| spec.selector.match_labels.as_ref())
            .and_then(|labels| labels.get(LABEL_VERSION).cloned())
    };
    let new_ready = zones.iter().any(|z| {
        z.new
            .and_then(|n| n.object.status.as_ref())
            .is_some_and(|s| s.ready_replicas.unwrap_or(0) > 0)
    });
    let first = zones.first()?;
    if passed && new_ready || first.old.is_none() {
        return first.new.map(label);
    }
    first.old.map(label)
}

/// The blue/green plan: zones → the rollout's next step → the recorded move carried on, or the
/// StatefulSets fitted and the next move recorded → hook Jobs, Service, older StatefulSets gone.
pub fn plan(input: Input, observation: &Observation) -> Decision {
    let ests = input.ests;
    let recorded = ests.status.as_ref().and_then(|s| s.handover.clone());
    let desired = stateful_sets(ests, input.config_digest);
    let (mut rollout, held) = version_plan(&input, &desired, recorded.as_ref(), observation);
    // The rollout may have started a version: the zones at it.
    let zones = zones(
        ests,
        &desired,
        rollout.progress.version,
        &rollout.progress,
        observation,
        recorded.as_ref(),
    );
    // `updateNotReady`: moves go on over pods that are not Ready (the fix for a broken release).
    let gate = Gate {
        apply_new: rollout.apply && !held,
        hold_forward: not_ready(&zones).filter(|_| !rules(ests).update_not_ready),
        now: input.now,
    };
    let mut moves = zone_moves(&zones, &desired, &rollout, recorded.as_ref(), observation, gate);
    let mut problems = input.problems;
    moves
        .actions
        .extend(hook_actions(ests, &rollout, input.hooks_off, &mut problems));
    if let Some(service) = ests.spec.update_strategy.as_ref().and_then(|s| s.service.clone()) {
        let version = service_version(&zones, &rollout);
        switch_service(&mut moves, &mut problems, &service, version, observation);
    }
    if rollout.waiting.is_none() && !moves.waiting.is_empty() {
        rollout.waiting = Some(moves.waiting.join("; "));
    }
    problems.extend(std::mem::take(&mut moves.problems));
    decision(moves, rollout, &zones, &desired, problems, input.now)
}

/// The rollout's next step, and whether a new template is held back: one version at a time, so a
/// new one waits while replicas run on two (or one is moving).
fn version_plan(
    input: &Input,
    desired: &[Desired],
    recorded: Option<&Handover>,
    observation: &Observation,
) -> (rollout::Plan, bool) {
    let (ests, previous) = (input.ests, input.previous);
    let wanted = version_digest(ests, input.config_digest);
    let current = zones(ests, desired, previous.version, previous, observation, recorded);
    let held = previous
        .digest
        .as_deref()
        .filter(|digest| *digest != wanted && (recorded.is_some() || current.iter().any(split)));
    let digest = held.map_or(wanted.clone(), str::to_string);
    let version = if previous.digest.as_deref() == Some(digest.as_str()) {
        previous.version
    } else {
        previous.version.max(0) + 1
    };
    let at_version = zones(ests, desired, version, previous, observation, recorded);
    let observed: Vec<Observed> = at_version.iter().map(observed_zone).collect();
    let job = job_state(observation.job.as_ref());
    let mut rollout = rollout::next(previous, &digest, &rules(ests), &observed, job, input.now);
    if held.is_some() && rollout.waiting.is_none() {
        rollout.waiting = Some(format!(
            "the new template waits until version {}'s replicas run on one version",
            previous.version
        ));
    }
    (rollout, held.is_some())
}

/// What holds the zones back this pass.
struct Gate {
    /// The new version's StatefulSets may be applied.
    apply_new: bool,
    /// Why no replica moves forward (see [`not_ready`]).
    hold_forward: Option<String>,
    now: i64,
}

/// Each zone: its volume changes, the recorded move carried on or the next one recorded, and the
/// older StatefulSets no longer needed deleted.
fn zone_moves(
    zones: &[Zone],
    desired: &[Desired],
    rollout: &rollout::Plan,
    recorded: Option<&Handover>,
    observation: &Observation,
    gate: Gate,
) -> Moves {
    let mut moves = Moves {
        hold_forward: gate.hold_forward,
        ..Moves::default()
    };
    let (apply_new, now) = (gate.apply_new, gate.now);
    let in_move: BTreeSet<&str> = recorded
        .iter()
        .flat_map(|h| [h.from.as_str(), h.to.as_str()])
        .collect();
    let mut carried = false;
    for (zone, wanted_set) in zones.iter().zip(desired) {
        volume_change(&mut moves, zone, wanted_set, observation);
        if !zone.extra.is_empty() {
            moves.problems.push(format!(
                "{}: more than two versions hold replicas ({}); Ferry moves no replica until one is scaled to 0",
                zone.base,
                zone.extra.join(", ")
            ));
            continue;
        }
        let names = [zone.old, zone.new]
            .into_iter()
            .flatten()
            .filter_map(|set| set.object.metadata.name.as_deref());
        let ours = recorded.filter(|_| names.clone().any(|name| in_move.contains(name)));
        if let Some(handover) = ours {
            carry_on(&mut moves, handover, observation, now);
            carried = true;
        } else if !moves.busy {
            fit_and_move(&mut moves, zone, wanted_set, rollout, observation, apply_new);
        }
        moves.actions.extend(
            zone.leftovers
                .iter()
                .filter(|name| !in_move.contains(name.as_str()))
                .map(|name| ExtendedAction::DeleteStatefulSet { name: name.clone() }),
        );
    }
    // A move recorded in a zone no longer listed is carried on all the same.
    if let Some(handover) = recorded
        && !carried
    {
        carry_on(&mut moves, handover, observation, now);
    }
    moves
}

/// Why a replica may not move forward now: as a StatefulSet's rolling update, one replica is down
/// at a time, and the next goes only once every pod is Ready (a version whose pods never become
/// Ready takes one replica down, not all, before it is moved back).
fn not_ready(zones: &[Zone]) -> Option<String> {
    let waiting: Vec<String> = zones
        .iter()
        .map(observed_zone)
        .filter(|zone| zone.ready < zone.live_replicas)
        .map(|zone| format!("{} ({}/{} Ready)", zone.name, zone.ready, zone.live_replicas))
        .collect();
    (!waiting.is_empty()).then(|| {
        format!(
            "the next replica moves once every pod is Ready: {}",
            waiting.join(", ")
        )
    })
}

/// The decision: the writes, when to look again, and what the status will say.
fn decision(
    moves: Moves,
    rollout: rollout::Plan,
    zones: &[Zone],
    desired: &[Desired],
    problems: Vec<String>,
    now: i64,
) -> Decision {
    let moving = moves.handover.is_some() || !moves.actions.is_empty();
    let recheck = match rollout.progress.step {
        _ if moves.handover.is_some() => Recheck::Moving,
        Step::Canaries | Step::Rest | Step::PreUpdate | Step::PostUpdate => Recheck::Soon,
        _ if moving || moves.busy || rollout.waiting.is_some() => Recheck::Soon,
        _ => Recheck::Idle,
    };
    let zone_desired: Vec<Desired> = zones
        .iter()
        .zip(desired)
        .map(|(zone, d)| Desired {
            name: zone.new_name.clone(),
            ..d.clone()
        })
        .collect();
    Decision {
        actions: moves.actions,
        notices: rollout.notices.clone(),
        recheck,
        versions: Some(versions(zones, rollout.progress.version)),
        observed: zones.iter().map(observed_zone).collect(),
        rollout,
        desired: zone_desired,
        volume_resizes: moves.resizes,
        problems,
        handover: moves.handover,
        now,
    }
}

/// The Service's version selector pointed where traffic goes.
fn switch_service(
    moves: &mut Moves,
    problems: &mut Vec<String>,
    service: &str,
    version: Option<Option<String>>,
    observation: &Observation,
) {
    let Some(version) = version else {
        return;
    };
    let Some(live) = observation.service.as_ref() else {
        problems.push(format!("Service {service} (updateStrategy.service) not found"));
        return;
    };
    let selected = live
        .spec
        .as_ref()
        .and_then(|spec| spec.selector.as_ref())
        .and_then(|selector| selector.get(LABEL_VERSION).cloned());
    if selected != version {
        moves.actions.push(ExtendedAction::SelectVersion {
            service: service.to_string(),
            version,
        });
    }
}

/// The claims and volumes a blue/green pass reads besides the StatefulSets: those of the recorded
/// move, and those of the ordinals next to each zone's split (the only ones that can move next).
pub fn claims_to_read(
    ests: &ExtendedStatefulSet,
    observation: &Observation,
    config_digest: Option<&str>,
) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    if let Some(handover) = ests.status.as_ref().and_then(|s| s.handover.as_ref()) {
        for handed in &handover.volumes {
            names.insert(handed.from_claim.clone());
            names.insert(handed.to_claim.clone());
        }
    }
    for wanted in stateful_sets(ests, config_digest) {
        let members = observation.live.values().filter(|set| {
            super::versions::belongs_to(
                &wanted.name,
                set.object.metadata.name.as_deref().unwrap_or_default(),
            )
        });
        let sets: Vec<&LiveSet> = members.collect();
        let splits: BTreeSet<i32> = sets
            .iter()
            .flat_map(|set| {
                let range = Range::of(&set.object);
                [range.start, range.end, wanted.replicas]
            })
            .collect();
        for set in &sets {
            let name = set.object.metadata.name.clone().unwrap_or_default();
            for template in set
                .object
                .spec
                .as_ref()
                .and_then(|s| s.volume_claim_templates.as_ref())
                .into_iter()
                .flatten()
                .filter_map(|t| t.metadata.name.as_deref())
            {
                for &split in &splits {
                    for ordinal in [split - 1, split] {
                        if ordinal >= 0 {
                            for other in &sets {
                                let other = other.object.metadata.name.as_deref().unwrap_or_default();
                                names.insert(crate::names::claim(template, other, ordinal));
                            }
                            names.insert(crate::names::claim(template, &name, ordinal));
                        }
                    }
                }
            }
        }
        // The new version's StatefulSet may not exist yet: its claims are not read (none exist).
    }
    names
}

/// Reads nothing twice: the cluster a blue/green pass needs, from what the operator fetched.
pub fn cluster(
    claims: Vec<k8s_openapi::api::core::v1::PersistentVolumeClaim>,
    volumes: Vec<k8s_openapi::api::core::v1::PersistentVolume>,
    pods: BTreeSet<String>,
) -> Cluster {
    Cluster {
        claims: claims
            .into_iter()
            .filter_map(|c| Some((c.metadata.name.clone()?, c)))
            .collect(),
        volumes: volumes
            .into_iter()
            .filter_map(|v| Some((v.metadata.name.clone()?, v)))
            .collect(),
        pods,
    }
}

/// Handover actions as the plan lists them.
impl From<HandoverAction> for ExtendedAction {
    fn from(action: HandoverAction) -> Self {
        ExtendedAction::Handover(action)
    }
}

#[cfg(test)]
#[path = "blue_green_tests.rs"]
mod tests;
