//! Blue/green moves per zone: the recorded move carried on, or the zone's StatefulSets fitted to
//! its replicas and the next move recorded; and volume claim template changes.

use super::{Moves, split, stale_after_update};
use crate::extended::action::ExtendedAction;
use crate::extended::desired::{ANNOTATION_STALE, ANNOTATION_VERSION, Desired};
use crate::extended::handover::{self, NotYet};
use crate::extended::observed::{LiveSet, Observation};
use crate::extended::rollout::{self, Step};
use crate::extended::versions::{LABEL_VERSION, Range, Zone};
use crate::extended::volumes::ended_under_name;
use crate::trigger::resize_name;
use ferry_api::{Handover, VolumeResizeSpec};
use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetOrdinals};
use std::collections::BTreeMap;

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

/// The recorded move, carried on: the ordinal leaves its old StatefulSet once its volumes are
/// retained, and joins the new one once they are bound there.
pub(super) fn carry_on(moves: &mut Moves, handover: &Handover, observation: &Observation, now: i64) {
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
pub(super) fn fit_and_move(
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
pub(super) fn volume_change(
    moves: &mut Moves,
    zone: &Zone,
    desired: &Desired,
    observation: &Observation,
    taken: &BTreeMap<String, ferry_api::RequestedVolume>,
) {
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
    let changes = match crate::extended::volumes::changes(&holder.object, &desired.object, taken) {
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
