//! The one model of what the planners see: the slice of cluster state a VolumeResize depends on,
//! already reduced to plain values by the operator and read fresh every reconcile (nothing is
//! remembered between them). The operator fills the parts the route at hand reads
//! ([`crate::resize::plan::Scope`]); the rest stays empty.

use crate::volume_writes::VolumeWrite;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use std::collections::BTreeMap;

/// What the operator saw in the cluster for one VolumeResize.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observed {
    /// The StatefulSet named in the spec, if it exists.
    pub stateful_set: Option<StatefulSetView>,
    /// Every StorageClass in the cluster, by name (prechecks).
    pub storage_classes: BTreeMap<String, StorageClassView>,
    /// VolumeAttributesClasses by name → the CSI driver they are for (prechecks; read when the
    /// request or a template names one).
    pub attributes_classes: BTreeMap<String, String>,
    /// The CSI drivers installed (their CSIDriver objects; prechecks): only their volumes can be
    /// cloned.
    pub csi_drivers: std::collections::BTreeSet<String>,
    /// Claims by name: every claim of the namespace for prechecks, the plan's claims and Ferry's
    /// temporary ones for a run.
    pub claims: BTreeMap<String, ClaimView>,
    /// Other VolumeResizes (not this one) on the same StatefulSet that have not finished.
    pub peers: Vec<PeerResize>,
    /// This VolumeResize's place in the queue: (creation time in seconds, name).
    pub queue_key: (i64, String),
    /// The node each running replica is on, by ordinal (prechecks).
    pub replica_nodes: BTreeMap<i32, NodeView>,
    /// Every node, by name (prechecks of a request with `spec.placement`).
    pub nodes: BTreeMap<String, NodeView>,
    /// The ConfigMap holding the StatefulSet's spec as it was before Ferry touched it.
    pub backup_exists: bool,
    /// The StatefulSet's pods by name.
    pub pods: BTreeMap<String, PodView>,
    /// PersistentVolumes this resize may touch (named in the plan, bound to its claims, or
    /// retained), by name; only those bound or reserved to a claim of the resize's namespace.
    pub volumes: BTreeMap<String, VolumeView>,
    /// This resize's mover and measuring pods, by name.
    pub movers: BTreeMap<String, MoverView>,
    /// The fewest disruptions any PodDisruptionBudget covering the StatefulSet's pods allows now
    /// (`None` when no budget covers them).
    pub disruptions_allowed: Option<i32>,
    /// The images this operator runs movers from (its settings, fixed at start, not cluster
    /// state): a request naming another is refused.
    pub mover_images: MoverImages,
    /// Bytes in use on each claim as the kubelets (or Prometheus) report them (claim name → bytes),
    /// read for dry runs only: a real run measures with its own pods before it touches anything.
    pub data_in_use: BTreeMap<String, u64>,
    /// The namespace's ResourceQuotas, as far as claims count against them (prechecks).
    pub quotas: Vec<QuotaView>,
    /// The namespace's LimitRanges' bounds on a claim's size (prechecks).
    pub claim_limits: Vec<ClaimLimitView>,
    /// The Pod Security level the namespace enforces (its `pod-security.kubernetes.io/enforce`
    /// label; prechecks), if it says one.
    pub pod_security: Option<String>,
    /// The StatefulSet's controller owner, when another controller owns it (prechecks and runs).
    pub owner: Option<OwnerView>,
}

/// The controller that owns the StatefulSet (its controller owner reference), as far as Ferry
/// reads it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OwnerView {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub uid: String,
    /// Its kind's entry in the owners' table, if Ferry knows it.
    pub entry: Option<crate::owners::OwnerKind>,
    /// Its resource as read (JSON), when its kind is known and it exists.
    pub object: Option<serde_json::Value>,
}

/// A ResourceQuota reduced to what claims count against: its hard limits and what is in use, by
/// resource name (`requests.storage` and `persistentvolumeclaims`, and their per-class forms
/// `<class>.storageclass.storage.k8s.io/requests.storage` and `.../persistentvolumeclaims`),
/// storage in bytes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QuotaView {
    pub name: String,
    pub hard: BTreeMap<String, u64>,
    pub used: BTreeMap<String, u64>,
}

/// The bounds a LimitRange puts on a claim's requested storage (its `PersistentVolumeClaim` items).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClaimLimitView {
    pub name: String,
    pub min: Option<u64>,
    pub max: Option<u64>,
}

/// The operator's own mover image and the others it allows (`--allowed-mover-images`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MoverImages {
    pub default: String,
    pub allowed: Vec<String>,
}

impl MoverImages {
    /// Why `requested` (a VolumeResize's `spec.mover.image`) may not run, if it may not.
    pub fn refusal(&self, requested: Option<&str>) -> Option<String> {
        let image = requested?;
        if image == self.default || self.allowed.iter().any(|allowed| allowed == image) {
            return None;
        }
        let allowed = std::iter::once(self.default.as_str())
            .chain(self.allowed.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(", ");
        Some(format!(
            "spec.mover.image {image:?} is not an image this operator runs movers from ({allowed}); leave it out, or have the operator's --allowed-mover-images list it"
        ))
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeView {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    /// Cordoned (`spec.unschedulable`): never a target of a move.
    pub unschedulable: bool,
    /// Its Ready condition is True.
    pub ready: bool,
    /// Its taints (`NoSchedule` and `NoExecute` keep off pods that do not tolerate them).
    pub taints: Vec<k8s_openapi::api::core::v1::Taint>,
}

impl NodeView {
    /// A node as the planners see it.
    pub fn of(node: &k8s_openapi::api::core::v1::Node) -> NodeView {
        let spec = node.spec.as_ref();
        let conditions = (node.status.as_ref())
            .and_then(|s| s.conditions.as_deref())
            .unwrap_or_default();
        NodeView {
            name: node.metadata.name.clone().unwrap_or_default(),
            labels: node.metadata.labels.clone().unwrap_or_default(),
            unschedulable: spec.and_then(|s| s.unschedulable).unwrap_or(false),
            ready: conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True"),
            taints: spec.and_then(|s| s.taints.clone()).unwrap_or_default(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct StatefulSetView {
    pub name: String,
    pub replicas: i32,
    /// `spec.ordinals.start`: the replicas are ordinals `first_ordinal..first_ordinal + replicas`.
    pub first_ordinal: i32,
    pub ready_replicas: i32,
    /// Volume claim templates by name.
    pub templates: BTreeMap<String, TemplateView>,
    /// Being deleted (an orphan delete waits for the orphan finalizer).
    pub deleting: bool,
    /// The StatefulSet controller still has pods to replace for a spec change (a rolling update
    /// under way): it may delete a replica at any moment, whatever a budget says.
    pub rolling_out: bool,
    /// Created by someone else while the resize ran (a GitOps tool's self-heal, Helm, a parent
    /// operator): its UID is neither the one Ferry backed up nor one of Ferry's own re-creates.
    pub foreign: bool,
    /// Its pod template's node selector and tolerations: where a replica may run.
    pub pod_node_selector: BTreeMap<String, String>,
    pub pod_tolerations: Vec<k8s_openapi::api::core::v1::Toleration>,
    /// The non-root user its pods run as, if the template names one (`crate::pods::run_as`).
    pub run_as: Option<crate::pods::RunAs>,
}

impl StatefulSetView {
    /// The size a volume claim template asks for, in bytes.
    pub fn template_bytes(&self, template: &str) -> Option<u64> {
        self.templates.get(template)?.size_bytes
    }

    /// The class a volume claim template names (`None`: the cluster default, or no such template).
    pub fn template_class(&self, template: &str) -> Option<&str> {
        self.templates.get(template)?.storage_class.as_deref()
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct TemplateView {
    /// Requested size in bytes, if the template states one.
    pub size_bytes: Option<u64>,
    /// The class named in the template; `None` means the cluster default.
    pub storage_class: Option<String>,
    /// `volumeMode: Block`: a raw device, no file system to copy.
    pub raw_block: bool,
    /// `ReadWriteOncePod`: no second pod may mount it while the replica runs.
    pub read_write_once_pod: bool,
    /// The VolumeAttributesClass it names.
    pub attributes_class: Option<String>,
}

impl TemplateView {
    /// A file-system template of this size and class.
    pub fn sized(bytes: u64, storage_class: Option<&str>) -> TemplateView {
        TemplateView {
            size_bytes: Some(bytes),
            storage_class: storage_class.map(str::to_string),
            ..TemplateView::default()
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct StorageClassView {
    /// The provisioner (a CSI driver's name): the only driver whose VolumeAttributesClasses apply.
    pub provisioner: String,
    pub allow_expansion: bool,
    pub is_default: bool,
    /// `allowedTopologies`: terms (any may match), each a list of (label key, allowed values) that
    /// must all match. Empty: anywhere.
    pub allowed_topologies: Vec<Vec<(String, Vec<String>)>>,
    /// `volumeBindingMode: WaitForFirstConsumer`: a volume is made where it is first used (or
    /// where a claim's selected node says).
    pub waits_for_first_consumer: bool,
}

impl StorageClassView {
    /// Whether a volume of this class can be provisioned where a node with `labels` can use it.
    pub fn reaches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.allowed_topologies.is_empty()
            || self.allowed_topologies.iter().any(|term| {
                term.iter()
                    .all(|(key, values)| labels.get(key).is_some_and(|value| values.contains(value)))
            })
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClaimView {
    pub uid: String,
    pub storage_class: Option<String>,
    /// The VolumeAttributesClass its spec names.
    pub attributes_class: Option<String>,
    /// The VolumeAttributesClass its volume has now (`status.currentVolumeAttributesClassName`).
    pub current_attributes_class: Option<String>,
    /// Why the driver cannot give the volume the class its spec names now, when its
    /// `modifyVolumeStatus` says `Infeasible` for that class.
    pub modification_infeasible: Option<String>,
    /// `spec.resources.requests.storage` in bytes (0: none).
    pub requested_bytes: u64,
    /// `status.capacity.storage` in bytes (0: none yet).
    pub capacity_bytes: u64,
    /// The PersistentVolume it is bound to.
    pub volume_name: Option<String>,
    pub deleting: bool,
    /// Where the node side of its growth stands.
    pub node_resize: NodeResize,
    /// The driver refused to grow the volume while a pod uses it (`ControllerResizeError` with the
    /// CSI code FAILED_PRECONDITION, which the CSI spec gives to exactly that) and it has not grown
    /// since.
    pub expansion_refused_in_use: bool,
    /// Its status says Bound (a claim created with `volumeName` is Pending until the PV controller
    /// binds the volume to it).
    pub bound: bool,
    /// Why its growth cannot succeed, when its resize status says `ControllerResizeInfeasible` or
    /// `NodeResizeInfeasible` (KEP-1790: the driver refused the size, e.g. past its maximum).
    pub expansion_infeasible: Option<String>,
    /// When the claim was created (whole seconds).
    pub created: Option<Time>,
    /// Ferry already asked the PV controller to look at this claim again (annotation).
    pub nudged: bool,
    /// The provisioner's newest `ProvisioningFailed` Event on it, while it is Pending (read only
    /// for a claim made as a clone, whose failure means the driver does not make it).
    pub provisioning_failed: Option<String>,
}

/// The node side of a claim's growth, from its conditions.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum NodeResize {
    #[default]
    Idle,
    /// `FileSystemResizePending` since then: the volume grew, and the kubelet grows the file system
    /// while the pod runs (a CSI driver that expands online) or when a pod next mounts it.
    Pending { since: Option<Time> },
    /// `FileSystemResizePending` with the kubelet's `NodeResizeError` saying FAILED_PRECONDITION (or a
    /// `NodeResizeInfeasible` status): it could not grow the file
    /// system while mounted (a node plugin that expands only offline), so only a new pod finishes.
    Failed,
}

/// How long a file-system resize may stay pending with no word from the kubelet before Ferry takes
/// it that only a new pod will finish it (a kubelet that expands online does so within seconds).
pub const NODE_RESIZE_GRACE_SECONDS: i64 = 120;

impl NodeResize {
    pub fn is_pending(&self) -> bool {
        *self != NodeResize::Idle
    }

    /// Only restarting the pod that mounts the claim finishes the resize.
    pub fn needs_new_pod(&self, now: &Time) -> bool {
        match self {
            NodeResize::Idle => false,
            NodeResize::Failed => true,
            NodeResize::Pending { since } => since
                .as_ref()
                .is_none_or(|since| now.0.as_second() - since.0.as_second() > NODE_RESIZE_GRACE_SECONDS),
        }
    }
}

impl ClaimView {
    /// Its size: the capacity it reports, else what it requests.
    pub fn size_bytes(&self) -> Option<u64> {
        [self.capacity_bytes, self.requested_bytes]
            .into_iter()
            .find(|&bytes| bytes > 0)
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodView {
    pub uid: String,
    pub ready: bool,
    pub deleting: bool,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct VolumeView {
    pub uid: String,
    pub reclaim_policy: String,
    /// Name of the claim it is bound or reserved to, if any.
    pub claim_name: Option<String>,
    /// UID in its claimRef; `None` when reserved by name only.
    pub claim_uid: Option<String>,
    /// `status.phase` (Available, Bound, Released, …), written by the PV controller.
    pub phase: String,
    /// Its VolumeAttributesClass: the PV controller binds it only to a claim naming the same.
    pub attributes_class: Option<String>,
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
pub struct MoverView {
    pub phase: MoverPhase,
    /// The pod's UID.
    pub uid: String,
    /// A final mover waiting for its go (the replica's pod gone) before it makes its pass.
    pub awaiting_go: bool,
    /// The pod's Ready condition: a standby tracking changes is Ready once its catch-up pass has
    /// ended and it watches the source (its readiness probe), so the replica may stop.
    pub armed: bool,
    /// The operator is still opening the stream a standby's go comes by sooner than its annotation
    /// (feature `directGo`); the replica keeps serving until it is open or given up (bounded).
    pub go_stream_opening: bool,
    /// A serving mover (a copy to another node): not counted against the movers' concurrency.
    pub serving: bool,
    /// The pod's IP, once it has one (a serving mover is reached at it).
    pub pod_ip: Option<String>,
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

impl MoverView {
    /// Whether its container ended with exit code 0: the outcome is in, nothing runs in it.
    pub fn exited_ok(&self) -> bool {
        self.phase == MoverPhase::Succeeded
    }

    /// The action removing this pod, `name`: at once when it exited 0, gracefully otherwise.
    pub fn delete(&self, name: &str) -> crate::resize::action::ResizeAction {
        if self.exited_ok() {
            return self.delete_ended(name);
        }
        crate::resize::action::ResizeAction::DeleteMover {
            pod: name.to_string(),
            exited: None,
        }
    }

    /// The action removing this pod, `name`, at once: its process is known to have ended (exited
    /// 0, or a serving mover its final pass stopped), whether or not its kubelet reported it yet.
    pub fn delete_ended(&self, name: &str) -> crate::resize::action::ResizeAction {
        crate::resize::action::ResizeAction::DeleteMover {
            pod: name.to_string(),
            exited: Some(self.uid.clone()),
        }
    }

    /// Why this mover counts as failed now, if it does: it failed, or it has been unable to run for
    /// `stuck_after` seconds.
    pub fn failure(&self, now: &Time, stuck_after: i64) -> Option<String> {
        if let MoverPhase::Failed { exit_code, message } = &self.phase {
            // Refused for lack of a capability it was not given: say why it had so few.
            let hint = if *exit_code == ferry_mover_report::EXIT_PERMISSION {
                "; a mover runs with only the capabilities the data measured before the copy needed, and an entry made since (a device node, another owner, a set-id or capability file) needs more: delete and re-create the VolumeResize to measure again"
            } else {
                ""
            };
            return Some(format!(
                "failed (exit code {exit_code}): {}{hint}",
                message.trim()
            ));
        }
        let reason = self.stuck.as_ref()?;
        let waited = now.0.as_second() - self.created.as_ref()?.0.as_second();
        (waited >= stuck_after).then(|| format!("cannot run ({reason}) after {waited} s"))
    }
}

/// Another unfinished VolumeResize on the same StatefulSet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerResize {
    pub name: String,
    /// Orders the queue: (creation time in seconds, name). Older goes first.
    pub queue_key: (i64, String),
    /// It already holds the StatefulSet (prechecks passed, work under way).
    pub holds_stateful_set: bool,
}

impl Observed {
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

    /// The action that sets `volume`'s reclaim policy to `policy`, unless the volume is gone or
    /// has that policy already.
    pub fn set_reclaim_policy(
        &self,
        volume: &str,
        policy: &str,
    ) -> Option<crate::resize::action::ResizeAction> {
        let observed = self.volumes.get(volume)?;
        (observed.reclaim_policy != policy).then(|| {
            crate::resize::action::ResizeAction::Volume(VolumeWrite::SetReclaimPolicy {
                volume: volume.to_string(),
                uid: Some(observed.uid.clone()),
                policy: policy.to_string(),
            })
        })
    }

    /// The observation as a plan with recorded volume UIDs sees it: a volume whose UID is not the
    /// one recorded for its name (deleted and created again meanwhile) counts as gone, so it is
    /// never acted on as if it were the row's.
    pub fn pinned_to(mut self, plan: &[ferry_api::VolumePlan]) -> Observed {
        for row in plan {
            for (name, uid) in [
                (&row.source_volume, &row.source_volume_uid),
                (&row.target_volume, &row.target_volume_uid),
            ] {
                if let (Some(name), Some(uid)) = (name, uid)
                    && self.volumes.get(name).is_some_and(|v| &v.uid != uid)
                {
                    self.volumes.remove(name);
                }
            }
        }
        self
    }

    /// The claim is bound to `volume` on both sides: the claim names it and is Bound, and the
    /// volume's claimRef carries the claim's UID. Until then the volume may still look Released to
    /// its provisioner, so its reclaim policy must not go back to Delete.
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

    /// The class a template's PVCs get: the named one, else the cluster default.
    pub fn effective_class(&self, template: &TemplateView) -> Option<String> {
        template.storage_class.clone().or_else(|| {
            self.storage_classes
                .iter()
                .find(|(_, class)| class.is_default)
                .map(|(name, _)| name.clone())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(exit_code: i32) -> MoverView {
        MoverView {
            phase: MoverPhase::Failed {
                exit_code,
                message: "permission denied while creating dev/null: Operation not permitted\n".into(),
            },
            ..MoverView::default()
        }
    }

    #[test]
    fn a_mover_refused_an_operation_says_its_capabilities_followed_the_measured_data() {
        let now = Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH);
        let refused = failed(ferry_mover_report::EXIT_PERMISSION)
            .failure(&now, 60)
            .unwrap();
        assert!(
            refused.starts_with("failed (exit code 5): permission denied while creating dev/null")
                && refused.contains("re-create the VolumeResize to measure again"),
            "{refused}"
        );
        let mismatch = failed(3).failure(&now, 60).unwrap();
        assert!(!mismatch.contains("measure again"), "{mismatch}");
    }
}
