//! `spec.placement`: which replicas' volumes move to another node, and to which node, chosen once
//! before anything is touched and kept in the plan (`sourceNode`, `targetNode`), so a restarted
//! operator moves each replica where it was planned to go.

use super::Precheck;
use crate::resize::observed::{NodeView, Observed, StatefulSetView};
use ferry_api::condition::REASON_PLACEMENT;
use ferry_api::{ChosenStrategy, Placement, VolumePlan, VolumeResizeSpec};
use k8s_openapi::api::core::v1::{Taint, Toleration};
use std::collections::BTreeMap;

/// The taint of a cordoned node: a cordoned node is never a target, whatever tolerates it.
const UNSCHEDULABLE_TAINT: &str = "node.kubernetes.io/unschedulable";

/// Marks the rows of every replica `spec.placement` moves as copies to the node chosen for it.
pub(super) fn place(
    spec: &VolumeResizeSpec,
    observed: &Observed,
    sts: &StatefulSetView,
    plan: &mut [VolumePlan],
) -> Result<(), Precheck> {
    let Some(placement) = &spec.placement else {
        return Ok(());
    };
    let ordinals = sts.first_ordinal..sts.first_ordinal.saturating_add(sts.replicas);
    if let Some(outside) = placement
        .replicas
        .iter()
        .flatten()
        .find(|ordinal| !ordinals.contains(ordinal))
    {
        return Err(reject(format!(
            "spec.placement.replicas names replica {outside}, but StatefulSet {:?} has replicas {}..{}",
            sts.name,
            ordinals.start,
            ordinals.end - 1
        )));
    }
    all_templates_move(spec, sts)?;
    let moving: Vec<i32> = ordinals.filter(|&ordinal| placement.moves(ordinal)).collect();
    placeable_classes(observed, plan.iter().filter(|row| moving.contains(&row.replica)))?;
    // Replicas per node, the moved ones counted where they go: targets spread over the nodes.
    let mut load: BTreeMap<String, usize> = BTreeMap::new();
    for (ordinal, node) in &observed.replica_nodes {
        if !moving.contains(ordinal) {
            *load.entry(node.name.clone()).or_default() += 1;
        }
    }
    for ordinal in moving {
        let Some(source) = observed.replica_nodes.get(&ordinal) else {
            return Err(reject(format!(
                "replica {ordinal} is not running on a node: Ferry moves the volumes of running replicas (start it, or leave it out of spec.placement.replicas)"
            )));
        };
        let rows: Vec<&mut VolumePlan> = plan.iter_mut().filter(|row| row.replica == ordinal).collect();
        let target = choose(placement, observed, sts, &source.name, &rows, &load)?;
        *load.entry(target.clone()).or_default() += 1;
        for row in rows {
            row.strategy = Some(ChosenStrategy::Copy);
            row.source_node = Some(source.name.clone());
            row.target_node = Some(target.clone());
        }
    }
    Ok(())
}

fn reject(message: String) -> Precheck {
    Precheck::reject(REASON_PLACEMENT, message)
}

/// A replica's volumes move together (its pod runs where all of them are): every volume claim
/// template must be in the request.
fn all_templates_move(spec: &VolumeResizeSpec, sts: &StatefulSetView) -> Result<(), Precheck> {
    let left: Vec<&str> = (sts.templates.keys())
        .filter(|name| !spec.volumes.iter().any(|change| &change.name == *name))
        .map(String::as_str)
        .collect();
    if left.is_empty() {
        return Ok(());
    }
    Err(reject(format!(
        "spec.placement moves replicas to another node, and a replica's volumes move together; list every volume claim template of StatefulSet {:?} in spec.volumes (missing: {})",
        sts.name,
        left.join(", ")
    )))
}

/// A volume goes where its claim's selected node says only in a class that binds on first use; one
/// that binds at once is made wherever its provisioner likes.
fn placeable_classes<'a>(
    observed: &Observed,
    rows: impl Iterator<Item = &'a VolumePlan>,
) -> Result<(), Precheck> {
    for row in rows {
        let class_name = row.target_storage_class.as_deref().unwrap_or_default();
        if observed
            .storage_classes
            .get(class_name)
            .is_some_and(|class| !class.waits_for_first_consumer)
        {
            return Err(reject(format!(
                "StorageClass {class_name:?} (volume {:?}) binds volumes at once (volumeBindingMode Immediate): Ferry cannot choose the node its new volumes are made on; move them to a class with volumeBindingMode WaitForFirstConsumer",
                row.volume
            )));
        }
    }
    Ok(())
}

/// The node a replica on `source` moves to: one that may run it and its new volumes, with the
/// fewest of the StatefulSet's replicas, then by name; or why there is none.
fn choose(
    placement: &Placement,
    observed: &Observed,
    sts: &StatefulSetView,
    source: &str,
    rows: &[&mut VolumePlan],
    load: &BTreeMap<String, usize>,
) -> Result<String, Precheck> {
    let mut refused = Vec::new();
    let mut fits = Vec::new();
    for node in observed.nodes.values() {
        match unfit(placement, observed, sts, source, rows, node) {
            Some(why) => refused.push(format!("{} {why}", node.name)),
            None => fits.push(node),
        }
    }
    let best = fits
        .into_iter()
        .min_by_key(|node| (load.get(&node.name).copied().unwrap_or(0), node.name.clone()));
    match best {
        Some(node) => Ok(node.name.clone()),
        None => Err(reject(format!(
            "no node can take the volumes of replica {} (on {source}): {}",
            rows.first().map_or(0, |row| row.replica),
            if refused.is_empty() {
                "the cluster lists no node".to_string()
            } else {
                refused.join("; ")
            }
        ))),
    }
}

/// Why `node` cannot take a replica on `source` with these rows, if it cannot.
fn unfit(
    placement: &Placement,
    observed: &Observed,
    sts: &StatefulSetView,
    source: &str,
    rows: &[&mut VolumePlan],
    node: &NodeView,
) -> Option<String> {
    if node.name == source {
        return Some("is the replica's own node".into());
    }
    if placement.avoid_nodes.contains(&node.name) {
        return Some("is in spec.placement.avoidNodes".into());
    }
    let selector = placement.node_selector.iter().flatten();
    if let Some((key, value)) = selector.into_iter().find(|(k, v)| node.labels.get(*k) != Some(v)) {
        return Some(format!("lacks label {key}={value}"));
    }
    if let Some(why) = refuses_replica(node, &sts.pod_node_selector, &sts.pod_tolerations) {
        return Some(why);
    }
    for row in rows {
        let class_name = row.target_storage_class.as_deref().unwrap_or_default();
        let Some(class) = observed.storage_classes.get(class_name) else {
            continue;
        };
        if !class.reaches(&node.labels) {
            return Some(format!(
                "is outside StorageClass {class_name:?}'s allowedTopologies"
            ));
        }
    }
    None
}

/// Why `node` cannot take a new pod with this node selector and these tolerations, if it cannot:
/// cordoned, not Ready, a label missing, a taint not tolerated (the scheduler's own rules; a
/// pod's required node affinity is not evaluated).
pub fn refuses_replica(
    node: &NodeView,
    node_selector: &BTreeMap<String, String>,
    tolerations: &[Toleration],
) -> Option<String> {
    if node.unschedulable {
        return Some("is cordoned".into());
    }
    if !node.ready {
        return Some("is not Ready".into());
    }
    if let Some((key, value)) = node_selector.iter().find(|(k, v)| node.labels.get(*k) != Some(v)) {
        return Some(format!("lacks label {key}={value}"));
    }
    (node.taints.iter())
        .find(|taint| keeps_off(taint) && !tolerations.iter().any(|t| tolerates(t, taint)))
        .map(|taint| format!("has taint {} the replica does not tolerate", taint.key))
}

/// A taint that keeps pods off a node (`PreferNoSchedule` only discourages them).
fn keeps_off(taint: &Taint) -> bool {
    taint.key != UNSCHEDULABLE_TAINT && matches!(taint.effect.as_str(), "NoSchedule" | "NoExecute")
}

/// Whether `toleration` tolerates `taint` (the scheduler's rule).
fn tolerates(toleration: &Toleration, taint: &Taint) -> bool {
    let effect_matches = toleration
        .effect
        .as_deref()
        .is_none_or(|effect| effect.is_empty() || effect == taint.effect);
    let key_matches = match toleration.key.as_deref() {
        None | Some("") => toleration.operator.as_deref() == Some("Exists"),
        Some(key) => key == taint.key,
    };
    let value_matches = match toleration.operator.as_deref() {
        Some("Exists") => true,
        _ => toleration.value.as_deref().unwrap_or_default() == taint.value.as_deref().unwrap_or_default(),
    };
    effect_matches && key_matches && value_matches
}
