//! What an autoscaler looks at, read fresh each pass: its StatefulSets, their pods and claims,
//! the VolumeResizes in the namespace, the usage the kubelets (or Prometheus) report, and the
//! StorageClasses when a claim carries pvc-autoresizer's annotation. All of
//! it is read first, then `ferry_engine::autoscale::plan` decides.

use crate::Error;
use crate::context::Context;
use crate::features::{Feature, Features};
use crate::usage::source::{self, Usage};
use crate::usage::summaries::Summaries;
use ferry_api::names::{LABEL_AUTOSCALER_UID, LABEL_MOVER_PASS};
use ferry_api::quantity::requested_storage;
use ferry_api::{VolumeAutoscaler, parse_bytes};
use ferry_engine::autoscale::Reading;
use ferry_engine::autoscale::plan::{Observation, SetObservation, VolumeObservation};
use ferry_engine::autoscale::situation::Replicas;
use ferry_engine::autoscale::usage::readings;
use ferry_engine::autoscale::{autoresizer, measure};
use ferry_engine::names::ordinal_after;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::ListParams;
use kube::core::{Selector, SelectorExt};
use kube::{Api, Client, ResourceExt};
use std::collections::BTreeMap;

/// The StatefulSets an autoscaler governs, or why it governs none.
async fn stateful_sets(
    client: &Client,
    namespace: &str,
    autoscaler: &VolumeAutoscaler,
) -> Result<Result<Vec<StatefulSet>, String>, Error> {
    let api = Api::<StatefulSet>::namespaced(client.clone(), namespace);
    if let Some(name) = &autoscaler.spec.stateful_set_name {
        return Ok(match api.get_opt(name).await? {
            Some(sts) => Ok(vec![sts]),
            None => Err(format!("StatefulSet {name:?} does not exist in this namespace")),
        });
    }
    if let Some(owner) = &autoscaler.spec.owner {
        let found: Vec<StatefulSet> = api
            .list(&ListParams::default())
            .await?
            .items
            .into_iter()
            .filter(|sts| controlled_by(sts.owner_references(), &owner.kind, &owner.name))
            .collect();
        return Ok(if found.is_empty() {
            Err(format!(
                "no StatefulSet in this namespace is controlled by {} {:?}",
                owner.kind, owner.name
            ))
        } else {
            Ok(found)
        });
    }
    let Some(selector) = autoscaler.spec.selector.clone() else {
        return Ok(Err(
            "give spec.statefulSetName, spec.selector or spec.owner".to_string()
        ));
    };
    let selector = match Selector::try_from(selector) {
        Ok(selector) => selector,
        Err(error) => return Ok(Err(format!("spec.selector: {error}"))),
    };
    let found = api
        .list(&ListParams::default().labels_from(&selector))
        .await?
        .items;
    Ok(if found.is_empty() {
        Err("no StatefulSet in this namespace matches spec.selector".to_string())
    } else {
        Ok(found)
    })
}

/// The controller among `owners` (a StatefulSet's owner references) is `kind` `name`.
pub(crate) fn controlled_by(
    owners: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference],
    kind: &str,
    name: &str,
) -> bool {
    owners
        .iter()
        .any(|owner| owner.controller == Some(true) && owner.kind == kind && owner.name == name)
}

async fn replicas(client: &Client, namespace: &str, sts: &StatefulSet) -> Result<Replicas, Error> {
    let name = sts.name_any();
    let uid = sts.uid();
    let pods = Api::<Pod>::namespaced(client.clone(), namespace);
    // The StatefulSet's own selector finds its pods; the controller reference confirms them.
    let selector = sts
        .spec
        .as_ref()
        .map(|spec| Selector::try_from(spec.selector.clone()))
        .transpose()
        .map_err(|error| Error::Invariant(format!("StatefulSet {name}: selector: {error}")))?;
    let params = match &selector {
        Some(selector) => ListParams::default().labels_from(selector),
        None => ListParams::default(),
    };
    let pods = pods
        .list(&params)
        .await?
        .items
        .into_iter()
        .filter(|pod| {
            selector
                .as_ref()
                .is_none_or(|selector| selector.matches(pod.labels()))
                && pod
                    .owner_references()
                    .iter()
                    .any(|owner| owner.controller == Some(true) && Some(&owner.uid) == uid.as_ref())
        })
        .filter_map(|pod| Some((ordinal_after(&pod.name_any(), &name)?, pod)))
        .collect();
    Ok(Replicas {
        ordinals: crate::ordinals::ordinals(sts).collect(),
        pods,
    })
}

/// The claims of `volume`: names → ordinal, the largest size they ask for, and those that exist.
async fn claims(
    client: &Client,
    namespace: &str,
    sts: &str,
    volume: &str,
    ordinals: &[i32],
) -> Result<(BTreeMap<String, i32>, u64, Vec<PersistentVolumeClaim>), Error> {
    let api = Api::<PersistentVolumeClaim>::namespaced(client.clone(), namespace);
    let mut names = BTreeMap::new();
    let mut largest = 0;
    let mut found = Vec::new();
    for ordinal in ordinals {
        let name = format!("{volume}-{sts}-{ordinal}");
        if let Some(claim) = api.get_opt(&name).await? {
            let size = requested_storage(claim.spec.as_ref())
                .and_then(|q| parse_bytes(&q.0).ok())
                .unwrap_or(0);
            largest = largest.max(size);
            found.push(claim);
        }
        names.insert(name, *ordinal);
    }
    Ok((names, largest, found))
}

/// The StorageClasses, listed only when a claim asks pvc-autoresizer to grow it (the plan then
/// checks whether its class lets pvc-autoresizer act).
async fn classes_for(client: &Client, sets: &[SetObservation]) -> Result<Vec<StorageClass>, Error> {
    let asked = sets
        .iter()
        .flat_map(|set| set.volumes.values())
        .flat_map(|read| &read.claims)
        .any(autoresizer::has_storage_limit);
    if !asked {
        return Ok(Vec::new());
    }
    let api = Api::<StorageClass>::all(client.clone());
    Ok(api.list(&ListParams::default()).await?.items)
}

/// The usage of the claims given (`usage::source`: Prometheus, else the summaries of the nodes
/// their pods run on); and why the source could not answer, when it could not (those claims' usage
/// is then unknown, and nothing grows on it).
async fn usage(
    ctx: &Context,
    summaries: &Summaries,
    namespace: &str,
    pods: &BTreeMap<i32, Pod>,
    claims: &BTreeMap<String, i32>,
) -> (Vec<Reading>, Option<String>) {
    let mut nodes: Vec<String> = pods
        .values()
        .filter_map(|pod| pod.spec.as_ref()?.node_name.clone())
        .collect();
    nodes.sort_unstable();
    nodes.dedup();
    let (usage, why) = source::read(
        ctx.usage_prometheus.as_deref(),
        namespace,
        nodes,
        |node| async move { summaries.of(&node).await },
    )
    .await;
    let found = match usage {
        Usage::Prometheus(samples) => {
            ferry_engine::autoscale::prometheus::readings(&samples, namespace, claims)
        }
        Usage::Kubelets(summaries) => summaries
            .iter()
            .flat_map(|summary| readings(summary, namespace, claims))
            .collect(),
    };
    (found, why)
}

/// Everything one pass of `autoscaler` decides from. With usage switched off, no kubelet is asked
/// (`nodes/proxy` is not granted); the plan is told why.
pub async fn observe(
    ctx: &Context,
    summaries: &Summaries,
    autoscaler: &VolumeAutoscaler,
    namespace: &str,
) -> Result<Observation, Error> {
    let client = &ctx.client;
    // Listed from the API server; one this Ferry cannot read does not fail the list: it is logged,
    // and counts only as possibly at work on the StatefulSet it names.
    let resizes = crate::listing::list(client, namespace).await?;
    let found = match stateful_sets(client, namespace, autoscaler).await? {
        Ok(found) => found,
        Err(why) => {
            return Ok(Observation {
                resizes,
                stateful_sets: Err(why),
                storage_classes: Vec::new(),
            });
        }
    };
    let read_usage = ctx.reads_usage();
    let usage_pods = measurement_pods(client, namespace, autoscaler).await?;
    let now = k8s_openapi::jiff::Timestamp::now().as_second();
    let mut sets = Vec::new();
    for sts in found {
        // Without usage nothing is decided: the plan says why and reads no replica or claim.
        if !read_usage {
            sets.push(SetObservation {
                object: sts,
                ..SetObservation::default()
            });
            continue;
        }
        let replicas = replicas(client, namespace, &sts).await?;
        let mut volumes = BTreeMap::new();
        for volume in &autoscaler.spec.volumes {
            let name = sts.name_any();
            let (claims, largest_claim, found) =
                claims(client, namespace, &name, &volume.name, &replicas.ordinals).await?;
            let (readings, usage_unreadable) =
                usage(ctx, summaries, namespace, &replicas.pods, &claims).await;
            let measurements = usage_pods
                .iter()
                .filter_map(|pod| measure::of_pod(pod, &claims, now))
                .collect();
            let read = VolumeObservation {
                largest_claim,
                readings,
                usage_unreadable,
                measurements,
                claims: found,
            };
            volumes.insert(volume.name.clone(), read);
        }
        sets.push(SetObservation {
            object: sts,
            replicas,
            volumes,
        });
    }
    let storage_classes = classes_for(client, &sets).await?;
    Ok(Observation {
        resizes,
        stateful_sets: Ok(sets),
        storage_classes,
    })
}

/// The usage pods `autoscaler` runs (its rescues' measurements).
async fn measurement_pods(
    client: &Client,
    namespace: &str,
    autoscaler: &VolumeAutoscaler,
) -> Result<Vec<Pod>, Error> {
    let Some(uid) = autoscaler.uid() else {
        return Ok(Vec::new());
    };
    let selector = format!("{LABEL_AUTOSCALER_UID}={uid},{LABEL_MOVER_PASS}=usage");
    let params = ListParams::default().labels(&selector);
    Ok(Api::<Pod>::namespaced(client.clone(), namespace)
        .list(&params)
        .await?
        .items)
}

/// Why usage is not read, when it is not, and the two ways to read it.
pub fn usage_not_read(ctx: &Context) -> Option<String> {
    (!ctx.reads_usage()).then(|| {
        format!(
            "{}; usage is read from a Prometheus given by usagePrometheus.url, or from the kubelets with kubeletStats on",
            Features::switched_off(Feature::KubeletStats)
        )
    })
}
