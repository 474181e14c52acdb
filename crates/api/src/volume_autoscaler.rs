//! The `VolumeAutoscaler` custom resource: keep a StatefulSet's volumes sized to their data. Each
//! resize it decides is an ordinary VolumeResize (same engine, safety and history).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, Time};
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which StatefulSets' volumes are kept sized (by name or by labels), and the policy per volume
/// claim template: when to grow, by how much, up to what size, how often.
#[derive(CustomResource, KubeSchema, Deserialize, Serialize, Clone, Debug, PartialEq)]
#[kube(
    group = "ferry.dev",
    version = "v1alpha1",
    kind = "VolumeAutoscaler",
    plural = "volumeautoscalers",
    shortname = "vas",
    category = "ferry",
    doc = "Keeps a StatefulSet's volumes sized to their data: Ferry reads how full each replica's volume is and, past a threshold, grows the volumes and the volume claim templates, up to a maximum size; with a shrink policy, it shrinks by copy a volume that stays nearly empty. Each grow or shrink is an ordinary VolumeResize (the same prechecks, safety and history).",
    namespaced,
    status = "VolumeAutoscalerStatus",
    printcolumn = r#"{"name":"StatefulSet","type":"string","jsonPath":".spec.statefulSetName"}"#,
    printcolumn = r#"{"name":"Usage","type":"string","jsonPath":".status.usage"}"#,
    printcolumn = r#"{"name":"Last Resize","type":"string","jsonPath":".status.lastResize"}"#,
    printcolumn = r#"{"name":"Next Allowed","type":"string","jsonPath":".status.nextAllowedAt"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    validation = Rule::new("(has(self.spec.statefulSetName) ? 1 : 0) + (has(self.spec.selector) ? 1 : 0) + (has(self.spec.owner) ? 1 : 0) == 1").message("give one of spec.statefulSetName, spec.selector or spec.owner")
)]
#[serde(rename_all = "camelCase")]
pub struct VolumeAutoscalerSpec {
    /// The StatefulSet, in this namespace, whose volumes are kept sized.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub stateful_set_name: Option<String>,

    /// Or every StatefulSet in this namespace with these labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,

    /// Or every StatefulSet that this resource of another operator controls (its controller
    /// owner reference): a Prometheus, say. Its grows go through the owner
    /// (docs/owned-statefulsets.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<OwnerTarget>,

    /// The policy per volume claim template, by name; each at most once.
    #[schemars(length(min = 1, max = 16))]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["name".into()]))]
    pub volumes: Vec<AutoscaledVolume>,

    /// When the autoscaler may start a resize: inside any of these windows (always, when none
    /// is given). A resize started inside one runs to its end.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16))]
    pub maintenance_windows: Vec<crate::MaintenanceWindow>,

    /// Rescue a pod crashing on a full disk outside the windows too (default false: a rescue
    /// waits for a window like any grow).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rescue_outside_windows: bool,
}

/// A resource that controls StatefulSets, by kind and name (in the autoscaler's namespace).
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct OwnerTarget {
    /// Its kind as its owner references say it (`Prometheus`).
    #[schemars(length(min = 1, max = 63))]
    pub kind: String,
    /// Its name.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
}

/// The policy for one volume claim template.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("!has(self.minIncrease) || !has(self.maxIncrease) || !isQuantity(self.minIncrease) || !isQuantity(self.maxIncrease) || quantity(self.minIncrease).compareTo(quantity(self.maxIncrease)) <= 0").message("minIncrease must not be larger than maxIncrease"))]
#[x_kube(validation = Rule::new("!has(self.shrink) || (has(self.shrink.target) ? self.shrink.target : 60) < (has(self.threshold) ? self.threshold : 80)").message("shrink.target must be less than threshold: a volume shrunk to it would grow again"))]
pub struct AutoscaledVolume {
    /// The volume claim template name (e.g. `data`).
    #[schemars(length(min = 1, max = 253))]
    pub name: String,

    /// Grow when a replica's volume is at least this full, in percent of its bytes (default 80).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 99))]
    pub threshold: Option<i32>,

    /// Grow when a replica's volume has used at least this share of its inodes (default 90).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 99))]
    pub inodes_threshold: Option<i32>,

    /// How much a grow adds: a percent of the current size (`20%`, the default) or a quantity
    /// (`5Gi`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32))]
    #[x_kube(validation = Rule::new("self.matches('^[1-9][0-9]{0,3}%$') || (isQuantity(self) && quantity(self).isGreaterThan(quantity('0')))").message("increase must be a percent such as 20% or a positive quantity such as 5Gi"))]
    pub increase: Option<String>,

    /// The smallest step of a grow, a quantity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32))]
    #[x_kube(validation = Rule::new("isQuantity(self) && quantity(self).isGreaterThan(quantity('0'))").message("minIncrease must be a positive quantity such as 1Gi"))]
    pub min_increase: Option<String>,

    /// The largest step of a grow, a quantity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32))]
    #[x_kube(validation = Rule::new("isQuantity(self) && quantity(self).isGreaterThan(quantity('0'))").message("maxIncrease must be a positive quantity such as 50Gi"))]
    pub max_increase: Option<String>,

    /// Never grow beyond this size (required).
    #[schemars(length(max = 32))]
    #[x_kube(validation = Rule::new("isQuantity(self) && quantity(self).isGreaterThan(quantity('0'))").message("maxSize must be a positive quantity such as 100Gi"))]
    pub max_size: String,

    /// Least time between two grows of this volume, a duration such as `1h` (default 1h).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32))]
    #[x_kube(validation = Rule::new("self.matches('^([0-9]+(s|m|h|d))+$')").message("cooldown must be a duration such as 30m, 1h or 1d"))]
    pub cooldown: Option<String>,

    /// The storage provider's limits on volume modifications and its size unit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<ProviderPreset>,

    /// InPlace (default): grow only by in-place expansion. AllowCopy: copy to a bigger volume
    /// where the class cannot expand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<AutoscaleStrategy>,

    /// Grow only once a volume has been over its threshold this long, a duration such as `10m`
    /// (default `0s`: at the first poll over it). A rescue of a pod crashing on a full disk does
    /// not wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32))]
    #[x_kube(validation = Rule::new("self.matches('^([0-9]+(s|m|h|d))+$')").message("growAfter must be a duration such as 10m"))]
    pub grow_after: Option<String>,

    /// Shrink by copy a volume that stays nearly empty (off unless given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shrink: Option<ShrinkPolicy>,
}

/// When the autoscaler shrinks a volume: every replica's volume below `below` percent used for
/// `for`, at most once per `every`; the new size holds the fullest replica's data at `target`
/// percent used, never less than `minSize`. A shrink is a VolumeResize by copy (each replica in
/// turn, its pod stopped for the final pass), made only while the StatefulSet is Ready.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("!has(self.below) || !has(self.target) || self.below < self.target").message("shrink.below must be less than shrink.target"))]
pub struct ShrinkPolicy {
    /// Shrink when every replica's volume is less than this full, in percent (default 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 98))]
    pub below: Option<i32>,
    /// For this long without a break, a duration such as `24h` (the default).
    #[serde(default, rename = "for", skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32))]
    #[x_kube(validation = Rule::new("self.matches('^([0-9]+(s|m|h|d))+$')").message("shrink.for must be a duration such as 24h"))]
    pub lasting: Option<String>,
    /// How full the fullest replica's volume is after the shrink, in percent (default 60; less
    /// than the grow threshold, so a shrink is not followed by a grow).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 2, max = 99))]
    pub target: Option<i32>,
    /// Never shrink below this size (default 1Gi).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32))]
    #[x_kube(validation = Rule::new("isQuantity(self) && quantity(self).isGreaterThan(quantity('0'))").message("shrink.minSize must be a positive quantity such as 1Gi"))]
    pub min_size: Option<String>,
    /// At most one shrink of the volume per this period, a duration such as `7d` (the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32))]
    #[x_kube(validation = Rule::new("self.matches('^([0-9]+(s|m|h|d))+$')").message("shrink.every must be a duration such as 7d"))]
    pub every: Option<String>,
}

/// Provider presets.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum ProviderPreset {
    /// No limit known; sizes in MiB.
    #[serde(rename = "generic")]
    Generic,
    /// AWS EBS: at most 4 modifications per volume in a rolling 24 h; sizes in GiB.
    #[serde(rename = "aws-ebs")]
    AwsEbs,
    /// One modification per volume per 6 h; sizes in GiB.
    #[serde(rename = "one-per-6h")]
    OnePerSixHours,
}

#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum AutoscaleStrategy {
    #[default]
    InPlace,
    AllowCopy,
}

/// What the autoscaler saw and did, written by Ferry at each poll: each volume's usage and
/// state, the last resize it made, and when a volume may grow next.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct VolumeAutoscalerStatus {
    /// The `metadata.generation` of the spec this status is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// One per type, merged by type (another tool may add its own): kstatus's `Ready` (True
    /// while it watches), `Reconciling` (True while a volume grows) and `Stalled` (True while a
    /// volume needs someone: an invalid policy or template, or its last resize failed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["type".into()]))]
    pub conditions: Vec<Condition>,
    /// Per volume template (and per StatefulSet, when a selector names several).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volumes: Vec<AutoscaledVolumeStatus>,
    /// For `kubectl get`: the fullest volume, e.g. `83% data`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<String>,
    /// For `kubectl get`: the last resize, e.g. `data 10Gi→12Gi`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_resize: Option<String>,
    /// For `kubectl get`: the earliest time any volume may grow again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_allowed_at: Option<Time>,
    /// When Ferry last read the volumes' usage (it polls every `--autoscale-interval`), RFC 3339.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_polled_at: Option<Time>,
}

/// One volume claim template of one StatefulSet: its usage per replica and what the autoscaler
/// does about it.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutoscaledVolumeStatus {
    /// The StatefulSet (one entry per StatefulSet and template when a selector names several).
    #[serde(default)]
    pub stateful_set: String,
    /// The volume claim template.
    pub name: String,
    /// The size the template and claims ask for now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<String>,
    /// Usage of each replica's volume at the last poll.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replicas: Vec<ReplicaUsage>,
    /// The last grow of this volume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_resize: Option<AutoResize>,
    /// When this volume was grown (kept for cooldowns and provider windows; the last few).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(transform = crate::schema::plain_foreign_descriptions)]
    pub history: Vec<Time>,
    /// The earliest time this volume may grow again (its `cooldown` and the provider's limit on
    /// modifications), RFC 3339.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_allowed_at: Option<Time>,
    /// What happens: `Growing` or `Shrinking` (a resize runs for it), or why nothing happens:
    /// `Stabilizing` (over its threshold for less than `growAfter`), `ShrinkPending` (nearly empty
    /// for less than `shrink.for`, or shrunk less than `shrink.every` ago), `OutsideWindow` (a
    /// resize is due; no maintenance window is open), `BelowThreshold`,
    /// `Cooldown`, `AtMaxSize`, `ResizeRunning`, `UsageUnknown`, `ProviderLimit`, `ResizeFailed`
    /// (the last resize failed; delete its VolumeResize to let the autoscaler try again),
    /// `Invalid` (the policy or the template cannot be used), `ManagedByPvcAutoresizer` (topolvm's
    /// pvc-autoresizer resizes its claims: Ferry leaves them to it; `message` says how to switch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// What `state` means for this volume, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The size at which reaching `maxSize` was reported (its Event is sent once per size).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_size_reported: Option<String>,
    /// How much smaller the volume could be with its data below the threshold (a VolumeResize by
    /// hand, or the `shrink` policy, shrinks it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub could_shrink_by: Option<String>,
    /// Since when the volume has been over its threshold without a break (for `growAfter`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::plain_foreign_descriptions)]
    pub over_threshold_since: Option<Time>,
    /// Since when every replica's volume has been below `shrink.below` without a break.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::plain_foreign_descriptions)]
    pub below_shrink_since: Option<Time>,
    /// When the autoscaler last shrank this volume (for `shrink.every`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::plain_foreign_descriptions)]
    pub last_shrink_at: Option<Time>,
    /// The fullest replica's bytes in use, sampled every 10 minutes or more (the last 7): the
    /// trend `predictedFullAt` is drawn from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16))]
    pub usage_samples: Vec<UsageSample>,
    /// When the fullest replica's volume would be full at the rate it filled over the samples
    /// (absent while it does not fill, or the samples span less than 10 minutes), RFC 3339.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::plain_foreign_descriptions)]
    pub predicted_full_at: Option<Time>,
}

/// The fullest replica's bytes in use at one poll.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsageSample {
    /// When it was read, RFC 3339.
    #[schemars(transform = crate::schema::plain_foreign_descriptions)]
    pub at: Time,
    /// Bytes in use.
    pub used_bytes: i64,
}

/// How full one replica's volume is, as its file system reports it (the kubelet's volume stats,
/// Prometheus with `--usage-prometheus-url`, or a rescue's usage pod).
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaUsage {
    /// The replica's ordinal.
    pub replica: i32,
    /// Bytes in use on the volume's file system.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_bytes: Option<i64>,
    /// The file system's size in bytes (it can be a little less than the claim's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_bytes: Option<i64>,
    /// Inodes in use (unset where the file system does not report them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_inodes: Option<i64>,
    /// Inodes the file system has in all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inodes: Option<i64>,
}

/// One grow the autoscaler made.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutoResize {
    /// When the autoscaler decided it, RFC 3339.
    pub at: Option<Time>,
    /// The VolumeResize it created (in this namespace).
    pub volume_resize: String,
    /// The size before, a Kubernetes quantity.
    pub from: String,
    /// The size asked for, a Kubernetes quantity.
    pub to: String,
    /// Why: `threshold` (bytes in use), `inodes`, `rescue` (a replica whose pod said its disk
    /// was full while none of its containers ran, measured by a usage pod), or `shrink` (the
    /// `shrink` policy: a smaller size, by copy).
    pub reason: String,
}
