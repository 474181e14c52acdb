//! What the operator read for one ExtendedStatefulSet, and how the rollout counts a StatefulSet's
//! pods in it: the input every plan (rolling or blue/green) works from.

use super::desired::Desired;
use super::handover::Cluster;
use super::rollout::Observed;
use ferry_api::listed::Listing;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, Service};
use std::collections::BTreeMap;

/// One live StatefulSet and the pods its selector picks.
#[derive(Debug, Clone, Default)]
pub struct LiveSet {
    pub object: StatefulSet,
    pub pods: Vec<Pod>,
}

/// What the operator read for one ExtendedStatefulSet.
#[derive(Debug, Clone, Default)]
pub struct Observation {
    /// Each desired StatefulSet that exists, by name.
    pub live: BTreeMap<String, LiveSet>,
    /// The StatefulSets labelled as this ExtendedStatefulSet's (those of dropped zones among them).
    pub labelled: Vec<StatefulSet>,
    /// The VolumeResizes of the namespace.
    pub resizes: Listing,
    /// The Job the recorded step waits on ([`super::hooks::job_to_read`]), when there is one.
    pub job: Option<Job>,
    /// Blue/green: the claims and volumes of the replicas that can move next, and the pods.
    pub cluster: Cluster,
    /// Blue/green: the Service `updateStrategy.service` names.
    pub service: Option<Service>,
    /// With no version recorded: the namespace's claims named like its replicas' and their
    /// volumes ([`super::existing`]); `None` once a version is recorded (not read).
    pub existing: Option<Cluster>,
}

/// Whether a StatefulSet's pods count yet: only once its controller has seen the latest spec and
/// names the newest revision (before that its revision is the old one). The operator lists the
/// pods only then.
pub fn counts_pods(sts: &StatefulSet) -> bool {
    sts.status.as_ref().is_some_and(|status| {
        status.observed_generation == sts.metadata.generation && status.update_revision.is_some()
    })
}

/// One StatefulSet as the rollout sees it: pods on its newest revision count only once
/// [`counts_pods`].
pub(super) fn counted(desired: &Desired, live: Option<&LiveSet>) -> Observed {
    let Some(live) = live else {
        return Observed {
            name: desired.name.clone(),
            exists: false,
            replicas: desired.replicas,
            live_replicas: 0,
            ready: 0,
            updated_ready: 0,
            updated: 0,
            partition: 0,
            unavailable: Vec::new(),
        };
    };
    let sts = &live.object;
    let status = sts.status.clone().unwrap_or_default();
    let revision = status.update_revision.as_deref().filter(|_| counts_pods(sts));
    let on_revision: Vec<&Pod> =
        live.pods
            .iter()
            .filter(|pod| {
                let owned = pod.metadata.owner_references.iter().flatten().any(|owner| {
                    owner.controller == Some(true) && Some(&owner.uid) == sts.metadata.uid.as_ref()
                });
                let hash = pod
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get("controller-revision-hash"));
                owned && revision.is_some() && hash.map(String::as_str) == revision
            })
            .collect();
    let updated_ready = on_revision
        .iter()
        .filter(|pod| crate::pods::ready(pod) && pod.metadata.deletion_timestamp.is_none())
        .count();
    Observed {
        name: desired.name.clone(),
        exists: true,
        replicas: desired.replicas,
        live_replicas: sts.spec.as_ref().and_then(|spec| spec.replicas).unwrap_or(1),
        ready: status.ready_replicas.unwrap_or(0),
        updated_ready: i32::try_from(updated_ready).unwrap_or(i32::MAX),
        updated: i32::try_from(on_revision.len()).unwrap_or(i32::MAX),
        partition: sts
            .spec
            .as_ref()
            .and_then(|spec| spec.update_strategy.as_ref())
            .and_then(|strategy| strategy.rolling_update.as_ref())
            .and_then(|rolling| rolling.partition)
            .unwrap_or(0),
        unavailable: if counts_pods(sts) {
            unavailable(sts, &live.pods)
        } else {
            Vec::new()
        },
    }
}

/// The indexes (ordinal less the first ordinal) of a StatefulSet's members whose pod is missing,
/// not Ready or terminating.
fn unavailable(sts: &StatefulSet, pods: &[Pod]) -> Vec<i32> {
    let (Some(name), Some(spec)) = (sts.metadata.name.as_deref(), sts.spec.as_ref()) else {
        return Vec::new();
    };
    let start = spec.ordinals.as_ref().and_then(|o| o.start).unwrap_or(0);
    let members = spec.replicas.unwrap_or(1);
    (0..members)
        .filter(|index| {
            let pod_name = format!("{name}-{}", start + index);
            !pods.iter().any(|pod| {
                pod.metadata.name.as_deref() == Some(pod_name.as_str())
                    && pod.metadata.deletion_timestamp.is_none()
                    && crate::pods::ready(pod)
            })
        })
        .collect()
}
