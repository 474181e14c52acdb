//! Test support for Ferry: the local control plane (`scripts/testenv`), a fresh namespace per test,
//! and the stand-ins for what a kubelet and a CSI driver would do:
//! - [`storage`]: a dynamic provisioner and resizer for the test StorageClasses (hostPath
//!   directories for the kwok nodes, real file systems of the requested size ([`block`]) for the
//!   real node);
//! - [`executor`]: runs pods labelled as Ferry mover pods on kwok nodes as real local processes;
//! - [`kubelet`]: serves those pods' logs to the API server (`kubectl logs`, `pods/log`).
//!
//! Tests use [`cluster::client`] and [`namespace::TestNamespace`]; the agent binary runs the rest.

pub mod api_path;
pub mod api_server;
pub mod block;
pub mod chart;
pub mod cluster;
pub mod disruption;
pub mod eck;
pub mod error;
pub mod executor;
pub mod fixtures;
pub mod kubelet;
pub mod namespace;
pub mod network_cut;
pub mod operator_process;
pub mod paths;
pub mod processes;
pub mod prometheus_operator;
pub mod storage;
mod test_bed_crds;
pub mod volume_dir;
pub mod wait;
pub mod workload;

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
/// Provisioner name of [`CLASS_LOCAL`] (the test agent: real file systems of the requested size).
pub const BLOCK_PROVISIONER: &str = "testenv.ferry.dev/block";
/// Real-node StorageClass of `local` PVs, served by the test agent rather than by CSI, because users
/// run Ferry on `local` PVs too; grows online (disk and file system grow while mounted).
pub const CLASS_LOCAL: &str = "ferry-local";
/// Real-node CSI StorageClass of [`CSI_DRIVER`]: XFS, grows online (disk and file system grow while
/// mounted).
pub const CLASS_BLOCK: &str = "ferry-block";
/// Real-node CSI StorageClass of [`CSI_DRIVER`]: ext4, cannot be expanded.
pub const CLASS_BLOCK_FIXED: &str = "ferry-block-fixed";
/// A second class like [`CLASS_BLOCK_FIXED`] of the same driver: a move between two classes of one
/// driver, which a CSI clone can make (the driver clones ext4 only at the source's size).
pub const CLASS_BLOCK_FIXED_OTHER: &str = "ferry-block-fixed-other";
/// The CSI driver of the real node (crates/csi-driver, run by scripts/testenv behind the upstream
/// sidecars): file systems on loop devices, attached without VolumeAttachments.
pub const CSI_DRIVER: &str = "block.csi.ferry.dev";
/// The same driver under a second name whose CSIDriver says `attachRequired: true`, so every volume
/// goes through a VolumeAttachment (the upstream external-attacher).
pub const CSI_ATTACH_DRIVER: &str = "attach.csi.ferry.dev";
/// The zone of [`REAL_NODE`] (each real node is alone in its zone; no kwok node is in any of them).
pub const REAL_NODE_ZONE: &str = "zone-r";
/// The real nodes (run by scripts/lib/real-node.sh), each in a zone of its own: [`REAL_ZONES`].
pub const REAL_NODES: [&str; 3] = ["node-real", "node-real-2", "node-real-3"];
/// The real nodes' zones, in the order of [`REAL_NODES`]. A volume of a CSI class lives in one.
pub const REAL_ZONES: [&str; 3] = ["zone-r", "zone-r2", "zone-r3"];
/// Real-node CSI StorageClass whose volumes grow only while no pod mounts them: the claim waits until
/// its pod is gone, then sits at `FileSystemResizePending` until the pod starts again.
pub const CLASS_BLOCK_OFFLINE: &str = "ferry-block-offline";
/// The VolumeSnapshotClass of [`CSI_DRIVER`] (`scripts/lib/csi.sh`; deletion policy Delete).
pub const SNAPSHOT_CLASS: &str = "ferry-block-snapshots";
/// VolumeAttributesClasses of [`CSI_DRIVER`]: its mutable parameter `readOnly` false and true
/// (`scripts/lib/csi.sh`).
pub const ATTRIBUTES_WRITABLE: &str = "ferry-block-writable";
pub const ATTRIBUTES_READ_ONLY: &str = "ferry-block-read-only";
/// Real-node CSI StorageClass of [`CSI_DRIVER`] whose volumes are bound to the node they were made
/// on (`binding: node`, topology key `kubernetes.io/hostname`: the local-PV case); XFS, grows online.
pub const CLASS_BLOCK_NODE: &str = "ferry-block-node";
/// Real-node CSI StorageClass of [`CSI_ATTACH_DRIVER`] (grows online).
pub const CLASS_BLOCK_ATTACH: &str = "ferry-block-attach";
/// The first of the [`REAL_NODES`] run by a real kubelet and containerd (each tainted
/// `ferry.dev/real-node=true:NoSchedule`); the `ferry-local` class's volumes live there.
pub const REAL_NODE: &str = "node-real";
/// Label and taint key of the real node.
pub const REAL_NODE_KEY: &str = "ferry.dev/real-node";
/// Label that marks mover pods; kwok leaves them to the executor.
pub const MOVER_LABEL: &str = "ferry.dev/mover";
