//! What the migration planner is told about the namespace.

use ferry_api::Phase;
use std::collections::BTreeMap;

/// The namespace as the operator read it for one migration.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observed {
    /// The StatefulSets the migration's selector picks (every one without a selector).
    pub stateful_sets: Vec<SetView>,
    /// Every claim of the namespace.
    pub claims: Vec<ClaimView>,
    /// The cluster's default StorageClass, if one is marked so.
    pub default_class: Option<String>,
    /// Whether the class the volumes move to exists.
    pub target_class_exists: bool,
    /// Why the namespace could not be read as the migration asks (its selector is not one).
    pub unreadable: Option<String>,
    /// The VolumeResizes this migration made (by its UID label), by name.
    pub resizes: BTreeMap<String, ResizeView>,
    /// StatefulSets an unfinished VolumeResize the migration did not make holds: the resize's name.
    pub held_by_others: BTreeMap<String, String>,
}

/// A StatefulSet.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SetView {
    pub name: String,
    pub templates: Vec<TemplateView>,
    /// `spec.ordinals.start`: its replicas are this ordinal onwards.
    pub first_ordinal: i32,
    /// Replicas it asks for, and those Ready.
    pub replicas: i32,
    pub ready_replicas: i32,
}

/// One of its volume claim templates.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TemplateView {
    pub name: String,
    /// `storageClassName` as written (`None`: the default class).
    pub class: Option<String>,
    /// Its requested size in bytes.
    pub request_bytes: u64,
}

/// A claim.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClaimView {
    pub name: String,
    /// `storageClassName` as written (`None`: the default class).
    pub class: Option<String>,
    /// Its capacity (or request while unbound) in bytes.
    pub bytes: u64,
}

/// A VolumeResize the migration made, as far as the migration reads it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResizeView {
    pub stateful_set: String,
    pub phase: Option<Phase>,
    pub message: Option<String>,
    pub bytes_copied: Option<u64>,
    pub max_downtime_milliseconds: Option<u64>,
}

impl Observed {
    /// The class a claim or template names, the default class where it names none.
    pub fn resolved<'a>(&'a self, class: Option<&'a str>) -> Option<&'a str> {
        crate::storage_classes::class_of(class, self.default_class.as_deref())
    }
}
