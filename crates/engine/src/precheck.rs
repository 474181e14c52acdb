//! The safety prechecks of SPEC §3, run before anything is touched, and the plan they produce.

use crate::observed::{ClaimView, Observed};
use crate::strategy::{StrategyInput, choose};
use ferry_api::quantity::format_bytes;
use ferry_api::{VolumePlan, VolumeResizeSpec, condition::*, parse_bytes};

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
}

impl Precheck {
    fn reject(reason: &'static str, message: String) -> Self {
        Precheck {
            verdict: Verdict::Reject { reason, message },
            plan: Vec::new(),
        }
    }
}

/// Runs every precheck in order; the first failure decides. Order matters: problems with the request
/// itself (permanent) are reported before conditions that may clear (queue, readiness).
pub fn precheck(spec: &VolumeResizeSpec, observed: &Observed) -> Precheck {
    // While another resize holds the StatefulSet it may be mid-replacement (briefly absent, templates
    // changing): judge nothing until it is done.
    if !spec.dry_run
        && let Some(holder) = observed.peers.iter().find(|peer| peer.holds_stateful_set)
    {
        return Precheck {
            verdict: Verdict::Wait {
                reason: REASON_WAITING_FOR_OTHER,
                message: format!(
                    "VolumeResize {:?} is working on StatefulSet {:?}; this one waits its turn",
                    holder.name, spec.stateful_set_name
                ),
            },
            plan: Vec::new(),
        };
    }
    if let Some(refusal) = observed
        .mover_images
        .refusal(spec.mover.as_ref().and_then(|m| m.image.as_deref()))
    {
        return Precheck::reject(REASON_MOVER_IMAGE_NOT_ALLOWED, refusal);
    }
    let Some(sts) = &observed.stateful_set else {
        return Precheck::reject(
            REASON_STATEFUL_SET_NOT_FOUND,
            format!(
                "StatefulSet {:?} does not exist in this namespace",
                spec.stateful_set_name
            ),
        );
    };

    // With no replica there is nothing running to resize with, nor a template swap to ride on:
    // say so instead of a silent "nothing to do".
    if sts.replicas <= 0 {
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
        return Precheck::reject(
            REASON_NO_REPLICAS,
            format!(
                "StatefulSet {:?} has 0 replicas: Ferry resizes the volumes of running replicas and changes the template with them; scale it up first ({claims})",
                sts.name
            ),
        );
    }
    let ordinals = sts.first_ordinal..sts.first_ordinal.saturating_add(sts.replicas);

    let mut plan = Vec::new();
    for change in &spec.volumes {
        let Some(template) = sts.templates.get(&change.name) else {
            let known: Vec<&str> = sts.templates.keys().map(String::as_str).collect();
            return Precheck::reject(
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
            );
        };
        let target_bytes = match parse_bytes(&change.size) {
            Ok(bytes) => bytes,
            Err(error) => {
                return Precheck::reject(REASON_INVALID_SIZE, format!("volume {:?}: {error}", change.name));
            }
        };
        let current_class = observed.effective_class(template);
        let target_class = change
            .storage_class_name
            .clone()
            .or_else(|| current_class.clone());
        let Some(target_class_name) = target_class.clone() else {
            return Precheck::reject(
                REASON_STORAGE_CLASS_NOT_FOUND,
                format!(
                    "volume {:?} names no StorageClass and the cluster has no default StorageClass",
                    change.name
                ),
            );
        };
        let Some(class) = observed.storage_classes.get(&target_class_name) else {
            return Precheck::reject(
                REASON_STORAGE_CLASS_NOT_FOUND,
                format!(
                    "StorageClass {target_class_name:?} (volume {:?}) does not exist",
                    change.name
                ),
            );
        };

        for replica in ordinals.clone() {
            let claim_name = crate::names::claim(&change.name, &sts.name, replica);
            let claim = observed.claims.get(&claim_name);
            let current_bytes = claim.and_then(ClaimView::size_bytes).or(template.size_bytes);
            let claim_class = claim
                .and_then(|c| c.storage_class.clone())
                .or_else(|| current_class.clone());
            let class_changes = claim_class.as_deref() != Some(target_class_name.as_str());
            let strategy = match current_bytes {
                Some(current_bytes) => choose(StrategyInput {
                    requested: spec.strategy,
                    current_bytes,
                    target_bytes,
                    class_changes,
                    class_allows_expansion: class.allow_expansion,
                }),
                None => Ok(Some(ferry_api::ChosenStrategy::Copy)),
            };
            let strategy = match strategy {
                Ok(strategy) => strategy,
                Err(refusal) => {
                    let reason = match refusal {
                        crate::strategy::StrategyRefusal::InPlaceNotExpandable => REASON_NOT_EXPANDABLE,
                        _ => REASON_INVALID_SIZE,
                    };
                    return Precheck::reject(reason, format!("PVC {claim_name}: {refusal}"));
                }
            };
            plan.push(VolumePlan {
                replica,
                volume: change.name.clone(),
                claim_name,
                strategy,
                current_size: current_bytes.map(format_bytes),
                target_size: format_bytes(target_bytes),
                target_bytes: Some(target_bytes),
                current_storage_class: claim_class,
                target_storage_class: target_class.clone(),
                ..VolumePlan::default()
            });
        }
    }

    // Claims of ordinals outside the replicas (scaled down, or below `ordinals.start`): no pod
    // uses them, so nothing resizes them now; listed so nobody is surprised when they come back.
    plan.extend(scaled_down_rows(spec, observed, &sts.name, &ordinals));

    // A plan that copies some volumes copies all changed ones: one replica stop covers them, and the
    // StatefulSet is replaced once with every new template.
    if plan
        .iter()
        .any(|row| row.strategy == Some(ferry_api::ChosenStrategy::Copy))
    {
        for row in plan.iter_mut().filter(|row| row.strategy.is_some()) {
            row.strategy = Some(ferry_api::ChosenStrategy::Copy);
        }
    }

    if plan.iter().all(|row| row.strategy.is_none()) {
        return Precheck {
            verdict: Verdict::NothingToDo,
            plan,
        };
    }

    // A copy mounts the claim in a second pod (to measure it and copy it while the replica runs)
    // and copies a file system: say plainly what cannot be copied instead of hanging on it.
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
        return Precheck::reject(
            REASON_UNSUPPORTED_VOLUME,
            format!(
                "volume claim template {name:?} {why}; only in-place expansion (a grow on a class that allows it) can change it"
            ),
        );
    }

    // A copy's new volume is provisioned for, and used on, the replica's node: a target class
    // whose allowedTopologies exclude that node could never bind there. Say so before anything
    // stops, instead of a mover that waits for a volume that cannot come.
    for row in plan
        .iter()
        .filter(|row| row.strategy == Some(ferry_api::ChosenStrategy::Copy))
    {
        let (Some(class_name), Some(node)) = (
            row.target_storage_class.as_ref(),
            observed.replica_nodes.get(&row.replica),
        ) else {
            continue;
        };
        let Some(class) = observed.storage_classes.get(class_name) else {
            continue;
        };
        if !class.reaches(&node.labels) {
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
            return Precheck::reject(
                REASON_TOPOLOGY,
                format!(
                    "StorageClass {class_name:?} provisions only where {}; replica {} ({}) runs on node {:?}, which is not among them, so its new volume could not be used there",
                    allowed.join(", or where "),
                    row.replica,
                    row.claim_name,
                    node.name
                ),
            );
        }
    }

    // A dry run changes nothing, so it never waits for the StatefulSet to be free or Ready.
    if spec.dry_run {
        return Precheck {
            verdict: Verdict::Passed,
            plan,
        };
    }

    if let Some(holder) = queue_blocker(observed) {
        return Precheck {
            verdict: Verdict::Wait {
                reason: REASON_WAITING_FOR_OTHER,
                message: format!(
                    "VolumeResize {holder:?} is working on StatefulSet {:?}; this one waits its turn",
                    sts.name
                ),
            },
            plan,
        };
    }

    if sts.ready_replicas < sts.replicas && !spec.force {
        return Precheck {
            verdict: Verdict::Wait {
                reason: REASON_NOT_READY,
                message: format!(
                    "StatefulSet {:?} has {}/{} replicas Ready; waiting for all (set force: true to proceed anyway)",
                    sts.name, sts.ready_replicas, sts.replicas
                ),
            },
            plan,
        };
    }

    Precheck {
        verdict: Verdict::Passed,
        plan,
    }
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
            if claim.size_bytes() == target && !class_differs {
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

#[cfg(test)]
mod tests;
