//! `kubectl ferry report`, read from the cluster: the StatefulSets in scope, their replicas'
//! claims, the StorageClasses (for the default), the bytes in use each claim's kubelet reports
//! (`nodes/proxy` stats of the nodes their pods run on), and the prices the chart set (ConfigMaps
//! labelled `ferry.dev/storage-prices: "true"`). It only reads.

use super::{ReportFacts, VolumeFacts, report};
use crate::exit::{CliError, ExitCode};
use crate::kube_io::{Cluster, list, scoped, storage_classes};
use crate::style::Style;
use ferry_engine::storage_classes::{class_of, default_class};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod};
use kube::api::ListParams;
use kube::{Api, ResourceExt};
use std::collections::{BTreeMap, BTreeSet};

/// The label on the ConfigMaps that hold prices per StorageClass (the chart's `storagePrices`).
pub const PRICES_LABEL: &str = "ferry.dev/storage-prices";

/// What `report` is asked.
pub struct ReportRequest<'a> {
    pub all_namespaces: bool,
    pub selector: Option<&'a str>,
    /// `--price CLASS=AMOUNT`: over the ConfigMaps' prices.
    pub prices: Vec<(String, f64)>,
    pub fill_percent: u8,
    pub output: Option<crate::args::ReportFormat>,
}

pub async fn run(cluster: &Cluster, request: &ReportRequest<'_>, style: Style) -> Result<ExitCode, CliError> {
    let facts = read_facts(cluster, request).await?;
    let report = report(&facts);
    crate::out!("{}", super::render::render(&report, request.output, style)?);
    Ok(ExitCode::Ok)
}

async fn read_facts(cluster: &Cluster, request: &ReportRequest<'_>) -> Result<ReportFacts, CliError> {
    let all = ListParams::default();
    let selected = request
        .selector
        .map_or_else(ListParams::default, |s| ListParams::default().labels(s));
    let sets = list(
        cluster,
        scoped::<StatefulSet>(cluster, request.all_namespaces),
        &selected,
        "statefulsets.apps",
    )
    .await?;
    let claims = list(
        cluster,
        scoped::<PersistentVolumeClaim>(cluster, request.all_namespaces),
        &all,
        "persistentvolumeclaims",
    )
    .await?;
    let pods = list(
        cluster,
        scoped::<Pod>(cluster, request.all_namespaces),
        &all,
        "pods",
    )
    .await?;
    let classes = storage_classes(cluster).await?;
    let default = default_class(&classes);
    let claims: BTreeMap<(String, String), &PersistentVolumeClaim> = (claims.iter())
        .map(|c| ((c.namespace().unwrap_or_default(), c.name_any()), c))
        .collect();
    let mut volumes = Vec::new();
    for set in &sets {
        let namespace = set.namespace().unwrap_or_default();
        let templates = (set.spec.as_ref()).and_then(|s| s.volume_claim_templates.as_ref());
        for template in templates.into_iter().flatten() {
            for ordinal in ferry_engine::ordinals::ordinals(set) {
                let name = format!("{}-{}-{ordinal}", template.name_any(), set.name_any());
                let Some(claim) = claims.get(&(namespace.clone(), name.clone())) else {
                    continue;
                };
                volumes.push(volume_facts(set, &template.name_any(), claim, default.as_deref()));
            }
        }
    }
    let mut notes = Vec::new();
    let wanted: BTreeSet<(String, String)> = (volumes.iter())
        .map(|v| (v.namespace.clone(), v.claim.clone()))
        .collect();
    let used = usage(cluster, &pods, &wanted, &mut notes).await;
    for volume in &mut volumes {
        volume.used_bytes = used
            .get(&(volume.namespace.clone(), volume.claim.clone()))
            .copied();
    }
    let mut prices = chart_prices(cluster, &mut notes).await;
    prices.extend(request.prices.iter().cloned());
    Ok(ReportFacts {
        volumes,
        prices,
        fill_percent: request.fill_percent,
        notes,
    })
}

fn volume_facts(
    set: &StatefulSet,
    template: &str,
    claim: &PersistentVolumeClaim,
    default: Option<&str>,
) -> VolumeFacts {
    let spec = claim.spec.as_ref();
    VolumeFacts {
        namespace: set.namespace().unwrap_or_default(),
        stateful_set: set.name_any(),
        template: template.to_string(),
        claim: claim.name_any(),
        storage_class: class_of(spec.and_then(|s| s.storage_class_name.as_deref()), default)
            .map(String::from),
        size_bytes: ferry_api::quantity::claim_size_bytes(claim),
        used_bytes: None,
    }
}

/// The bytes in use of each `wanted` claim, from the stats of the nodes whose pods mount them; a
/// node that cannot be asked (no `nodes/proxy` right, the kubelet down) is said in `notes`.
async fn usage(
    cluster: &Cluster,
    pods: &[Pod],
    wanted: &BTreeSet<(String, String)>,
    notes: &mut Vec<String>,
) -> BTreeMap<(String, String), u64> {
    let nodes: BTreeSet<String> = (pods.iter())
        .filter(|pod| {
            let namespace = pod.namespace().unwrap_or_default();
            (pod.spec
                .as_ref()
                .and_then(|s| s.volumes.as_ref())
                .into_iter()
                .flatten())
            .filter_map(|v| v.persistent_volume_claim.as_ref())
            .any(|c| wanted.contains(&(namespace.clone(), c.claim_name.clone())))
        })
        .filter_map(|pod| pod.spec.as_ref().and_then(|s| s.node_name.clone()))
        .collect();
    let mut used = BTreeMap::new();
    for node in nodes {
        match node_usage(cluster, &node).await {
            Ok(found) => used.extend(found),
            Err(why) => notes.push(format!(
                "usage on node {node} not read ({why}): its volumes show no usage"
            )),
        }
    }
    used
}

/// The kubelet's `stats/summary` of `node`: each claim's bytes in use.
async fn node_usage(cluster: &Cluster, node: &str) -> Result<BTreeMap<(String, String), u64>, String> {
    let request = http::Request::get(format!("/api/v1/nodes/{node}/proxy/stats/summary"))
        .body(Vec::new())
        .map_err(|e| e.to_string())?;
    let summary: serde_json::Value = cluster.client.request(request).await.map_err(|e| match e {
        kube::Error::Api(status) if status.code == 403 => {
            "forbidden: reading usage needs get on nodes/proxy".to_string()
        }
        other => other.to_string(),
    })?;
    let mut used = BTreeMap::new();
    for pod in summary["pods"].as_array().into_iter().flatten() {
        for volume in pod["volume"].as_array().into_iter().flatten() {
            let claim = &volume["pvcRef"];
            if let (Some(name), Some(namespace), Some(bytes)) = (
                claim["name"].as_str(),
                claim["namespace"].as_str(),
                volume["usedBytes"].as_u64(),
            ) {
                used.insert((namespace.to_string(), name.to_string()), bytes);
            }
        }
    }
    Ok(used)
}

/// Prices per GiB-month by class from the ConfigMaps labelled [`PRICES_LABEL`] (any namespace the
/// user can list; a value that is not a number is said in `notes`).
async fn chart_prices(cluster: &Cluster, notes: &mut Vec<String>) -> BTreeMap<String, f64> {
    let params = ListParams::default().labels(&format!("{PRICES_LABEL}=true"));
    let maps = match Api::<ConfigMap>::all(cluster.client.clone()).list(&params).await {
        Ok(list) => list.items,
        Err(error) => {
            notes.push(format!(
                "prices from ConfigMaps not read ({error}): --price sets them"
            ));
            return BTreeMap::new();
        }
    };
    let mut prices = BTreeMap::new();
    for map in maps {
        for (class, amount) in map.data.iter().flatten() {
            match crate::args::parse_price(&format!("{class}={amount}")) {
                Ok((class, amount)) => {
                    prices.insert(class, amount);
                }
                Err(why) => notes.push(format!(
                    "ConfigMap {}/{}: {why}",
                    map.namespace().unwrap_or_default(),
                    map.name_any()
                )),
            }
        }
    }
    prices
}
