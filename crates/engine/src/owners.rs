//! StatefulSets that another operator owns (prometheus-operator's Prometheus, RabbitMQ's clusters,
//! ECK's node sets, Ferry's own ExtendedStatefulSets): where each kind of owner keeps its
//! StatefulSets' volume sizes and classes, and the switch that pauses it. A resize of an owned
//! StatefulSet pauses its owner, changes the volumes as for any StatefulSet, writes what it did into
//! the owner's resource and lets the owner go on, so neither undoes the other's work.
//!
//! The table is data ([`OwnerKind`]), the same for the built-in entries and those a cluster admin
//! adds in the operator's `ferry-owners` ConfigMap; paths into the owner are [`path`]s, names of
//! its StatefulSets and templates [`pattern`]s.

mod built_in;
pub mod path;
pub mod pattern;
mod reading;
#[cfg(test)]
mod tests;

pub use built_in::built_in;
pub use reading::{OwnedVolume, OwnerReading, TemplateWrite, read_owner};

use serde::{Deserialize, Serialize};

/// One kind of owner: which resources it is, the StatefulSets it makes, where it keeps each volume
/// claim template's size and class, and its pause switch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OwnerKind {
    /// The owner's API group (`monitoring.coreos.com`; empty for the core group).
    pub group: String,
    /// The owner's kind (`Prometheus`).
    pub kind: String,
    /// The names of the StatefulSets it makes, as patterns (`{owner}` is the owner's name, any
    /// other `{word}` stands for a part of the name the volume paths may use). The first that
    /// matches applies.
    pub stateful_sets: Vec<String>,
    /// Its volume claim templates and where the owner keeps each.
    pub volumes: Vec<OwnerVolume>,
    /// The switch that stops it from acting on its StatefulSets, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause: Option<PauseSwitch>,
    /// Where the owner says which generation of its resource it last acted on (a path whose value
    /// is a number), if it says so: Ferry's write is confirmed once it reaches that generation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<String>,
}

/// One volume claim template of an owner's StatefulSets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OwnerVolume {
    /// The template's name in the StatefulSet, as a pattern (`prometheus-{owner}-db`).
    pub claim_template: String,
    /// Where the owner may name the template instead (its value, when set, is the name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_template_name: Option<String>,
    /// Where the owner keeps the template's requested size.
    pub size: String,
    /// Where it keeps the template's StorageClass, if it has a place for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_class: Option<String>,
    /// Where it keeps the template's VolumeAttributesClass, if it has a place for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attributes_class: Option<String>,
}

/// A value in the owner's resource that pauses it: a field (`/spec/paused`), a label or an
/// annotation (`/metadata/labels/rabbitmq.com~1pauseReconciliation`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PauseSwitch {
    pub path: String,
    /// The value that pauses it.
    pub value: serde_json::Value,
}

/// The entry for `group`/`kind` in `table`, the admin's entries first (they may replace a built-in).
pub fn find<'a>(table: &'a [OwnerKind], group: &str, kind: &str) -> Option<&'a OwnerKind> {
    table
        .iter()
        .find(|entry| entry.group == group && entry.kind == kind)
}

/// The group of an `apiVersion` (`monitoring.coreos.com/v1` → `monitoring.coreos.com`, `v1` → ``).
pub fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(group, _version)| group)
}
