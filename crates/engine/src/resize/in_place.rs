//! In-place expansion (SPEC §2): grow each claim, wait for the capacity (restarting one pod at a time
//! where only a new pod finishes the file-system resize: the kubelet reported that the node plugin
//! grows it only unmounted, or it stayed pending for [`crate::resize::observed::NODE_RESIZE_GRACE_SECONDS`]), then re-create the StatefulSet
//! with the new template so future replicas get the new size. No data is copied and no pod restarts
//! otherwise.

use crate::resize::action::ResizeAction;
use crate::resize::listed;
use crate::resize::observed::{ClaimView, NodeResize, Observed, StatefulSetView};
use crate::resize::progress::update_progress;
use crate::resize::run::Decision;
use crate::resize::timeout::{overrun, timed_out};
use ferry_api::condition::{REASON_REPLICA_NOT_READY, REASON_VOLUME_NOT_GROWN};
use ferry_api::{ChosenStrategy, Phase, RowStep, VolumePlan, VolumeResizeStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use std::collections::BTreeMap;

/// `backup_name` is the deterministic name of the backup ConfigMap; `sts_name` the StatefulSet's;
/// `timeout_seconds` (`spec.timeoutSeconds`, else the operator's default) bounds how long a claim
/// may take to reach its size, and the replicas to be Ready after it.
pub fn plan_in_place(
    stopping: bool,
    previous: &VolumeResizeStatus,
    observed: &Observed,
    sts_name: &str,
    backup_name: &str,
    timeout_seconds: i64,
    now: &Time,
) -> Decision {
    let mut status = previous.clone();
    status.phase = Some(Phase::Running);
    status.started_at.get_or_insert_with(|| now.clone());
    status.created_objects.backup_config_map = Some(backup_name.to_string());
    if stopping {
        return stop_on_delete(status, observed, now);
    }
    let sts_whole = observed.stateful_set.as_ref().is_some_and(|sts| !sts.deleting);
    // A row whose target is not a size (never so from the precheck, but a status can be edited)
    // fails the resize while the StatefulSet is whole, instead of being skipped and the resize
    // reported as Succeeded without it.
    let not_sizes: Vec<String> = unfinished(&status)
        .filter_map(crate::resize::run::unsized_target)
        .collect();
    if !not_sizes.is_empty() && sts_whole {
        return fail(status, not_sizes.join("; "), now);
    }
    // Nothing is touched before the StatefulSet's spec is safe in the backup.
    if !observed.backup_exists {
        return decide(
            status,
            vec![ResizeAction::BackupStatefulSet],
            "backing up the StatefulSet spec",
        );
    }
    let mut expansion = expand_rows(&mut status, observed, sts_name, now);
    if let Some(decision) = after_refusal(&status, &mut expansion, observed, sts_whole, now) {
        return decision;
    }
    if let Some(decision) = after_timeout(&status, observed, timeout_seconds, sts_whole, now) {
        return decision;
    }
    let stopping = restart_one(&mut status, observed, sts_name, &mut expansion);
    // A replica held down comes back once its volume has grown (the kubelet grows its file system
    // when the new pod mounts it): the StatefulSet is re-created, with the new template. So it is
    // at once when another replica went down meanwhile (crashed, its pod deleted): with no
    // StatefulSet nothing would re-create it, and two would stay down.
    let lost = lost_while_held(&status, observed, sts_name, &expansion);
    if !expansion.all_expanded
        && observed.stateful_set.is_none()
        && (expansion.held_down.is_empty() || !lost.is_empty())
        && !stopping
    {
        expansion.actions.push(ResizeAction::RecreateStatefulSet);
    }
    update_progress(&mut status);
    if !expansion.all_expanded {
        let summary = match () {
            _ if !lost.is_empty() => format!(
                "replica(s) {} went down while replica(s) {} were held down for their volumes to grow; re-creating the StatefulSet so they come back",
                listed(&lost),
                listed(&expansion.held_down)
            ),
            _ if expansion.actions.is_empty() => "waiting for volumes to expand".to_string(),
            _ => "expanding volumes".to_string(),
        };
        return decide(status, expansion.actions, &summary);
    }
    with_new_template(status, previous, observed, (sts_name, timeout_seconds), now)
}

/// A claim that has not reached its size within `timeoutSeconds` (a driver that never finishes,
/// a pod that can never restart, a replica held down for a driver that never grows its volume)
/// ends the resize, once the StatefulSet is whole: it is re-created first, so a replica held down
/// starts again on its old volume. A requested grow is not undone: the claim keeps asking for it.
/// `None`: nothing is overdue (or the StatefulSet is being replaced).
fn after_timeout(
    status: &VolumeResizeStatus,
    observed: &Observed,
    timeout_seconds: i64,
    sts_whole: bool,
    now: &Time,
) -> Option<Decision> {
    let overdue = overdue(status, timeout_seconds, now);
    if overdue.is_empty() {
        return None;
    }
    let mut status = status.clone();
    if observed.stateful_set.is_none() {
        return Some(decide(
            status,
            vec![ResizeAction::RecreateStatefulSet],
            "re-creating the StatefulSet before failing: a claim did not grow in time",
        ));
    }
    if !sts_whole {
        return None;
    }
    let held: Vec<i32> = unfinished(&status)
        .filter(|row| row.refused_in_use == Some(true) && row.restarted_pod.is_some())
        .map(|row| row.replica)
        .collect();
    let restarted = if held.is_empty() {
        String::new()
    } else {
        format!(
            "; replica(s) {}, stopped for the driver to grow their volume while unused, start again on their old volume",
            listed(&held)
        )
    };
    let message = format!(
        "{}{restarted}; the claims keep the size they ask for (a grow is not undone)",
        overdue.join("; ")
    );
    update_progress(&mut status);
    timed_out(&mut status, REASON_VOLUME_NOT_GROWN, &message, now);
    Some(fail(status, message, now))
}

/// Replicas other than those held down whose pod is missing, not Ready or going away, while some
/// are held down with no StatefulSet.
fn lost_while_held(
    status: &VolumeResizeStatus,
    observed: &Observed,
    sts_name: &str,
    expansion: &Expansion,
) -> Vec<i32> {
    if expansion.held_down.is_empty() || observed.stateful_set.is_some() {
        return Vec::new();
    }
    let others = status
        .plan
        .iter()
        .filter(|row| row.strategy.is_some() && !expansion.held_down.contains(&row.replica))
        .map(|row| row.replica);
    observed.replicas_down(sts_name, others)
}

/// A size (KEP-1790) or an attributes class the driver refused is never asked for again: its
/// request is lowered (its class taken back) first, then, the StatefulSet whole, the resize fails.
/// `None`: go on (the StatefulSet is being replaced).
fn after_refusal(
    status: &VolumeResizeStatus,
    expansion: &mut Expansion,
    observed: &Observed,
    sts_whole: bool,
    now: &Time,
) -> Option<Decision> {
    let refusal = refused(status)?;
    let mut status = status.clone();
    let lowering = std::mem::take(&mut expansion.lowering);
    if !lowering.is_empty() {
        return Some(decide(status, lowering, "lowering requests the driver refused"));
    }
    if observed.stateful_set.is_none() {
        return Some(decide(
            status,
            vec![ResizeAction::RecreateStatefulSet],
            "re-creating the StatefulSet before failing: the driver refused a size",
        ));
    }
    sts_whole.then(|| {
        update_progress(&mut status);
        fail(status, refusal, now)
    })
}

/// The in-place rows not finished yet.
fn unfinished(status: &VolumeResizeStatus) -> impl Iterator<Item = &VolumePlan> {
    status
        .plan
        .iter()
        .filter(|row| row.strategy == Some(ChosenStrategy::InPlace) && row.finished_at.is_none())
}

/// The resize ends Failed with `message`.
fn fail(mut status: VolumeResizeStatus, message: String, now: &Time) -> Decision {
    status.phase = Some(Phase::Failed);
    status.finished_at.get_or_insert_with(|| now.clone());
    status.message = Some(message.clone());
    Decision {
        status,
        actions: vec![],
        summary: message,
    }
}

/// Deleted while running: requested expansions stay (they are harmless); only make sure the
/// StatefulSet exists again before letting go.
fn stop_on_delete(status: VolumeResizeStatus, observed: &Observed, now: &Time) -> Decision {
    match &observed.stateful_set {
        None if observed.backup_exists => decide(
            status,
            vec![ResizeAction::RecreateStatefulSet],
            "re-creating the StatefulSet before stopping",
        ),
        Some(sts) if sts.deleting => decide(status, vec![], "waiting for the StatefulSet before stopping"),
        _ => fail(
            status,
            "stopped because the VolumeResize was deleted".to_string(),
            now,
        ),
    }
}

/// What the rows' pass found: the expansions asked for, the replicas whose pod must go for their
/// growth to finish, those held down until it has, and whether every claim has its size.
struct Expansion {
    actions: Vec<ResizeAction>,
    /// Requests lowered back from a size the driver refused, and attributes classes taken back.
    lowering: Vec<ResizeAction>,
    waiting_restart: Vec<(i32, String, Remedy)>,
    held_down: Vec<i32>,
    all_expanded: bool,
    /// Each volume's growth so far, by volume name.
    growth: BTreeMap<String, VolumeGrowth>,
}

impl Expansion {
    fn new(growth: BTreeMap<String, VolumeGrowth>) -> Self {
        Expansion {
            growth,
            actions: Vec::new(),
            lowering: Vec::new(),
            waiting_restart: Vec::new(),
            held_down: Vec::new(),
            all_expanded: true,
        }
    }
}

/// Each in-place row: expanded, its claim's request raised, or waiting for its capacity (and for
/// a new pod where only one finishes the growth).
fn expand_rows(
    status: &mut VolumeResizeStatus,
    observed: &Observed,
    sts_name: &str,
    now: &Time,
) -> Expansion {
    let mut expansion = Expansion::new(volume_growth(status, observed));
    for row in status
        .plan
        .iter_mut()
        .filter(|row| row.strategy == Some(ChosenStrategy::InPlace))
    {
        let Some(target) = row.target_bytes() else {
            continue;
        };
        // A replica without a claim yet gets the new size and class from the new template.
        let claim = observed.claims.get(&row.claim_name);
        let grows = claim.is_some_and(|c| c.capacity_bytes < target);
        let modifies = claim.is_some_and(|c| modification_pending(row, c));
        let Some(claim) = claim.filter(|_| grows || modifies) else {
            finish_row(row, target, now);
            continue;
        };
        expansion.all_expanded = false;
        row.started_at.get_or_insert_with(|| now.clone());
        let pod_name = format!("{sts_name}-{}", row.replica);
        if refused_row(row, claim, &mut expansion) || modification_refused_row(row, claim, &mut expansion) {
            continue;
        }
        if modifies && claim.attributes_class != row.target_attributes_class {
            expansion.actions.push(ResizeAction::ModifyClaim {
                claim: row.claim_name.clone(),
                class: row.target_attributes_class.clone(),
            });
        }
        if !grows {
            row.step = Some(RowStep::Modifying);
            continue;
        }
        grow_row(row, claim, observed, pod_name, target, now, &mut expansion);
    }
    expansion
}

/// What one volume's claims have shown of its driver so far.
#[derive(Default)]
struct VolumeGrowth {
    /// It refused to grow a claim in use (recorded in the row: the refusal is gone once it grew).
    offline_only: bool,
    /// It grew a claim on the controller side while its replica ran.
    grows_in_use: bool,
    /// A claim asked to grow has not shown either yet.
    probing: bool,
}

/// Each volume's growth so far, after recording in each row a refusal in use its claim shows now
/// (`refusedInUse`: the claim's condition is gone once its volume grew). Until its driver has shown
/// whether it grows a volume in use, one claim asks first: asking every claim at once would, on a
/// driver that cannot, have the external-resizer refuse each of them and retry each only after a
/// backoff that doubles up to minutes, a replica's downtime later.
fn volume_growth(status: &mut VolumeResizeStatus, observed: &Observed) -> BTreeMap<String, VolumeGrowth> {
    let mut growth: BTreeMap<String, VolumeGrowth> = BTreeMap::new();
    for row in status
        .plan
        .iter_mut()
        .filter(|row| row.strategy == Some(ChosenStrategy::InPlace))
    {
        let (Some(target), Some(claim)) = (row.target_bytes(), observed.claims.get(&row.claim_name)) else {
            continue;
        };
        if claim.expansion_refused_in_use {
            row.refused_in_use = Some(true);
        }
        let volume = growth.entry(row.volume.clone()).or_default();
        volume.offline_only |= row.refused_in_use == Some(true);
        let grew = claim.node_resize.is_pending()
            || (claim.capacity_bytes >= target && row.current_bytes().is_some_and(|bytes| bytes < target));
        volume.grows_in_use |= grew;
        volume.probing |= claim.requested_bytes >= target && claim.capacity_bytes < target && !grew;
    }
    growth
}

/// A row done: `Modified` when it changed only its attributes class, else `Expanded`.
fn finish_row(row: &mut VolumePlan, target: u64, now: &Time) {
    let grown = row.current_bytes() != Some(target);
    row.step = Some(match changed_attributes(row) {
        Some(_) if !grown => RowStep::Modified,
        _ => RowStep::Expanded,
    });
    row.finished_at.get_or_insert_with(|| now.clone());
}

/// The growth of one row's claim: its request raised, or waiting for its capacity (and for a new
/// pod where only one finishes the growth).
fn grow_row(
    row: &mut VolumePlan,
    claim: &ClaimView,
    observed: &Observed,
    pod_name: String,
    target: u64,
    now: &Time,
    expansion: &mut Expansion,
) {
    let growth = expansion.growth.entry(row.volume.clone()).or_default();
    if growth.offline_only && claim.node_resize == NodeResize::Idle {
        grow_offline(row, claim, observed, pod_name, target, expansion);
    } else if claim.requested_bytes < target {
        row.step = Some(RowStep::Expanding);
        // Another claim of the volume asks first (see `volume_growth`).
        if growth.probing && !growth.grows_in_use {
            return;
        }
        growth.probing = true;
        expansion.actions.push(ResizeAction::ExpandClaim {
            claim: row.claim_name.clone(),
            bytes: target,
        });
    } else if claim.node_resize.needs_new_pod(now) {
        let current_uid = observed.pods.get(&pod_name).map(|pod| pod.uid.as_str());
        let already_restarted = row.restarted_pod.is_some() && row.restarted_pod.as_deref() != current_uid;
        row.step = Some(if already_restarted {
            RowStep::RestartingPod
        } else {
            RowStep::WaitingForCapacity
        });
        if !already_restarted {
            expansion
                .waiting_restart
                .push((row.replica, pod_name, Remedy::Restart));
        }
    } else {
        row.step = Some(RowStep::WaitingForCapacity);
    }
}

/// The growth of one row's claim on a driver that grows a volume only while no pod uses it: the
/// replica is stopped (its turn among the others) and kept down, with no StatefulSet to re-create
/// its pod, until the volume has grown on the controller side; its claim asks for the new size once
/// the pod is gone, so the external-resizer takes it at once rather than after a backoff.
fn grow_offline(
    row: &mut VolumePlan,
    claim: &ClaimView,
    observed: &Observed,
    pod_name: String,
    target: u64,
    expansion: &mut Expansion,
) {
    let pod = observed.pods.get(&pod_name);
    // Held down: the pod Ferry stopped is going or gone (a pod under another UID came back).
    let held = row.restarted_pod.is_some()
        && pod.is_none_or(|pod| pod.deleting && Some(&pod.uid) == row.restarted_pod.as_ref());
    if !held {
        row.step = Some(RowStep::WaitingForCapacity);
        expansion
            .waiting_restart
            .push((row.replica, pod_name, Remedy::StopUntilGrown));
        return;
    }
    row.step = Some(RowStep::RestartingPod);
    expansion.held_down.push(row.replica);
    if claim.requested_bytes < target && pod.is_none() {
        expansion.actions.push(ResizeAction::ExpandClaim {
            claim: row.claim_name.clone(),
            bytes: target,
        });
    }
}

/// A row whose size the driver refused (now, or on an earlier pass): its request is lowered back,
/// and nothing else is asked for it. Whether the row was one.
fn refused_row(row: &mut VolumePlan, claim: &ClaimView, expansion: &mut Expansion) -> bool {
    if let Some(why) = &claim.expansion_infeasible {
        row.expansion_refused.get_or_insert_with(|| why.clone());
    }
    if row.expansion_refused.is_none() {
        return false;
    }
    // The API server takes a lower request only above the capacity (KEP-1790): the least such
    // size, which the driver can give.
    let back = recovery_bytes(claim.capacity_bytes);
    if claim.requested_bytes > back {
        expansion.lowering.push(ResizeAction::ExpandClaim {
            claim: row.claim_name.clone(),
            bytes: back,
        });
    }
    row.step = Some(RowStep::WaitingForCapacity);
    true
}

/// The row asks for another attributes class, and the claim's volume does not have it yet.
fn modification_pending(row: &VolumePlan, claim: &ClaimView) -> bool {
    row.target_attributes_class != row.current_attributes_class
        && claim.current_attributes_class != row.target_attributes_class
}

/// A row whose attributes class the driver refused (now, or on an earlier pass): its claim asks for
/// the class it had again (nothing was changed on the volume), and nothing else is asked for it.
/// Whether the row was one.
fn modification_refused_row(row: &mut VolumePlan, claim: &ClaimView, expansion: &mut Expansion) -> bool {
    if let Some(why) = &claim.modification_infeasible
        && claim.attributes_class == row.target_attributes_class
    {
        row.modification_refused.get_or_insert_with(|| why.clone());
    }
    if row.modification_refused.is_none() {
        return false;
    }
    if claim.attributes_class != row.current_attributes_class {
        expansion.lowering.push(ResizeAction::ModifyClaim {
            claim: row.claim_name.clone(),
            class: row.current_attributes_class.clone(),
        });
    }
    row.step = Some(RowStep::Modifying);
    true
}

/// What a claim whose growth was refused asks for instead: one MiB above its capacity, the least the
/// API server accepts below a refused request (it refuses the capacity itself).
pub fn recovery_bytes(capacity_bytes: u64) -> u64 {
    capacity_bytes.saturating_add(1 << 20)
}

/// The rows whose size or attributes class the driver refused, described, if any.
fn refused(status: &VolumeResizeStatus) -> Option<String> {
    let grows = status.plan.iter().filter_map(|row| {
        let why = row.expansion_refused.as_ref()?;
        Some(format!(
            "the driver cannot grow {} to {} ({why}); its request went back to 1 MiB above its capacity, the least Kubernetes allows",
            row.claim_name, row.target_size
        ))
    });
    let modifications = status.plan.iter().filter_map(|row| {
        let why = row.modification_refused.as_ref()?;
        Some(format!(
            "the driver cannot give {} the VolumeAttributesClass {} ({why}); it asks for {} again, which its volume kept",
            row.claim_name,
            row.target_attributes_class.as_deref().unwrap_or("(none)"),
            row.current_attributes_class.as_deref().unwrap_or("none")
        ))
    });
    let refused: Vec<String> = grows.chain(modifications).collect();
    let grew = status
        .plan
        .iter()
        .any(|row| row.current_bytes() != row.target_bytes());
    let others = if grew {
        "; the other claims keep the size they ask for (a grow is not undone)"
    } else {
        ""
    };
    (!refused.is_empty()).then(|| format!("{}{others}", refused.join("; ")))
}

/// The claims that have taken longer than `limit` seconds to reach their size, described.
fn overdue(status: &VolumeResizeStatus, limit: i64, now: &Time) -> Vec<String> {
    unfinished(status)
        .filter_map(|row| {
            let since = row.started_at.as_ref().map(|t| t.0.as_second());
            overrun(since, limit, now).map(|_| {
                format!(
                    "{} did not reach {} within timeoutSeconds ({limit} s; step {:?})",
                    row.claim_name,
                    row.target_size,
                    row.step.unwrap_or(RowStep::Expanding)
                )
            })
        })
        .collect()
}

/// A replica Ferry held down for its volume to grow runs again under another pod before its volume
/// grew: the StatefulSet was re-created while it was held.
fn came_back_unfinished(status: &VolumeResizeStatus, observed: &Observed, sts_name: &str) -> bool {
    unfinished(status).any(|row| {
        row.refused_in_use == Some(true)
            && row.restarted_pod.as_ref().is_some_and(|stopped| {
                observed
                    .pods
                    .get(&format!("{sts_name}-{}", row.replica))
                    .is_some_and(|pod| &pod.uid != stopped)
            })
    })
}

/// Offline-only drivers: restart one pod at a time, and only while every other pod is Ready. A pod
/// that is gone and not yet re-created counts as down too (the StatefulSet's own status can lag
/// behind it). A pod that is down already (crash-looping on its full disk, the case of an
/// autoscaler's rescue) goes first and needs no one's leave: restarting it costs no availability,
/// and it is what finishes its growth. Whether a pod is being stopped now.
fn restart_one(
    status: &mut VolumeResizeStatus,
    observed: &Observed,
    sts_name: &str,
    expansion: &mut Expansion,
) -> bool {
    let serving_replicas = status
        .plan
        .iter()
        .filter(|row| row.strategy.is_some())
        .map(|row| row.replica);
    let down = observed.replicas_down(sts_name, serving_replicas);
    // (A pod already going away is not restarted again.)
    let restartable: Vec<&(i32, String, Remedy)> = expansion
        .waiting_restart
        .iter()
        .filter(|(_, pod, _)| observed.pods.get(pod).is_some_and(|p| !p.deleting))
        .collect();
    // Once a replica held down came back unfinished (the StatefulSet re-created for another one
    // lost meanwhile), a replica that is down is starting again, not crash-looping: it gets no
    // precedence, and the next stop waits for every replica to be Ready.
    let down_goes_first = !came_back_unfinished(status, observed, sts_name);
    let candidate = restartable
        .iter()
        .find(|(replica, _, _)| down_goes_first && down.contains(replica))
        .or(restartable.iter().find(|(replica, _, _)| !down.contains(replica)))
        .or(restartable.first().filter(|_| down_goes_first))
        .copied();
    let disruption_in_flight = !expansion.held_down.is_empty()
        || candidate.is_none_or(|(replica, _, _)| {
            let candidate_down = down.contains(replica);
            down.iter().any(|other| other != replica)
                || (!candidate_down && observed.budget_blocks())
                || observed
                    .stateful_set
                    .as_ref()
                    .is_some_and(|sts| sts.ready_replicas < sts.replicas - i32::from(candidate_down))
        });
    let (Some((replica, pod_name, remedy)), false) = (candidate, disruption_in_flight) else {
        return false;
    };
    let Some(pod) = observed.pods.get(pod_name) else {
        return false;
    };
    if let (Remedy::StopUntilGrown, Some(sts)) = (remedy, &observed.stateful_set) {
        // First the StatefulSet goes (its pods keep running), so nothing re-creates the pod.
        if !sts.deleting {
            expansion.actions.push(ResizeAction::OrphanDeleteStatefulSet);
        }
        return false;
    }
    expansion.actions.push(ResizeAction::EvictPod {
        pod: pod_name.clone(),
        uid: pod.uid.clone(),
    });
    let restarted = status
        .plan
        .iter_mut()
        .filter(|r| r.replica == *replica && r.strategy == Some(ChosenStrategy::InPlace));
    for row in restarted {
        row.step = Some(RowStep::RestartingPod);
        row.restarted_pod = Some(pod.uid.clone());
    }
    true
}

/// Every claim has its new size: give the StatefulSet the new template, then wait (at most
/// `timeout_seconds`) for every replica to be Ready.
fn with_new_template(
    mut status: VolumeResizeStatus,
    previous: &VolumeResizeStatus,
    observed: &Observed,
    (sts_name, timeout_seconds): (&str, i64),
    now: &Time,
) -> Decision {
    let targets: Vec<(String, u64, Option<String>)> = previous
        .plan
        .iter()
        .filter(|row| row.strategy == Some(ChosenStrategy::InPlace))
        .filter_map(|row| Some((row.volume.clone(), row.target_bytes()?, changed_attributes(row))))
        .collect();
    match &observed.stateful_set {
        None => decide(
            status,
            vec![ResizeAction::RecreateStatefulSet],
            "re-creating the StatefulSet with the new template",
        ),
        Some(sts) if sts.deleting => decide(
            status,
            vec![],
            "waiting for the StatefulSet to be released from its pods",
        ),
        Some(sts)
            if targets.iter().any(|(volume, bytes, attributes)| {
                sts.template_bytes(volume) != Some(*bytes)
                    || attributes.as_ref().is_some_and(|class| {
                        sts.templates
                            .get(volume)
                            .and_then(|t| t.attributes_class.as_ref())
                            != Some(class)
                    })
            }) =>
        {
            decide(
                status,
                vec![ResizeAction::OrphanDeleteStatefulSet],
                "replacing the StatefulSet (pods keep running)",
            )
        }
        Some(sts) if sts.ready_replicas < sts.replicas => {
            not_ready(status, observed, (sts_name, sts), timeout_seconds, now)
        }
        Some(_) => {
            status.phase = Some(Phase::Succeeded);
            status.finished_at.get_or_insert_with(|| now.clone());
            let message = if targets.iter().any(|(_, _, attributes)| attributes.is_some()) {
                "every volume changed in place; the StatefulSet template has the new size and VolumeAttributesClass"
            } else {
                "every volume expanded in place; the StatefulSet template has the new size"
            }
            .to_string();
            status.message = Some(message.clone());
            Decision {
                status,
                actions: vec![],
                summary: message,
            }
        }
    }
}

/// Every volume changed and the StatefulSet has the new template, but not every replica is Ready:
/// it waits, at most `timeout_seconds` from when the last claim had its size (a replica down from
/// the start, a rescue's, may never be), then fails saying which replicas were not.
fn not_ready(
    status: VolumeResizeStatus,
    observed: &Observed,
    (sts_name, sts): (&str, &StatefulSetView),
    timeout_seconds: i64,
    now: &Time,
) -> Decision {
    let since = status
        .plan
        .iter()
        .filter(|row| row.strategy == Some(ChosenStrategy::InPlace))
        .filter_map(|row| row.finished_at.as_ref())
        .map(|t| t.0.as_second())
        .max()
        .or(status.started_at.as_ref().map(|t| t.0.as_second()));
    if overrun(since, timeout_seconds, now).is_none() {
        return decide(status, vec![], "waiting for every replica to be Ready");
    }
    let mut status = status;
    let ordinals = sts.first_ordinal..sts.first_ordinal + sts.replicas;
    let down = observed.replicas_down(sts_name, ordinals);
    let message = format!(
        "replica(s) {} not Ready within timeoutSeconds ({timeout_seconds} s) after every volume changed; the volumes keep their new size and the StatefulSet has the new template",
        listed(&down)
    );
    timed_out(&mut status, REASON_REPLICA_NOT_READY, &message, now);
    fail(status, message, now)
}

/// The attributes class a row changes its volume to, if it changes it.
fn changed_attributes(row: &VolumePlan) -> Option<String> {
    row.target_attributes_class
        .clone()
        .filter(|_| row.target_attributes_class != row.current_attributes_class)
}

/// How only a new pod lets a claim's growth finish.
enum Remedy {
    /// The node grows the file system when a new pod mounts it: delete the pod once.
    Restart,
    /// The driver grows the volume only while no pod uses it: keep the pod away until it has.
    StopUntilGrown,
}

fn decide(mut status: VolumeResizeStatus, actions: Vec<ResizeAction>, summary: &str) -> Decision {
    status.message = Some(summary.to_string());
    Decision {
        status,
        actions,
        summary: summary.to_string(),
    }
}

#[cfg(test)]
mod tests;
