//! Test support for Ferry: the local control plane (`scripts/testenv`), a fresh namespace per test,
//! and the stand-ins for what a kubelet and a CSI driver would do on fake nodes:
//! - [`storage`]: a hostPath dynamic provisioner and resizer for three test StorageClasses;
//! - [`executor`]: runs pods labelled as Ferry mover pods as real local processes;
//! - [`kubelet`]: serves those pods' logs to the API server (`kubectl logs`, `pods/log`).
//!
//! Tests use [`cluster::client`] and [`namespace::TestNamespace`]; the agent binary runs the rest.

pub mod cluster;
pub mod error;
pub mod executor;
pub mod fixtures;
pub mod kubelet;
pub mod namespace;
pub mod paths;
pub mod quantity;
pub mod storage;
pub mod wait;

pub use cluster::{client, kubectl};
pub use error::Error;
pub use namespace::TestNamespace;
pub use wait::wait_until;

/// Provisioner name of the test StorageClasses.
pub const PROVISIONER: &str = "testenv.ferry.dev/hostpath";
/// StorageClass that cannot be expanded (grow means copy).
pub const CLASS_FIXED: &str = "ferry-fixed";
/// StorageClass that expands online (the default class).
pub const CLASS_EXPANDABLE: &str = "ferry-expandable";
/// StorageClass that expands only when the pod restarts (`FileSystemResizePending`).
pub const CLASS_OFFLINE_EXPAND: &str = "ferry-offline-expand";
/// Label that marks mover pods; kwok leaves them to the executor.
pub const MOVER_LABEL: &str = "ferry.dev/mover";
