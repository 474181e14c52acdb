//! What an action is called: its kind (errors and metrics), its Event reason, its sentence, the
//! object it works on. Here, beside the type, so the operator's one `match` over the actions is
//! the one that carries them out.

use super::{ActionKind, OwnerPatch, ResizeAction, VolumeWrite};
use ferry_api::quantity::format_bytes;

impl ResizeAction {
    pub fn kind(&self) -> ActionKind {
        match self {
            ResizeAction::BackupStatefulSet => ActionKind::BackupStatefulSet,
            ResizeAction::ExpandClaim { .. } => ActionKind::ExpandClaim,
            ResizeAction::ModifyClaim { .. } => ActionKind::ModifyClaim,
            ResizeAction::EvictPod { .. } => ActionKind::EvictPod,
            ResizeAction::OrphanDeleteStatefulSet => ActionKind::OrphanDeleteStatefulSet,
            ResizeAction::RecreateStatefulSet => ActionKind::RecreateStatefulSet,
            ResizeAction::RestoreStatefulSet => ActionKind::RestoreStatefulSet,
            ResizeAction::CreateTargetClaim { .. } => ActionKind::CreateTargetClaim,
            ResizeAction::StartMover { .. } => ActionKind::StartMover,
            ResizeAction::StartServer { .. } => ActionKind::StartServer,
            ResizeAction::MeasureUsage { .. } => ActionKind::MeasureUsage,
            ResizeAction::DeleteMover { .. } => ActionKind::DeleteMover,
            ResizeAction::StartFinalPass { .. } => ActionKind::StartFinalPass,
            ResizeAction::Volume(VolumeWrite::SetReclaimPolicy { .. }) => ActionKind::SetReclaimPolicy,
            ResizeAction::Volume(VolumeWrite::DeleteClaim { .. }) => ActionKind::DeleteClaim,
            ResizeAction::Volume(VolumeWrite::ReserveVolume { .. }) => ActionKind::ReserveVolume,
            ResizeAction::Volume(VolumeWrite::NudgeClaim { .. }) => ActionKind::NudgeClaim,
            ResizeAction::BindClaim { .. } => ActionKind::BindClaim,
            ResizeAction::PatchOwner { .. } => ActionKind::PatchOwner,
        }
    }

    /// The reason of the Event announcing it.
    pub fn reason(&self) -> &'static str {
        match self.kind() {
            ActionKind::BackupStatefulSet => "BackedUp",
            ActionKind::ExpandClaim => "ExpandingVolume",
            ActionKind::ModifyClaim => "ModifyingVolume",
            ActionKind::EvictPod => "RestartingPod",
            ActionKind::OrphanDeleteStatefulSet => "ReplacingStatefulSet",
            ActionKind::RecreateStatefulSet => "RecreatingStatefulSet",
            ActionKind::RestoreStatefulSet => "RestoringStatefulSet",
            ActionKind::CreateTargetClaim => "CreatingVolume",
            ActionKind::StartMover => "Copying",
            ActionKind::StartServer => "ServingCopy",
            ActionKind::MeasureUsage => "MeasuringUsage",
            ActionKind::DeleteMover => "MoverRemoved",
            ActionKind::StartFinalPass => "FinalSync",
            ActionKind::SetReclaimPolicy => "ReclaimPolicySet",
            ActionKind::DeleteClaim
            | ActionKind::ReserveVolume
            | ActionKind::BindClaim
            | ActionKind::NudgeClaim => "SwappingVolume",
            ActionKind::PatchOwner => "PatchingOwner",
        }
    }

    /// One sentence for the Event and the log.
    pub fn describe(&self) -> String {
        match self {
            ResizeAction::BackupStatefulSet => "backed up the StatefulSet spec".into(),
            ResizeAction::ExpandClaim { claim, bytes } => {
                format!("requested {} for PVC {claim}", format_bytes(*bytes))
            }
            ResizeAction::ModifyClaim { claim, class } => match class {
                Some(class) => format!("setting VolumeAttributesClass {class} on PVC {claim}"),
                None => format!("taking back the VolumeAttributesClass of PVC {claim}, which never applied"),
            },
            ResizeAction::EvictPod { pod, .. } => {
                format!("deleting pod {pod}; it comes back on its resized or new volume")
            }
            ResizeAction::OrphanDeleteStatefulSet => {
                "deleting the StatefulSet with orphan propagation; pods keep running".into()
            }
            ResizeAction::RecreateStatefulSet => {
                "re-creating the StatefulSet with the new volume claim template".into()
            }
            ResizeAction::RestoreStatefulSet => "restoring the StatefulSet from its backup".into(),
            ResizeAction::CreateTargetClaim {
                claim,
                bytes,
                storage_class,
                clone_of,
                ..
            } => format!(
                "creating PVC {claim} ({}, StorageClass {}){}",
                format_bytes(*bytes),
                storage_class.as_deref().unwrap_or("default"),
                clone_of
                    .as_ref()
                    .map(|source| format!(" as a clone of {source}"))
                    .unwrap_or_default()
            ),
            ResizeAction::StartMover {
                pod,
                source,
                target,
                pass,
                from,
                ..
            } => match from {
                Some(from) => format!(
                    "{pass:?} copy of PVC {source} to {target} across nodes (from {}) in mover pod {pod}",
                    from.address
                ),
                None => format!("{pass:?} copy of PVC {source} to {target} in mover pod {pod}"),
            },
            ResizeAction::StartServer { pod, claim, .. } => {
                format!("serving PVC {claim} (read only) to the other node in mover pod {pod}")
            }
            ResizeAction::MeasureUsage { pod, claim } => {
                format!("measuring the data in use on PVC {claim} in pod {pod}")
            }
            ResizeAction::DeleteMover { pod, .. } => format!("removed mover pod {pod}"),
            ResizeAction::StartFinalPass { pod, .. } => {
                format!("the replica's pod is gone: final pass of mover pod {pod} begins")
            }
            ResizeAction::Volume(write) => write.describe(),
            ResizeAction::BindClaim { claim, volume, .. } => {
                format!("re-creating PVC {claim} bound to PV {volume}")
            }
            ResizeAction::PatchOwner { what, owner, .. } => match what {
                OwnerPatch::Pause => format!("pausing the StatefulSet's owner {owner}"),
                OwnerPatch::Write => {
                    format!("writing the StatefulSet's volume sizes and classes into its owner {owner}")
                }
                OwnerPatch::Release => format!("letting the StatefulSet's owner {owner} act again"),
            },
        }
    }

    /// The name of the object it works on (the one it creates, changes or deletes), for a resize
    /// named `resize` of StatefulSet `stateful_set`.
    pub fn object(&self, resize: &str, stateful_set: &str) -> String {
        match self {
            ResizeAction::BackupStatefulSet => crate::names::backup(resize),
            ResizeAction::OrphanDeleteStatefulSet
            | ResizeAction::RecreateStatefulSet
            | ResizeAction::RestoreStatefulSet => stateful_set.to_string(),
            ResizeAction::ExpandClaim { claim, .. }
            | ResizeAction::ModifyClaim { claim, .. }
            | ResizeAction::CreateTargetClaim { claim, .. }
            | ResizeAction::BindClaim { claim, .. } => claim.clone(),
            ResizeAction::EvictPod { pod, .. }
            | ResizeAction::StartMover { pod, .. }
            | ResizeAction::StartServer { pod, .. }
            | ResizeAction::MeasureUsage { pod, .. }
            | ResizeAction::DeleteMover { pod, .. }
            | ResizeAction::StartFinalPass { pod, .. } => pod.clone(),
            ResizeAction::Volume(write) => write.object().to_string(),
            ResizeAction::PatchOwner { owner, .. } => owner.clone(),
        }
    }
}

impl VolumeWrite {
    /// One sentence for the Event and the log.
    pub fn describe(&self) -> String {
        match self {
            VolumeWrite::SetReclaimPolicy { volume, policy, .. } => {
                format!("PV {volume}: reclaim policy {policy}")
            }
            VolumeWrite::DeleteClaim { claim, .. } => format!("deleting PVC {claim} (its PV is retained)"),
            VolumeWrite::ReserveVolume { volume, claim, .. } => {
                format!("reserving PV {volume} for PVC {claim}")
            }
            VolumeWrite::NudgeClaim { claim, .. } => {
                format!("PVC {claim} is still not bound; asking the PV controller to look at it again")
            }
        }
    }

    /// The name of the volume or claim it writes.
    pub fn object(&self) -> &str {
        match self {
            VolumeWrite::SetReclaimPolicy { volume, .. } | VolumeWrite::ReserveVolume { volume, .. } => {
                volume
            }
            VolumeWrite::DeleteClaim { claim, .. } | VolumeWrite::NudgeClaim { claim, .. } => claim,
        }
    }
}

impl ActionKind {
    /// What an action of this kind does, followed in messages by the name of its object.
    pub fn doing(self) -> &'static str {
        match self {
            ActionKind::BackupStatefulSet => "backing up the StatefulSet into ConfigMap",
            ActionKind::ExpandClaim => "expanding claim",
            ActionKind::ModifyClaim => "setting the VolumeAttributesClass of claim",
            ActionKind::EvictPod => "evicting pod",
            ActionKind::OrphanDeleteStatefulSet => "orphan-deleting StatefulSet",
            ActionKind::RecreateStatefulSet => "re-creating StatefulSet",
            ActionKind::RestoreStatefulSet => "restoring StatefulSet",
            ActionKind::CreateTargetClaim => "creating target claim",
            ActionKind::StartMover => "starting mover pod",
            ActionKind::StartServer => "starting serving mover pod",
            ActionKind::MeasureUsage => "starting usage pod",
            ActionKind::DeleteMover => "deleting mover pod",
            ActionKind::StartFinalPass => "starting the final pass of mover pod",
            ActionKind::SetReclaimPolicy => "setting the reclaim policy of volume",
            ActionKind::DeleteClaim => "deleting claim",
            ActionKind::ReserveVolume => "reserving volume",
            ActionKind::NudgeClaim => "nudging claim",
            ActionKind::BindClaim => "creating bound claim",
            ActionKind::PatchOwner => "patching the StatefulSet's owner",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::Pass;

    /// Every action names the object it works on, as its plan gives it.
    #[test]
    fn an_action_names_its_object() {
        let cases = [
            (ResizeAction::BackupStatefulSet, "ferry-grow-backup"),
            (ResizeAction::RecreateStatefulSet, "db"),
            (
                ResizeAction::StartMover {
                    pod: "data-db-0-ferry-1a2b-warm".into(),
                    source: "data-db-0".into(),
                    target: "data-db-0-ferry-1a2b".into(),
                    pass: Pass::Warm,
                    capabilities: vec!["DAC_OVERRIDE".into()],
                    cloned_at: None,
                    track_changes: false,
                    from: None,
                },
                "data-db-0-ferry-1a2b-warm",
            ),
            (
                ResizeAction::Volume(VolumeWrite::ReserveVolume {
                    volume: "pv-1".into(),
                    uid: None,
                    claim: "data-db-0".into(),
                }),
                "pv-1",
            ),
            (
                ResizeAction::CreateTargetClaim {
                    claim: "data-db-0-ferry-abc".into(),
                    source_claim: "data-db-0".into(),
                    bytes: 1 << 30,
                    storage_class: None,
                    attributes_class: None,
                    clone_of: None,
                    node: None,
                },
                "data-db-0-ferry-abc",
            ),
        ];
        for (action, object) in cases {
            assert_eq!(action.object("grow", "db"), object, "{action:?}");
        }
    }

    /// A kind is its action's own name (a volume write's, inside `Volume`), so categories and
    /// metrics keep the names they had, and no two actions share a kind.
    #[test]
    fn every_action_is_of_its_own_kind() {
        let name = || "x".to_string();
        let actions = [
            ResizeAction::BackupStatefulSet,
            ResizeAction::ExpandClaim {
                claim: name(),
                bytes: 1,
            },
            ResizeAction::ModifyClaim {
                claim: name(),
                class: None,
            },
            ResizeAction::EvictPod {
                pod: name(),
                uid: name(),
            },
            ResizeAction::OrphanDeleteStatefulSet,
            ResizeAction::RecreateStatefulSet,
            ResizeAction::RestoreStatefulSet,
            ResizeAction::CreateTargetClaim {
                claim: name(),
                source_claim: name(),
                bytes: 1,
                storage_class: None,
                attributes_class: None,
                clone_of: None,
                node: None,
            },
            ResizeAction::StartMover {
                pod: name(),
                source: name(),
                target: name(),
                pass: Pass::Final,
                capabilities: Vec::new(),
                cloned_at: None,
                track_changes: true,
                from: None,
            },
            ResizeAction::StartServer {
                pod: name(),
                claim: name(),
                key: name(),
                capabilities: Vec::new(),
                track_changes: true,
            },
            ResizeAction::MeasureUsage {
                pod: name(),
                claim: name(),
            },
            ResizeAction::DeleteMover {
                pod: name(),
                exited: None,
            },
            ResizeAction::StartFinalPass {
                pod: name(),
                uid: name(),
            },
            ResizeAction::Volume(VolumeWrite::SetReclaimPolicy {
                volume: name(),
                uid: None,
                policy: name(),
            }),
            ResizeAction::Volume(VolumeWrite::DeleteClaim {
                claim: name(),
                uid: name(),
            }),
            ResizeAction::Volume(VolumeWrite::ReserveVolume {
                volume: name(),
                uid: None,
                claim: name(),
            }),
            ResizeAction::Volume(VolumeWrite::NudgeClaim {
                claim: name(),
                uid: name(),
            }),
            ResizeAction::BindClaim {
                claim: name(),
                template: name(),
                volume: name(),
                bytes: 1,
                storage_class: None,
                attributes_class: None,
            },
            ResizeAction::PatchOwner {
                what: super::OwnerPatch::Write,
                owner: name(),
                patch: name(),
            },
        ];
        let mut kinds = std::collections::BTreeSet::new();
        for action in &actions {
            let kind: &'static str = action.kind().into();
            let debug = format!("{action:?}");
            assert!(
                debug.trim_start_matches("Volume(").starts_with(kind),
                "{debug} is of kind {kind}"
            );
            kinds.insert(kind);
        }
        use strum::IntoEnumIterator;
        assert_eq!(kinds.len(), ActionKind::iter().count());
    }
}
