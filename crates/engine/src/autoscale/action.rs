//! What the autoscaler's plan asks the operator to do.

use ferry_api::VolumeResizeSpec;
use k8s_openapi::api::core::v1::Toleration;
use std::collections::BTreeMap;

/// A write the plan asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum AutoscaleAction {
    /// A grow, as an ordinary VolumeResize (one already there under the name is this same grow).
    CreateVolumeResize {
        stateful_set: String,
        name: String,
        spec: Box<VolumeResizeSpec>,
        /// The decision, recorded on the resize (its size before, its reason) so a status
        /// that never recorded the grow can be rebuilt from it.
        annotations: BTreeMap<String, String>,
    },
    /// Measure a replica's volume with a read-only usage pod on `node` (a rescue's measurement:
    /// its pod says its disk is full, and nothing reports the volume).
    MeasureVolume {
        pod: String,
        claim: String,
        node: String,
        /// The StatefulSet's pods': the node may be tainted for them alone.
        tolerations: Vec<Toleration>,
        /// The non-root user the StatefulSet's pods run as, if they name one: the usage pod runs
        /// as it where Pod Security `restricted` admits no root pod.
        run_as: Option<crate::pods::RunAs>,
    },
    /// Delete a usage pod whose measurement is over (stale, failed, or taking too long).
    DeleteMeasurement { pod: String },
}
