//! Carrying out the planner's actions. Each is idempotent: repeated after a crash, it changes nothing
//! more (creates tolerate "already exists", deletes are guarded by UID preconditions).

use super::run_observe::backup_name;
use crate::Error;
use crate::context::Context;
use crate::writes::with_uid_precondition;
use ferry_api::names::{
    ANNOTATION_BACKED_UP_UID, ANNOTATION_BIND_NUDGE, ANNOTATION_RECREATED_BY, LABEL_MANAGED_BY, LABEL_MOVER,
    LABEL_MOVER_PASS, LABEL_VOLUME_RESIZE, MANAGED_BY_VALUE,
};
use ferry_api::{VolumeResize, parse_bytes};
use ferry_engine::run_state::{Pass, ResizeAction};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolume, PersistentVolumeClaim, Pod, Toleration};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DeleteParams, EvictParams, Patch, Preconditions, PropagationPolicy};
use kube::{Api, Resource, ResourceExt};
use serde_json::json;

/// Name of the container in mover pods (its log carries the progress lines).
pub const MOVER_CONTAINER: &str = "mover";

const BACKUP_KEY: &str = "statefulset.json";
/// The StatefulSet as it was when Ferry last orphan-deleted it: edits made during the resize (an
/// image upgrade, a replica count) that a re-create must keep.
const LIVE_KEY: &str = "live.json";

pub async fn execute(
    ctx: &Context,
    resize: &VolumeResize,
    namespace: &str,
    stateful_set: Option<&StatefulSet>,
    action: &ResizeAction,
) -> Result<(), Error> {
    let client = ctx.client.clone();
    match action {
        ResizeAction::BackupStatefulSet => {
            let Some(sts) = stateful_set else {
                return Err(Error::Invariant(
                    "the StatefulSet vanished before it was backed up".into(),
                ));
            };
            let backup = backup_config_map(resize, sts)?;
            ignore_conflict(
                Api::<ConfigMap>::namespaced(client, namespace)
                    .create(&crate::writes::create(), &backup)
                    .await,
            )
        }
        ResizeAction::ExpandClaim { claim, bytes } => {
            let patch = json!({"spec": {"resources": {"requests": {"storage": ferry_api::quantity::format_bytes(*bytes)}}}});
            Api::<PersistentVolumeClaim>::namespaced(client, namespace)
                .patch(claim, &crate::writes::patch(), &Patch::Merge(patch))
                .await?;
            Ok(())
        }
        ResizeAction::RestartPod { pod, uid } => {
            evict(&Api::<Pod>::namespaced(client, namespace), pod, uid).await
        }
        ResizeAction::OrphanDeleteStatefulSet => {
            let Some(sts) = stateful_set else { return Ok(()) };
            // Keep the live spec first: the re-create starts from it, not from the older backup.
            let live = serialize_kept(sts)?;
            Api::<ConfigMap>::namespaced(client.clone(), namespace)
                .patch(
                    &backup_name(resize),
                    &crate::writes::patch(),
                    &Patch::Merge(json!({"data": {LIVE_KEY: live}})),
                )
                .await?;
            let params = DeleteParams {
                propagation_policy: Some(PropagationPolicy::Orphan),
                preconditions: Some(Preconditions {
                    uid: sts.uid(),
                    resource_version: None,
                }),
                ..DeleteParams::default()
            };
            ignore_gone(
                Api::<StatefulSet>::namespaced(client, namespace)
                    .delete(&sts.name_any(), &params)
                    .await
                    .map(|_| ()),
            )
        }
        ResizeAction::RestoreStatefulSet => {
            let backup = Api::<ConfigMap>::namespaced(client.clone(), namespace)
                .get(&backup_name(resize))
                .await?;
            ignore_conflict(
                Api::<StatefulSet>::namespaced(client, namespace)
                    .create(&crate::writes::create(), &recreated_by(resize, restore(&backup)?))
                    .await,
            )
        }
        ResizeAction::CreateTargetClaim {
            claim,
            source_claim,
            bytes,
            storage_class,
        } => {
            let access_modes = Api::<PersistentVolumeClaim>::namespaced(client.clone(), namespace)
                .get_opt(source_claim)
                .await?
                .and_then(|c| c.spec.and_then(|s| s.access_modes))
                .unwrap_or_else(|| vec!["ReadWriteOnce".into()]);
            let target: PersistentVolumeClaim = from_json(json!({
                "metadata": owned_metadata(resize, claim),
                "spec": {
                    "accessModes": access_modes,
                    "storageClassName": storage_class,
                    "resources": {"requests": {"storage": ferry_api::quantity::format_bytes(*bytes)}},
                },
            }))?;
            ignore_conflict(
                Api::<PersistentVolumeClaim>::namespaced(client, namespace)
                    .create(&crate::writes::create(), &target)
                    .await,
            )
        }
        ResizeAction::StartMover {
            pod,
            source,
            target,
            pass,
        } => {
            let tolerations = replica_tolerations(ctx, resize, namespace).await?;
            let mover = mover_pod(ctx, resize, pod, source, target, *pass, tolerations)?;
            ignore_conflict(
                Api::<Pod>::namespaced(client, namespace)
                    .create(&crate::writes::create(), &mover)
                    .await,
            )
        }
        ResizeAction::MeasureUsage { pod, claim } => {
            let tolerations = replica_tolerations(ctx, resize, namespace).await?;
            let measure = usage_pod(ctx, resize, pod, claim, tolerations)?;
            ignore_conflict(
                Api::<Pod>::namespaced(client, namespace)
                    .create(&crate::writes::create(), &measure)
                    .await,
            )
        }
        ResizeAction::DeleteMover { pod } => ignore_gone(
            Api::<Pod>::namespaced(client, namespace)
                .delete(pod, &DeleteParams::default())
                .await
                .map(|_| ()),
        ),
        ResizeAction::SetReclaimPolicy { volume, uid, policy } => {
            let patch = with_uid_precondition(
                json!({"spec": {"persistentVolumeReclaimPolicy": policy}}),
                uid.as_deref(),
            );
            Api::<PersistentVolume>::all(client)
                .patch(volume, &crate::writes::patch(), &Patch::Merge(patch))
                .await?;
            Ok(())
        }
        ResizeAction::DeleteClaim { claim, uid } => {
            let claims = Api::<PersistentVolumeClaim>::namespaced(client, namespace);
            delete_if_same(&claims, claim, Some(uid.clone())).await
        }
        ResizeAction::ReserveVolume { volume, uid, claim } => {
            let patch = with_uid_precondition(
                json!({"spec": {"claimRef": {
                    "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                    "namespace": namespace, "name": claim, "uid": null, "resourceVersion": null,
                }}}),
                uid.as_deref(),
            );
            Api::<PersistentVolume>::all(client)
                .patch(volume, &crate::writes::patch(), &Patch::Merge(patch))
                .await?;
            Ok(())
        }
        ResizeAction::BindClaim {
            claim,
            template,
            volume,
            bytes,
            storage_class,
        } => {
            let backup = Api::<ConfigMap>::namespaced(client.clone(), namespace)
                .get(&backup_name(resize))
                .await?;
            let sts = restore(&backup)?;
            let bound = claim_for_volume(&sts, template, claim, volume, *bytes, storage_class.clone())?;
            ignore_conflict(
                Api::<PersistentVolumeClaim>::namespaced(client, namespace)
                    .create(&crate::writes::create(), &bound)
                    .await,
            )
        }
        ResizeAction::NudgeClaim { claim, uid } => {
            // The UID in the patch makes it fail rather than touch a claim of the same name.
            let patch = with_uid_precondition(
                json!({"metadata": {"annotations": {ANNOTATION_BIND_NUDGE: "true"}}}),
                Some(uid.as_str()),
            );
            Api::<PersistentVolumeClaim>::namespaced(client, namespace)
                .patch(claim, &crate::writes::patch(), &Patch::Merge(&patch))
                .await?;
            Ok(())
        }
        ResizeAction::RecreateStatefulSet => {
            let backup = Api::<ConfigMap>::namespaced(client.clone(), namespace)
                .get(&backup_name(resize))
                .await?;
            let sts = recreated_by(resize, with_new_templates(resize, last_live(&backup)?));
            ignore_conflict(
                Api::<StatefulSet>::namespaced(client, namespace)
                    .create(&crate::writes::create(), &sts)
                    .await,
            )
        }
    }
}

fn from_json<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> Result<T, Error> {
    serde_json::from_value(value).map_err(|source| Error::Serialize {
        what: "generated object",
        source,
    })
}

/// Metadata of an object a resize owns: its name, Ferry's labels, an owner reference to the resize.
fn owned_metadata(resize: &VolumeResize, name: &str) -> serde_json::Value {
    json!({
        "name": name,
        "labels": {LABEL_VOLUME_RESIZE: resize.name_any(), LABEL_MANAGED_BY: MANAGED_BY_VALUE},
        "ownerReferences": resize.controller_owner_ref(&()).map(|owner| vec![owner]),
    })
}

/// A mover pod: least privilege (no service-account token, no network use, read-only source, only
/// the capabilities needed to keep ownership and special files), on the source volume's node (its
/// PV's node affinity places it there), copying `source` onto `target`.
fn mover_pod(
    ctx: &Context,
    resize: &VolumeResize,
    name: &str,
    source: &str,
    target: &str,
    pass: Pass,
    tolerations: Vec<Toleration>,
) -> Result<Pod, Error> {
    let settings = resize.spec.mover.clone().unwrap_or_default();
    // Both passes verify what they write: the final pass skips files the warm pass already copied,
    // so those are checked when they land (while the replica still serves, at no downtime cost).
    let verify = match resize.spec.verify {
        ferry_api::Verify::None => "none",
        ferry_api::Verify::Metadata => "metadata",
        ferry_api::Verify::Checksum => "checksum",
    };

    let mut command = vec![
        "ferry-mover",
        "sync",
        "--source",
        "/source",
        "--target",
        "/target",
        "--delete",
        "--verify",
        verify,
        "--progress",
        "json",
    ]
    .into_iter()
    .map(String::from)
    .collect::<Vec<_>>();
    if let Some(threads) = settings.threads {
        command.extend(["--threads".to_string(), threads.to_string()]);
    }
    // The API server checked it is a positive quantity.
    if let Some(limit) = settings
        .bandwidth_limit
        .as_deref()
        .and_then(|q| parse_bytes(q).ok())
    {
        command.extend(["--bwlimit".to_string(), limit.max(1).to_string()]);
    }
    // The final pass runs with the replica stopped: a source that still changes means something
    // still writes to it, and that pass must fail rather than swap in a stale copy.
    if pass == Pass::Final {
        command.push("--strict".to_string());
    }
    let pass = match pass {
        Pass::Warm => "warm",
        Pass::Final => "final",
    };
    let container = json!({
        "name": MOVER_CONTAINER,
        "command": command,
        "resources": settings.resources.or_else(|| ctx.mover_resources.clone()),
        "securityContext": {
            "allowPrivilegeEscalation": false,
            "readOnlyRootFilesystem": true,
            "capabilities": {"drop": ["ALL"], "add": ["CHOWN", "FOWNER", "DAC_OVERRIDE", "FSETID", "MKNOD", "SETFCAP"]},
        },
        "volumeMounts": [
            {"name": "source", "mountPath": "/source", "readOnly": true},
            {"name": "target", "mountPath": "/target"},
        ],
    });
    let volumes = json!([
        {"name": "source", "persistentVolumeClaim": {"claimName": source, "readOnly": true}},
        {"name": "target", "persistentVolumeClaim": {"claimName": target}},
    ]);
    ferry_pod(ctx, resize, name, pass, container, volumes, tolerations)
}

/// The tolerations of the StatefulSet's pods (live, else as backed up while it is orphan-deleted):
/// a mover must run on its replica's node, which may be tainted for the database alone.
async fn replica_tolerations(
    ctx: &Context,
    resize: &VolumeResize,
    namespace: &str,
) -> Result<Vec<Toleration>, Error> {
    let live = Api::<StatefulSet>::namespaced(ctx.client.clone(), namespace)
        .get_opt(&resize.spec.stateful_set_name)
        .await?;
    let sts = match live {
        Some(sts) => Some(sts),
        None => Api::<ConfigMap>::namespaced(ctx.client.clone(), namespace)
            .get_opt(&backup_name(resize))
            .await?
            .map(|backup| restore(&backup))
            .transpose()?,
    };
    Ok(sts
        .and_then(|sts| sts.spec)
        .and_then(|spec| spec.template.spec)
        .and_then(|pod| pod.tolerations)
        .unwrap_or_default())
}

/// A pod that measures the data in use on `claim` (mounted read-only) and reports it as its
/// termination message.
fn usage_pod(
    ctx: &Context,
    resize: &VolumeResize,
    name: &str,
    claim: &str,
    tolerations: Vec<Toleration>,
) -> Result<Pod, Error> {
    let container = json!({
        "name": "usage",
        "command": ["ferry-mover", "usage", "/source"],
        "securityContext": {
            "allowPrivilegeEscalation": false,
            "readOnlyRootFilesystem": true,
            // DAC_OVERRIDE rather than DAC_READ_SEARCH: Pod Security `baseline` allows only the
            // former, and the mount is read-only anyway.
            "capabilities": {"drop": ["ALL"], "add": ["DAC_OVERRIDE"]},
        },
        "volumeMounts": [{"name": "source", "mountPath": "/source", "readOnly": true}],
    });
    let volumes =
        json!([{"name": "source", "persistentVolumeClaim": {"claimName": claim, "readOnly": true}}]);
    ferry_pod(ctx, resize, name, "usage", container, volumes, tolerations)
}

/// What every pod Ferry runs has in common: owned by the resize and labelled as a mover pod of
/// `pass`; run once, as root (to keep ownership) but with no service-account token or service
/// links, the runtime's default seccomp profile and only capabilities Pod Security `baseline`
/// allows (root is why `restricted` cannot admit them); the mover image and the placement settings of `spec.mover`; the result as the
/// termination message. `container` adds its name, command, resources, security context and mounts;
/// `tolerations` (the replica's) join those of `spec.mover`.
fn ferry_pod(
    ctx: &Context,
    resize: &VolumeResize,
    name: &str,
    pass: &str,
    mut container: serde_json::Value,
    volumes: serde_json::Value,
    tolerations: Vec<Toleration>,
) -> Result<Pod, Error> {
    let settings = resize.spec.mover.clone().unwrap_or_default();
    let mut all_tolerations = settings.tolerations.clone().unwrap_or_default();
    for toleration in tolerations {
        if !all_tolerations.contains(&toleration) {
            all_tolerations.push(toleration);
        }
    }
    let mut metadata = owned_metadata(resize, name);
    metadata["labels"][LABEL_MOVER] = json!("true");
    metadata["labels"][LABEL_MOVER_PASS] = json!(pass);
    container["image"] = json!(settings.image.unwrap_or_else(|| ctx.mover_image.clone()));
    container["terminationMessagePolicy"] = json!("File");
    from_json(json!({
        "metadata": metadata,
        "spec": {
            "restartPolicy": "Never",
            "automountServiceAccountToken": false,
            "enableServiceLinks": false,
            "nodeSelector": settings.node_selector,
            "tolerations": all_tolerations,
            "securityContext": {"runAsUser": 0, "runAsGroup": 0, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [container],
            "volumes": volumes,
        },
    }))
}

/// The claim a StatefulSet would make for `claim`, but bound to `volume` and sized as it.
fn claim_for_volume(
    sts: &StatefulSet,
    template: &str,
    claim: &str,
    volume: &str,
    bytes: u64,
    storage_class: Option<String>,
) -> Result<PersistentVolumeClaim, Error> {
    let spec = sts.spec.as_ref();
    let template = spec
        .and_then(|s| s.volume_claim_templates.as_ref())
        .into_iter()
        .flatten()
        .find(|t| t.name_any() == template);
    // The StatefulSet controller labels its claims with the pod selector's labels.
    let mut labels = template
        .and_then(|t| t.metadata.labels.clone())
        .unwrap_or_default();
    labels.extend(
        spec.and_then(|s| s.selector.match_labels.clone())
            .unwrap_or_default(),
    );
    let access_modes = template
        .and_then(|t| t.spec.as_ref())
        .and_then(|s| s.access_modes.clone())
        .unwrap_or_else(|| vec!["ReadWriteOnce".into()]);
    from_json(json!({
        "metadata": {"name": claim, "labels": labels},
        "spec": {
            "accessModes": access_modes,
            "storageClassName": storage_class,
            "volumeName": volume,
            "resources": {"requests": {"storage": ferry_api::quantity::format_bytes(bytes)}},
        },
    }))
}

/// A StatefulSet as it can be created again: its spec and the metadata that is the user's (labels,
/// annotations, owner references — a parent operator or GitOps tool keeps owning it).
fn serialize_kept(sts: &StatefulSet) -> Result<String, Error> {
    let mut kept = sts.clone();
    kept.status = None;
    kept.metadata = ObjectMeta {
        name: sts.metadata.name.clone(),
        namespace: sts.metadata.namespace.clone(),
        labels: sts.metadata.labels.clone(),
        annotations: sts.metadata.annotations.clone(),
        owner_references: sts.metadata.owner_references.clone(),
        ..ObjectMeta::default()
    };
    serde_json::to_string(&kept).map_err(|source| Error::Serialize {
        what: "StatefulSet backup",
        source,
    })
}

/// Marks a StatefulSet Ferry creates as this resize's own, so it is not taken for someone else's.
fn recreated_by(resize: &VolumeResize, mut sts: StatefulSet) -> StatefulSet {
    sts.annotations_mut()
        .insert(ANNOTATION_RECREATED_BY.into(), resize.uid().unwrap_or_default());
    sts
}

/// The ConfigMap keeping the StatefulSet as it was, owned by the VolumeResize.
fn backup_config_map(resize: &VolumeResize, sts: &StatefulSet) -> Result<ConfigMap, Error> {
    let text = serialize_kept(sts)?;
    Ok(ConfigMap {
        metadata: ObjectMeta {
            name: Some(backup_name(resize)),
            namespace: resize.namespace(),
            annotations: Some(
                [(
                    ANNOTATION_BACKED_UP_UID.to_string(),
                    sts.uid().unwrap_or_default(),
                )]
                .into(),
            ),
            labels: Some(
                [
                    (LABEL_VOLUME_RESIZE.to_string(), resize.name_any()),
                    (LABEL_MANAGED_BY.to_string(), MANAGED_BY_VALUE.to_string()),
                ]
                .into(),
            ),
            owner_references: resize.controller_owner_ref(&()).map(|owner| vec![owner]),
            ..ObjectMeta::default()
        },
        data: Some([(BACKUP_KEY.to_string(), text)].into()),
        ..ConfigMap::default()
    })
}

fn backed_up(backup: &ConfigMap, key: &str) -> Result<Option<StatefulSet>, Error> {
    backup
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .map(|text| {
            serde_json::from_str(text).map_err(|source| Error::Serialize {
                what: "StatefulSet backup",
                source,
            })
        })
        .transpose()
}

/// The StatefulSet as first backed up (its original volume claim templates).
fn original(backup: &ConfigMap) -> Result<StatefulSet, Error> {
    backed_up(backup, BACKUP_KEY)?.ok_or_else(|| {
        Error::Invariant(format!(
            "backup ConfigMap {} has no {BACKUP_KEY}",
            backup.name_any()
        ))
    })
}

/// The StatefulSet as Ferry last deleted it (else as first backed up).
fn last_live(backup: &ConfigMap) -> Result<StatefulSet, Error> {
    match backed_up(backup, LIVE_KEY)? {
        Some(live) => Ok(live),
        None => original(backup),
    }
}

/// The StatefulSet to bring back on rollback: the live spec as last seen, with the original
/// volume claim templates.
pub fn restore(backup: &ConfigMap) -> Result<StatefulSet, Error> {
    let original = original(backup)?;
    let mut sts = last_live(backup)?;
    if let (Some(spec), Some(original_spec)) = (sts.spec.as_mut(), original.spec) {
        spec.volume_claim_templates = original_spec.volume_claim_templates;
    }
    Ok(sts)
}

/// The backed-up StatefulSet with each changed template at its new size (and class).
fn with_new_templates(resize: &VolumeResize, mut sts: StatefulSet) -> StatefulSet {
    let plan = resize.status.as_ref().map(|s| s.plan.clone()).unwrap_or_default();
    let templates = sts.spec.as_mut().and_then(|s| s.volume_claim_templates.as_mut());
    for template in templates.into_iter().flatten() {
        let name = template.name_any();
        let Some(change) = resize.spec.volumes.iter().find(|v| v.name == name) else {
            continue;
        };
        if !plan
            .iter()
            .any(|row| row.volume == name && row.strategy.is_some())
        {
            continue;
        }
        let Some(spec) = template.spec.as_mut() else {
            continue;
        };
        let resources = spec.resources.get_or_insert_with(Default::default);
        resources
            .requests
            .get_or_insert_with(Default::default)
            .insert("storage".into(), Quantity(change.size.clone()));
        if let Some(class) = &change.storage_class_name {
            spec.storage_class_name = Some(class.clone());
        }
    }
    sts
}

fn ignore_conflict<T>(result: Result<T, kube::Error>) -> Result<(), Error> {
    match result {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
        Err(error) => Err(error.into()),
    }
}

/// Deletes the object only if it still has `uid` (it may have been replaced under the same name);
/// already gone counts as done.
async fn delete_if_same<K>(api: &Api<K>, name: &str, uid: Option<String>) -> Result<(), Error>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid,
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    ignore_gone(api.delete(name, &params).await.map(|_| ()))
}

/// Takes a pod down through the Eviction API, so the API server enforces PodDisruptionBudgets (and
/// only this UID). A refusal (429: the budget allows no disruption now) is not an error: the pod
/// stays, and the next reconcile asks again.
async fn evict(pods: &Api<Pod>, name: &str, uid: &str) -> Result<(), Error> {
    let params = EvictParams {
        delete_options: Some(DeleteParams {
            preconditions: Some(Preconditions {
                uid: Some(uid.to_string()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        }),
        ..EvictParams::default()
    };
    match pods.evict(name, &params).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 429 => {
            tracing::info!(
                pod = name,
                "eviction refused by a PodDisruptionBudget; asking again later"
            );
            Ok(())
        }
        other => ignore_gone(other.map(|_| ())),
    }
}

fn ignore_gone(result: Result<(), kube::Error>) -> Result<(), Error> {
    match result {
        Ok(()) => Ok(()),
        // 404: already gone; 409: the UID precondition failed, i.e. it was already replaced.
        Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => Ok(()),
        Err(error) => Err(error.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Templates `data` and `data-log`: the claim `data-log-db-0` is made from `data-log`, never
    /// from `data` (whose name is a prefix of it).
    #[test]
    fn a_bound_claim_is_made_from_its_own_template() {
        let sts: StatefulSet = serde_json::from_value(json!({
            "metadata": {"name": "db"},
            "spec": {
                "selector": {"matchLabels": {"app": "db"}},
                "serviceName": "db",
                "template": {"metadata": {"labels": {"app": "db"}}},
                "volumeClaimTemplates": [
                    {"metadata": {"name": "data", "labels": {"kind": "data"}},
                     "spec": {"accessModes": ["ReadWriteOnce"]}},
                    {"metadata": {"name": "data-log", "labels": {"kind": "log"}},
                     "spec": {"accessModes": ["ReadWriteOncePod"]}},
                ],
            },
        }))
        .unwrap();
        let claim = claim_for_volume(&sts, "data-log", "data-log-db-0", "pv-1", 1 << 30, None).unwrap();
        let labels = claim.metadata.labels.unwrap();
        assert_eq!(labels.get("kind").map(String::as_str), Some("log"));
        assert_eq!(labels.get("app").map(String::as_str), Some("db"));
        let spec = claim.spec.unwrap();
        assert_eq!(spec.access_modes, Some(vec!["ReadWriteOncePod".to_string()]));
        assert_eq!(spec.volume_name.as_deref(), Some("pv-1"));
    }
}
