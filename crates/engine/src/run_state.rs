//! What the planner sees while a resize runs: the StatefulSet, its claims and pods, and Ferry's own
//! objects — all by value, read fresh every reconcile (nothing remembered between them).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
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
    /// PersistentVolumes named in the plan (source and target), by name.
    pub volumes: BTreeMap<String, RunVolume>,
    /// This resize's mover pods, by name.
    pub movers: BTreeMap<String, RunMover>,
    /// The fewest disruptions any PodDisruptionBudget covering the StatefulSet's pods allows now
    /// (`None` when no budget covers them).
    pub disruptions_allowed: Option<i32>,
}

impl RunObserved {
    /// Of `replicas`, those not serving: pod missing (gone and not yet re-created; the
    /// StatefulSet's own status can lag behind it), deleting, or not Ready. One rule for "may
    /// another replica go down now" in every strategy.
    pub fn replicas_down(&self, stateful_set: &str, replicas: impl IntoIterator<Item = i32>) -> Vec<i32> {
        let mut down: Vec<i32> = replicas
            .into_iter()
            .filter(|&replica| {
                !self
                    .pods
                    .get(&crate::names::pod(stateful_set, replica))
                    .is_some_and(|pod| pod.ready && !pod.deleting)
            })
            .collect();
        down.sort_unstable();
        down.dedup();
        down
    }

    /// UID of an observed volume.
    pub fn volume_uid(&self, volume: &str) -> Option<String> {
        self.volumes.get(volume).map(|v| v.uid.clone())
    }

    /// The observation as a plan with recorded volume UIDs sees it: a volume whose UID is not the one
    /// recorded for its name (deleted and created again meanwhile) counts as gone, so it is never
    /// acted on as if it were the row's.
    pub fn pinned_to(&self, plan: &[ferry_api::VolumePlan]) -> RunObserved {
        let mut pinned = self.clone();
        for row in plan {
            for (name, uid) in [
                (&row.source_volume, &row.source_volume_uid),
                (&row.target_volume, &row.target_volume_uid),
            ] {
                if let (Some(name), Some(uid)) = (name, uid)
                    && pinned.volumes.get(name).is_some_and(|v| &v.uid != uid)
                {
                    pinned.volumes.remove(name);
                }
            }
        }
        pinned
    }

    /// The claim is bound to `volume` on both sides: the claim names it and is Bound, and the volume's
    /// claimRef carries the claim's UID. Until then the volume may still look Released to its
    /// provisioner, so its reclaim policy must not go back to Delete.
    pub fn bound_to(&self, claim: &str, volume: &str) -> bool {
        self.claims.get(claim).is_some_and(|c| {
            c.bound
                && c.volume_name.as_deref() == Some(volume)
                && self
                    .volumes
                    .get(volume)
                    .is_some_and(|v| v.claim_uid.as_deref() == Some(c.uid.as_str()))
        })
    }

    /// A PodDisruptionBudget forbids taking a replica down right now.
    pub fn budget_blocks(&self) -> bool {
        self.disruptions_allowed.is_some_and(|allowed| allowed < 1)
    }
}

/// What a step says while a PodDisruptionBudget holds it.
pub const WAITING_FOR_BUDGET: &str = "waiting for the PodDisruptionBudget to allow a disruption";

#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunStatefulSet {
    /// Being deleted (an orphan delete waits for the orphan finalizer).
    pub deleting: bool,
    /// Created by someone else while the resize ran (a GitOps tool's self-heal, Helm, a parent
    /// operator): its UID is neither the one Ferry backed up nor one of Ferry's own re-creates.
    pub foreign: bool,
    /// Size in bytes per volume claim template.
    pub template_sizes: BTreeMap<String, u64>,
    /// StorageClass per volume claim template (`None`: the cluster's default).
    pub template_classes: BTreeMap<String, Option<String>>,
    pub replicas: i32,
    pub ready_replicas: i32,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunClaim {
    pub uid: String,
    /// The PersistentVolume it is bound to.
    pub volume_name: Option<String>,
    pub deleting: bool,
    pub requested_bytes: u64,
    pub capacity_bytes: u64,
    /// The driver grew the volume; the file system grows when the pod restarts.
    pub file_system_resize_pending: bool,
    /// Its status says Bound (a claim created with `volumeName` is Pending until the PV controller
    /// binds the volume to it).
    pub bound: bool,
    /// When the claim was created (whole seconds).
    pub created: Option<Time>,
    /// Ferry already asked the PV controller to look at this claim again (annotation).
    pub nudged: bool,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunPod {
    pub uid: String,
    pub ready: bool,
    pub deleting: bool,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunVolume {
    pub uid: String,
    pub reclaim_policy: String,
    /// Name of the claim it is bound or reserved to, if any.
    pub claim_name: Option<String>,
    /// UID in its claimRef; `None` when reserved by name only.
    pub claim_uid: Option<String>,
    /// `status.phase` (Available, Bound, Released, …), written by the PV controller.
    pub phase: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum MoverPhase {
    #[default]
    Waiting,
    Running,
    Succeeded,
    Failed {
        exit_code: i32,
        message: String,
    },
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunMover {
    pub phase: MoverPhase,
    /// Why the pod cannot run while it waits: unschedulable (no node fits, a zone the target
    /// class excludes), an image that cannot be pulled, a container that cannot be created.
    pub stuck: Option<String>,
    /// When the pod was created (whole seconds).
    pub created: Option<Time>,
    /// The result JSON the mover wrote as its termination message.
    pub result: Option<String>,
    /// The last progress line (JSON) the mover printed while running, read from its log.
    pub progress: Option<String>,
}

/// How long a mover pod may stay unable to run (see [`RunMover::stuck`]) before it counts as
/// failed; a scheduler or an image registry can recover in that time, a replica must not wait
/// forever.
pub const MOVER_STUCK_SECONDS: i64 = 120;

impl RunMover {
    /// Why this mover counts as failed now, if it does: it failed, or it has been unable to run for
    /// `stuck_after` seconds.
    pub fn failure(&self, now: &Time, stuck_after: i64) -> Option<String> {
        if let MoverPhase::Failed { exit_code, message } = &self.phase {
            return Some(format!("failed (exit code {exit_code}): {}", message.trim()));
        }
        let reason = self.stuck.as_ref()?;
        let waited = now.0.as_second() - self.created.as_ref()?.0.as_second();
        (waited >= stuck_after).then(|| format!("cannot run ({reason}) after {waited} s"))
    }
}

/// Which pass of a copy a mover pod makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pass {
    /// While the replica still runs; changes during it are fine.
    Warm,
    /// With the replica stopped; must end exact and verified.
    Final,
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
    /// Create the StatefulSet from the backup exactly as it was (rollback).
    RestoreStatefulSet,
    /// Create the temporary claim a copy of `source_claim` goes to (new size and class).
    CreateTargetClaim {
        claim: String,
        source_claim: String,
        bytes: u64,
        storage_class: Option<String>,
    },
    /// Start a mover pod copying `source` claim to `target` claim.
    StartMover {
        pod: String,
        source: String,
        target: String,
        pass: Pass,
    },
    /// Start a pod that measures the bytes in use on a claim (read-only).
    MeasureUsage { pod: String, claim: String },
    /// Delete a mover pod (it has finished, or the copy is abandoned).
    DeleteMover { pod: String },
    /// Keep a volume's data when its claim goes away.
    /// `uid`: only if the volume still has it (a PV re-created under the same name is not touched).
    SetReclaimPolicy {
        volume: String,
        uid: Option<String>,
        policy: String,
    },
    /// Delete a claim, only if it still has this UID.
    DeleteClaim { claim: String, uid: String },
    /// Reserve a released volume for a claim name (clears the old claim's UID).
    ReserveVolume {
        volume: String,
        uid: Option<String>,
        claim: String,
    },
    /// Touch a claim whose binding stalled (an annotation), so the PV controller syncs it now.
    NudgeClaim { claim: String, uid: String },
    /// Create a claim bound to a given volume, under the original claim's name.
    BindClaim {
        claim: String,
        /// The volume claim template the claim is made from.
        template: String,
        volume: String,
        bytes: u64,
        storage_class: Option<String>,
    },
}
