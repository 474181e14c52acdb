//! Blue/green: one replica's volumes handed from one version's StatefulSet to another's by PV
//! re-binding, in the resize wing's safe order. The move is recorded first ([`intent`], in the
//! ExtendedStatefulSet's status); from then on [`advance`] reads the cluster and names the next
//! writes, each idempotent, so an operator killed at any point finishes the same move:
//! volume retained → the replica's pod gone (its StatefulSet no longer counts the ordinal) → the
//! old claim deleted → the volume reserved for the new claim's name → the new claim made, bound to
//! it → the volume's reclaim policy restored → the new StatefulSet counts the ordinal.

use crate::names::{claim as claim_name, pod as pod_name};
pub use crate::volume_writes::VolumeWrite;
use ferry_api::{HandedVolume, Handover};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{
    PersistentVolume, PersistentVolumeClaim, PersistentVolumeClaimSpec, VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use std::collections::{BTreeMap, BTreeSet};

const RETAIN: &str = "Retain";
/// How long a re-made claim may stay Pending before the PV controller is nudged (as in a resize).
const NUDGE_AFTER_SECONDS: i64 = 2;
/// Claim annotation that nudges the PV controller (any change wakes its claim worker).
pub use ferry_api::names::ANNOTATION_BIND_NUDGE as ANNOTATION_NUDGED;

/// What a move reads: the claims and volumes it names, and which pods exist.
#[derive(Debug, Clone, Default)]
pub struct Cluster {
    pub claims: BTreeMap<String, PersistentVolumeClaim>,
    pub volumes: BTreeMap<String, PersistentVolume>,
    pub pods: BTreeSet<String>,
}

/// One write of a move: the guarded volume writes a copy's swap makes too, and the new claim.
#[derive(Debug, Clone, PartialEq)]
pub enum HandoverAction {
    /// Retain or restore a volume, delete the old claim, reserve the volume for the new claim's
    /// name, nudge a re-made claim still Pending.
    Volume(VolumeWrite),
    /// The new claim, naming its volume.
    CreateClaim { claim: Box<PersistentVolumeClaim> },
}

/// Where a move stands.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Make these writes, then look again.
    Act(Vec<HandoverAction>),
    /// Nothing to write until the cluster moves (why).
    Wait(String),
    /// Every volume is bound under the new name, its policy restored.
    Done,
    /// Something Ferry did not do stands in the way (why); nothing is touched.
    Stuck(String),
}

fn claim_uid(claim: &PersistentVolumeClaim) -> String {
    claim.metadata.uid.clone().unwrap_or_default()
}

pub(super) fn bound_volume(claim: &PersistentVolumeClaim) -> Option<&str> {
    claim.spec.as_ref().and_then(|spec| spec.volume_name.as_deref())
}

fn is_bound(claim: &PersistentVolumeClaim) -> bool {
    claim.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound")
}

fn reclaim_policy(volume: &PersistentVolume) -> String {
    volume
        .spec
        .as_ref()
        .and_then(|spec| spec.persistent_volume_reclaim_policy.clone())
        .unwrap_or_else(|| "Delete".to_string())
}

fn template_names(sts: &StatefulSet) -> Vec<String> {
    sts.spec
        .as_ref()
        .and_then(|spec| spec.volume_claim_templates.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|template| template.metadata.name.clone())
        .collect()
}

/// Why a move cannot be recorded now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotYet {
    /// It can once the cluster moves (a claim not yet Bound).
    Wait(String),
    /// Not without a decision only a person can make.
    Refused(String),
}

/// Whether every volume of the move is kept whatever happens to its claim (or already moved): only
/// then may the replica's pod go and its claim with it.
pub fn retained(handover: &Handover, cluster: &Cluster) -> bool {
    handover.volumes.iter().all(|handed| {
        moved(handed, cluster)
            || cluster
                .volumes
                .get(&handed.volume)
                .is_some_and(|volume| reclaim_policy(volume) == RETAIN)
    })
}

/// The volume is bound under the new claim name.
fn moved(handed: &HandedVolume, cluster: &Cluster) -> bool {
    cluster
        .claims
        .get(&handed.to_claim)
        .is_some_and(|claim| bound_volume(claim) == Some(handed.volume.as_str()) && is_bound(claim))
}

/// The record of moving replica `ordinal` from `from` to the StatefulSet `to`: every claim of it
/// that is Bound, with its volume and that volume's reclaim policy now. Why not yet, when a claim
/// of it is not Bound, or one under the new name is already there (data Ferry did not put there:
/// it is never overwritten).
pub fn intent(from: &StatefulSet, to: &str, ordinal: i32, cluster: &Cluster) -> Result<Handover, NotYet> {
    let from_name = from.metadata.name.clone().unwrap_or_default();
    let mut volumes = Vec::new();
    for template in template_names(from) {
        let from_claim = claim_name(&template, &from_name, ordinal);
        let to_claim = claim_name(&template, to, ordinal);
        if cluster.claims.contains_key(&to_claim) {
            return Err(NotYet::Refused(format!(
                "claim {to_claim} already exists: replica {ordinal} cannot take its volume from {from_claim} (delete {to_claim} if its data is not needed)"
            )));
        }
        let Some(claim) = cluster.claims.get(&from_claim) else {
            // Never made (a replica that never ran): the new StatefulSet makes its own.
            continue;
        };
        let volume = bound_volume(claim).filter(|_| is_bound(claim));
        let Some(volume) = volume.and_then(|name| cluster.volumes.get(name)) else {
            return Err(NotYet::Wait(format!("claim {from_claim} to be Bound")));
        };
        volumes.push(HandedVolume {
            from_claim,
            to_claim,
            volume: volume.metadata.name.clone().unwrap_or_default(),
            volume_uid: volume.metadata.uid.clone(),
            reclaim_policy: reclaim_policy(volume),
        });
    }
    Ok(Handover {
        from: from_name,
        to: to.to_string(),
        ordinal,
        volumes,
    })
}

/// The next writes of the move `handover`; `labels` are the new StatefulSet's selector labels,
/// which its controller gives the claims it makes (and Ferry the ones it re-makes).
pub fn advance(handover: &Handover, labels: &BTreeMap<String, String>, cluster: &Cluster, now: i64) -> Step {
    // 1. Every volume kept whatever happens to its claim.
    let retain: Vec<HandoverAction> = handover
        .volumes
        .iter()
        .filter_map(|handed| {
            let volume = cluster.volumes.get(&handed.volume)?;
            (!moved(handed, cluster) && reclaim_policy(volume) != RETAIN).then(|| {
                HandoverAction::Volume(VolumeWrite::SetReclaimPolicy {
                    volume: handed.volume.clone(),
                    uid: handed.volume_uid.clone(),
                    policy: RETAIN.to_string(),
                })
            })
        })
        .collect();
    if !retain.is_empty() {
        return Step::Act(retain);
    }
    // 2. The replica stopped under both names (its StatefulSets count the ordinal in neither),
    // unless every volume is bound under the new name already: then the new StatefulSet may count
    // it and its pod run (an operator killed after shaping it, before the record went), and
    // waiting for that pod to stop would wait for ever.
    let all_moved = !handover.volumes.is_empty() && handover.volumes.iter().all(|h| moved(h, cluster));
    for set in [&handover.from, &handover.to] {
        let pod = pod_name(set, handover.ordinal);
        if !all_moved && cluster.pods.contains(&pod) {
            return Step::Wait(format!("pod {pod} to stop"));
        }
    }
    let mut actions = Vec::new();
    let mut waiting = Vec::new();
    for handed in &handover.volumes {
        match advance_volume(handed, labels, cluster, now) {
            Ok(Some(action)) => actions.push(action),
            Ok(None) => {}
            Err(VolumeWait::Wait(why)) => waiting.push(why),
            Err(VolumeWait::Stuck(why)) => return Step::Stuck(why),
        }
    }
    if !actions.is_empty() {
        Step::Act(actions)
    } else if !waiting.is_empty() {
        Step::Wait(waiting.join("; "))
    } else {
        Step::Done
    }
}

enum VolumeWait {
    Wait(String),
    Stuck(String),
}

/// One volume's next write (`None`: it is done).
fn advance_volume(
    handed: &HandedVolume,
    labels: &BTreeMap<String, String>,
    cluster: &Cluster,
    now: i64,
) -> Result<Option<HandoverAction>, VolumeWait> {
    let Some(volume) = cluster.volumes.get(&handed.volume) else {
        return Err(VolumeWait::Stuck(format!(
            "volume {} of claim {} is gone",
            handed.volume, handed.from_claim
        )));
    };
    if handed.volume_uid.is_some() && volume.metadata.uid != handed.volume_uid {
        return Err(VolumeWait::Stuck(format!(
            "volume {} was re-created (another UID); its data is not the replica's",
            handed.volume
        )));
    }
    // Done: bound under the new name; the policy it had goes back.
    if let Some(claim) = cluster.claims.get(&handed.to_claim) {
        return made(handed, claim, volume, now);
    }
    // The old claim goes (its volume is retained).
    if let Some(claim) = cluster.claims.get(&handed.from_claim) {
        if bound_volume(claim) != Some(handed.volume.as_str()) {
            return Err(VolumeWait::Stuck(format!(
                "claim {} names another volume than {}",
                handed.from_claim, handed.volume
            )));
        }
        if claim.metadata.deletion_timestamp.is_some() {
            return Err(VolumeWait::Wait(format!("claim {} to go", handed.from_claim)));
        }
        return Ok(Some(HandoverAction::Volume(VolumeWrite::DeleteClaim {
            claim: handed.from_claim.clone(),
            uid: claim_uid(claim),
        })));
    }
    // Reserved for the new name, then Available to it.
    let claim_ref = volume.spec.as_ref().and_then(|spec| spec.claim_ref.as_ref());
    let reserved =
        claim_ref.is_some_and(|r| r.name.as_deref() == Some(handed.to_claim.as_str()) && r.uid.is_none());
    if !reserved {
        return Ok(Some(HandoverAction::Volume(VolumeWrite::ReserveVolume {
            volume: handed.volume.clone(),
            uid: handed.volume_uid.clone(),
            claim: handed.to_claim.clone(),
        })));
    }
    // A claim made before the PV controller saw the reservation fails to bind and waits for its
    // resync (15 s): wait for Available.
    if volume.status.as_ref().and_then(|s| s.phase.as_deref()) != Some("Available") {
        return Err(VolumeWait::Wait(format!(
            "volume {} to be Available",
            handed.volume
        )));
    }
    Ok(Some(HandoverAction::CreateClaim {
        claim: Box::new(claim_for(handed, volume, labels)),
    }))
}

/// The claim under the new name is made: once bound, the volume's own reclaim policy goes back;
/// until then the PV controller is nudged once if it is slow.
fn made(
    handed: &HandedVolume,
    claim: &PersistentVolumeClaim,
    volume: &PersistentVolume,
    now: i64,
) -> Result<Option<HandoverAction>, VolumeWait> {
    if bound_volume(claim) != Some(handed.volume.as_str()) {
        return Err(VolumeWait::Stuck(format!(
            "claim {} names another volume than {}",
            handed.to_claim, handed.volume
        )));
    }
    if !is_bound(claim) {
        let created = claim
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|t| t.0.as_second());
        let nudged = claim
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(ANNOTATION_NUDGED));
        if !nudged && created.is_some_and(|at| now - at >= NUDGE_AFTER_SECONDS) {
            return Ok(Some(HandoverAction::Volume(VolumeWrite::NudgeClaim {
                claim: handed.to_claim.clone(),
                uid: claim_uid(claim),
            })));
        }
        return Err(VolumeWait::Wait(format!("claim {} to bind", handed.to_claim)));
    }
    Ok((reclaim_policy(volume) != handed.reclaim_policy).then(|| {
        HandoverAction::Volume(VolumeWrite::SetReclaimPolicy {
            volume: handed.volume.clone(),
            uid: handed.volume_uid.clone(),
            policy: handed.reclaim_policy.clone(),
        })
    }))
}

/// The claim under the new name: asking for exactly what the volume holds, so the PV controller
/// binds exactly it.
fn claim_for(
    handed: &HandedVolume,
    volume: &PersistentVolume,
    labels: &BTreeMap<String, String>,
) -> PersistentVolumeClaim {
    let spec = volume.spec.clone().unwrap_or_default();
    let requests = spec
        .capacity
        .as_ref()
        .and_then(|capacity| capacity.get("storage"))
        .map(|size| BTreeMap::from([("storage".to_string(), size.clone())]));
    PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(handed.to_claim.clone()),
            labels: Some(labels.clone()).filter(|l| !l.is_empty()),
            ..ObjectMeta::default()
        },
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: spec.access_modes.clone(),
            volume_mode: spec.volume_mode.clone(),
            storage_class_name: Some(spec.storage_class_name.clone().unwrap_or_default()),
            volume_attributes_class_name: spec.volume_attributes_class_name.clone(),
            volume_name: Some(handed.volume.clone()),
            resources: Some(VolumeResourceRequirements {
                requests,
                ..VolumeResourceRequirements::default()
            }),
            ..PersistentVolumeClaimSpec::default()
        }),
        status: None,
    }
}

#[cfg(test)]
#[path = "handover_tests.rs"]
mod tests;
