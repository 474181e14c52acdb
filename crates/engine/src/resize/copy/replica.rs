//! Taking a replica down (quorum, budgets, eviction) and bringing it back on its new volumes, and
//! the end of the copy: never Succeeded while the StatefulSet lacks the new templates.

use super::*;

/// Replicas other than `batch` whose pod is missing, not Ready or going away.
pub fn unready_others(
    ctx: &CopyContext,
    status: &VolumeResizeStatus,
    observed: &Observed,
    batch: &[i32],
) -> Vec<i32> {
    let others = status
        .plan
        .iter()
        .filter(|row| is_copy(row) && !batch.contains(&row.replica))
        .map(|row| row.replica);
    observed.replicas_down(ctx.sts_name, others)
}

pub(super) fn stop_replica(
    ctx: &CopyContext,
    status: &mut VolumeResizeStatus,
    observed: &Observed,
    batch: &[i32],
    rows: &[usize],
    now: &Time,
) -> Vec<ResizeAction> {
    match &observed.stateful_set {
        Some(sts) if sts.deleting => vec![],
        // Taking a replica down starts here: Rolling respects PodDisruptionBudgets (Offline takes
        // every replica down by design).
        Some(_) if !ctx.offline && observed.budget_blocks() => vec![],
        Some(_) => vec![ResizeAction::OrphanDeleteStatefulSet],
        None => {
            let mut actions = Vec::new();
            for &replica in batch {
                let pod_name = ctx.pod(replica);
                if let Some(pod) = observed.pods.get(&pod_name).filter(|pod| !pod.deleting) {
                    for &i in rows {
                        if status.plan[i].replica == replica {
                            status.plan[i].restarted_pod = Some(pod.uid.clone());
                            status.plan[i].stopped_at.get_or_insert(MicroTime(now.0));
                        }
                    }
                    actions.push(ResizeAction::EvictPod {
                        pod: pod_name,
                        uid: pod.uid.clone(),
                    });
                }
            }
            actions
        }
    }
}

pub(super) fn start_replica(
    ctx: &CopyContext,
    mut status: VolumeResizeStatus,
    observed: &Observed,
    batch: &[i32],
    rows: &[usize],
    now: &Time,
) -> Decision {
    let who = batch.iter().map(i32::to_string).collect::<Vec<_>>().join(", ");
    for &i in rows {
        status.plan[i].step = Some(RowStep::StartingReplica);
    }
    // The new volume gets back the reclaim policy the old one had.
    let mut actions: Vec<ResizeAction> = rows
        .iter()
        .filter_map(|&i| {
            let row = &status.plan[i];
            let wanted = row
                .target_reclaim_policy
                .as_ref()
                .or(row.original_reclaim_policy.as_ref())?;
            observed.set_reclaim_policy(row.target_volume.as_ref()?, wanted)
        })
        .collect();
    match &observed.stateful_set {
        // First: the replica's pod waits for it, not for the policy.
        None => actions.insert(0, ResizeAction::RecreateStatefulSet),
        Some(sts) if sts.deleting => {}
        Some(sts) if needs_replacing(sts, &status) => actions.push(ResizeAction::OrphanDeleteStatefulSet),
        Some(_) => {
            // Every replica of the batch is back: a new pod (not the one stopped), Ready.
            let back = batch.iter().all(|&replica| {
                let stopped = rows
                    .iter()
                    .find(|&&i| status.plan[i].replica == replica)
                    .and_then(|&i| status.plan[i].restarted_pod.clone());
                observed
                    .pods
                    .get(&ctx.pod(replica))
                    .is_some_and(|p| p.ready && !p.deleting && Some(&p.uid) != stopped.as_ref())
            });
            if back && actions.is_empty() {
                for &i in rows {
                    let row = &mut status.plan[i];
                    let millis = row
                        .stopped_at
                        .as_ref()
                        .map(|t| (now.0.as_millisecond() - t.0.as_millisecond()).max(0));
                    row.downtime_milliseconds = millis;
                    row.downtime_seconds = millis.map(|ms| (ms + 500) / 1000);
                    super::rollback::mark_copied(&mut status, i, now);
                }
                update_progress(&mut status);
                return decide(
                    status,
                    vec![],
                    &format!("replica(s) {who} run on their new volumes"),
                );
            }
        }
    }
    decide(
        status,
        actions,
        &format!("starting replica(s) {who} on their new volumes"),
    )
}

/// The StatefulSet is not the one a finished copy must leave: someone else's, or one whose templates
/// lack the new size or class of a copied volume.
pub(super) fn needs_replacing(sts: &StatefulSetView, status: &VolumeResizeStatus) -> bool {
    sts.foreign
        || status.plan.iter().filter(|row| is_copy(row)).any(|row| {
            let size_differs = row
                .target_bytes()
                .is_some_and(|bytes| sts.template_bytes(&row.volume) != Some(bytes));
            let class_differs = row
                .target_storage_class
                .as_ref()
                .is_some_and(|class| sts.template_class(&row.volume) != Some(class.as_str()));
            size_differs || class_differs
        })
}

pub(super) fn finish(mut status: VolumeResizeStatus, observed: &Observed, now: &Time) -> Decision {
    match &observed.stateful_set {
        None => decide(
            status,
            vec![ResizeAction::RecreateStatefulSet],
            "re-creating the StatefulSet",
        ),
        Some(sts) if sts.deleting => decide(status, vec![], "waiting for the StatefulSet to be released"),
        // Never Succeeded while the StatefulSet is someone else's or has other templates.
        Some(sts) if needs_replacing(sts, &status) => decide(
            status,
            vec![ResizeAction::OrphanDeleteStatefulSet],
            "replacing a StatefulSet that lacks the new volume claim templates (pods keep running)",
        ),
        Some(sts) if sts.ready_replicas < sts.replicas => {
            decide(status, vec![], "waiting for every replica to be Ready")
        }
        Some(_) => {
            status.phase = Some(Phase::Succeeded);
            status.finished_at.get_or_insert_with(|| now.clone());
            let retained = status.created_objects.retained_volumes.len();
            let message = format!("every volume copied and swapped; {retained} old volume(s) retained");
            status.message = Some(message.clone());
            status.created_objects.temporary_claims.clear();
            Decision {
                status,
                actions: vec![],
                summary: message,
            }
        }
    }
}
