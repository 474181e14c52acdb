//! One pass of a migration: the selection (first pass only), each StatefulSet's move read back
//! from its VolumeResize, the moves to start now, and the migration's phase and conditions.

use super::observed::Observed;
use super::select::select;
use crate::kstatus::{self, Health};
use ferry_api::{
    MigrationFailurePolicy, MigrationItem, MigrationItemPhase, MigrationPhase, Phase, VolumeChange,
    VolumeMigrationSpec, VolumeMigrationStatus, VolumeResizeSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use sha2::{Digest, Sha256};

/// What the pass is about.
pub struct Input<'a> {
    pub spec: &'a VolumeMigrationSpec,
    pub status: Option<&'a VolumeMigrationStatus>,
    /// The migration's UID: its VolumeResizes' names and label derive from it.
    pub uid: &'a str,
    pub generation: Option<i64>,
    pub now: &'a Time,
}

/// A write the plan asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum MigrationAction {
    /// One StatefulSet's move, as an ordinary VolumeResize (one already there under the name is
    /// this same move).
    CreateVolumeResize {
        stateful_set: String,
        name: String,
        spec: Box<VolumeResizeSpec>,
    },
}

/// The pass's outcome: the status to write and what to do.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub status: VolumeMigrationStatus,
    pub actions: Vec<MigrationAction>,
}

pub fn plan(input: Input, observed: &Observed) -> Decision {
    let mut status = input.status.cloned().unwrap_or_default();
    let ended = matches!(status.phase, MigrationPhase::Succeeded | MigrationPhase::Failed);
    if ended {
        return Decision {
            status,
            actions: Vec::new(),
        };
    }
    status.observed_generation = input.generation;
    if status.items.is_empty() {
        if let Some(why) = refusal(input.spec, observed) {
            return refused(status, why, &input);
        }
        let selection = select(input.spec, observed);
        status.items = selection.items;
        status.not_handled = selection.not_handled;
    }
    for item in &mut status.items {
        follow(item, input.uid, observed);
    }
    if input.spec.failure_policy == MigrationFailurePolicy::Stop {
        skip_after_failure(&mut status.items);
    }
    let actions = start(&mut status, &input, observed);
    if input.spec.failure_policy == MigrationFailurePolicy::Stop {
        skip_after_failure(&mut status.items);
    }
    conclude(&mut status, &input);
    Decision { status, actions }
}

/// Why the migration cannot begin (before anything moved).
fn refusal(spec: &VolumeMigrationSpec, observed: &Observed) -> Option<String> {
    if let Some(why) = &observed.unreadable {
        return Some(why.clone());
    }
    (!observed.target_class_exists).then(|| {
        format!(
            "StorageClass {} does not exist: nothing moved",
            spec.to_storage_class_name
        )
    })
}

fn refused(mut status: VolumeMigrationStatus, why: String, input: &Input) -> Decision {
    status.phase = MigrationPhase::Failed;
    status.finished_at = Some(input.now.clone());
    kstatus::set(
        &mut status.conditions,
        Health::Stalled,
        "Refused",
        &why,
        input.generation,
        input.now,
    );
    status.message = Some(why);
    Decision {
        status,
        actions: Vec::new(),
    }
}

/// An item's move as its VolumeResize says (the name is derived, so a resize made by a pass killed
/// before it wrote status is found too).
fn follow(item: &mut MigrationItem, uid: &str, observed: &Observed) {
    if matches!(
        item.phase,
        MigrationItemPhase::Succeeded | MigrationItemPhase::Failed | MigrationItemPhase::Skipped
    ) {
        return;
    }
    let name = resize_name(uid, &item.stateful_set);
    let Some(resize) = observed.resizes.get(&name) else {
        if item.phase == MigrationItemPhase::Running {
            item.phase = MigrationItemPhase::Failed;
            item.message = Some(format!("its VolumeResize {name} was deleted before it ended"));
        }
        return;
    };
    item.volume_resize = Some(name);
    item.bytes_copied = resize.bytes_copied;
    item.max_downtime_milliseconds = resize.max_downtime_milliseconds;
    (item.phase, item.message) = match resize.phase {
        Some(Phase::Succeeded) => (MigrationItemPhase::Succeeded, None),
        Some(Phase::Failed) => (
            MigrationItemPhase::Failed,
            Some(
                resize
                    .message
                    .clone()
                    .unwrap_or_else(|| "its VolumeResize failed".into()),
            ),
        ),
        _ => (MigrationItemPhase::Running, None),
    };
}

/// With `failurePolicy: Stop`, a failed move leaves the waiting ones unstarted.
fn skip_after_failure(items: &mut [MigrationItem]) {
    let Some(failed) = items.iter().find(|i| i.phase == MigrationItemPhase::Failed) else {
        return;
    };
    let why = format!(
        "not started: the move of {} failed and failurePolicy is Stop",
        failed.stateful_set
    );
    for item in items
        .iter_mut()
        .filter(|i| i.phase == MigrationItemPhase::Waiting)
    {
        item.phase = MigrationItemPhase::Skipped;
        item.message = Some(why.clone());
    }
}

/// Starts waiting moves while fewer than `maxConcurrent` run, in order, passing over a StatefulSet
/// another VolumeResize holds (it waits for that one to end).
fn start(status: &mut VolumeMigrationStatus, input: &Input, observed: &Observed) -> Vec<MigrationAction> {
    let mut running = (status.items.iter())
        .filter(|i| i.phase == MigrationItemPhase::Running)
        .count();
    let mut actions = Vec::new();
    for item in (status.items.iter_mut()).filter(|i| i.phase == MigrationItemPhase::Waiting) {
        if running >= input.spec.concurrency() {
            break;
        }
        if let Some(other) = observed.held_by_others.get(&item.stateful_set) {
            item.message = Some(format!("waiting for VolumeResize {other}, which holds it"));
            continue;
        }
        if let Some(why) = not_movable(item, observed) {
            item.phase = MigrationItemPhase::Failed;
            item.message = Some(why);
            if input.spec.failure_policy == MigrationFailurePolicy::Stop {
                break;
            }
            continue;
        }
        let name = resize_name(input.uid, &item.stateful_set);
        actions.push(MigrationAction::CreateVolumeResize {
            stateful_set: item.stateful_set.clone(),
            name: name.clone(),
            spec: Box::new(resize_spec(input.spec, item)),
        });
        item.phase = MigrationItemPhase::Running;
        item.volume_resize = Some(name);
        item.message = None;
        status.started_at.get_or_insert_with(|| input.now.clone());
        running += 1;
    }
    actions
}

/// Why a StatefulSet cannot begin to move at its turn: gone, or not every replica Ready (its move
/// stops one replica at a time while the others serve; a VolumeResize would wait for them, and
/// hold a slot of the migration, for as long as they stay down).
fn not_movable(item: &MigrationItem, observed: &Observed) -> Option<String> {
    let Some(set) = observed
        .stateful_sets
        .iter()
        .find(|s| s.name == item.stateful_set)
    else {
        return Some(format!(
            "not moved: StatefulSet {} no longer exists (or no longer matches the selector)",
            item.stateful_set
        ));
    };
    (set.ready_replicas < set.replicas).then(|| {
        format!(
            "not moved: StatefulSet {} has {}/{} replicas Ready (a move stops one replica at a time \
             while the others serve, so all must be Ready); make another VolumeMigration once they are",
            set.name, set.ready_replicas, set.replicas
        )
    })
}

/// The phase, progress, message and conditions the items add up to.
fn conclude(status: &mut VolumeMigrationStatus, input: &Input) {
    let count = |phase| status.items.iter().filter(|i| i.phase == phase).count();
    let (moved, failed, skipped) = (
        count(MigrationItemPhase::Succeeded),
        count(MigrationItemPhase::Failed),
        count(MigrationItemPhase::Skipped),
    );
    let total = status.items.len();
    let (running, waiting) = (
        count(MigrationItemPhase::Running),
        count(MigrationItemPhase::Waiting),
    );
    status.progress = Some(format!("{moved}/{total}"));
    let (phase, health, reason, message) = if running + waiting > 0 {
        (
            MigrationPhase::Running,
            Health::Reconciling,
            "Moving",
            format!("{moved} of {total} moved, {running} moving, {waiting} waiting, {failed} failed"),
        )
    } else if failed + skipped == 0 {
        let message = match total {
            0 => format!(
                "no StatefulSet selected has a volume on StorageClass {}",
                input.spec.from_storage_class_name
            ),
            _ => format!("all {total} moved"),
        };
        (MigrationPhase::Succeeded, Health::Ready, "Moved", message)
    } else {
        (
            MigrationPhase::Failed,
            Health::Stalled,
            "NotAllMoved",
            format!("{moved} of {total} moved, {failed} failed, {skipped} not started"),
        )
    };
    if phase != MigrationPhase::Running {
        status.finished_at.get_or_insert_with(|| input.now.clone());
    }
    status.phase = phase;
    kstatus::set(
        &mut status.conditions,
        health,
        reason,
        &message,
        input.generation,
        input.now,
    );
    status.message = Some(message);
}

/// The VolumeResize moving `stateful_set` for the migration `uid`: the same name on every pass.
pub fn resize_name(uid: &str, stateful_set: &str) -> String {
    let digest = crate::names::hex_digest(Sha256::new_with_prefix(format!("{uid}\0{stateful_set}")), 4);
    let prefix: String = stateful_set.chars().take(44).collect();
    format!("{}-migrate-{digest}", prefix.trim_end_matches(['-', '.']))
}

/// Each moving template onto the new class at its size (a copy: the class changes).
fn resize_spec(spec: &VolumeMigrationSpec, item: &MigrationItem) -> VolumeResizeSpec {
    let volumes = (item.volumes.iter())
        .map(|v| VolumeChange {
            name: v.name.clone(),
            size: v.size.clone(),
            storage_class_name: Some(spec.to_storage_class_name.clone()),
            volume_attributes_class_name: None,
        })
        .collect();
    VolumeResizeSpec::for_volumes(&item.stateful_set, volumes)
}
