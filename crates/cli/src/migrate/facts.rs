//! What a migration plan is made from: the cluster's objects as plain facts (read by `run.rs`).

use std::collections::BTreeMap;
use std::ops::Range;

/// A StatefulSet as the migration sees it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SetFacts {
    pub namespace: String,
    pub name: String,
    pub ordinals: Range<i32>,
    pub ready_replicas: i32,
    /// Whether `-l` selects it (every StatefulSet without `-l`).
    pub selected: bool,
    pub templates: Vec<TemplateFacts>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct TemplateFacts {
    pub name: String,
    /// `spec.storageClassName`: `None` asks for the default class, `Some("")` for no class.
    pub storage_class: Option<String>,
    pub requested_bytes: Option<u64>,
    pub raw_block: bool,
    pub read_write_once_pod: bool,
}

/// A PersistentVolumeClaim in scope.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClaimFacts {
    pub namespace: String,
    pub name: String,
    pub storage_class: Option<String>,
    /// Its capacity once bound, else what it requests.
    pub size_bytes: Option<u64>,
    /// The data on it, where that could be read.
    pub bytes_in_use: Option<u64>,
    /// Whether `-l` selects it (every claim without `-l`).
    pub selected: bool,
    /// The pod whose generic ephemeral volume it is (the pod owns it).
    pub ephemeral_of: Option<String>,
}

/// A pod in scope: the claims it mounts and what controls it, to say who uses a claim.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodFacts {
    pub namespace: String,
    pub name: String,
    pub claims: Vec<String>,
    /// Its controller's (kind, name).
    pub controller: Option<(String, String)>,
    /// Its `pod-template-hash` label: a Deployment's ReplicaSet is named `<deployment>-<hash>`.
    pub template_hash: Option<String>,
}

/// Everything the plan is made from.
#[derive(Debug, Clone, Default)]
pub struct MigrateFacts {
    pub from_class: String,
    pub to_class: String,
    pub default_class: Option<String>,
    pub from_class_exists: bool,
    pub sets: Vec<SetFacts>,
    pub claims: Vec<ClaimFacts>,
    pub pods: Vec<PodFacts>,
    /// The VolumeResize at work on a StatefulSet, by (namespace, StatefulSet).
    pub resizes_at_work: BTreeMap<(String, String), String>,
    pub bytes_per_second: u64,
}
