//! What a blue/green pass reads besides the StatefulSets: the claims and volumes of the replicas
//! that can move next, and the pods.

use crate::extended::desired::stateful_sets;
use crate::extended::handover::Cluster;
use crate::extended::observed::{LiveSet, Observation};
use crate::extended::versions::Range;
use ferry_api::ExtendedStatefulSet;
use std::collections::BTreeSet;

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
            crate::extended::versions::belongs_to(
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
        let templates: BTreeSet<&str> = sets
            .iter()
            .filter_map(|set| set.object.spec.as_ref()?.volume_claim_templates.as_ref())
            .flatten()
            .filter_map(|t| t.metadata.name.as_deref())
            .collect();
        let ordinals = splits
            .iter()
            .flat_map(|&split| [split - 1, split])
            .filter(|&o| o >= 0);
        for ordinal in ordinals {
            for set in &sets {
                let name = set.object.metadata.name.as_deref().unwrap_or_default();
                for template in &templates {
                    names.insert(crate::names::claim(template, name, ordinal));
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
