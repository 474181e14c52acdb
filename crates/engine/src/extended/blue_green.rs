//! The blue/green plan (`updateStrategy.type: BlueGreen`): each version runs as a StatefulSet of its
//! own (`<base>-v<N>`, see `versions`), and the rollout's steps (pre-update Job, canaries, the
//! rest, post-update Job, stale) are those of a rolling update, with the partition read as the
//! split: ordinals from it up run on the new version. Replicas move one at a time, highest first,
//! each with its volumes (`handover`); a version that goes stale before its post-update Job moves
//! them back. One move at a time in the whole ExtendedStatefulSet, recorded in status before its
//! first write.

mod moves;
pub mod reads;
mod traffic;

use super::action::ExtendedAction;
use super::decision::{Decision, Input, Recheck};
use super::desired::{Desired, stateful_sets, version_digest};
use super::hooks::{hook_actions, job_state};
use super::observed::{LiveSet, Observation, counted};
use super::rollout::{self, Observed, Step, rules};
use super::versions::{Range, Zone, zone};
use ferry_api::{ExtendedStatefulSet, Handover, RequestedVolume};
use k8s_openapi::api::apps::v1::StatefulSet;
use moves::{carry_on, fit_and_move, volume_change};
pub use reads::{claims_to_read, cluster};
use std::collections::{BTreeMap, BTreeSet};
use traffic::{service_version, switch_service, versions};

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
        // The replicas still on the old version: what the rollout lets through one at a time.
        partition: zone.split().clamp(0, zone.replicas),
        // Readiness across both versions' pods is `ready`'s (indexes of one StatefulSet would not do).
        unavailable: Vec::new(),
        ..new
    }
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
    let service = ests.spec.update_strategy.as_ref().and_then(|s| s.service.clone());
    // A Service Ferry may not switch: replicas moved forward would be away from the version it
    // selects (those moving back go towards it).
    let service_held = service.as_ref().zip(input.service_off).map(|(service, why)| {
        format!("no replica moves to a new version: Service {service} (updateStrategy.service) is not switched: {why}")
    });
    let gate = Gate {
        apply_new: rollout.apply && !held,
        hold_forward: service_held
            .clone()
            .or_else(|| not_ready(&zones).filter(|_| !rules(ests).update_not_ready)),
        now: input.now,
    };
    let taken = crate::extended::volumes::recorded(ests);
    let mut moves = zone_moves(
        &zones,
        &desired,
        &rollout,
        recorded.as_ref(),
        observation,
        gate,
        &taken,
    );
    let mut problems = input.problems;
    moves
        .actions
        .extend(hook_actions(ests, &rollout, input.hooks_off, &mut problems));
    match (service, service_held) {
        (_, Some(why)) => problems.push(why),
        (Some(service), None) => {
            let version = service_version(&zones, &rollout);
            switch_service(&mut moves, &mut problems, &service, version, observation);
        }
        (None, None) => {}
    }
    if rollout.waiting.is_none() && !moves.waiting.is_empty() {
        rollout.waiting = Some(moves.waiting.join("; "));
    }
    problems.extend(std::mem::take(&mut moves.problems));
    let taken = taken_by_zones(&taken, &zones, &desired);
    decision(moves, rollout, &zones, &desired, problems, taken, input.now)
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
    taken: &BTreeMap<String, RequestedVolume>,
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
        volume_change(&mut moves, zone, wanted_set, observation, taken);
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

/// The record of volume claim templates asked for and had by every StatefulSet holding replicas.
fn taken_by_zones(
    previous: &BTreeMap<String, RequestedVolume>,
    zones: &[Zone],
    desired: &[Desired],
) -> BTreeMap<String, RequestedVolume> {
    let Some(first) = desired.first() else {
        return previous.clone();
    };
    let lives: Vec<&StatefulSet> = zones
        .iter()
        .flat_map(|zone| [zone.old, zone.new])
        .flatten()
        .filter(|set| Range::of(&set.object).replicas() > 0)
        .map(|set| &set.object)
        .collect();
    crate::extended::volumes::taken(previous, &first.object, &lives)
}

/// The decision: the writes, when to look again, and what the status will say.
fn decision(
    moves: Moves,
    rollout: rollout::Plan,
    zones: &[Zone],
    desired: &[Desired],
    problems: Vec<String>,
    volume_claim_templates: BTreeMap<String, RequestedVolume>,
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
        volume_claim_templates,
        problems,
        handover: moves.handover,
        now,
    }
}

#[cfg(test)]
#[path = "blue_green_tests.rs"]
mod tests;
