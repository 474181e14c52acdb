//! Every Ferry CustomResourceDefinition, built from the types: what `ferry crd` prints, what the
//! operator waits for at start, and what the tests install and check.

use crate::{ExtendedStatefulSet, VolumeAutoscaler, VolumeMigration, VolumeResize};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

/// Every Ferry CRD, one per kind.
pub fn all() -> [CustomResourceDefinition; 4] {
    [
        VolumeResize::crd(),
        VolumeAutoscaler::crd(),
        ExtendedStatefulSet::crd(),
        VolumeMigration::crd(),
    ]
}
