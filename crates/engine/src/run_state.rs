//! What the planner sees while a resize runs: the StatefulSet, its claims and pods, and Ferry's own
//! objects — all by value, read fresh every reconcile (nothing remembered between them).

use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunObserved {
    pub stateful_set: Option<RunStatefulSet>,
    /// The ConfigMap holding the StatefulSet's spec as it was before Ferry touched it.
    pub backup_exists: bool,
    /// Claims by name.
    pub claims: BTreeMap<String, RunClaim>,
    /// The StatefulSet's pods by name.
    pub pods: BTreeMap<String, RunPod>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunStatefulSet {
    /// Being deleted (an orphan delete waits for the orphan finalizer).
    pub deleting: bool,
    /// Size in bytes per volume claim template.
    pub template_sizes: BTreeMap<String, u64>,
    pub replicas: i32,
    pub ready_replicas: i32,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunClaim {
    pub requested_bytes: u64,
    pub capacity_bytes: u64,
    /// The driver grew the volume; the file system grows when the pod restarts.
    pub file_system_resize_pending: bool,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunPod {
    pub uid: String,
    pub ready: bool,
    pub deleting: bool,
}

/// One change the operator must make to the cluster. Each is idempotent: doing it twice, or after a
/// crash half-way, leaves the same result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResizeAction {
    /// Store the StatefulSet as it is now in the backup ConfigMap (create only if missing).
    BackupStatefulSet,
    /// Raise a claim's storage request.
    ExpandClaim { claim: String, bytes: u64 },
    /// Delete a pod so the kubelet finishes an offline file-system resize (only this UID).
    RestartPod { pod: String, uid: String },
    /// Delete the StatefulSet, leaving its pods and claims running (propagation Orphan).
    OrphanDeleteStatefulSet,
    /// Create the StatefulSet from the backup with the new volume claim templates.
    RecreateStatefulSet,
}
