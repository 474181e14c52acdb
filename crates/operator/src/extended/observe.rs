//! What the ExtendedStatefulSet controller reads: the configuration its pods follow (marked as
//! referenced on the way), its StatefulSets and their pods, the VolumeResizes of the namespace
//! and the Job the recorded step waits on.

use super::config::{self, Followed};
use crate::Error;
use crate::context::Context;
use crate::features::{Feature, Features};
use ferry_api::ExtendedStatefulSet;
use ferry_engine::extended::blue_green::{claims_to_read, cluster};
use ferry_engine::extended::config::{ConfigRef, digest, references};
use ferry_engine::extended::desired::{LABEL_EXTENDED, stateful_sets};
use ferry_engine::extended::existing::claim_of;
use ferry_engine::extended::handover::Cluster;
use ferry_engine::extended::hooks::job_to_read;
use ferry_engine::extended::observed::{LiveSet, Observation, counts_pods};
use ferry_engine::extended::rollout::Progress;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod, Service};
use kube::api::ListParams;
use kube::{Api, ResourceExt};
use std::collections::BTreeSet;

/// The configuration the pods follow: its digest (when its changes roll the pods), and why some of
/// it does not (ConfigMaps or Secrets left unfollowed because their feature is switched off).
pub struct Configuration {
    pub digest: Option<String>,
    pub problems: Vec<String>,
}

/// The referenced ConfigMaps and Secrets marked and read into a digest (only when their changes
/// roll the pods).
pub async fn configuration(
    ests: &ExtendedStatefulSet,
    ctx: &Context,
    namespace: &str,
) -> Result<Configuration, Error> {
    let client = &ctx.client;
    let pod_spec = ests.spec.template.spec.template.spec.clone().unwrap_or_default();
    let mut referenced = if ests.spec.update_on_config_change {
        references(&pod_spec)
    } else {
        BTreeSet::new()
    };
    // Switched off: such ConfigMaps or Secrets are neither read nor marked; their changes do not
    // roll the pods.
    let followed = Followed {
        config_maps: ctx.features.enabled(Feature::ConfigMapReferences),
        secrets: ctx.features.enabled(Feature::SecretReferences),
    };
    let mut problems = Vec::new();
    for (kind, feature) in [
        ("ConfigMap", Feature::ConfigMapReferences),
        ("Secret", Feature::SecretReferences),
    ] {
        let unfollowed: Vec<&str> = referenced
            .iter()
            .filter(|reference| reference.kind() == kind && !followed.includes(reference))
            .map(ConfigRef::name)
            .collect();
        if !unfollowed.is_empty() {
            problems.push(format!(
                "a change to {kind} {} does not roll the pods: {}",
                unfollowed.join(", "),
                Features::switched_off(feature)
            ));
        }
    }
    referenced.retain(|reference| followed.includes(reference));
    config::protect(client, namespace, &ests.name_any(), &referenced, followed).await?;
    let digest = if ests.spec.update_on_config_change {
        Some(digest(
            &ctx.extended.config_digest_key,
            &config::contents(client, namespace, &referenced).await?,
        ))
    } else {
        None
    };
    Ok(Configuration { digest, problems })
}

/// The StatefulSets the ExtendedStatefulSet runs (each with the pods its selector picks), those
/// labelled as its own, the namespace's VolumeResizes (one this Ferry cannot read does not fail
/// the list) and the Job `previous`'s step waits on.
pub async fn observe(
    ctx: &Context,
    ests: &ExtendedStatefulSet,
    namespace: &str,
    config_digest: Option<&str>,
    previous: &Progress,
) -> Result<Observation, Error> {
    let client = &ctx.client;
    let sets = Api::<StatefulSet>::namespaced(client.clone(), namespace);
    let pods = Api::<Pod>::namespaced(client.clone(), namespace);
    let mut observation = Observation {
        resizes: crate::listing::list(client, namespace).await?,
        ..Observation::default()
    };
    let labelled = format!("{LABEL_EXTENDED}={}", ests.name_any());
    let blue_green = ests
        .spec
        .update_strategy
        .as_ref()
        .is_some_and(|strategy| strategy.blue_green());
    if blue_green {
        // Every version's StatefulSet of its own, whatever its name.
        observation.labelled = sets.list(&ListParams::default().labels(&labelled)).await?.items;
        for object in observation.labelled.clone() {
            let owned = object
                .owner_references()
                .iter()
                .any(|owner| Some(&owner.uid) == ests.metadata.uid.as_ref());
            if owned {
                let pods = pods_of(&pods, &object).await?;
                observation
                    .live
                    .insert(object.name_any(), LiveSet { object, pods });
            }
        }
        observation.cluster =
            moving_parts(client, ests, namespace, &observation, config_digest, &labelled).await?;
        // (Switched off, the Service is not read: `services` is not granted.)
        if ctx.features.enabled(Feature::BlueGreenService)
            && let Some(service) = ests
                .spec
                .update_strategy
                .as_ref()
                .and_then(|s| s.service.as_deref())
        {
            observation.service = Api::<Service>::namespaced(client.clone(), namespace)
                .get_opt(service)
                .await?;
        }
    } else {
        for wanted in stateful_sets(ests, config_digest) {
            if let Some(object) = sets.get_opt(&wanted.name).await? {
                let pods = pods_of(&pods, &object).await?;
                observation.live.insert(wanted.name, LiveSet { object, pods });
            }
        }
        observation.labelled = sets.list(&ListParams::default().labels(&labelled)).await?.items;
    }
    if previous.digest.is_none() {
        observation.existing = Some(existing_claims(client, ests, namespace).await?);
    }
    // (Switched off, no Job is made or read: `jobs` is not granted.)
    if ctx.features.enabled(Feature::UpdateHooks)
        && let Some(job) = job_to_read(&ests.name_any(), previous)
    {
        observation.job = Api::<Job>::namespaced(client.clone(), namespace)
            .get_opt(&job)
            .await?;
    }
    Ok(observation)
}

/// The pods a StatefulSet's selector picks, once its controller has seen its latest spec.
async fn pods_of(pods: &Api<Pod>, sts: &StatefulSet) -> Result<Vec<Pod>, Error> {
    if !counts_pods(sts) {
        return Ok(Vec::new());
    }
    Ok(pods
        .list(&ListParams::default().labels(&selector(sts)))
        .await?
        .items)
}

/// Blue/green: the claims of the replicas that can move next (and of the recorded move), their
/// volumes, and the names of the ExtendedStatefulSet's pods (terminating ones too: they still use
/// their volumes).
async fn moving_parts(
    client: &kube::Client,
    ests: &ExtendedStatefulSet,
    namespace: &str,
    observation: &Observation,
    config_digest: Option<&str>,
    labelled: &str,
) -> Result<Cluster, Error> {
    let claims_api = Api::<PersistentVolumeClaim>::namespaced(client.clone(), namespace);
    let mut claims = Vec::new();
    for name in claims_to_read(ests, observation, config_digest) {
        claims.extend(claims_api.get_opt(&name).await?);
    }
    let mut volume_names: BTreeSet<String> = claims
        .iter()
        .filter_map(|claim| claim.spec.as_ref().and_then(|spec| spec.volume_name.clone()))
        .collect();
    if let Some(handover) = ests.status.as_ref().and_then(|s| s.handover.as_ref()) {
        volume_names.extend(handover.volumes.iter().map(|handed| handed.volume.clone()));
    }
    let volumes = volumes_named(client, volume_names).await?;
    let pod_names = Api::<Pod>::namespaced(client.clone(), namespace)
        .list_metadata(&ListParams::default().labels(labelled))
        .await?
        .items
        .into_iter()
        .map(|pod| pod.name_any())
        .collect();
    Ok(cluster(claims, volumes, pod_names))
}

/// With no version recorded: the namespace's claims named like the replicas' (a deleted
/// ExtendedStatefulSet's StatefulSets leave theirs) and, with zones, their volumes.
async fn existing_claims(
    client: &kube::Client,
    ests: &ExtendedStatefulSet,
    namespace: &str,
) -> Result<Cluster, Error> {
    let claims: Vec<PersistentVolumeClaim> =
        Api::<PersistentVolumeClaim>::namespaced(client.clone(), namespace)
            .list(&ListParams::default())
            .await?
            .items
            .into_iter()
            .filter(|claim| claim_of(ests, &claim.name_any()).is_some())
            .collect();
    let volumes = if ests.spec.zones.is_empty() {
        Vec::new()
    } else {
        let names: Vec<String> = claims
            .iter()
            .filter_map(|claim| claim.spec.as_ref()?.volume_name.clone())
            .collect();
        volumes_named(client, names).await?
    };
    Ok(cluster(claims, volumes, BTreeSet::new()))
}

/// The volumes of these names that exist.
async fn volumes_named(
    client: &kube::Client,
    names: impl IntoIterator<Item = String>,
) -> Result<Vec<PersistentVolume>, Error> {
    let api = Api::<PersistentVolume>::all(client.clone());
    let mut volumes = Vec::new();
    for name in names {
        volumes.extend(api.get_opt(&name).await?);
    }
    Ok(volumes)
}

/// A StatefulSet's `matchLabels` as a label selector.
fn selector(sts: &StatefulSet) -> String {
    sts.spec
        .as_ref()
        .and_then(|spec| spec.selector.match_labels.as_ref())
        .into_iter()
        .flatten()
        .map(|(key, value)| format!("{key}={value}"))
        .collect::<Vec<_>>()
        .join(",")
}
