//! The slice of cluster state the planner reads, already reduced to plain values by the operator.

use std::collections::BTreeMap;

/// What the operator saw in the cluster for one VolumeResize.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observed {
    /// The StatefulSet named in the spec, if it exists.
    pub stateful_set: Option<StatefulSetView>,
    /// Every StorageClass in the cluster, by name.
    pub storage_classes: BTreeMap<String, StorageClassView>,
    /// The PVCs of the StatefulSet's replicas, by claim name.
    pub claims: BTreeMap<String, ClaimView>,
    /// Other VolumeResizes (not this one) on the same StatefulSet that have not finished.
    pub peers: Vec<PeerResize>,
    /// This VolumeResize's place in the queue: (creation time in seconds, name).
    pub queue_key: (i64, String),
    /// The node each running replica is on, by ordinal.
    pub replica_nodes: BTreeMap<i32, NodeView>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeView {
    pub name: String,
    pub labels: BTreeMap<String, String>,
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
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct StorageClassView {
    pub allow_expansion: bool,
    pub is_default: bool,
    /// `allowedTopologies`: terms (any may match), each a list of (label key, allowed values) that
    /// must all match. Empty: anywhere.
    pub allowed_topologies: Vec<Vec<(String, Vec<String>)>>,
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
    /// Capacity the PVC reports (status.capacity), else its request.
    pub size_bytes: Option<u64>,
    pub storage_class: Option<String>,
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
