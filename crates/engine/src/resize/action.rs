//! What a running resize asks of the cluster: the actions the planners decide and the operator
//! carries out, and the limits they plan with. What they see is [`crate::resize::observed::Observed`].

/// What a step says while a PodDisruptionBudget holds it.
pub const WAITING_FOR_BUDGET: &str = "waiting for the PodDisruptionBudget to allow a disruption";

/// How long a mover pod may stay unable to run (see [`crate::resize::observed::MoverView::stuck`]) before it counts as
/// failed; a scheduler or an image registry can recover in that time, a replica must not wait
/// forever.
pub const MOVER_STUCK_SECONDS: i64 = 120;

/// Which pass of a copy a mover pod makes (defined with the names, which it is part of).
pub use crate::names::Pass;

mod words;

/// How a volume moves by re-binding, shared with the blue/green move.
pub use crate::volume_writes::VolumeWrite;

/// One change the operator must make to the cluster. Each is idempotent: doing it twice, or after a
/// crash half-way, leaves the same result. Its kind without the data ([`ActionKind`]) names it in
/// errors and metrics; its words (`words`) in Events and logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResizeAction {
    /// Store the StatefulSet as it is now in the backup ConfigMap (create only if missing).
    BackupStatefulSet,
    /// Raise a claim's storage request.
    ExpandClaim { claim: String, bytes: u64 },
    /// Set a claim's VolumeAttributesClass (the external-resizer has the driver modify its volume);
    /// `None` only takes back a class that never applied.
    ModifyClaim { claim: String, class: Option<String> },
    /// Take a pod down through the Eviction API (only this UID): in place, so the kubelet finishes
    /// an offline file-system resize on its new pod; in a copy, to stop the replica (its
    /// StatefulSet is orphan-deleted, so nothing starts it again until the swap is done).
    EvictPod { pod: String, uid: String },
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
        /// The VolumeAttributesClass its volume is made with.
        attributes_class: Option<String>,
        /// Made as a CSI clone of this claim (its data as the warm copy), not empty.
        clone_of: Option<String>,
        /// Provisioned on this node (a move to another node): all of a replica's new volumes land
        /// on the one node chosen for it, without waiting for a pod to use them.
        node: Option<String>,
    },
    /// Start a mover pod copying `source` claim to `target` claim.
    StartMover {
        pod: String,
        source: String,
        target: String,
        pass: Pass,
        /// Linux capabilities of the mover container (every other one dropped).
        capabilities: Vec<String>,
        /// The target is a CSI clone of the source whose claim was made at this time (seconds
        /// since the epoch): the final pass need not compare by content the files the clone
        /// holds unchanged (`ferry-mover sync --cloned-at`).
        cloned_at: Option<i64>,
        /// A final mover on standby watches the source while the replica serves, so its pass
        /// visits only what changed (`--track-changes`); it says it is armed through its pod's
        /// Ready condition ([`crate::resize::MoverView::armed`]).
        track_changes: bool,
        /// A copy from another node: where this mover pulls from over mutual TLS; it mounts only
        /// `target`.
        from: Option<PullFrom>,
    },
    /// Start a pod serving `claim` (read only) on its volume's node to the movers of another node,
    /// with a key made for this copy alone (the Secret `pod`, owned by the pod).
    StartServer {
        pod: String,
        claim: String,
        /// The Secret its copy's key goes in (owned by the pod).
        key: String,
        /// Linux capabilities of its container (to read every file).
        capabilities: Vec<String>,
        /// It records what changes in the source from its start (`--track-changes`), so the final
        /// pull visits only that ([`PullFrom::tracked`]).
        track_changes: bool,
    },
    /// Start a pod that measures the bytes in use on a claim (read-only).
    MeasureUsage { pod: String, claim: String },
    /// Delete a mover pod (it has finished, or the copy is abandoned). `exited`: the UID of a
    /// mover whose container exited 0. It has flushed its writes and nothing runs in it any more,
    /// so that pod (only that UID) goes at once, grace period 0, instead of after the kubelet's
    /// teardown: the claims it names are free for the swap seconds sooner.
    DeleteMover { pod: String, exited: Option<String> },
    /// Let a standby final mover (started while the replica still served, its volumes mounted,
    /// waiting) begin its pass: the replica's pod is gone. Only the pod of this UID.
    StartFinalPass { pod: String, uid: String },
    /// A guarded write of the swap (or its reverse): a reclaim policy, a claim deleted, a volume
    /// reserved, a claim nudged.
    Volume(VolumeWrite),
    /// Create a claim bound to a given volume, under the original claim's name.
    BindClaim {
        claim: String,
        /// The volume claim template the claim is made from.
        template: String,
        volume: String,
        bytes: u64,
        storage_class: Option<String>,
        /// The volume's own VolumeAttributesClass: the PV controller binds no other.
        attributes_class: Option<String>,
    },
    /// A JSON Patch (RFC 6902, guarded by the resourceVersion it was made from) of the
    /// StatefulSet's owner (`status.owner`): its pause switch set or put back, or the new volume
    /// sizes and classes written into it.
    PatchOwner {
        what: OwnerPatch,
        /// `<Kind>/<name>`, for words.
        owner: String,
        patch: String,
    },
}

/// Why the owner is patched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnerPatch {
    Pause,
    Write,
    Release,
}

/// A serving mover a mover pulls from: its address (IP:port) and the Secret with their key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullFrom {
    pub address: String,
    pub key: String,
    /// The serving mover records what changes in the source (`serve --track-changes`): each pull
    /// marks its pass, and the final one reads only what changed since the last that passed.
    pub tracked: bool,
}

/// An action's kind: the name of its category in errors and metrics (`<kind>Failed`). A volume
/// write counts as its own kind, as it did before the writes were shared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::EnumIter, strum::IntoStaticStr)]
pub enum ActionKind {
    BackupStatefulSet,
    ExpandClaim,
    ModifyClaim,
    EvictPod,
    OrphanDeleteStatefulSet,
    RecreateStatefulSet,
    RestoreStatefulSet,
    CreateTargetClaim,
    StartMover,
    StartServer,
    MeasureUsage,
    DeleteMover,
    StartFinalPass,
    SetReclaimPolicy,
    DeleteClaim,
    ReserveVolume,
    NudgeClaim,
    BindClaim,
    PatchOwner,
}

/// `actions` in the order they must be carried out, cut into waves whose actions are independent
/// of each other and may run side by side: consecutive deletes of claims (distinct claims, as a
/// swap deletes its two), and consecutive reclaim-policy changes (distinct volumes). Every other
/// action is a wave of its own, after the ones before it.
pub fn waves(actions: &[ResizeAction]) -> Vec<&[ResizeAction]> {
    let mut waves = Vec::new();
    let mut start = 0;
    for end in 1..=actions.len() {
        let joins = actions
            .get(end)
            .is_some_and(|next| side_by_side(&actions[end - 1], next));
        if !joins {
            waves.push(&actions[start..end]);
            start = end;
        }
    }
    waves
}

fn side_by_side(before: &ResizeAction, next: &ResizeAction) -> bool {
    use VolumeWrite::{DeleteClaim, SetReclaimPolicy};
    let (ResizeAction::Volume(before), ResizeAction::Volume(next)) = (before, next) else {
        return false;
    };
    match (before, next) {
        (DeleteClaim { claim: a, .. }, DeleteClaim { claim: b, .. }) => a != b,
        (SetReclaimPolicy { volume: a, .. }, SetReclaimPolicy { volume: b, .. }) => a != b,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delete_claim(claim: &str) -> ResizeAction {
        ResizeAction::Volume(VolumeWrite::DeleteClaim {
            claim: claim.into(),
            uid: format!("uid-{claim}"),
        })
    }

    fn retain(volume: &str) -> ResizeAction {
        ResizeAction::Volume(VolumeWrite::SetReclaimPolicy {
            volume: volume.into(),
            uid: None,
            policy: "Retain".into(),
        })
    }

    fn mover() -> ResizeAction {
        ResizeAction::DeleteMover {
            pod: "mover".into(),
            exited: Some("m".into()),
        }
    }

    fn sizes(actions: &[ResizeAction]) -> Vec<usize> {
        waves(actions).iter().map(|wave| wave.len()).collect()
    }

    #[test]
    fn a_swaps_claim_deletes_run_together_and_its_mover_after_them() {
        let actions = [delete_claim("tmp"), delete_claim("data"), mover()];
        assert_eq!(sizes(&actions), [2, 1]);
        assert_eq!(waves(&actions)[1], [mover()]);
    }

    #[test]
    fn every_other_action_keeps_its_place_alone() {
        assert!(waves(&[]).is_empty());
        assert_eq!(sizes(&[mover(), mover()]), [1, 1]);
        assert_eq!(
            sizes(&[retain("a"), retain("b"), delete_claim("c"), retain("d")]),
            [2, 1, 1]
        );
        // The same object twice is never run beside itself.
        assert_eq!(sizes(&[delete_claim("c"), delete_claim("c")]), [1, 1]);
        assert_eq!(
            sizes(&[ResizeAction::RecreateStatefulSet, retain("a"), retain("b")]),
            [1, 2]
        );
    }
}
