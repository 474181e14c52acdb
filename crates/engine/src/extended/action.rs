//! The writes a plan asks for, rolling or blue/green: the operator carries each out with one `match`.

use super::handover::HandoverAction;
use ferry_api::VolumeResizeSpec;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::batch::v1::Job;

/// One write the plan asks for, in the order they are listed.
#[derive(Debug, Clone, PartialEq)]
pub enum ExtendedAction {
    /// A changed volume claim template of `stateful_set`: its VolumeResize (the StatefulSet is
    /// left alone until it is done).
    CreateVolumeResize {
        stateful_set: String,
        name: String,
        spec: Box<VolumeResizeSpec>,
    },
    /// The current version's pre- or post-update Job.
    CreateHookJob { job: Box<Job> },
    /// A desired StatefulSet, applied server-side: its partition, its live volume claim templates
    /// and the version annotations set.
    ApplyStatefulSet { object: Box<StatefulSet> },
    /// The StatefulSet of a zone no longer listed: scaled to 0 (its controller stops the pods
    /// highest ordinal first).
    DrainStatefulSet { name: String },
    /// A drained one with no pod left: deleted (its claims stay, as with any StatefulSet).
    DeleteStatefulSet { name: String },
    /// Blue/green: the ordinals a version's StatefulSet runs (`ordinals.start`, `replicas`).
    ShapeStatefulSet { name: String, start: i32, replicas: i32 },
    /// Blue/green: one write of a replica's move between versions.
    Handover(HandoverAction),
    /// Blue/green: the Service's selector label `ferry.dev/version` set (`None`: removed).
    SelectVersion {
        service: String,
        version: Option<String>,
    },
}
