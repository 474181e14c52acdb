//! The `VolumeResize` custom resource: one request to change the volumes of one StatefulSet, and its
//! status, the single durable record of progress.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, MicroTime, Time};
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What to change: the volumes of one StatefulSet (grow, shrink, move them to another
/// StorageClass, VolumeAttributesClass or node) and how (strategy, mode, the copy's settings).
/// Ferry changes nothing until every precheck passes.
#[derive(CustomResource, KubeSchema, Deserialize, Serialize, Clone, Debug, PartialEq)]
#[kube(
    group = "ferry.dev",
    version = "v1alpha1",
    kind = "VolumeResize",
    plural = "volumeresizes",
    shortname = "vr",
    category = "ferry",
    doc = "A request to change the volumes of one StatefulSet: grow, shrink, move them to another StorageClass, VolumeAttributesClass or node. Ferry checks it, plans it per replica and volume, and carries it out one replica at a time, expanding in place where it can and copying where it must; the status is the durable record of its progress.",
    namespaced,
    status = "VolumeResizeStatus",
    printcolumn = r#"{"name":"StatefulSet","type":"string","jsonPath":".spec.statefulSetName"}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Progress","type":"string","jsonPath":".status.progress"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    printcolumn = r#"{"name":"Message","type":"string","jsonPath":".status.message","priority":1}"#,
    // The name labels every object the resize creates, and label values hold at most 63 characters.
    validation = Rule::new("self.metadata.name.size() <= 63").message("VolumeResize names must be at most 63 characters (the name labels the objects Ferry creates)"),
    // A move to another node is a copy by the movers: in place the volume stays where it is, and a
    // CSI clone is made where its source lies.
    validation = Rule::new("!has(self.spec.placement) || ((!has(self.spec.strategy) || self.spec.strategy != 'InPlace') && (!has(self.spec.warmCopyMethod) || self.spec.warmCopyMethod != 'Clone'))").message("spec.placement moves volumes by copy: it cannot be used with strategy InPlace or warmCopyMethod Clone")
)]
#[serde(rename_all = "camelCase")]
pub struct VolumeResizeSpec {
    /// Name of the StatefulSet, in the VolumeResize's namespace, whose volumes change.
    #[schemars(length(max = 253))]
    #[x_kube(validation = Rule::new("self != ''").message("statefulSetName must not be empty"))]
    #[x_kube(validation = Rule::new("self == oldSelf").message("statefulSetName is immutable"))]
    pub stateful_set_name: String,

    /// The volume claim templates to change, by name; each at most once.
    #[schemars(length(min = 1, max = 16))]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["name".into()]))]
    #[x_kube(validation = Rule::new("self == oldSelf").message("volumes are immutable; create a new VolumeResize"))]
    pub volumes: Vec<VolumeChange>,

    /// Auto (default): expand in place where the StorageClass allows it, else copy. InPlace: only
    /// expand (fails if not possible). Copy: always copy to new volumes.
    #[serde(default)]
    pub strategy: Strategy,

    /// Rolling (default): one replica at a time while the others serve. Offline: scale to zero and
    /// change all volumes in parallel.
    #[serde(default)]
    pub mode: Mode,

    /// Copy while the replica still runs, then a short final sync (default true).
    #[serde(default = "default_true")]
    pub warm_copy: bool,

    /// How the warm copy is made: `Mover` (default) copies the files; `Clone` makes the new volume
    /// as a CSI clone of the old one where it can (the same CSI driver, at least the old size,
    /// Rolling), and the mover where it cannot or the driver does not make it within 120 s.
    #[serde(default, skip_serializing_if = "WarmCopyMethod::is_mover")]
    pub warm_copy_method: WarmCopyMethod,

    /// How copied data is verified (default Checksum).
    #[serde(default)]
    pub verify: Verify,

    /// How long the old volumes are kept after a copy: a duration such as `24h`, `90m`, `7d`, or
    /// `Forever`. Default 24h.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32))]
    #[x_kube(validation = Rule::new("self == 'Forever' || self.matches('^([0-9]+(s|m|h|d))+$')").message("retainOldVolumes must be a duration such as 24h, 90m or 7d, or Forever"))]
    #[x_kube(validation = Rule::new("!self.matches('^(0+(s|m|h|d))+$')").message("retainOldVolumes must be longer than zero (the old volumes are the way back); use 1m for the shortest"))]
    pub retain_old_volumes: Option<String>,

    /// Only plan: fill in status.plan and change nothing.
    #[serde(default)]
    pub dry_run: bool,

    /// Start even if the StatefulSet is not fully Ready (a replica that is down is then handled
    /// first); it never lets a stop take a second replica down.
    #[serde(default)]
    pub force: bool,

    /// Mover pod overrides: image, resources, placement, concurrency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mover: Option<MoverSettings>,

    /// Move the volumes of some replicas to other nodes (to drain a node, or change zone): each
    /// chosen replica's new volumes are made on one node this selects, never the one it runs on,
    /// and its data crosses the network between two movers. Needs a target StorageClass that
    /// binds on first use (`WaitForFirstConsumer`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new("self == oldSelf").message("placement is immutable; create a new VolumeResize"))]
    pub placement: Option<Placement>,

    /// Upper bound on the duration of any one step or wait before it counts as failed: a step
    /// before a copy's swap (the replica is rolled back), an in-place claim reaching its size (a
    /// replica held down for a driver that grows only unused volumes included: it is started
    /// again on its old volume), a replica becoming Ready after its volume changed. Unset: the
    /// operator's default, 3600 (an hour; `--default-timeout-seconds`), which bounds every wait
    /// but not a mover's pass (the warm copy, the final sync: hours over terabytes while they
    /// move; a mover that stops moving fails as stuck whatever this is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new("self > 0").message("timeoutSeconds must be positive"))]
    pub timeout_seconds: Option<i64>,

    /// What Ferry does when another controller owns the StatefulSet (its controller owner
    /// reference): `Through` (default) acts through an owner Ferry knows (pauses it, writes the new
    /// sizes into its resource, lets it go on) and refuses one it does not know; `Ignore` resizes
    /// the StatefulSet as if nobody owned it (its owner may undo the change or re-create it).
    #[serde(default, skip_serializing_if = "OwnerPolicy::is_through")]
    pub owner_policy: OwnerPolicy,
}

/// What a resize does with a StatefulSet another controller owns.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum OwnerPolicy {
    #[default]
    Through,
    Ignore,
}

impl OwnerPolicy {
    pub fn is_through(&self) -> bool {
        *self == OwnerPolicy::Through
    }
}

/// `timeoutSeconds` of a VolumeResize that sets none, unless the operator is told otherwise
/// (`--default-timeout-seconds`): an hour, as for autoscaler-made resizes, so that no wait (a
/// replica held down, a replica never Ready) lasts for ever. A mover's pass is bounded only by a
/// `timeoutSeconds` the spec sets.
pub const DEFAULT_TIMEOUT_SECONDS: i64 = 3600;

fn default_true() -> bool {
    true
}

impl VolumeResizeSpec {
    /// A request with every other field at its default (what `kubectl apply` of just these two
    /// fields gives).
    pub fn for_volumes(stateful_set_name: impl Into<String>, volumes: Vec<VolumeChange>) -> Self {
        VolumeResizeSpec {
            stateful_set_name: stateful_set_name.into(),
            volumes,
            strategy: Strategy::default(),
            mode: Mode::default(),
            warm_copy: true,
            warm_copy_method: WarmCopyMethod::default(),
            verify: Verify::default(),
            retain_old_volumes: None,
            dry_run: false,
            force: false,
            mover: None,
            placement: None,
            timeout_seconds: None,
            owner_policy: OwnerPolicy::default(),
        }
    }
}

/// Where the new volumes of moved replicas go (`spec.placement`).
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct Placement {
    /// Labels the new volumes' node must have (e.g. `topology.kubernetes.io/zone: zone-b`);
    /// unset: any node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,
    /// Nodes never chosen (e.g. one being drained). A replica's own node, and a cordoned node,
    /// never are either.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub avoid_nodes: Vec<String>,
    /// The ordinals of the replicas whose volumes move; unset: every replica.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 1024))]
    pub replicas: Option<Vec<i32>>,
}

impl Placement {
    /// Whether replica `ordinal`'s volumes move.
    pub fn moves(&self, ordinal: i32) -> bool {
        self.replicas
            .as_ref()
            .is_none_or(|chosen| chosen.contains(&ordinal))
    }
}

/// A change to one volume claim template and every PVC made from it.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct VolumeChange {
    /// The volume claim template name (e.g. `data`).
    #[schemars(length(max = 253))]
    #[x_kube(validation = Rule::new("self != ''").message("volume name must not be empty"))]
    pub name: String,
    /// The new size, a Kubernetes quantity such as `20Gi`.
    #[schemars(length(max = 64))]
    #[x_kube(validation = Rule::new("isQuantity(self) && quantity(self).isGreaterThan(quantity('0'))").message("size must be a positive Kubernetes quantity such as 10Gi or 500Mi"))]
    // `isInteger` alone is false for a large binary size such as 100Ti or 1Pi (the quantity parser
    // keeps those as decimals, not int64): a value whose float is whole is a whole number too.
    #[x_kube(validation = Rule::new("!isQuantity(self) || quantity(self).isInteger() || double(int(quantity(self).asApproximateFloat())) == quantity(self).asApproximateFloat()").message("size must be a whole number of bytes (not a fraction such as 1500m)"))]
    pub size: String,
    /// Move the data to this StorageClass (copy); unset keeps the current class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253))]
    pub storage_class_name: Option<String>,
    /// Give the volumes this VolumeAttributesClass: a performance tier (type, IOPS, throughput)
    /// the CSI driver changes in place, never by copy. Unset keeps each claim's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253))]
    #[x_kube(validation = Rule::new("self != ''").message("volumeAttributesClassName must not be empty (leave it out to keep each claim's)"))]
    pub volume_attributes_class_name: Option<String>,
}

#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum Strategy {
    #[default]
    Auto,
    InPlace,
    Copy,
}

#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum Mode {
    #[default]
    Rolling,
    Offline,
}

/// How a copy's warm pass is made.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum WarmCopyMethod {
    #[default]
    Mover,
    Clone,
}

impl WarmCopyMethod {
    pub fn is_mover(&self) -> bool {
        *self == WarmCopyMethod::Mover
    }
}

#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum Verify {
    None,
    Metadata,
    #[default]
    Checksum,
}

/// Overrides for the mover pods a copy runs.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct MoverSettings {
    /// Mover image; defaults to the operator's own. Any other must be on the operator's list
    /// (`--allowed-mover-images`): a VolumeResize author never chooses what runs with the
    /// copy's privileges.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Resource requests and limits of the mover container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::plain_foreign_descriptions)]
    pub resources: Option<k8s_openapi::api::core::v1::ResourceRequirements>,
    /// Extra node selector for mover pods (they always run on the replica's node).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,
    /// Tolerations for mover pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<k8s_openapi::api::core::v1::Toleration>>,
    /// How many volumes are copied at once in Offline mode (default 4, at most 64).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 64))]
    pub concurrency: Option<i32>,
    /// Copy threads inside one mover pod (at most 256).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 256))]
    pub threads: Option<i32>,
    /// Most bytes per second one mover pod writes, a quantity such as `50Mi` (default: no limit).
    /// Keeps a warm copy from starving the replica that still serves from the same disk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    #[x_kube(validation = Rule::new("isQuantity(self) && quantity(self).isGreaterThan(quantity('0'))").message("bandwidthLimit must be a positive quantity of bytes per second such as 50Mi"))]
    pub bandwidth_limit: Option<String>,
    /// The standby final mover watches the source (inotify) while the replica still serves, so
    /// the final pass, in the replica's downtime, visits only what changed since: that downtime no
    /// longer grows with the number of files. Wherever the record of changes may be incomplete
    /// the final pass walks both trees whole. `false`: the final pass always walks both trees.
    /// Default `true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub track_changes: Option<bool>,
}

impl MoverSettings {
    /// Whether the final mover tracks changes (`trackChanges`, default on).
    pub fn tracks_changes(settings: Option<&MoverSettings>) -> bool {
        settings.and_then(|m| m.track_changes).unwrap_or(true)
    }
}

/// Where a VolumeResize is in its life.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum Phase {
    Pending,
    Planning,
    Running,
    Paused,
    RollingBack,
    Succeeded,
    Failed,
}

impl Phase {
    /// A finished resize never changes again (for this generation of its spec).
    pub fn is_terminal(self) -> bool {
        matches!(self, Phase::Succeeded | Phase::Failed)
    }

    /// Its name as written in `status.phase` (and shown by kubectl and as a metric label).
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Pending => "Pending",
            Phase::Planning => "Planning",
            Phase::Running => "Running",
            Phase::Paused => "Paused",
            Phase::RollingBack => "RollingBack",
            Phase::Succeeded => "Succeeded",
            Phase::Failed => "Failed",
        }
    }
}

/// The durable record of a VolumeResize's progress, written by Ferry alone: the phase, the plan
/// per replica and volume and how far each row got, the conditions, and every object made. A
/// restarted Ferry resumes from it.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct VolumeResizeStatus {
    /// Where the resize is in its life: Pending, Planning, Running, Paused, RollingBack,
    /// Succeeded or Failed (the last two are final). Unset: Pending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    /// One per type, merged by type (another tool may add its own): `Prechecked`, `Queued`,
    /// `SpecChangeDeferred`, `TimedOut`, and kstatus's `Ready` (True once Succeeded),
    /// `Reconciling` (True while it works) and `Stalled` (True once Failed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["type".into()]))]
    pub conditions: Vec<Condition>,
    /// The `metadata.generation` of the spec this status is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// What is planned and done, per replica and volume.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plan: Vec<VolumePlan>,
    /// Short progress for `kubectl get`: replicas and volumes finished out of the total (`1/3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<String>,
    /// A human-readable summary of the current state or the failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Every object this VolumeResize created, so nothing is leaked.
    #[serde(default, skip_serializing_if = "CreatedObjects::is_empty")]
    pub created_objects: CreatedObjects,
    /// When the resize started to change things (its prechecks passed, its plan made), RFC 3339.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Time>,
    /// When it reached Succeeded or Failed, RFC 3339 (`retainOldVolumes` counts from it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<Time>,
    /// The StatefulSet's owner, when another controller owns it, and how far Ferry got with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<OwnerStatus>,
}

/// The controller that owns the resized StatefulSet, and what Ferry did to it.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OwnerStatus {
    /// The owner's `apiVersion` (its controller owner reference's).
    pub api_version: String,
    /// The owner's kind (`Prometheus`).
    pub kind: String,
    /// The owner's name, in the resize's namespace.
    pub name: String,
    /// The owner's UID: a namesake made since is not the StatefulSet's owner.
    pub uid: String,
    /// `spec.ownerPolicy: Ignore`: the StatefulSet is resized as if nobody owned it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ignored: bool,
    /// How far Ferry got with the owner; unset until it starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<OwnerStep>,
    /// The owner's pause switch as it was before Ferry paused it (JSON; unset: it had none), which
    /// Ferry puts back when done. Unset while Ferry has not paused it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause_before: Option<String>,
    /// The owner was paused already (by someone else): Ferry leaves it paused.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paused_already: bool,
    /// When the current step began, RFC 3339: the owner has `timeoutSeconds` to act on its new
    /// spec once let go.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<Time>,
    /// The owner's pause switch and the value Ferry sets it to while the volumes change (unset:
    /// the owner has no switch, Ferry proves it does not need one by confirming afterwards).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause_switch: Option<OwnerField>,
    /// The fields of the owner's resource Ferry writes once the volumes changed, with the values
    /// the request gives them (a failed or rolled-back run writes the old values back instead).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writes: Vec<OwnerField>,
    /// How the run itself ended, before the owner's steps: recorded once, so the run is not planned
    /// again while the owner takes the result (Ferry touches the StatefulSet no more once it lets
    /// the owner act: an owner that re-makes it is judged, not fought).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_ended: Option<RunEnded>,
}

/// How a run ended, as its own planner said.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunEnded {
    /// Succeeded, or Failed (rolled back).
    pub phase: Phase,
    /// Its message.
    pub message: String,
    /// When, RFC 3339.
    pub at: Time,
}

/// One field of an owner's resource and the value Ferry writes there.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OwnerField {
    /// Where, as the owners' table gives it (a JSON pointer; `[field=value]` picks an element of
    /// a list), its words bound.
    pub path: String,
    /// The value, as JSON (`"50Gi"`, `true`).
    pub value: String,
}

/// Where Ferry is with a StatefulSet's owner.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum OwnerStep {
    /// Its pause switch is being set (`pauseBefore` says what it was).
    Pausing,
    /// Paused: the volumes change.
    Paused,
    /// The StatefulSet's volume sizes and classes are being written into the owner's resource.
    Writing,
    /// Written; its pause switch is being put back.
    Releasing,
    /// Let go; waiting for the owner to act on its resource's new generation without undoing
    /// the resize.
    Confirming,
    /// The owner took the new sizes.
    Confirmed,
}

/// How long each step of a copy's downtime took, in milliseconds, from the step's start to the
/// reconcile that saw it done (so each holds up to one reconcile's latency).
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DowntimeSteps {
    /// From the replica's stop (its eviction; not the wait for budgets and the other replicas
    /// before it) until its pod was gone and the final pass began.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopping_replica: Option<i64>,
    /// The final pass (sync and verification) while the replica was down.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_sync: Option<i64>,
    /// Re-binding the claim to the new volume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swapping: Option<i64>,
    /// From the claim bound to the new volume until the replica's new pod was Ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub starting_replica: Option<i64>,
}

/// How one PVC (one replica × one volume) changes, and how far it got.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VolumePlan {
    /// The replica's ordinal (0 for `<statefulset>-0`).
    pub replica: i32,
    /// The volume claim template (`spec.volumes[].name`).
    pub volume: String,
    /// The replica's claim (`<volume>-<statefulset>-<replica>`).
    pub claim_name: String,
    /// How this claim changes: `InPlace` (its volume is expanded or modified) or `Copy` (the data
    /// moves to a new volume).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<ChosenStrategy>,
    /// What the row is doing now; unset until its first step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<RowStep>,
    /// The claim's size when the resize was planned, a Kubernetes quantity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_size: Option<String>,
    /// `targetBytes` as a Kubernetes quantity, for people to read.
    pub target_size: String,
    /// The target size in bytes, the value every planner acts on; `targetSize` is its display form.
    /// Unset in rows written by an older Ferry: see `VolumePlan::target_bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_bytes: Option<u64>,
    /// The claim's StorageClass when planned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_storage_class: Option<String>,
    /// The StorageClass the claim has after the resize (another one: a copy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_storage_class: Option<String>,
    /// Copy: the new volume is made as a CSI clone of the old one while the replica serves (the
    /// same driver, at least the old size), which stands for the warm copy: only the final pass
    /// runs the mover. `false`: a clone was tried and refused (`cloneRefused`); the mover copies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cloned: Option<bool>,
    /// Why the clone was given up for the mover's warm copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clone_refused: Option<String>,
    /// The VolumeAttributesClass the claim named before the resize (unset: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_attributes_class: Option<String>,
    /// The VolumeAttributesClass the claim names after it: a copy's new volume is made with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_attributes_class: Option<String>,
    /// Bytes of data the running mover pass has gone through so far (copy; live progress, then
    /// the pass's total).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_done: Option<u64>,
    /// Bytes the mover passes wrote to the new volume: the warm pass, plus what changed before the
    /// final one (copy). `bytesCopied / bytesTotal` is the bytes copied per byte of data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_copied: Option<u64>,
    /// How long each warm pass took, in milliseconds, in order (copy): a warm pass is repeated
    /// while the last took 10 s or more and was clearly shorter than the one before (three at
    /// most), so the final pass starts from the smallest change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warm_pass_milliseconds: Option<Vec<u64>>,
    /// The UID of the last warm mover whose pass is counted in `warmPassMilliseconds` and
    /// `bytesCopied` (each pass is counted once, whatever the reconciles).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warm_mover_counted: Option<String>,
    /// Bytes the final pass wrote (copy), during the replica's downtime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_bytes_copied: Option<u64>,
    /// How the final pass found what to copy (copy, from its result): `used` when it visited only
    /// what its change tracking recorded, `fell back: <why>` when it walked both trees whole
    /// instead; unset when it did not track changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_change_tracking: Option<String>,
    /// Source entries the final pass read (copy): all of them for a whole walk, the changed ones
    /// with change tracking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_entries_visited: Option<u64>,
    /// How long the final pass took by the mover's own clock, in milliseconds (copy): from its
    /// start (after the go and, with change tracking, after an interim pass under way at the go)
    /// to its end. The `finalSync` downtime step less this is the go's delivery, that interim
    /// pass and the result's pick-up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_pass_milliseconds: Option<u64>,
    /// Interim passes the standby final mover ran while it waited for its go (copy, with change
    /// tracking), and the data bytes they wrote: what changed while the replica served and
    /// stopped, copied before the go.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_interim_passes: Option<u64>,
    /// Data bytes those interim passes wrote (`finalInterimPasses`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_interim_bytes_copied: Option<u64>,
    /// Bytes of data on the volume: what the mover pass goes through (copy), or the bytes in use
    /// the kubelet reported (dry run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_total: Option<u64>,
    /// Files the running mover pass has gone through so far (copy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files_done: Option<u64>,
    /// Files on the volume the mover pass goes through (copy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files_total: Option<u64>,
    /// The mover's rate, in bytes per second: live while a pass runs, then what the last pass
    /// wrote over its duration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_per_second: Option<u64>,
    /// The PersistentVolume the claim was bound to before the resize (copy: the old volume,
    /// retained after the swap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_volume: Option<String>,
    /// UID of `sourceVolume` when first seen: a PV of the same name but another UID is not touched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_volume_uid: Option<String>,
    /// The new PersistentVolume the data is copied to, which the claim is bound to after the
    /// swap (copy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_volume: Option<String>,
    /// UID of `targetVolume` when first seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_volume_uid: Option<String>,
    /// Bytes in use on the current volume, measured by a mover pod before anything is touched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_bytes: Option<u64>,
    /// The node the replica ran on when the resize was planned (placement: its volumes move away
    /// from it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_node: Option<String>,
    /// The node the new volume is made on (placement), chosen once for all of the replica's
    /// volumes: its data crosses the network from the old volume's node to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_node: Option<String>,
    /// Times the copy from another node started again because its connection broke while the
    /// replica still served (the serving mover failed or went, a pass failed on the network).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport_restarts: Option<u32>,
    /// UIDs of the mover pods removed at the last of `transportRestarts` (a break they show, or
    /// their going, is not counted again, whatever the reconciles).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub transport_broken_by: Vec<String>,
    /// Capabilities this row's mover pods get: `DAC_OVERRIDE`, and only those the data measured
    /// before the copy needs (`CHOWN`/`FOWNER` for other owners, `FSETID`, `MKNOD`, `SETFCAP`).
    /// Absent when the measuring mover did not say (every capability a copy can use).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mover_capabilities: Option<Vec<String>>,
    /// Reclaim policy the source volume had before Ferry set it to Retain; it gets it back when
    /// retention is up (never `Delete` on a volume that was `Retain`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_reclaim_policy: Option<String>,
    /// Reclaim policy the new volume got from its StorageClass, before Ferry set it to Retain for
    /// the swap; it gets it back once the claim is bound to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_reclaim_policy: Option<String>,
    /// When the row entered its current `step` (for step-duration metrics).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_started_at: Option<MicroTime>,
    /// When Ferry took the replica down for this row (copy), to measure its downtime (to the
    /// microsecond; one written by an earlier Ferry has whole seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_at: Option<MicroTime>,
    /// Seconds the replica was down for this row, rounded: `downtimeMilliseconds` in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub downtime_seconds: Option<i64>,
    /// Milliseconds the replica was down for this row: from `stoppedAt` until the reconcile that
    /// saw a new pod Ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub downtime_milliseconds: Option<i64>,
    /// What the replica's downtime was made of (copy): how long each step it was down for took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub downtime_steps: Option<DowntimeSteps>,
    /// UID of the pod Ferry deleted to let the kubelet finish a file-system resize, so a restart
    /// happens once even if the operator restarts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restarted_pod: Option<String>,
    /// Why the volume's driver cannot give it `targetAttributesClass` (its claim's
    /// `modifyVolumeStatus` said `Infeasible`): the claim is set back to `currentAttributesClass`
    /// and the resize fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modification_refused: Option<String>,
    /// Why the volume's driver cannot grow it to the target (its claim's resize status said
    /// `ControllerResizeInfeasible` or `NodeResizeInfeasible`): the claim's request is lowered
    /// back (KEP-1790) and this row is never asked for again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expansion_refused: Option<String>,
    /// The volume's driver refused to grow it while a pod used it (an offline-only class). In
    /// place, the volume's other claims are then asked to grow only once their replica is down:
    /// the external-resizer retries a refused claim only after a backoff of up to minutes, but
    /// a new request at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused_in_use: Option<bool>,
    /// When work on this row began, RFC 3339.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Time>,
    /// When this row was done (or rolled back), RFC 3339.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<Time>,
    /// What is happening to this row, or why it failed, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl VolumePlan {
    /// The target size in bytes: `targetBytes`, else `targetSize` parsed (a row written by an older
    /// Ferry). None when neither gives a size: such a row cannot proceed.
    pub fn target_bytes(&self) -> Option<u64> {
        self.target_bytes
            .or_else(|| crate::quantity::parse_bytes(&self.target_size).ok())
    }

    /// The size the claim had when planned, in bytes (None: not known, or not a size).
    pub fn current_bytes(&self) -> Option<u64> {
        crate::quantity::parse_bytes(self.current_size.as_deref()?).ok()
    }
}

/// The step one row (one replica × one volume) is at, as written in `status.plan[].step` (and shown
/// by the CLI and as the `step` metric label).
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum RowStep {
    /// Copy: creating the claim the data is copied to.
    CreatingTarget,
    /// Copy: the first copy, while the replica still serves.
    WarmCopy,
    /// Copy: taking the replica down for the final sync.
    StoppingReplica,
    /// Copy: the last, verified copy while the replica is down.
    FinalSync,
    /// Copy: re-binding the claim to the new volume.
    Swapping,
    /// Copy: the replica starts on its new volume; waiting until it is Ready.
    StartingReplica,
    /// Copy: done, the replica runs on its new volume.
    Copied,
    /// Copy: given up; the replica is back on its old volume.
    RolledBack,
    /// Copy: the data in use could not be measured; the resize fails once the measuring pods are
    /// gone, and the claim is not measured again.
    MeasuringFailed,
    /// In place: the volume is changing to its new VolumeAttributesClass.
    Modifying,
    /// In place: done, the volume has its new VolumeAttributesClass (and size).
    Modified,
    /// In place: the claim's requested size is being raised.
    Expanding,
    /// In place: waiting for the volume (or its file system) to reach the new size.
    WaitingForCapacity,
    /// In place: the pod was restarted so the kubelet finishes the file-system resize.
    RestartingPod,
    /// In place: done, the volume has its new size.
    Expanded,
    /// Rollback on request: moving a copied replica back onto its retained old volume.
    Reverting,
    /// Rollback on request: done, the replica is back on its old volume.
    Reverted,
}

impl RowStep {
    /// Its name as written in `status.plan[].step` (and shown by the CLI and as a metric label).
    pub fn as_str(self) -> &'static str {
        match self {
            RowStep::CreatingTarget => "CreatingTarget",
            RowStep::WarmCopy => "WarmCopy",
            RowStep::StoppingReplica => "StoppingReplica",
            RowStep::FinalSync => "FinalSync",
            RowStep::Swapping => "Swapping",
            RowStep::StartingReplica => "StartingReplica",
            RowStep::Copied => "Copied",
            RowStep::RolledBack => "RolledBack",
            RowStep::MeasuringFailed => "MeasuringFailed",
            RowStep::Modifying => "Modifying",
            RowStep::Modified => "Modified",
            RowStep::Expanding => "Expanding",
            RowStep::WaitingForCapacity => "WaitingForCapacity",
            RowStep::RestartingPod => "RestartingPod",
            RowStep::Expanded => "Expanded",
            RowStep::Reverting => "Reverting",
            RowStep::Reverted => "Reverted",
        }
    }
}

/// The strategy picked for one PVC.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum ChosenStrategy {
    InPlace,
    Copy,
}

/// Names of objects a VolumeResize created.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreatedObjects {
    /// The ConfigMap holding the StatefulSet's spec as it was before the resize (the way back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup_config_map: Option<String>,
    /// Claims made for copies (each replica's new volume before the swap), deleted when done.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub temporary_claims: Vec<String>,
    /// The old PersistentVolumes kept after a copy, for rollback, until `retainOldVolumes` is up.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retained_volumes: Vec<String>,
}

impl CreatedObjects {
    pub fn is_empty(&self) -> bool {
        self.backup_config_map.is_none()
            && self.temporary_claims.is_empty()
            && self.retained_volumes.is_empty()
    }
}

/// Condition types and reasons a VolumeResize reports.
pub mod condition {
    /// All prechecks of SPEC §3 passed (True) or which one failed (False, with its reason).
    pub const PRECHECKED: &str = "Prechecked";
    /// Waiting behind another VolumeResize on the same StatefulSet.
    pub const QUEUED: &str = "Queued";
    /// The spec was edited while the resize ran: the run goes on with the spec it was prechecked
    /// with; the newer one is prechecked when the run has ended.
    pub const SPEC_CHANGE_DEFERRED: &str = "SpecChangeDeferred";
    pub const REASON_RUN_IN_PROGRESS: &str = "RunInProgress";
    /// The resize failed because a step or a wait outlasted `timeoutSeconds` (True), with what it
    /// waited for as its reason; absent otherwise.
    pub const TIMED_OUT: &str = "TimedOut";
    /// A claim did not reach its size in time (a replica held down for it is running again).
    pub const REASON_VOLUME_NOT_GROWN: &str = "VolumeNotGrownInTime";
    /// A replica was not Ready in time after its volume changed (or was down from the start).
    pub const REASON_REPLICA_NOT_READY: &str = "ReplicaNotReadyInTime";
    /// A step before a copy's swap took too long: the replica was rolled back.
    pub const REASON_STEP_TOO_LONG: &str = "StepTookTooLong";

    pub const REASON_PASSED: &str = "PrechecksPassed";
    pub const REASON_STATEFUL_SET_NOT_FOUND: &str = "StatefulSetNotFound";
    pub const REASON_TEMPLATE_NOT_FOUND: &str = "VolumeTemplateNotFound";
    pub const REASON_STORAGE_CLASS_NOT_FOUND: &str = "StorageClassNotFound";
    pub const REASON_NOT_EXPANDABLE: &str = "StorageClassNotExpandable";
    pub const REASON_INVALID_SIZE: &str = "InvalidSize";
    pub const REASON_UNSUPPORTED_VOLUME: &str = "VolumeCannotBeCopied";
    pub const REASON_NOTHING_TO_DO: &str = "NothingToChange";
    pub const REASON_NOT_READY: &str = "StatefulSetNotReady";
    pub const REASON_NO_REPLICAS: &str = "StatefulSetHasNoReplicas";
    pub const REASON_TOPOLOGY: &str = "StorageClassTopologyMismatch";
    /// `spec.placement` cannot be carried out: no node can take a moved replica's volumes, a
    /// replica to move is not running, or it names what does not exist.
    pub const REASON_PLACEMENT: &str = "PlacementNotPossible";
    /// A ResourceQuota of the namespace could not hold the claims the resize makes at its peak.
    pub const REASON_QUOTA_EXCEEDED: &str = "QuotaExceeded";
    /// The namespace enforces Pod Security `restricted`, which admits no pod that keeps files'
    /// owners: a copy there would lose them.
    pub const REASON_POD_SECURITY: &str = "PodSecurityRestricted";
    /// A new or grown claim's size is outside a LimitRange's bounds for claims.
    pub const REASON_CLAIM_SIZE_LIMIT: &str = "ClaimSizeOutsideLimitRange";
    pub const REASON_WAITING_FOR_OTHER: &str = "WaitingForOtherResize";
    pub const REASON_NOT_QUEUED: &str = "First";
    pub const REASON_MOVER_IMAGE_NOT_ALLOWED: &str = "MoverImageNotAllowed";
    pub const REASON_TOO_SMALL_FOR_DATA: &str = "TargetTooSmallForData";
    pub const REASON_ATTRIBUTES_CLASS_NOT_FOUND: &str = "VolumeAttributesClassNotFound";
    pub const REASON_ATTRIBUTES_CLASS_OTHER_DRIVER: &str = "VolumeAttributesClassOfAnotherDriver";
    /// Another controller owns the StatefulSet and Ferry does not know where it keeps its
    /// volumes (and `spec.ownerPolicy` is not `Ignore`).
    pub const REASON_OWNER_UNKNOWN: &str = "OwnerNotKnown";
    /// The owner's entry in the owners' table does not fit its resource (a path that points at
    /// nothing, a template it does not keep, a class it has no place for), or it is gone.
    pub const REASON_OWNER_MISMATCH: &str = "OwnerDoesNotFit";
    /// The owner did not act on the spec Ferry wrote into it within `timeoutSeconds`.
    pub const REASON_OWNER_DID_NOT_ACT: &str = "OwnerDidNotActInTime";
}

impl VolumeResize {
    /// The condition of the given type, if present.
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.status.as_ref()?.conditions.iter().find(|c| c.type_ == type_)
    }

    /// The current phase; a resize with no status yet is Pending.
    pub fn phase(&self) -> Phase {
        self.status
            .as_ref()
            .and_then(|s| s.phase)
            .unwrap_or(Phase::Pending)
    }
}

#[cfg(test)]
mod tests {
    use super::{Phase, RowStep, VolumePlan};

    #[test]
    fn a_phase_name_is_what_status_phase_holds() {
        for phase in [
            Phase::Pending,
            Phase::Planning,
            Phase::Running,
            Phase::Paused,
            Phase::RollingBack,
            Phase::Succeeded,
            Phase::Failed,
        ] {
            assert_eq!(serde_json::to_value(phase).unwrap(), phase.as_str());
        }
    }

    #[test]
    fn a_step_name_is_what_status_plan_step_holds() {
        for step in [
            RowStep::CreatingTarget,
            RowStep::WarmCopy,
            RowStep::StoppingReplica,
            RowStep::FinalSync,
            RowStep::Swapping,
            RowStep::StartingReplica,
            RowStep::Copied,
            RowStep::RolledBack,
            RowStep::MeasuringFailed,
            RowStep::Modifying,
            RowStep::Modified,
            RowStep::Expanding,
            RowStep::WaitingForCapacity,
            RowStep::RestartingPod,
            RowStep::Expanded,
            RowStep::Reverting,
            RowStep::Reverted,
        ] {
            assert_eq!(serde_json::to_value(step).unwrap(), step.as_str());
            assert_eq!(
                serde_json::from_value::<RowStep>(step.as_str().into()).unwrap(),
                step
            );
        }
    }

    #[test]
    fn target_bytes_prefers_the_field_then_parses_the_size() {
        let row = |size: &str, bytes: Option<u64>| VolumePlan {
            target_size: size.into(),
            target_bytes: bytes,
            ..Default::default()
        };
        assert_eq!(row("2Gi", Some(5)).target_bytes(), Some(5));
        assert_eq!(row("2Gi", None).target_bytes(), Some(2 << 30));
        assert_eq!(row("lots", None).target_bytes(), None);
        assert_eq!(row("", None).target_bytes(), None);
    }
}
