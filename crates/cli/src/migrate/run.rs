//! `kubectl ferry migrate`, read from the cluster (then carried out by `carry.rs` without `--plan`): the StorageClasses, and in the namespaces
//! it covers the StatefulSets, claims, pods and VolumeResizes. It only reads: nothing is created
//! or changed.

use super::{ClaimFacts, MigrateFacts, PodFacts, SetFacts, TemplateFacts, plan};
use crate::args::DataFormat;
use crate::exit::{CliError, ExitCode};
use crate::kube_io::{Action, Cluster, RESIZES, list, scoped, storage_classes};
use crate::style::Style;
use ferry_api::listed::{Listing, api_resource};
use ferry_api::parse_bytes;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::api::{DynamicObject, ListParams};
use kube::{Api, Resource, ResourceExt};
use std::collections::{BTreeMap, BTreeSet};

/// What `migrate --plan` is asked.
pub struct MigrateRequest<'a> {
    pub from_class: &'a str,
    pub to_class: &'a str,
    /// `-A`: every namespace (else the one of `-n` or the context's).
    pub all_namespaces: bool,
    /// `-l`: only the StatefulSets (and unowned claims) with these labels.
    pub selector: Option<&'a str>,
    pub bytes_per_second: u64,
    pub rate_given: bool,
    pub output: Option<&'a DataFormat>,
    /// Without `--plan`: how the migration is carried out.
    pub carry: Option<super::carry::Carry<'a>>,
}

pub async fn migrate(
    cluster: &Cluster,
    request: &MigrateRequest<'_>,
    style: Style,
) -> Result<ExitCode, CliError> {
    let facts = read_facts(cluster, request).await?;
    let plan = plan(&facts);
    if let Some(carry) = &request.carry {
        let migrations = super::carry::migrations(&plan, carry).map_err(CliError::Usage)?;
        return super::carry::carry_out(cluster, migrations, carry.watch).await;
    }
    match request.output {
        Some(format) => crate::output::print_data(&plan, format)?,
        None => crate::out!("{}", super::render::plan_text(&plan, request.rate_given, style)),
    }
    Ok(ExitCode::Ok)
}

async fn read_facts(cluster: &Cluster, request: &MigrateRequest<'_>) -> Result<MigrateFacts, CliError> {
    let all = ListParams::default();
    let classes = storage_classes(cluster).await?;
    let names: Vec<String> = classes.iter().map(ResourceExt::name_any).collect();
    if !names.iter().any(|name| name == request.to_class) {
        return Err(CliError::NotFound(format!(
            "StorageClass {:?} (--to-class) does not exist (there are: {}); nothing was planned",
            request.to_class,
            if names.is_empty() {
                "none".into()
            } else {
                names.join(", ")
            }
        )));
    }
    let selected = request
        .selector
        .map(|labels| ListParams::default().labels(labels));
    let sets = sets(cluster, request.all_namespaces, selected.as_ref()).await?;
    let claims = claims(cluster, request.all_namespaces, selected.as_ref()).await?;
    let pods = list(
        cluster,
        scoped::<Pod>(cluster, request.all_namespaces),
        &all,
        "pods",
    )
    .await?;
    Ok(MigrateFacts {
        from_class: request.from_class.to_string(),
        to_class: request.to_class.to_string(),
        default_class: ferry_engine::storage_classes::default_class(&classes),
        from_class_exists: names.iter().any(|name| name == request.from_class),
        sets,
        claims,
        pods: pods.iter().map(pod_facts).collect(),
        resizes_at_work: resizes_at_work(cluster, request.all_namespaces).await?,
        bytes_per_second: request.bytes_per_second,
    })
}

/// The (namespace, name) of what a `-l` list returns: every object when there is no `-l`.
fn keys<K: Resource>(items: &[K]) -> BTreeSet<(String, String)> {
    (items.iter())
        .map(|item| (item.namespace().unwrap_or_default(), item.name_any()))
        .collect()
}

async fn sets(
    cluster: &Cluster,
    all_namespaces: bool,
    selected: Option<&ListParams>,
) -> Result<Vec<SetFacts>, CliError> {
    let resource = "statefulsets.apps";
    let api = scoped::<StatefulSet>(cluster, all_namespaces);
    let every = list(cluster, api.clone(), &ListParams::default(), resource).await?;
    let chosen = match selected {
        Some(params) => Some(keys(&list(cluster, api, params, resource).await?)),
        None => None,
    };
    Ok((every.iter())
        .map(|set| {
            let key = (set.namespace().unwrap_or_default(), set.name_any());
            let selected = chosen.as_ref().is_none_or(|chosen| chosen.contains(&key));
            set_facts(set, selected)
        })
        .collect())
}

async fn claims(
    cluster: &Cluster,
    all_namespaces: bool,
    selected: Option<&ListParams>,
) -> Result<Vec<ClaimFacts>, CliError> {
    let resource = "persistentvolumeclaims";
    let api = scoped::<PersistentVolumeClaim>(cluster, all_namespaces);
    let every = list(cluster, api.clone(), &ListParams::default(), resource).await?;
    let chosen = match selected {
        Some(params) => Some(keys(&list(cluster, api, params, resource).await?)),
        None => None,
    };
    Ok((every.iter())
        .map(|claim| {
            let key = (claim.namespace().unwrap_or_default(), claim.name_any());
            let selected = chosen.as_ref().is_none_or(|chosen| chosen.contains(&key));
            claim_facts(claim, selected)
        })
        .collect())
}

/// The VolumeResize at work on each StatefulSet in scope. Without the CRD none can be.
async fn resizes_at_work(
    cluster: &Cluster,
    all_namespaces: bool,
) -> Result<BTreeMap<(String, String), String>, CliError> {
    let resource = api_resource();
    let api: Api<DynamicObject> = if all_namespaces {
        Api::all_with(cluster.client.clone(), &resource)
    } else {
        Api::namespaced_with(cluster.client.clone(), &cluster.namespace, &resource)
    };
    let objects = match api.list(&ListParams::default()).await {
        Ok(list) => list.items,
        Err(kube::Error::Api(status)) if status.code == 404 => Vec::new(),
        Err(error) => return Err(cluster.explain(error, Action::new("list", RESIZES)).await),
    };
    let mut by_namespace: BTreeMap<String, Vec<DynamicObject>> = BTreeMap::new();
    for object in objects {
        by_namespace
            .entry(object.namespace().unwrap_or_default())
            .or_default()
            .push(object);
    }
    let mut at_work = BTreeMap::new();
    for (namespace, objects) in by_namespace {
        let listing = Listing::from_objects(objects);
        let named = (listing.readable.iter().map(|r| r.spec.stateful_set_name.clone()))
            .chain(listing.unreadable.iter().filter_map(|u| u.stateful_set()))
            .collect::<BTreeSet<_>>();
        for set in named {
            if let Some(resize) = listing.working_on(&set) {
                at_work.insert((namespace.clone(), set), resize);
            }
        }
    }
    Ok(at_work)
}

fn set_facts(set: &StatefulSet, selected: bool) -> SetFacts {
    let templates = (set.spec.as_ref())
        .and_then(|spec| spec.volume_claim_templates.as_ref())
        .into_iter()
        .flatten()
        .map(|template| {
            let claim = template.spec.as_ref();
            TemplateFacts {
                name: template.name_any(),
                storage_class: claim.and_then(|c| c.storage_class_name.clone()),
                requested_bytes: ferry_api::quantity::requested_storage(claim)
                    .and_then(|q| parse_bytes(&q.0).ok()),
                raw_block: claim.and_then(|c| c.volume_mode.as_deref()) == Some("Block"),
                read_write_once_pod: (claim.and_then(|c| c.access_modes.as_ref()).into_iter().flatten())
                    .any(|mode| mode == "ReadWriteOncePod"),
            }
        })
        .collect();
    SetFacts {
        namespace: set.namespace().unwrap_or_default(),
        name: set.name_any(),
        ordinals: ferry_engine::ordinals::ordinals(set),
        ready_replicas: set.status.as_ref().and_then(|s| s.ready_replicas).unwrap_or(0),
        selected,
        templates,
    }
}

fn claim_facts(claim: &PersistentVolumeClaim, selected: bool) -> ClaimFacts {
    let spec = claim.spec.as_ref();
    ClaimFacts {
        namespace: claim.namespace().unwrap_or_default(),
        name: claim.name_any(),
        storage_class: spec.and_then(|s| s.storage_class_name.clone()),
        size_bytes: ferry_api::quantity::claim_size_bytes(claim),
        // No source of the data in use that needs nothing created (the operator measures it with
        // the kubelets' stats or a measuring pod): said as unknown, the size counted instead.
        bytes_in_use: None,
        selected,
        ephemeral_of: (claim.owner_references().iter())
            .find(|owner| owner.kind == "Pod" && owner.controller == Some(true))
            .map(|owner| owner.name.clone()),
    }
}

fn pod_facts(pod: &Pod) -> PodFacts {
    let claims = (pod
        .spec
        .as_ref()
        .and_then(|s| s.volumes.as_ref())
        .into_iter()
        .flatten())
    .filter_map(|volume| volume.persistent_volume_claim.as_ref())
    .map(|source| source.claim_name.clone())
    .collect();
    let controller = (pod.owner_references().iter())
        .find(|owner| owner.controller == Some(true))
        .map(|owner| (owner.kind.clone(), owner.name.clone()));
    PodFacts {
        namespace: pod.namespace().unwrap_or_default(),
        name: pod.name_any(),
        claims,
        controller,
        template_hash: pod.labels().get("pod-template-hash").cloned(),
    }
}
