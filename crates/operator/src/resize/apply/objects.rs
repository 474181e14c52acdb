//! The objects a resize creates and the patches it sends, built from plain inputs. Pure: which API
//! they go to, and how a repeat is made harmless, is `apply`'s.
//!
//! Created objects are typed k8s-openapi structs, so a misspelt field cannot compile. Patches stay
//! JSON merge patches: a typed object serializes `apiVersion`, `kind` and an empty `metadata` into
//! every patch and cannot write the explicit `null`s that clear a field (as the volume reservation
//! in `crate::volume_writes` does).

use crate::Error;
use ferry_api::names::{
    ANNOTATION_BACKED_UP_UID, ANNOTATION_FINAL_PASS, ANNOTATION_RECREATED_BY, FINAL_PASS_GO,
    LABEL_AUTOSCALER_UID, LABEL_MANAGED_BY, LABEL_MOVER, LABEL_MOVER_PASS, LABEL_VOLUME_RESIZE,
    MANAGED_BY_VALUE,
};
use ferry_api::quantity::format_bytes;
use ferry_api::{MoverSettings, Verify, VolumeAutoscaler, VolumeChange, VolumePlan, VolumeResize};
use ferry_engine::pods::RunAs;
use ferry_engine::resize::action::Pass;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{
    Capabilities, ConfigMap, Container, DownwardAPIVolumeFile, DownwardAPIVolumeSource, LocalObjectReference,
    ObjectFieldSelector, PersistentVolumeClaim, PersistentVolumeClaimSpec, PersistentVolumeClaimVolumeSource,
    Pod, PodSecurityContext, PodSpec, ResourceRequirements, SeccompProfile, SecurityContext, Toleration,
    TypedLocalObjectReference, Volume, VolumeMount, VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::{Resource, ResourceExt};
use serde_json::json;
use std::collections::BTreeMap;

pub mod quota_resources;
mod standby;
pub mod transport;
pub use transport::SERVING_PASS;
#[cfg(test)]
mod tests;

/// The claim annotation naming the node its volume is made for (set by the scheduler for a claim
/// that binds on first use).
pub const SELECTED_NODE_ANNOTATION: &str = "volume.kubernetes.io/selected-node";

/// Name of the container in mover pods (its log carries the progress lines).
pub const MOVER_CONTAINER: &str = "mover";

/// Deterministic name of the ConfigMap holding a resize's StatefulSet backup.
pub fn backup_name(resize: &VolumeResize) -> String {
    ferry_engine::names::backup(&resize.name_any())
}

/// Short stable suffix of a resize's UID, used in the names of what it creates.
pub fn uid_suffix(resize: &VolumeResize) -> String {
    ferry_engine::names::uid_suffix(&resize.uid().unwrap_or_default())
}

/// The backup ConfigMap's key for the StatefulSet as first backed up.
const BACKUP_KEY: &str = "statefulset.json";
/// The StatefulSet as it was when Ferry last orphan-deleted it: edits made during the resize (an
/// image upgrade, a replica count) that a re-create must keep.
const LIVE_KEY: &str = "live.json";

/// The object that objects belong to (a resize, or an autoscaler's measurement): the label that
/// finds them and a controller reference (so they go when it goes).
#[derive(Debug, Clone, PartialEq)]
pub struct Owner {
    /// (key, value) of the label.
    pub label: (&'static str, String),
    pub reference: Option<OwnerReference>,
}

impl Owner {
    pub fn of(resize: &VolumeResize) -> Owner {
        Owner {
            label: (LABEL_VOLUME_RESIZE, resize.name_any()),
            reference: resize.controller_owner_ref(&()),
        }
    }

    /// An autoscaler's: its UID is the label (`ferry.dev/autoscaler-uid`).
    pub fn of_autoscaler(autoscaler: &VolumeAutoscaler) -> Owner {
        Owner {
            label: (LABEL_AUTOSCALER_UID, autoscaler.uid().unwrap_or_default()),
            reference: autoscaler.controller_owner_ref(&()),
        }
    }

    /// Ferry's labels: whose, and that Ferry manages it.
    fn labels(&self) -> BTreeMap<String, String> {
        [
            (self.label.0.to_string(), self.label.1.clone()),
            (LABEL_MANAGED_BY.to_string(), MANAGED_BY_VALUE.to_string()),
        ]
        .into()
    }

    /// Metadata of an object the resize owns: its name, Ferry's labels, the owner reference.
    fn metadata(&self, name: &str) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.to_string()),
            labels: Some(self.labels()),
            owner_references: self.reference.clone().map(|owner| vec![owner]),
            ..ObjectMeta::default()
        }
    }
}

/// What every pod Ferry runs takes from `spec.mover` and the operator: the image, and where it may
/// run.
#[derive(Debug, Clone, PartialEq)]
pub struct Placement {
    pub image: String,
    pub node_selector: Option<BTreeMap<String, String>>,
    /// `spec.mover`'s, then the replica's: a mover must run on its replica's node, which may be
    /// tainted for the database alone.
    pub tolerations: Vec<Toleration>,
    /// Secrets of the pod's namespace to pull `image` with (`--mover-image-pull-secrets`).
    pub image_pull_secrets: Vec<String>,
    /// Compute resources of mover and usage pods: `spec.mover.resources`, else the operator's
    /// default, with what the namespace's quotas make every pod declare filled in.
    pub resources: Option<ResourceRequirements>,
    /// Where Pod Security `restricted` admits no root pod: the StatefulSet's own non-root user,
    /// which Ferry's pods then run as, with no capability (see [`ferry_pod`]).
    pub run_as: Option<RunAs>,
}

/// The taint of a cordoned node.
const UNSCHEDULABLE_TAINT: &str = "node.kubernetes.io/unschedulable";

impl Placement {
    /// Also on a cordoned node: a pod that only reads a volume bound there (a node being drained
    /// still has its volumes measured and served).
    pub fn tolerating_cordon(&self) -> Placement {
        let mut placement = self.clone();
        placement.tolerations.push(Toleration {
            key: Some(UNSCHEDULABLE_TAINT.to_string()),
            operator: Some("Exists".to_string()),
            effect: Some("NoSchedule".to_string()),
            ..Toleration::default()
        });
        placement
    }
}

/// The placement of `mover`, over the operator's image, with the replica's tolerations added to its
/// own (each once).
pub fn placement(
    mover: &MoverSettings,
    default_image: &str,
    replica_tolerations: Vec<Toleration>,
    image_pull_secrets: &[String],
    resources: Option<ResourceRequirements>,
) -> Placement {
    let mut tolerations = mover.tolerations.clone().unwrap_or_default();
    for toleration in replica_tolerations {
        if !tolerations.contains(&toleration) {
            tolerations.push(toleration);
        }
    }
    Placement {
        image: mover.image.clone().unwrap_or_else(|| default_image.to_string()),
        node_selector: mover.node_selector.clone(),
        tolerations,
        image_pull_secrets: image_pull_secrets.to_vec(),
        resources,
        run_as: None,
    }
}

/// One copy a mover pod makes: `source` claim onto `target` claim.
#[derive(Debug, Clone, PartialEq)]
pub struct CopyJob<'a> {
    pub source: &'a str,
    pub target: &'a str,
    pub pass: Pass,
    pub verify: Verify,
    pub threads: Option<i32>,
    /// Most bytes per second written (`spec.mover.bandwidthLimit`, parsed).
    pub bandwidth_limit: Option<u64>,
    pub resources: Option<ResourceRequirements>,
    /// Linux capabilities of the mover container, every other one dropped (what the data needs).
    pub capabilities: Vec<String>,
    /// The target is a CSI clone of the source whose claim was made then (seconds since the epoch).
    pub cloned_at: Option<i64>,
    /// A final mover on standby watches the source and says when it is armed (`standby`).
    pub track_changes: bool,
    /// A copy from another node: where it pulls from, and the copy's key.
    pub pull: Option<Pull<'a>>,
}

/// Where a mover on the new volume's node pulls the old volume from.
#[derive(Debug, Clone, PartialEq)]
pub struct Pull<'a> {
    /// The serving mover's address (IP:port).
    pub from: &'a str,
    /// The Secret with the copy's key (its serving mover's).
    pub key: String,
    /// The serving mover tracks changes: mark each pass, and let the final one read only them.
    pub tracked: bool,
}

impl CopyJob<'_> {
    /// A final mover that tracks changes on standby and says through a probe when it is armed.
    fn tracks_changes(&self) -> bool {
        self.pass == Pass::Final && self.track_changes
    }
}

/// The mover's command line for `copy`.
pub fn mover_command(copy: &CopyJob) -> Vec<String> {
    // Both passes verify what they write: the final pass skips files the warm pass already copied,
    // so those are checked when they land (while the replica still serves, at no downtime cost).
    let verify = match copy.verify {
        Verify::None => "none",
        Verify::Metadata => "metadata",
        Verify::Checksum => "checksum",
    };
    let mut command: Vec<String> = [
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
    .collect();
    if let Some(threads) = copy.threads {
        command.extend(["--threads".to_string(), threads.to_string()]);
    }
    if let Some(limit) = copy.bandwidth_limit {
        command.extend(["--bwlimit".to_string(), limit.max(1).to_string()]);
    }
    // A warm pass records the digests of the large files' pieces it wrote, so the final pass
    // (downtime) compares a changed file with them and writes only the pieces that differ,
    // without reading the new volume again; the final pass leaves no record behind.
    if copy.pass == Pass::Warm {
        command.push("--chunk-record".to_string());
    }
    // A clone's files keep the source's inode times: the pass compares by content only those
    // modified about when the clone was made, not every file.
    if let Some(cloned_at) = copy.cloned_at {
        command.extend(["--cloned-at".to_string(), cloned_at.to_string()]);
    }
    // The final pass runs with the replica stopped: a source that still changes means something
    // still writes to it, and that pass must fail rather than swap in a stale copy. It starts on
    // standby and begins on its go (see `mover_pod`).
    if copy.pass == Pass::Final {
        command.push("--strict".to_string());
        command.extend(["--wait-for".to_string(), format!("{SIGNAL_DIR}/{SIGNAL_FILE}")]);
    }
    // While the replica still serves: its final pass then visits only what changed.
    if copy.tracks_changes() {
        command.extend(standby::command_args());
    }
    command
}

/// Where a final mover reads its go: a downward API volume showing its [`ANNOTATION_FINAL_PASS`].
const SIGNAL_DIR: &str = "/signal";
const SIGNAL_FILE: &str = "go";

/// The patch giving a standby final mover its go.
pub fn final_pass_go_patch() -> serde_json::Value {
    json!({"metadata": {"annotations": {ANNOTATION_FINAL_PASS: FINAL_PASS_GO}}})
}

/// A mover pod: least privilege (no service-account token, no network use, read-only source, only
/// the capabilities its data needs, `copy.capabilities`), on the source volume's node (its
/// PV's node affinity places it there), copying `copy.source` onto `copy.target`.
///
/// A final mover is started on standby while the replica still serves, its volumes mounted: its
/// pass begins when its [`ANNOTATION_FINAL_PASS`] says `go`, which the kubelet shows it in a
/// downward API file. So the replica's downtime holds no pod start, and the go needs no
/// permission in the mover and no network path to it.
pub fn mover_pod(owner: &Owner, name: &str, placement: &Placement, copy: &CopyJob) -> Pod {
    let pass = match copy.pass {
        Pass::Warm => "warm",
        Pass::Final => "final",
    };
    if let Some(pull) = &copy.pull {
        return pulling_pod(owner, name, pass, placement, copy, pull);
    }
    let mut mounts = vec![mount("source", true), mount("target", false)];
    let mut volumes = vec![
        claim_volume("source", copy.source, true),
        claim_volume("target", copy.target, false),
    ];
    go_signal(copy, &mut mounts, &mut volumes);
    if copy.tracks_changes() {
        mounts.push(standby::mount());
        volumes.push(standby::volume());
    }
    let container = Container {
        name: MOVER_CONTAINER.to_string(),
        command: Some(mover_command(copy)),
        resources: copy.resources.clone(),
        security_context: Some(container_security(&copy.capabilities)),
        volume_mounts: Some(mounts),
        readiness_probe: copy.tracks_changes().then(standby::readiness_probe),
        ..Container::default()
    };
    on_standby(copy, ferry_pod(owner, name, pass, placement, container, volumes))
}

/// A final mover's go: the downward API file showing its annotation, mounted read only.
fn go_signal(copy: &CopyJob, mounts: &mut Vec<VolumeMount>, volumes: &mut Vec<Volume>) {
    if copy.pass == Pass::Final {
        mounts.push(VolumeMount {
            name: "signal".to_string(),
            mount_path: SIGNAL_DIR.to_string(),
            read_only: Some(true),
            ..VolumeMount::default()
        });
        volumes.push(signal_volume());
    }
}

/// A final mover is made on standby: its annotation there, not yet `go`.
fn on_standby(copy: &CopyJob, mut pod: Pod) -> Pod {
    if copy.pass == Pass::Final {
        pod.metadata
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(ANNOTATION_FINAL_PASS.to_string(), String::new());
    }
    pod
}

/// A mover pulling from another node (`mover_pod`'s, for a copy across nodes): only the new volume
/// mounted, the copy's key, no change tracking.
fn pulling_pod(
    owner: &Owner,
    name: &str,
    pass: &str,
    placement: &Placement,
    copy: &CopyJob,
    pull: &Pull,
) -> Pod {
    let (mounts, volumes) = transport::pulling_volumes(copy, &pull.key);
    let container = Container {
        name: MOVER_CONTAINER.to_string(),
        command: Some(transport::pull_command(copy, pull.from)),
        resources: copy.resources.clone(),
        security_context: Some(container_security(&copy.capabilities)),
        volume_mounts: Some(mounts),
        ..Container::default()
    };
    on_standby(copy, ferry_pod(owner, name, pass, placement, container, volumes))
}

/// Final mover `pod` also takes its go as a line on its stdin whose SHA-256 is `key_digest`
/// (feature `directGo`, `direct_go.rs`): stdin kept open across attaches, so a stream that drops
/// before the go is no end of it.
pub fn with_go_line(pod: &mut Pod, key_digest: &str) {
    let containers = pod.spec.iter_mut().flat_map(|spec| spec.containers.iter_mut());
    for container in containers.filter(|c| c.name == MOVER_CONTAINER) {
        container.stdin = Some(true);
        container.stdin_once = Some(false);
        (container.command.get_or_insert_with(Vec::new))
            .extend(["--go-key-sha256".to_string(), key_digest.to_string()]);
    }
}

/// The downward API volume holding the pod's [`ANNOTATION_FINAL_PASS`] as file `go`.
fn signal_volume() -> Volume {
    Volume {
        name: "signal".to_string(),
        downward_api: Some(DownwardAPIVolumeSource {
            items: Some(vec![DownwardAPIVolumeFile {
                path: SIGNAL_FILE.to_string(),
                field_ref: Some(ObjectFieldSelector {
                    field_path: format!("metadata.annotations['{ANNOTATION_FINAL_PASS}']"),
                    ..ObjectFieldSelector::default()
                }),
                ..DownwardAPIVolumeFile::default()
            }]),
            ..DownwardAPIVolumeSource::default()
        }),
        ..Volume::default()
    }
}

/// A pod that measures the data in use on `claim` (mounted read-only) and reports it as its
/// termination message.
pub fn usage_pod(owner: &Owner, name: &str, placement: &Placement, claim: &str) -> Pod {
    let container = Container {
        name: "usage".to_string(),
        command: Some(
            ["ferry-mover", "usage", "/source"]
                .into_iter()
                .map(String::from)
                .collect(),
        ),
        // DAC_OVERRIDE rather than DAC_READ_SEARCH: Pod Security `baseline` allows only the
        // former, and the mount is read-only anyway.
        security_context: Some(container_security(&["DAC_OVERRIDE"])),
        volume_mounts: Some(vec![mount("source", true)]),
        resources: placement.resources.clone(),
        ..Container::default()
    };
    ferry_pod(
        owner,
        name,
        "usage",
        &placement.tolerating_cordon(),
        container,
        vec![claim_volume("source", claim, true)],
    )
}

/// No privilege escalation, a read-only root file system, every capability dropped but `add`.
fn container_security<S: AsRef<str>>(add: &[S]) -> SecurityContext {
    SecurityContext {
        allow_privilege_escalation: Some(false),
        read_only_root_filesystem: Some(true),
        capabilities: Some(Capabilities {
            drop: Some(vec!["ALL".to_string()]),
            add: Some(add.iter().map(|c| c.as_ref().to_string()).collect()),
        }),
        ..SecurityContext::default()
    }
}

/// The volume `name` mounted at `/<name>`.
fn mount(name: &str, read_only: bool) -> VolumeMount {
    VolumeMount {
        name: name.to_string(),
        mount_path: format!("/{name}"),
        read_only: read_only.then_some(true),
        ..VolumeMount::default()
    }
}

/// The volume `name` of a pod, from claim `claim`.
fn claim_volume(name: &str, claim: &str, read_only: bool) -> Volume {
    Volume {
        name: name.to_string(),
        persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
            claim_name: claim.to_string(),
            read_only: read_only.then_some(true),
        }),
        ..Volume::default()
    }
}

/// What every pod Ferry runs has in common: owned by the resize and labelled as a mover pod of
/// `pass`; run once, as root (to keep ownership) but with no service-account token or service
/// links, the runtime's default seccomp profile and only capabilities Pod Security `baseline`
/// allows (root is why `restricted` cannot admit them); the image and placement of `placement`;
/// the result as the termination message. `container` brings its name, command, resources,
/// security context and mounts. With `placement.run_as` (a `restricted` namespace) it runs as that
/// user instead, with every capability dropped: what `restricted` admits.
fn ferry_pod(
    owner: &Owner,
    name: &str,
    pass: &str,
    placement: &Placement,
    container: Container,
    volumes: Vec<Volume>,
) -> Pod {
    let mut metadata = owner.metadata(name);
    let labels = metadata.labels.get_or_insert_with(BTreeMap::new);
    labels.insert(LABEL_MOVER.to_string(), "true".to_string());
    labels.insert(LABEL_MOVER_PASS.to_string(), pass.to_string());
    Pod {
        metadata,
        spec: Some(PodSpec {
            restart_policy: Some("Never".to_string()),
            automount_service_account_token: Some(false),
            enable_service_links: Some(false),
            node_selector: placement.node_selector.clone(),
            tolerations: Some(placement.tolerations.clone()),
            image_pull_secrets: (!placement.image_pull_secrets.is_empty()).then(|| {
                placement
                    .image_pull_secrets
                    .iter()
                    .map(|name| LocalObjectReference { name: name.clone() })
                    .collect()
            }),
            security_context: Some(pod_security(placement.run_as.as_ref())),
            containers: vec![Container {
                image: Some(placement.image.clone()),
                termination_message_policy: Some("File".to_string()),
                security_context: match &placement.run_as {
                    Some(_) => Some(container_security::<&str>(&[])),
                    None => container.security_context.clone(),
                },
                ..container
            }],
            volumes: Some(volumes),
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

/// Root, or `run_as` (non-root, as `restricted` asks), with the runtime's default seccomp profile.
fn pod_security(run_as: Option<&RunAs>) -> PodSecurityContext {
    let seccomp_profile = Some(SeccompProfile {
        type_: "RuntimeDefault".to_string(),
        ..SeccompProfile::default()
    });
    match run_as {
        None => PodSecurityContext {
            run_as_user: Some(0),
            run_as_group: Some(0),
            seccomp_profile,
            ..PodSecurityContext::default()
        },
        Some(user) => PodSecurityContext {
            run_as_non_root: Some(true),
            run_as_user: Some(user.user),
            run_as_group: user.group,
            fs_group: user.fs_group,
            fs_group_change_policy: user.fs_group_change_policy.clone(),
            supplemental_groups: (!user.supplemental_groups.is_empty())
                .then(|| user.supplemental_groups.clone()),
            seccomp_profile,
            ..PodSecurityContext::default()
        },
    }
}

/// `{"storage": <bytes>}` as a claim's requests.
fn storage_request(bytes: u64) -> VolumeResourceRequirements {
    VolumeResourceRequirements {
        requests: Some([("storage".to_string(), Quantity(format_bytes(bytes)))].into()),
        ..VolumeResourceRequirements::default()
    }
}

/// What a copy's temporary claim asks for: its size and classes, and the claim it is a CSI clone
/// of, if it is one.
pub struct TargetShape {
    pub shape: ClaimShape,
    pub clone_of: Option<String>,
    /// The node its volume is made on (a move to another node).
    pub node: Option<String>,
}

/// The temporary claim a copy goes to: owned by the resize, at the new size, class and attributes
/// class, with the source claim's access modes; a clone of the source claim where asked.
pub fn target_claim(
    owner: &Owner,
    name: &str,
    access_modes: Vec<String>,
    target: TargetShape,
) -> PersistentVolumeClaim {
    let mut metadata = owner.metadata(name);
    // The scheduler's own way of saying where a volume that binds on first use is made: the
    // provisioner makes it there at once (a move to another node).
    if let Some(node) = target.node {
        metadata
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(SELECTED_NODE_ANNOTATION.to_string(), node);
    }
    let data_source = target.clone_of.map(|source| TypedLocalObjectReference {
        api_group: None,
        kind: "PersistentVolumeClaim".to_string(),
        name: source,
    });
    PersistentVolumeClaim {
        metadata,
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(access_modes),
            storage_class_name: target.shape.storage_class,
            volume_attributes_class_name: target.shape.attributes_class,
            resources: Some(storage_request(target.shape.bytes)),
            data_source,
            ..PersistentVolumeClaimSpec::default()
        }),
        ..PersistentVolumeClaim::default()
    }
}

/// What a claim bound to a given volume asks for: the volume's size, class and attributes class
/// (the PV controller binds a claim only to a volume of the same class and attributes class).
pub struct ClaimShape {
    pub bytes: u64,
    pub storage_class: Option<String>,
    pub attributes_class: Option<String>,
}

/// The claim `sts` would make for `claim` from its template `template`, but bound to `volume` and
/// shaped as it. Not owned by the resize: it is the StatefulSet's claim from now on.
pub fn bound_claim(
    sts: &StatefulSet,
    template: &str,
    claim: &str,
    volume: &str,
    shape: ClaimShape,
) -> PersistentVolumeClaim {
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
    PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(claim.to_string()),
            labels: Some(labels),
            ..ObjectMeta::default()
        },
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(access_modes),
            storage_class_name: shape.storage_class,
            volume_attributes_class_name: shape.attributes_class,
            volume_name: Some(volume.to_string()),
            resources: Some(storage_request(shape.bytes)),
            ..PersistentVolumeClaimSpec::default()
        }),
        ..PersistentVolumeClaim::default()
    }
}

/// A StatefulSet as it can be created again: its spec and the metadata that is the user's (labels,
/// annotations, owner references — a parent operator or GitOps tool keeps owning it).
pub fn serialize_kept(sts: &StatefulSet) -> Result<String, Error> {
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

/// The ConfigMap `name` keeping the StatefulSet as it was (and the UID it had), owned by the
/// resize.
pub fn backup_config_map(
    owner: &Owner,
    name: &str,
    namespace: Option<String>,
    sts: &StatefulSet,
) -> Result<ConfigMap, Error> {
    let text = serialize_kept(sts)?;
    Ok(ConfigMap {
        metadata: ObjectMeta {
            namespace,
            annotations: Some(
                [(
                    ANNOTATION_BACKED_UP_UID.to_string(),
                    sts.uid().unwrap_or_default(),
                )]
                .into(),
            ),
            ..owner.metadata(name)
        },
        data: Some([(BACKUP_KEY.to_string(), text)].into()),
        ..ConfigMap::default()
    })
}

/// Marks a StatefulSet Ferry creates as the resize with UID `resize_uid`'s own, so it is not taken
/// for someone else's.
pub fn recreated_by(resize_uid: String, mut sts: StatefulSet) -> StatefulSet {
    sts.annotations_mut()
        .insert(ANNOTATION_RECREATED_BY.into(), resize_uid);
    sts
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
pub fn last_live(backup: &ConfigMap) -> Result<StatefulSet, Error> {
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

/// The backed-up StatefulSet with each template `changes` names and `plan` acts on at its new size
/// (and class).
pub fn with_new_templates(
    mut sts: StatefulSet,
    changes: &[VolumeChange],
    plan: &[VolumePlan],
) -> StatefulSet {
    let templates = sts.spec.as_mut().and_then(|s| s.volume_claim_templates.as_mut());
    for template in templates.into_iter().flatten() {
        let name = template.name_any();
        let Some(change) = changes.iter().find(|v| v.name == name) else {
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
        if let Some(class) = &change.volume_attributes_class_name {
            spec.volume_attributes_class_name = Some(class.clone());
        }
    }
    sts
}

/// Raises a claim's storage request to `bytes`.
pub fn expand_claim_patch(bytes: u64) -> serde_json::Value {
    json!({"spec": {"resources": {"requests": {"storage": format_bytes(bytes)}}}})
}

/// Sets a claim's VolumeAttributesClass (`None`: takes back one that never applied; the API
/// server refuses that once one has).
pub fn attributes_class_patch(class: Option<&str>) -> serde_json::Value {
    json!({"spec": {"volumeAttributesClassName": class}})
}

/// Keeps `live` (a [`serialize_kept`] StatefulSet) in the backup ConfigMap.
pub fn live_backup_patch(live: String) -> serde_json::Value {
    json!({"data": {LIVE_KEY: live}})
}
