//! ExtendedStatefulSet decisions: the StatefulSets it runs (one per zone), the digest of what its
//! pods run (template and referenced configuration), and the rollout of a new version (canaries,
//! then the rest, each watched). Pure: the operator reads the cluster and applies the result.

pub mod action;
pub mod admission;
pub mod blue_green;
pub mod config;
pub mod decision;
pub mod desired;
pub mod existing;
pub mod handover;
pub mod hooks;
pub mod observed;
pub mod plan;
pub mod rollout;
pub mod status;
pub mod versions;
pub mod volumes;
pub mod zones;
