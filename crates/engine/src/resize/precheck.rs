//! The safety prechecks of SPEC §3, run before anything is touched, and the plan they produce.

use crate::resize::observed::{ClaimView, Observed, StatefulSetView, TemplateView};
use crate::resize::strategy::{StrategyInput, choose};
use ferry_api::quantity::format_bytes;
use ferry_api::{VolumeChange, VolumePlan, VolumeResizeSpec, condition::*, parse_bytes};

/// What the prechecks concluded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Everything checked out; work may start.
    Passed,
    /// Every PVC already has the requested size and class.
    NothingToDo,
    /// Not yet: a condition that can clear by itself (another resize holds the StatefulSet, replicas
    /// not Ready).
    Wait { reason: &'static str, message: String },
    /// The request cannot be carried out as written; nothing is touched.
    Reject { reason: &'static str, message: String },
}

/// The verdict and, when the request is well-formed, the plan per replica × volume.
#[derive(Debug, Clone, PartialEq)]
pub struct Precheck {
    pub verdict: Verdict,
    pub plan: Vec<VolumePlan>,
    /// The StatefulSet's owner, when another controller owns it: the run goes through it.
    pub owner: Option<Box<ferry_api::OwnerStatus>>,
}

impl Precheck {
    fn reject(reason: &'static str, message: String) -> Self {
        Precheck {
            verdict: Verdict::Reject { reason, message },
            plan: Vec::new(),
            owner: None,
        }
    }
}

/// Runs every precheck in order; the first failure decides. Order matters: problems with the request
/// itself (permanent) are reported before conditions that may clear (queue, readiness).
pub fn precheck(spec: &VolumeResizeSpec, observed: &Observed) -> Precheck {
    match run_stages(spec, observed) {
        Ok(precheck) | Err(precheck) => precheck,
    }
}

/// The stages in order; `Err` is a verdict reached early (a rejection or a wait).
fn run_stages(spec: &VolumeResizeSpec, observed: &Observed) -> Result<Precheck, Precheck> {
    // While another resize holds the StatefulSet it may be mid-replacement (briefly absent, templates
    // changing): judge nothing until it is done.
    if !spec.dry_run {
        not_held_by_another(spec, observed)?;
    }
    if let Some(refusal) = observed
        .mover_images
        .refusal(spec.mover.as_ref().and_then(|m| m.image.as_deref()))
    {
        return Err(Precheck::reject(REASON_MOVER_IMAGE_NOT_ALLOWED, refusal));
    }
    let Some(sts) = &observed.stateful_set else {
        return Err(Precheck::reject(
            REASON_STATEFUL_SET_NOT_FOUND,
            format!(
                "StatefulSet {:?} does not exist in this namespace",
                spec.stateful_set_name
            ),
        ));
    };
    let owner = crate::resize::owner::owner_of(spec, observed, sts)
        .map_err(|(reason, message)| Precheck::reject(reason, message))?
        .map(Box::new);
    has_replicas(spec, observed, sts)?;
    let ordinals = sts.first_ordinal..sts.first_ordinal.saturating_add(sts.replicas);
    let mut plan = Vec::new();
    for change in &spec.volumes {
        plan.extend(rows_of_change(spec, observed, sts, change, &ordinals)?);
    }
    // Claims of ordinals outside the replicas (scaled down, or below `ordinals.start`): no pod
    // uses them, so nothing resizes them now; listed so nobody is surprised when they come back.
    plan.extend(scaled_down_rows(spec, observed, &sts.name, &ordinals));
    placement::place(spec, observed, sts, &mut plan)?;
    copy_all_if_any(&mut plan);
    clones::mark(spec, observed, &mut plan);
    if plan.iter().all(|row| row.strategy.is_none()) {
        return Ok(Precheck {
            verdict: Verdict::NothingToDo,
            plan,
            owner,
        });
    }
    copyable(sts, &plan)?;
    reachable(observed, &plan)?;
    quota::pods_admitted(observed, &plan)?;
    quota::within_limit_ranges(observed, &plan)?;
    quota::within_quotas(spec, observed, &plan)?;
    // A dry run changes nothing, so it never waits for the StatefulSet to be free or Ready; it
    // answers "does it fit?" from the kubelet's usage, as a run would after measuring.
    if spec.dry_run {
        dry_run_usage::with_usage(&mut plan, &observed.data_in_use);
        dry_run_usage::room_for_data(&plan)?;
        return Ok(Precheck {
            verdict: Verdict::Passed,
            plan,
            owner,
        });
    }
    Ok(Precheck {
        verdict: free_and_ready(spec, observed, sts).unwrap_or(Verdict::Passed),
        plan,
        owner,
    })
}

fn wait(reason: &'static str, message: String) -> Precheck {
    Precheck {
        verdict: Verdict::Wait { reason, message },
        plan: Vec::new(),
        owner: None,
    }
}

/// No other VolumeResize holds the StatefulSet.
fn not_held_by_another(spec: &VolumeResizeSpec, observed: &Observed) -> Result<(), Precheck> {
    match observed.peers.iter().find(|peer| peer.holds_stateful_set) {
        Some(holder) => Err(wait(
            REASON_WAITING_FOR_OTHER,
            format!(
                "VolumeResize {:?} is working on StatefulSet {:?}; this one waits its turn",
                holder.name, spec.stateful_set_name
            ),
        )),
        None => Ok(()),
    }
}

/// With no replica there is nothing running to resize with, nor a template swap to ride on: say so
/// instead of a silent "nothing to do".
fn has_replicas(spec: &VolumeResizeSpec, observed: &Observed, sts: &StatefulSetView) -> Result<(), Precheck> {
    if sts.replicas > 0 {
        return Ok(());
    }
    let mut idle: Vec<&str> = observed
        .claims
        .keys()
        .filter(|name| {
            spec.volumes
                .iter()
                .any(|v| ordinal_of(name, &v.name, &sts.name).is_some())
        })
        .map(String::as_str)
        .collect();
    idle.sort_unstable();
    let claims = if idle.is_empty() {
        "it has no claims yet".to_string()
    } else {
        format!("its claims {} keep their size meanwhile", idle.join(", "))
    };
    Err(Precheck::reject(
        REASON_NO_REPLICAS,
        format!(
            "StatefulSet {:?} has 0 replicas: Ferry resizes the volumes of running replicas and changes the template with them; scale it up first ({claims})",
            sts.name
        ),
    ))
}

/// One row per running replica for one requested volume change, each with the strategy chosen for
/// its claim; the template, the size and the StorageClass are checked first.
fn rows_of_change(
    spec: &VolumeResizeSpec,
    observed: &Observed,
    sts: &StatefulSetView,
    change: &VolumeChange,
    ordinals: &std::ops::Range<i32>,
) -> Result<Vec<VolumePlan>, Precheck> {
    let Some(template) = sts.templates.get(&change.name) else {
        let known: Vec<&str> = sts.templates.keys().map(String::as_str).collect();
        return Err(Precheck::reject(
            REASON_TEMPLATE_NOT_FOUND,
            format!(
                "StatefulSet {:?} has no volume claim template {:?} (it has: {})",
                sts.name,
                change.name,
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            ),
        ));
    };
    let target_bytes = parse_bytes(&change.size).map_err(|error| {
        Precheck::reject(REASON_INVALID_SIZE, format!("volume {:?}: {error}", change.name))
    })?;
    let current_class = observed.effective_class(template);
    let target_class = change
        .storage_class_name
        .clone()
        .or_else(|| current_class.clone());
    let Some(target_class_name) = target_class.clone() else {
        return Err(Precheck::reject(
            REASON_STORAGE_CLASS_NOT_FOUND,
            format!(
                "volume {:?} names no StorageClass and the cluster has no default StorageClass",
                change.name
            ),
        ));
    };
    let Some(class) = observed.storage_classes.get(&target_class_name) else {
        return Err(Precheck::reject(
            REASON_STORAGE_CLASS_NOT_FOUND,
            format!(
                "StorageClass {target_class_name:?} (volume {:?}) does not exist",
                change.name
            ),
        ));
    };
    let attributes_class = change.volume_attributes_class_name.as_deref();
    attributes_class_usable(
        observed,
        change,
        attributes_class,
        template,
        &target_class_name,
        class,
    )?;
    let change = Change {
        volume: &change.name,
        template,
        current_class: current_class.as_deref(),
        bytes: target_bytes,
        class_name: &target_class_name,
        allows_expansion: class.allow_expansion,
        attributes_class,
    };
    ordinals
        .clone()
        .map(|replica| row_of_replica(spec, observed, &sts.name, &change, replica))
        .collect()
}

/// One requested volume change, checked: its template, its current class, and the size and
/// StorageClass it asks for.
struct Change<'a> {
    volume: &'a str,
    template: &'a TemplateView,
    current_class: Option<&'a str>,
    bytes: u64,
    class_name: &'a str,
    allows_expansion: bool,
    /// The VolumeAttributesClass asked for; `None` keeps each claim's.
    attributes_class: Option<&'a str>,
}

/// The VolumeAttributesClass the volumes get (the one asked for, else the template's) exists and
/// is for the driver of the class they end on: the external-provisioner and external-resizer refuse
/// another driver's. A class the claims keep that is gone is not asked about.
fn attributes_class_usable(
    observed: &Observed,
    change: &VolumeChange,
    asked: Option<&str>,
    template: &TemplateView,
    class_name: &str,
    class: &crate::resize::observed::StorageClassView,
) -> Result<(), Precheck> {
    let Some(name) = asked.or(template.attributes_class.as_deref()) else {
        return Ok(());
    };
    let Some(driver) = observed.attributes_classes.get(name) else {
        if asked.is_none() {
            return Ok(());
        }
        return Err(Precheck::reject(
            REASON_ATTRIBUTES_CLASS_NOT_FOUND,
            format!(
                "VolumeAttributesClass {name:?} (volume {:?}) does not exist",
                change.name
            ),
        ));
    };
    if *driver == class.provisioner {
        return Ok(());
    }
    let remedy = if asked.is_some() {
        "name one of that driver"
    } else {
        "the claims' class would not apply there: name one of that driver in volumeAttributesClassName"
    };
    Err(Precheck::reject(
        REASON_ATTRIBUTES_CLASS_OTHER_DRIVER,
        format!(
            "VolumeAttributesClass {name:?} (volume {:?}) is for the CSI driver {driver:?}, but StorageClass {class_name:?} provisions with {:?}; {remedy}",
            change.name, class.provisioner
        ),
    ))
}

/// The row of one replica's claim: its current size and class, and the strategy that gets it to
/// the change's target (a refusal rejects the request).
fn row_of_replica(
    spec: &VolumeResizeSpec,
    observed: &Observed,
    sts_name: &str,
    change: &Change,
    replica: i32,
) -> Result<VolumePlan, Precheck> {
    let claim_name = crate::names::claim(change.volume, sts_name, replica);
    let claim = observed.claims.get(&claim_name);
    let current_bytes = claim
        .and_then(ClaimView::size_bytes)
        .or(change.template.size_bytes);
    let claim_class = claim
        .and_then(|c| c.storage_class.clone())
        .or_else(|| change.current_class.map(str::to_string));
    let class_changes = claim_class.as_deref() != Some(change.class_name);
    let current_attributes = claim
        .map(|c| c.attributes_class.clone())
        .unwrap_or_else(|| change.template.attributes_class.clone());
    let target_attributes = change
        .attributes_class
        .map(str::to_string)
        .or_else(|| current_attributes.clone());
    let strategy = match current_bytes {
        Some(current_bytes) => choose(StrategyInput {
            requested: spec.strategy,
            current_bytes,
            target_bytes: change.bytes,
            class_changes,
            class_allows_expansion: change.allows_expansion,
            attributes_change: target_attributes != current_attributes,
        }),
        None => Ok(Some(ferry_api::ChosenStrategy::Copy)),
    };
    let strategy = strategy.map_err(|refusal| {
        let reason = match refusal {
            crate::resize::strategy::StrategyRefusal::InPlaceNotExpandable => REASON_NOT_EXPANDABLE,
            _ => REASON_INVALID_SIZE,
        };
        Precheck::reject(reason, format!("PVC {claim_name}: {refusal}"))
    })?;
    Ok(VolumePlan {
        replica,
        volume: change.volume.to_string(),
        claim_name,
        strategy,
        current_size: current_bytes.map(format_bytes),
        target_size: format_bytes(change.bytes),
        target_bytes: Some(change.bytes),
        current_storage_class: claim_class,
        target_storage_class: Some(change.class_name.to_string()),
        target_attributes_class: target_attributes,
        current_attributes_class: current_attributes,
        ..VolumePlan::default()
    })
}

/// A plan that copies some volumes copies all changed ones: one replica stop covers them, and the
/// StatefulSet is replaced once with every new template.
fn copy_all_if_any(plan: &mut [VolumePlan]) {
    if plan
        .iter()
        .any(|row| row.strategy == Some(ferry_api::ChosenStrategy::Copy))
    {
        for row in plan.iter_mut().filter(|row| row.strategy.is_some()) {
            row.strategy = Some(ferry_api::ChosenStrategy::Copy);
        }
    }
}

/// A copy mounts the claim in a second pod (to measure it and copy it while the replica runs) and
/// copies a file system: say plainly what cannot be copied instead of hanging on it.
fn copyable(sts: &StatefulSetView, plan: &[VolumePlan]) -> Result<(), Precheck> {
    let copying: std::collections::BTreeSet<&str> = plan
        .iter()
        .filter(|row| row.strategy == Some(ferry_api::ChosenStrategy::Copy))
        .map(|row| row.volume.as_str())
        .collect();
    for name in copying {
        let Some(template) = sts.templates.get(name) else {
            continue;
        };
        let why = if template.raw_block {
            "uses volumeMode Block: a raw device has no file system for the mover to copy"
        } else if template.read_write_once_pod {
            "is ReadWriteOncePod: no second pod may mount it while the replica runs, so it can be neither measured nor warm-copied"
        } else {
            continue;
        };
        return Err(Precheck::reject(
            REASON_UNSUPPORTED_VOLUME,
            format!(
                "volume claim template {name:?} {why}; only in-place expansion (a grow on a class that allows it) can change it"
            ),
        ));
    }
    Ok(())
}

/// A copy's new volume is provisioned for, and used on, the replica's node: a target class whose
/// allowedTopologies exclude that node could never bind there. Say so before anything stops,
/// instead of a mover that waits for a volume that cannot come.
fn reachable(observed: &Observed, plan: &[VolumePlan]) -> Result<(), Precheck> {
    for row in plan
        .iter()
        .filter(|row| row.strategy == Some(ferry_api::ChosenStrategy::Copy))
    {
        // A moved replica's new volume is used on the node chosen for it (checked there).
        if row.target_node.is_some() {
            continue;
        }
        let (Some(class_name), Some(node)) = (
            row.target_storage_class.as_ref(),
            observed.replica_nodes.get(&row.replica),
        ) else {
            continue;
        };
        let Some(class) = observed.storage_classes.get(class_name) else {
            continue;
        };
        if class.reaches(&node.labels) {
            continue;
        }
        let allowed: Vec<String> = class
            .allowed_topologies
            .iter()
            .map(|term| {
                term.iter()
                    .map(|(key, values)| format!("{key} in [{}]", values.join(", ")))
                    .collect::<Vec<_>>()
                    .join(" and ")
            })
            .collect();
        return Err(Precheck::reject(
            REASON_TOPOLOGY,
            format!(
                "StorageClass {class_name:?} provisions only where {}; replica {} ({}) runs on node {:?}, which is not among them, so its new volume could not be used there",
                allowed.join(", or where "),
                row.replica,
                row.claim_name,
                node.name
            ),
        ));
    }
    Ok(())
}

/// What may still make a well-formed request wait: another resize first in the queue, or replicas
/// not Ready (unless forced).
fn free_and_ready(spec: &VolumeResizeSpec, observed: &Observed, sts: &StatefulSetView) -> Option<Verdict> {
    if let Some(holder) = queue_blocker(observed) {
        return Some(Verdict::Wait {
            reason: REASON_WAITING_FOR_OTHER,
            message: format!(
                "VolumeResize {holder:?} is working on StatefulSet {:?}; this one waits its turn",
                sts.name
            ),
        });
    }
    (sts.ready_replicas < sts.replicas && !spec.force).then(|| Verdict::Wait {
        reason: REASON_NOT_READY,
        message: format!(
            "StatefulSet {:?} has {}/{} replicas Ready; waiting for all (set force: true to proceed anyway)",
            sts.name, sts.ready_replicas, sts.replicas
        ),
    })
}

/// The ordinal of `claim` if it is `<template>-<sts>-<ordinal>`.
fn ordinal_of(claim: &str, template: &str, sts: &str) -> Option<i32> {
    claim
        .strip_prefix(&format!("{template}-{sts}-"))
        .and_then(|ordinal| ordinal.parse::<i32>().ok())
        .filter(|ordinal| *ordinal >= 0)
}

/// Rows for existing claims of changed templates whose ordinal is not a running replica: reported
/// with no strategy, and why.
fn scaled_down_rows(
    spec: &VolumeResizeSpec,
    observed: &Observed,
    sts: &str,
    ordinals: &std::ops::Range<i32>,
) -> Vec<VolumePlan> {
    let mut rows = Vec::new();
    for change in &spec.volumes {
        for (name, claim) in &observed.claims {
            let Some(ordinal) = ordinal_of(name, &change.name, sts).filter(|o| !ordinals.contains(o)) else {
                continue;
            };
            let target = parse_bytes(&change.size).ok();
            let class_differs = change
                .storage_class_name
                .as_ref()
                .is_some_and(|class| claim.storage_class.as_ref() != Some(class));
            let attributes_differ = change
                .volume_attributes_class_name
                .as_ref()
                .is_some_and(|class| claim.attributes_class.as_ref() != Some(class));
            if claim.size_bytes() == target && !class_differs && !attributes_differ {
                continue;
            }
            rows.push(VolumePlan {
                replica: ordinal,
                volume: change.name.clone(),
                claim_name: name.clone(),
                strategy: None,
                current_size: claim.size_bytes().map(format_bytes),
                target_size: target.map(format_bytes).unwrap_or_else(|| change.size.clone()),
                target_bytes: target,
                current_storage_class: claim.storage_class.clone(),
                target_storage_class: change.storage_class_name.clone(),
                current_attributes_class: claim.attributes_class.clone(),
                target_attributes_class: change.volume_attributes_class_name.clone(),
                message: Some(format!(
                    "not resized: ordinal {ordinal} is not a running replica (replicas are {}..{}); this claim keeps its size and class and is used again only if the StatefulSet scales to it",
                    ordinals.start,
                    ordinals.end - 1
                )),
                ..VolumePlan::default()
            });
        }
    }
    rows.sort_by(|a, b| (a.replica, &a.volume).cmp(&(b.replica, &b.volume)));
    rows
}

/// An older VolumeResize still waiting goes first (first come, first served).
fn queue_blocker(observed: &Observed) -> Option<String> {
    observed
        .peers
        .iter()
        .filter(|peer| peer.queue_key < observed.queue_key)
        .min_by(|a, b| a.queue_key.cmp(&b.queue_key))
        .map(|peer| peer.name.clone())
}

mod clones;
mod dry_run_usage;
pub mod placement;
mod quota;
#[cfg(test)]
mod tests;
