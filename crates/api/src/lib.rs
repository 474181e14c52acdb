//! ferry-api: Ferry's custom resources, the annotation and label names it uses, and validation that
//! needs no cluster. No I/O lives here.

#[cfg(test)]
mod crd_tests;
pub mod crds;
pub mod extended_stateful_set;
pub mod listed;
pub mod maintenance_window;
pub mod names;
pub mod quantity;
mod schema;
pub mod volume_autoscaler;
pub mod volume_migration;
pub mod volume_resize;

pub use extended_stateful_set::{
    ExtendedStatefulSet, ExtendedStatefulSetSpec, ExtendedStatefulSetStatus, HandedVolume, Handover,
    RequestedVolume, Scaling, StatefulSetTemplate, TemplateMetadata, UnknownUpdateStep, UpdateStep,
    UpdateStrategy, UpdateType, ZoneStatus,
};
pub use maintenance_window::{MaintenanceWindow, Weekday};
pub use quantity::{ParseQuantityError, format_bytes, human_bytes, parse_bytes};
pub use volume_autoscaler::{
    AutoResize, AutoscaleStrategy, AutoscaledVolume, AutoscaledVolumeStatus, OwnerTarget, ProviderPreset,
    ReplicaUsage, ShrinkPolicy, UsageSample, VolumeAutoscaler, VolumeAutoscalerSpec, VolumeAutoscalerStatus,
};
pub use volume_migration::{
    MigratedVolume, MigrationFailurePolicy, MigrationItem, MigrationItemPhase, MigrationPhase,
    NotHandledClaim, VolumeMigration, VolumeMigrationSpec, VolumeMigrationStatus,
};
pub use volume_resize::*;
