//! The storage driver for the test StorageClasses, acting as a CSI external-provisioner and
//! external-resizer (and the kubelet's node-side expansion) would:
//! - provisions a PV for each PVC of a test class once the PV controller hands it over (and, with
//!   WaitForFirstConsumer, the scheduler picked a node), pinned to that node: a directory-backed
//!   hostPath PV for the kwok nodes' classes, a `local` PV on a real file system of the requested
//!   size ([`crate::block`]) for the real node's classes;
//! - deletes released PVs with reclaim policy Delete, and their directories or disks;
//! - expands PVs and PVCs: online for `ferry-expandable` and `ferry-local` (the latter grows the disk
//!   and its file system); for `ferry-offline-expand` the PVC sits at `FileSystemResizePending` until
//!   a pod that mounts it starts after the resize (with the kubelet's `NodeResizeError` while a pod
//!   that mounted it before runs).

use crate::block::{BlockVolume, FileSystem};
use crate::{
    BLOCK_PROVISIONER, CLASS_BLOCK, CLASS_BLOCK_ATTACH, CLASS_BLOCK_FIXED, CLASS_BLOCK_FIXED_OTHER,
    CLASS_BLOCK_NODE, CLASS_BLOCK_OFFLINE, CLASS_EXPANDABLE, CLASS_FIXED, CLASS_LOCAL, CLASS_OFFLINE_EXPAND,
    CSI_ATTACH_DRIVER, CSI_DRIVER, Error, PROVISIONER, REAL_NODE, REAL_ZONES,
};
use ferry_api::quantity::quantity_bytes;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{
    PersistentVolume, PersistentVolumeClaim, PersistentVolumeClaimCondition, Pod,
};
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{Controller, watcher};
use kube::{Api, Client, ResourceExt};
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

const ANN_PROVISIONER: &str = "volume.kubernetes.io/storage-provisioner";
const ANN_SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
const ANN_PROVISIONED_BY: &str = "pv.kubernetes.io/provisioned-by";
const FS_RESIZE_PENDING: &str = "FileSystemResizePending";
const NODE_RESIZE_ERROR: &str = "NodeResizeError";
/// Pod UIDs that had the claim mounted when its file-system resize became pending.
const ANN_MOUNTED_AT_RESIZE: &str = "testenv.ferry.dev/mounted-at-resize";

/// How a test class expands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expansion {
    None,
    Online,
    Offline,
}

/// What is behind a test class's volumes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Backing {
    /// A directory on a kwok node (no size limit).
    Directory,
    /// A real file system of the requested size on the real node.
    Disk,
}

fn class_of(class: &str) -> Option<(Expansion, Backing)> {
    match class {
        CLASS_FIXED => Some((Expansion::None, Backing::Directory)),
        CLASS_EXPANDABLE => Some((Expansion::Online, Backing::Directory)),
        CLASS_OFFLINE_EXPAND => Some((Expansion::Offline, Backing::Directory)),
        CLASS_LOCAL => Some((Expansion::Online, Backing::Disk)),
        _ => None,
    }
}

fn provisioner_of(backing: Backing) -> &'static str {
    match backing {
        Backing::Directory => PROVISIONER,
        Backing::Disk => BLOCK_PROVISIONER,
    }
}

/// The test StorageClasses; `ferry-expandable` is the cluster default. The real node's classes
/// are limited to it by topology, so the scheduler never puts their claims on a kwok node.
pub fn storage_classes() -> Vec<StorageClass> {
    [
        (CLASS_FIXED, false, "none", Backing::Directory),
        (CLASS_EXPANDABLE, true, "online", Backing::Directory),
        (CLASS_OFFLINE_EXPAND, true, "offline", Backing::Directory),
        (CLASS_LOCAL, true, "online", Backing::Disk),
    ]
    .into_iter()
    .filter_map(|(name, expandable, mode, backing)| {
        let topology = match backing {
            Backing::Directory => json!(null),
            Backing::Disk => json!([{"matchLabelExpressions": [
                {"key": "kubernetes.io/hostname", "values": [REAL_NODE]}
            ]}]),
        };
        serde_json::from_value(json!({
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {
                "name": name,
                "annotations": if name == CLASS_EXPANDABLE {
                    json!({"storageclass.kubernetes.io/is-default-class": "true"})
                } else { json!({}) },
            },
            "provisioner": provisioner_of(backing),
            "parameters": { "expansion": mode },
            "reclaimPolicy": "Delete",
            "allowVolumeExpansion": expandable,
            "volumeBindingMode": "WaitForFirstConsumer",
            "allowedTopologies": topology,
        }))
        .ok()
    })
    .chain(csi_storage_classes())
    .collect()
}

/// The real node's classes of the CSI drivers; the agent only declares them (the upstream
/// external-provisioner and -resizer serve their claims).
fn csi_storage_classes() -> Vec<StorageClass> {
    [
        (CLASS_BLOCK, CSI_DRIVER, "xfs", "online"),
        (CLASS_BLOCK_FIXED, CSI_DRIVER, "ext4", "none"),
        (CLASS_BLOCK_FIXED_OTHER, CSI_DRIVER, "ext4", "none"),
        (CLASS_BLOCK_OFFLINE, CSI_DRIVER, "xfs", "offline"),
        (CLASS_BLOCK_ATTACH, CSI_ATTACH_DRIVER, "xfs", "online"),
        (CLASS_BLOCK_NODE, CSI_DRIVER, "xfs", "online"),
    ]
    .into_iter()
    .filter_map(|(name, driver, file_system, expansion)| {
        let mut parameters = json!({"expansion": expansion, "csi.storage.k8s.io/fstype": file_system});
        if name == CLASS_BLOCK_NODE {
            parameters["binding"] = json!("node");
        }
        serde_json::from_value(json!({
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": name},
            "provisioner": driver,
            "parameters": parameters,
            "reclaimPolicy": "Delete",
            "allowVolumeExpansion": expansion != "none",
            "volumeBindingMode": "WaitForFirstConsumer",
            "allowedTopologies": [{"matchLabelExpressions": [
                {"key": "topology.kubernetes.io/zone", "values": REAL_ZONES}
            ]}],
        }))
        .ok()
    })
    .collect()
}

/// Declares `class`: applied when it is new or only its mutable fields differ, else deleted and
/// created again (a StorageClass's provisioner and parameters are immutable, and a control plane
/// reused from an older checkout may hold an older declaration). Existing PVs keep their own
/// copy of what they need, so recreating a class never touches a volume.
async fn declare_class(classes: &Api<StorageClass>, class: &StorageClass) -> Result<(), Error> {
    let name = class.name_any();
    if let Some(existing) = classes.get_opt(&name).await? {
        let immutable = |c: &StorageClass| {
            (
                c.provisioner.clone(),
                c.parameters.clone().unwrap_or_default(),
                c.reclaim_policy.clone(),
                c.volume_binding_mode.clone(),
            )
        };
        if immutable(&existing) != immutable(class) {
            tracing::info!(class = %name, "recreating: its provisioner or parameters changed");
            classes.delete(&name, &DeleteParams::default()).await?;
        }
    }
    classes
        .patch(
            &name,
            &PatchParams::apply("ferry-testenv").force(),
            &Patch::Apply(class),
        )
        .await?;
    Ok(())
}

struct Driver {
    client: Client,
    volumes_dir: PathBuf,
    disks_dir: PathBuf,
}

/// Runs the driver until the watch streams end: directories under `volumes_dir`, disks (and their
/// mounts) under `disks_dir`.
pub async fn run(client: Client, volumes_dir: PathBuf, disks_dir: PathBuf) -> Result<(), Error> {
    std::fs::create_dir_all(&volumes_dir).map_err(|e| Error::io(volumes_dir.display(), e))?;
    std::fs::create_dir_all(&disks_dir).map_err(|e| Error::io(disks_dir.display(), e))?;
    let classes: Api<StorageClass> = Api::all(client.clone());
    for class in storage_classes() {
        declare_class(&classes, &class).await?;
    }
    let driver = Arc::new(Driver {
        client: client.clone(),
        volumes_dir,
        disks_dir,
    });

    let claims = Controller::new(
        Api::<PersistentVolumeClaim>::all(client.clone()),
        watcher::Config::default(),
    )
    .watches(
        Api::<Pod>::all(client.clone()),
        watcher::Config::default(),
        |pod| {
            let namespace = pod.namespace().unwrap_or_default();
            claim_names(&pod)
                .into_iter()
                .map(move |name| ObjectRef::new(&name).within(&namespace))
                .collect::<Vec<_>>()
        },
    )
    .run(reconcile_claim, retry, driver.clone())
    .for_each(|result| async move {
        if let Err(error) = result {
            tracing::warn!(%error, "claim reconcile failed");
        }
    });
    let volumes = Controller::new(Api::<PersistentVolume>::all(client), watcher::Config::default())
        .run(reconcile_volume, retry, driver)
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::warn!(%error, "volume reconcile failed");
            }
        });
    futures::join!(claims, volumes);
    Ok(())
}

fn retry<K>(_: Arc<K>, error: &Error, _: Arc<Driver>) -> Action {
    tracing::warn!(%error, "retrying");
    Action::requeue(Duration::from_secs(2))
}

fn claim_names(pod: &Pod) -> Vec<String> {
    pod.spec
        .iter()
        .flat_map(|spec| spec.volumes.iter().flatten())
        .filter_map(|volume| {
            volume
                .persistent_volume_claim
                .as_ref()
                .map(|c| c.claim_name.clone())
        })
        .collect()
}

async fn reconcile_claim(claim: Arc<PersistentVolumeClaim>, driver: Arc<Driver>) -> Result<Action, Error> {
    let Some(class) = claim.spec.as_ref().and_then(|s| s.storage_class_name.clone()) else {
        return Ok(Action::await_change());
    };
    let Some((expansion, backing)) = class_of(&class) else {
        return Ok(Action::await_change());
    };
    if claim.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    match claim.spec.as_ref().and_then(|s| s.volume_name.clone()) {
        None => provision(&claim, &class, backing, &driver).await,
        Some(volume) => expand(&claim, &volume, expansion, backing, &driver).await,
    }
}

async fn provision(
    claim: &PersistentVolumeClaim,
    class: &str,
    backing: Backing,
    driver: &Driver,
) -> Result<Action, Error> {
    let annotations = claim.annotations();
    let provisioner = provisioner_of(backing);
    if annotations.get(ANN_PROVISIONER).map(String::as_str) != Some(provisioner) {
        return Ok(Action::await_change());
    }
    let Some(node) = annotations.get(ANN_SELECTED_NODE) else {
        return Ok(Action::await_change());
    };
    let uid = claim.uid().unwrap_or_default();
    let name = format!("pvc-{uid}");
    let spec = claim.spec.clone().unwrap_or_default();
    let size = spec
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"))
        .cloned();
    let mut capacity = size.clone();
    let source = match backing {
        Backing::Directory => {
            let path = driver.volumes_dir.join(&name);
            std::fs::create_dir_all(&path).map_err(|e| Error::io(path.display(), e))?;
            json!({"hostPath": { "path": path.display().to_string(), "type": "Directory" }})
        }
        Backing::Disk => {
            if spec.volume_mode.as_deref() == Some("Block") {
                tracing::warn!(claim = %claim.name_any(), "raw block claims are not provisioned");
                return Ok(Action::await_change());
            }
            let Some(size_bytes) = size.as_ref().and_then(quantity_bytes) else {
                return Ok(Action::await_change());
            };
            // XFS, so the agent can grow it while mounted.
            let file_system = FileSystem::Xfs;
            let disk = BlockVolume::new(&driver.disks_dir, &name);
            disk.ensure(size_bytes, file_system)?;
            // Like a cloud disk with a minimum size, the PV says what was really made.
            capacity = Some(Quantity(file_system.disk_bytes(size_bytes).to_string()));
            json!({"local": { "path": disk.mount.display().to_string() }})
        }
    };
    let mut pv_spec = json!({
            "capacity": { "storage": capacity },
            "accessModes": spec.access_modes,
            "volumeMode": spec.volume_mode,
            "storageClassName": class,
            "persistentVolumeReclaimPolicy": "Delete",
            "claimRef": {
                "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "namespace": claim.namespace(), "name": claim.name_any(), "uid": uid,
            },
            "nodeAffinity": { "required": { "nodeSelectorTerms": [ { "matchExpressions": [
                { "key": "kubernetes.io/hostname", "operator": "In", "values": [node] }
            ] } ] } },
    });
    if let (Some(pv_spec), Some(source)) = (pv_spec.as_object_mut(), source.as_object()) {
        pv_spec.extend(source.clone());
    }
    let volume: PersistentVolume = serde_json::from_value(json!({
        "metadata": { "name": name, "annotations": { ANN_PROVISIONED_BY: provisioner } },
        "spec": pv_spec,
    }))
    .map_err(|e| Error::Setup(e.to_string()))?;
    match Api::<PersistentVolume>::all(driver.client.clone())
        .create(&PostParams::default(), &volume)
        .await
    {
        Ok(_) => tracing::info!(volume = %name, claim = %claim.name_any(), %node, "provisioned"),
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        Err(error) => return Err(error.into()),
    }
    Ok(Action::await_change())
}

async fn expand(
    claim: &PersistentVolumeClaim,
    volume_name: &str,
    expansion: Expansion,
    backing: Backing,
    driver: &Driver,
) -> Result<Action, Error> {
    let Some((requested, requested_bytes, capacity_bytes)) = requested_and_capacity(claim) else {
        return Ok(Action::await_change());
    };
    if requested_bytes <= capacity_bytes || expansion == Expansion::None {
        return Ok(Action::await_change());
    }
    // Node side for a real disk: grow it and its file system first, as a cloud disk plus the
    // kubelet would, so the capacity reported below exists.
    if backing == Backing::Disk {
        BlockVolume::new(&driver.disks_dir, volume_name).grow(requested_bytes)?;
    }
    // Controller side: grow the PV.
    let volumes: Api<PersistentVolume> = Api::all(driver.client.clone());
    volumes
        .patch(
            volume_name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"capacity": {"storage": requested}}})),
        )
        .await?;
    let claims: Api<PersistentVolumeClaim> =
        Api::namespaced(driver.client.clone(), &claim.namespace().unwrap_or_default());
    let conditions = claim
        .status
        .as_ref()
        .and_then(|s| s.conditions.clone())
        .unwrap_or_default();
    let pending = conditions.iter().any(|c| c.type_ == FS_RESIZE_PENDING);
    let node_side_done = match (expansion, pending) {
        (Expansion::Online, _) => true,
        (Expansion::Offline, true) => remounted(claim, driver).await?,
        (Expansion::Offline, false) => {
            mark_resize_pending(claim, &claims, &conditions, &requested, driver).await?;
            return Ok(Action::requeue(Duration::from_secs(2)));
        }
        (Expansion::None, _) => false,
    };
    if !node_side_done {
        return Ok(Action::requeue(Duration::from_secs(2)));
    }
    let remaining: Vec<_> = conditions
        .into_iter()
        .filter(|c| ![FS_RESIZE_PENDING, NODE_RESIZE_ERROR, "Resizing"].contains(&c.type_.as_str()))
        .collect();
    claims
        .patch_status(
            &claim.name_any(),
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {
                "capacity": {"storage": requested},
                "allocatedResources": {"storage": requested},
                "allocatedResourceStatuses": null,
                "conditions": remaining,
            }})),
        )
        .await?;
    tracing::info!(claim = %claim.name_any(), size = %requested.0, "expanded");
    Ok(Action::await_change())
}

/// An offline expansion done on the controller side: the file system resize is pending until a
/// pod mounts the volume anew, and a pod that has it mounted gets the node plugin's refusal, as
/// the kubelet reports it. Which pods had it mounted is noted on the claim.
async fn mark_resize_pending(
    claim: &PersistentVolumeClaim,
    claims: &Api<PersistentVolumeClaim>,
    conditions: &[PersistentVolumeClaimCondition],
    requested: &Quantity,
    driver: &Driver,
) -> Result<(), Error> {
    // Remember which pods had the volume mounted: a pod not among them mounts it anew.
    let mounted: Vec<String> = pods_using(claim, driver)
        .await?
        .iter()
        .filter_map(|pod| pod.uid())
        .collect();
    let note = json!({"metadata": {"annotations": {ANN_MOUNTED_AT_RESIZE: mounted.join(",")}}});
    claims
        .patch(&claim.name_any(), &PatchParams::default(), &Patch::Merge(note))
        .await?;
    let mut pending = conditions.to_vec();
    pending.push(
        serde_json::from_value(json!({
            "type": FS_RESIZE_PENDING, "status": "True",
            "lastTransitionTime": Time(k8s_openapi::jiff::Timestamp::now()),
            "message": "Waiting for user to (re-)start a pod to finish file system resize of volume on node."
        }))
        .map_err(|e| Error::Setup(e.to_string()))?,
    );
    // As the kubelet does when a node plugin that expands only offline refuses to grow a
    // mounted file system.
    if !mounted.is_empty() {
        pending.push(serde_json::from_value(json!({
            "type": NODE_RESIZE_ERROR, "status": "True",
            "lastTransitionTime": Time(k8s_openapi::jiff::Timestamp::now()),
            "message": "failed to expand pvc with rpc error: code = FailedPrecondition desc = the file system grows only while unmounted"
        })).map_err(|e| Error::Setup(e.to_string()))?);
    }
    claims
        .patch_status(
            &claim.name_any(),
            &PatchParams::default(),
            &Patch::Merge(
                json!({"status": {"conditions": pending, "allocatedResources": {"storage": requested}}}),
            ),
        )
        .await?;
    tracing::info!(claim = %claim.name_any(), "expanded on the controller side; file system resize pending");
    Ok(())
}

/// The size a claim asks for (and in bytes) and the capacity it has, once it has both.
fn requested_and_capacity(claim: &PersistentVolumeClaim) -> Option<(Quantity, u64, u64)> {
    let requested = claim
        .spec
        .as_ref()
        .and_then(|s| s.resources.as_ref())
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"))
        .cloned()?;
    let capacity = claim
        .status
        .as_ref()
        .and_then(|s| s.capacity.as_ref())
        .and_then(|c| c.get("storage"))?;
    Some((
        requested.clone(),
        quantity_bytes(&requested)?,
        quantity_bytes(capacity)?,
    ))
}

/// Pods (not being deleted) whose volumes include the claim.
async fn pods_using(claim: &PersistentVolumeClaim, driver: &Driver) -> Result<Vec<Pod>, Error> {
    let pods: Api<Pod> = Api::namespaced(driver.client.clone(), &claim.namespace().unwrap_or_default());
    let name = claim.name_any();
    Ok(pods
        .list(&Default::default())
        .await?
        .items
        .into_iter()
        .filter(|pod| pod.metadata.deletion_timestamp.is_none() && claim_names(pod).contains(&name))
        .collect())
}

/// The kubelet finishes an offline expansion when it mounts the volume again: a running pod using
/// the claim that was not among those mounting it when the resize became pending.
async fn remounted(claim: &PersistentVolumeClaim, driver: &Driver) -> Result<bool, Error> {
    let before: Vec<&str> = claim
        .annotations()
        .get(ANN_MOUNTED_AT_RESIZE)
        .map(|uids| uids.split(',').collect())
        .unwrap_or_default();
    Ok(pods_using(claim, driver).await?.iter().any(|pod| {
        let running = pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running");
        running && pod.uid().is_some_and(|uid| !before.contains(&uid.as_str()))
    }))
}

async fn reconcile_volume(volume: Arc<PersistentVolume>, driver: Arc<Driver>) -> Result<Action, Error> {
    let provisioned_by = volume.annotations().get(ANN_PROVISIONED_BY).map(String::as_str);
    let ours = provisioned_by == Some(PROVISIONER) || provisioned_by == Some(BLOCK_PROVISIONER);
    let released = volume.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Released");
    let delete_policy = volume
        .spec
        .as_ref()
        .and_then(|s| s.persistent_volume_reclaim_policy.as_deref())
        == Some("Delete");
    if !(ours && released && delete_policy) || volume.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    if let Some(path) = volume
        .spec
        .as_ref()
        .and_then(|s| s.host_path.as_ref())
        .map(|h| PathBuf::from(&h.path))
        && path.starts_with(&driver.volumes_dir)
        && path.exists()
    {
        std::fs::remove_dir_all(&path).map_err(|e| Error::io(path.display(), e))?;
    }
    if provisioned_by == Some(BLOCK_PROVISIONER) {
        BlockVolume::new(&driver.disks_dir, &volume.name_any()).remove()?;
    }
    match Api::<PersistentVolume>::all(driver.client.clone())
        .delete(&volume.name_any(), &DeleteParams::default())
        .await
    {
        Ok(_) => tracing::info!(volume = %volume.name_any(), "deleted released volume"),
        Err(kube::Error::Api(status)) if status.code == 404 => {}
        Err(error) => return Err(error.into()),
    }
    Ok(Action::await_change())
}
