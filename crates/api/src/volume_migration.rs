//! The `VolumeMigration` custom resource: move every StatefulSet of a namespace (or those a label
//! selector picks) whose volumes are on one StorageClass to another, a few at a time. Each
//! StatefulSet's move is an ordinary VolumeResize (the same prechecks, safety and history).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, Time};
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which StatefulSets move (those of this namespace with a volume claim template on
/// `fromStorageClassName`, narrowed by `selector`), where to, and how many at a time.
#[derive(CustomResource, KubeSchema, Deserialize, Serialize, Clone, Debug, PartialEq)]
#[kube(
    group = "ferry.dev",
    version = "v1alpha1",
    kind = "VolumeMigration",
    plural = "volumemigrations",
    shortname = "vmig",
    category = "ferry",
    doc = "Moves every StatefulSet of its namespace whose volume claim templates use one StorageClass onto another, at most maxConcurrent at a time: one ordinary VolumeResize per StatefulSet (the same prechecks, safety and history), its outcome recorded per StatefulSet. Claims on that class that no StatefulSet owns are listed, never touched.",
    namespaced,
    status = "VolumeMigrationStatus",
    printcolumn = r#"{"name":"From","type":"string","jsonPath":".spec.fromStorageClassName"}"#,
    printcolumn = r#"{"name":"To","type":"string","jsonPath":".spec.toStorageClassName"}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Progress","type":"string","jsonPath":".status.progress"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    validation = Rule::new("self.spec.fromStorageClassName != self.spec.toStorageClassName").message("fromStorageClassName and toStorageClassName must differ")
)]
#[serde(rename_all = "camelCase")]
pub struct VolumeMigrationSpec {
    /// The StorageClass to leave: every StatefulSet with a volume claim template on it (a
    /// template naming no class is on the cluster's default class) moves.
    #[schemars(length(min = 1, max = 253))]
    #[x_kube(validation = Rule::new("self == oldSelf").message("fromStorageClassName is immutable; create another VolumeMigration"))]
    pub from_storage_class_name: String,

    /// The StorageClass the volumes move to (each volume keeps its size, or its largest claim's).
    #[schemars(length(min = 1, max = 253))]
    #[x_kube(validation = Rule::new("self == oldSelf").message("toStorageClassName is immutable; create another VolumeMigration"))]
    pub to_storage_class_name: String,

    /// Only the StatefulSets with these labels (default: every one of the namespace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,

    /// Most StatefulSets moving at once (default 1). Each moves one replica at a time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100))]
    pub max_concurrent: Option<i32>,

    /// What a StatefulSet whose move failed does to the rest: `Stop` (default) starts no other
    /// (those moving finish), `Continue` goes on with the others.
    #[serde(default)]
    pub failure_policy: MigrationFailurePolicy,
}

/// What a failed move does to the migration.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum MigrationFailurePolicy {
    /// No other StatefulSet starts; those already moving finish.
    #[default]
    Stop,
    /// The others go on.
    Continue,
}

/// Where a migration stands.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum MigrationPhase {
    /// Not looked at yet.
    #[default]
    Pending,
    /// StatefulSets are moving or waiting to.
    Running,
    /// Every StatefulSet selected moved.
    Succeeded,
    /// It ended and at least one StatefulSet did not move (or the migration was refused: its
    /// message says why).
    Failed,
}

/// Where one StatefulSet's move stands.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum MigrationItemPhase {
    /// Waiting for a free slot (or for another VolumeResize on it to end).
    #[default]
    Waiting,
    /// Its VolumeResize runs.
    Running,
    /// Its VolumeResize succeeded.
    Succeeded,
    /// Its VolumeResize failed (or was rolled back, or deleted): the message says why.
    Failed,
    /// Not started: an earlier move failed and the failure policy is `Stop`.
    Skipped,
}

/// What a migration did, per StatefulSet.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct VolumeMigrationStatus {
    /// The `metadata.generation` of the spec this status is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Where the migration stands.
    #[serde(default)]
    pub phase: MigrationPhase,
    /// Why it stands there, in a sentence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// For `kubectl get`: StatefulSets moved of those selected, e.g. `2/6`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<String>,
    /// One per type, merged by type (another tool may add its own): kstatus's `Ready` (True once
    /// every StatefulSet moved), `Reconciling` (True while any moves or waits) and `Stalled` (True
    /// once it ended with a StatefulSet not moved).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["type".into()]))]
    pub conditions: Vec<Condition>,
    /// The StatefulSets selected when the migration began, in the order they move.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub items: Vec<MigrationItem>,
    /// Claims on `fromStorageClassName` that no selected StatefulSet owns, with why: never touched.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_handled: Vec<NotHandledClaim>,
    /// When the first StatefulSet began to move.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::plain_foreign_descriptions)]
    pub started_at: Option<Time>,
    /// When the migration ended (Succeeded or Failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::plain_foreign_descriptions)]
    pub finished_at: Option<Time>,
}

/// One StatefulSet of the migration.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MigrationItem {
    /// The StatefulSet, in the migration's namespace.
    pub stateful_set: String,
    /// Its volume claim templates that move (those on `fromStorageClassName`), with the size each
    /// gets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volumes: Vec<MigratedVolume>,
    /// Where its move stands.
    #[serde(default)]
    pub phase: MigrationItemPhase,
    /// The VolumeResize that moves it (named from the migration and the StatefulSet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_resize: Option<String>,
    /// Why it is where it is, when that needs saying (a failure's reason, what it waits for).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Data bytes its movers wrote onto the new volumes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_copied: Option<u64>,
    /// The longest any one replica was down during its move, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_downtime_milliseconds: Option<u64>,
}

/// A volume claim template a migration moves.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct MigratedVolume {
    /// The template's name.
    pub name: String,
    /// The size its volumes get on the new class: the template's, or its largest claim's if one
    /// grew past it (nothing shrinks).
    pub size: String,
}

/// A claim on the class being left that the migration does not move.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct NotHandledClaim {
    /// The claim's name.
    pub name: String,
    /// Why it is not moved (no StatefulSet owns it, its StatefulSet is not selected, ...).
    pub reason: String,
}

impl VolumeMigrationSpec {
    /// Most StatefulSets moving at once.
    pub fn concurrency(&self) -> usize {
        usize::try_from(self.max_concurrent.unwrap_or(1).max(1)).unwrap_or(1)
    }
}
