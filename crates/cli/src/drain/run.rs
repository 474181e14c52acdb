//! `kubectl ferry drain NODE`, carried out: read the facts, refuse (changing nothing) when a move
//! cannot be done, cordon the node, have one VolumeResize per StatefulSet move its replicas off it
//! (one found from an earlier run of the same drain is followed instead of made again), and wait
//! until every one has ended.

use super::{ClaimFacts, DrainFacts, DrainPlan, Move, SetFacts, TemplateFacts, listed, plan};
use crate::exit::{CliError, ExitCode};
use crate::kube_io::{Action, Cluster};
use crate::style::Style;
use ferry_api::names::LABEL_DRAINED_NODE;
use ferry_api::{Phase, Placement, VolumeChange, VolumeResize, VolumeResizeSpec, format_bytes};
use ferry_engine::names::label_value;
use ferry_engine::resize::NodeView;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use std::collections::BTreeMap;
use std::time::Duration;

/// How often the VolumeResizes are read while the drain waits for them.
const POLL: Duration = Duration::from_secs(2);

/// What `drain` is asked.
pub struct DrainRequest<'a> {
    pub node: &'a str,
    /// `-n`: only this namespace's StatefulSets (every namespace without it).
    pub namespace: Option<&'a str>,
    pub dry_run: bool,
    pub watch: bool,
}

pub async fn drain(
    cluster: &Cluster,
    request: &DrainRequest<'_>,
    style: Style,
) -> Result<ExitCode, CliError> {
    let nodes: Api<Node> = Api::all(cluster.client.clone());
    let explain = |error| async { cluster.explain(error, Action::new("list", "nodes")).await };
    if nodes
        .get_opt(request.node)
        .await
        .map_err(|e| CliError::Failed(e.to_string()))?
        .is_none()
    {
        return Err(CliError::NotFound(format!(
            "node {:?} does not exist",
            request.node
        )));
    }
    let facts = match read_facts(cluster, request.namespace).await {
        Ok(facts) => facts,
        Err(error) => return Err(explain(error).await),
    };
    let plan = plan(request.node, &facts);
    print_plan(request, &plan);
    if !plan.refusals.is_empty() {
        return Err(CliError::Failed(format!(
            "node {} cannot be drained; nothing was changed",
            request.node
        )));
    }
    if request.dry_run {
        return Ok(ExitCode::Ok);
    }
    let cordon = serde_json::json!({"spec": {"unschedulable": true}});
    nodes
        .patch(request.node, &PatchParams::default(), &Patch::Merge(&cordon))
        .await
        .map_err(|e| CliError::Failed(format!("cannot cordon node {}: {e}", request.node)))?;
    crate::outln!("node/{} cordoned", request.node);
    let mut names = Vec::new();
    for one in &plan.moves {
        names.push(start_move(cluster, request.node, one).await?);
    }
    wait_for(cluster, &names, request.watch, style).await
}

fn print_plan(request: &DrainRequest, plan: &DrainPlan) {
    let verb = if request.dry_run { "would move" } else { "moves" };
    if plan.moves.is_empty() && plan.refusals.is_empty() {
        crate::outln!(
            "no volume is bound to node {} alone: nothing to move",
            request.node
        );
    }
    for one in &plan.moves {
        let volumes: Vec<String> = (one.volumes.iter())
            .map(|(name, bytes)| format!("{name} {}", format_bytes(*bytes)))
            .collect();
        crate::outln!(
            "StatefulSet {}/{}: {verb} replica {} off node {} (volumes {})",
            one.namespace,
            one.stateful_set,
            listed(&one.replicas),
            request.node,
            volumes.join(", ")
        );
    }
    for note in &plan.notes {
        crate::outln!("  not moved: {note}");
    }
    for refusal in &plan.refusals {
        eprintln!("cannot move: {refusal}");
    }
}

/// The VolumeResize moving `one` off `node`: one of an earlier run of this drain still at work,
/// else a new one.
async fn start_move(cluster: &Cluster, node: &str, one: &Move) -> Result<(String, String), CliError> {
    let resizes: Api<VolumeResize> = Api::namespaced(cluster.client.clone(), &one.namespace);
    let selector = format!("{LABEL_DRAINED_NODE}={}", label_value(node));
    let earlier = (resizes.list(&ListParams::default().labels(&selector)).await)
        .map_err(|e| CliError::Failed(e.to_string()))?
        .items
        .into_iter()
        .find(|r| r.spec.stateful_set_name == one.stateful_set && !r.phase().is_terminal());
    if let Some(earlier) = earlier {
        crate::outln!(
            "volumeresize.ferry.dev/{} (from an earlier drain) followed",
            earlier.name_any()
        );
        return Ok((one.namespace.clone(), earlier.name_any()));
    }
    let volumes = (one.volumes.iter())
        .map(|(name, bytes)| VolumeChange {
            name: name.clone(),
            size: format_bytes(*bytes),
            storage_class_name: None,
            volume_attributes_class_name: None,
        })
        .collect();
    let spec = VolumeResizeSpec {
        placement: Some(Placement {
            avoid_nodes: vec![node.to_string()],
            replicas: Some(one.replicas.clone()),
            node_selector: None,
        }),
        ..VolumeResizeSpec::for_volumes(one.stateful_set.clone(), volumes)
    };
    let resize = VolumeResize {
        metadata: ObjectMeta {
            generate_name: Some(format!(
                "{}-drain-",
                one.stateful_set.chars().take(50).collect::<String>()
            )),
            labels: Some([(LABEL_DRAINED_NODE.to_string(), label_value(node))].into()),
            ..ObjectMeta::default()
        },
        spec,
        status: None,
    };
    let created = resizes
        .create(&PostParams::default(), &resize)
        .await
        .map_err(|e| CliError::Failed(format!("cannot create a VolumeResize in {}: {e}", one.namespace)))?;
    crate::outln!(
        "volumeresize.ferry.dev/{} created in {}",
        created.name_any(),
        one.namespace
    );
    Ok((one.namespace.clone(), created.name_any()))
}

/// Waits until every VolumeResize has ended, printing their progress with `watch`; exit 0 only
/// if every one succeeded.
async fn wait_for(
    cluster: &Cluster,
    names: &[(String, String)],
    watch: bool,
    style: Style,
) -> Result<ExitCode, CliError> {
    let mut seen: BTreeMap<(String, String), BTreeMap<String, String>> = BTreeMap::new();
    loop {
        let mut ended = BTreeMap::new();
        for (namespace, name) in names {
            let resizes: Api<VolumeResize> = Api::namespaced(cluster.client.clone(), namespace);
            let resize = resizes
                .get(name)
                .await
                .map_err(|e| CliError::Failed(e.to_string()))?;
            if watch {
                let key = (namespace.clone(), name.clone());
                for line in crate::watch::changed_lines(&resize, seen.entry(key).or_default(), style) {
                    crate::outln!("{namespace}/{line}");
                }
            }
            if resize.phase().is_terminal() {
                let message = resize
                    .status
                    .as_ref()
                    .and_then(|s| s.message.clone())
                    .unwrap_or_default();
                ended.insert(format!("{namespace}/{name}"), (resize.phase(), message));
            }
        }
        if ended.len() == names.len() {
            let failed: Vec<String> = (ended.iter())
                .filter(|(_, (phase, _))| *phase != Phase::Succeeded)
                .map(|(name, (phase, message))| format!("{name}: {} ({message})", phase.as_str()))
                .collect();
            if failed.is_empty() {
                crate::outln!("every volume bound to the node alone has moved off it");
                return Ok(ExitCode::Ok);
            }
            return Err(CliError::Failed(format!(
                "some moves did not succeed: {}",
                failed.join("; ")
            )));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Everything the plan is made from.
async fn read_facts(cluster: &Cluster, namespace: Option<&str>) -> Result<DrainFacts, kube::Error> {
    let client = cluster.client.clone();
    let all = ListParams::default();
    let (sets, claims): (Api<StatefulSet>, Api<PersistentVolumeClaim>) = match namespace {
        Some(ns) => (
            Api::namespaced(client.clone(), ns),
            Api::namespaced(client.clone(), ns),
        ),
        None => (Api::all(client.clone()), Api::all(client.clone())),
    };
    let volumes: BTreeMap<String, PersistentVolume> =
        (Api::<PersistentVolume>::all(client.clone()).list(&all).await?)
            .items
            .into_iter()
            .map(|v| (v.name_any(), v))
            .collect();
    let nodes = Api::<Node>::all(client.clone()).list(&all).await?.items;
    let classes = Api::<StorageClass>::all(client).list(&all).await?.items;
    Ok(DrainFacts {
        nodes: nodes.iter().map(NodeView::of).collect(),
        sets: sets.list(&all).await?.items.iter().map(set_facts).collect(),
        claims: (claims.list(&all).await?.items.iter())
            .map(|claim| {
                let key = (claim.namespace().unwrap_or_default(), claim.name_any());
                (key, claim_facts(claim, &volumes))
            })
            .collect(),
        first_use_classes: (classes.iter())
            .map(|c| {
                (
                    c.name_any(),
                    c.volume_binding_mode.as_deref() == Some("WaitForFirstConsumer"),
                )
            })
            .collect(),
    })
}

fn set_facts(set: &StatefulSet) -> SetFacts {
    let spec = set.spec.as_ref();
    let pod = spec.and_then(|s| s.template.spec.as_ref());
    let templates = (spec
        .and_then(|s| s.volume_claim_templates.as_ref())
        .into_iter()
        .flatten())
    .map(|template| {
        let claim = template.spec.as_ref();
        let block = claim.and_then(|c| c.volume_mode.as_deref()) == Some("Block");
        let once_pod = (claim.and_then(|c| c.access_modes.as_ref()).into_iter().flatten())
            .any(|mode| mode == "ReadWriteOncePod");
        TemplateFacts {
            name: template.name_any(),
            uncopyable: if block {
                Some("is volumeMode Block")
            } else if once_pod {
                Some("is ReadWriteOncePod")
            } else {
                None
            },
        }
    })
    .collect();
    SetFacts {
        namespace: set.namespace().unwrap_or_default(),
        name: set.name_any(),
        ordinals: ferry_engine::ordinals::ordinals(set),
        ready_replicas: set.status.as_ref().and_then(|s| s.ready_replicas).unwrap_or(0),
        node_selector: pod.and_then(|p| p.node_selector.clone()).unwrap_or_default(),
        tolerations: pod.and_then(|p| p.tolerations.clone()).unwrap_or_default(),
        templates,
    }
}

fn claim_facts(claim: &PersistentVolumeClaim, volumes: &BTreeMap<String, PersistentVolume>) -> ClaimFacts {
    let spec = claim.spec.as_ref();
    let volume = spec
        .and_then(|s| s.volume_name.as_ref())
        .and_then(|name| volumes.get(name));
    let capacity = (claim.status.as_ref().and_then(|s| s.capacity.as_ref()))
        .and_then(|c| c.get("storage"))
        .and_then(|q| ferry_api::parse_bytes(&q.0).ok())
        .unwrap_or(0);
    ClaimFacts {
        affinity: volume.and_then(|v| v.spec.as_ref()?.node_affinity.as_ref()?.required.clone()),
        capacity_bytes: capacity,
        storage_class: spec.and_then(|s| s.storage_class_name.clone()),
    }
}
