//! A small CSI driver for Ferry's tests, run on the real node behind the unmodified upstream sidecars
//! (external-provisioner, -resizer, -attacher, -snapshotter). Its volumes are real: each is a file
//! system on a loop device over a sparse file, so writing past a claim's size fails with ENOSPC,
//! `df` in the pod shows the claim's size, growth really grows the file system, and the kubelet
//! reads usage through `NodeGetVolumeStats`.
//!
//! The upstream reference driver (csi-driver-host-path) was not enough: its file-system volumes are
//! plain directories (no size limit, usage is the host disk's) and its expansion only changes a
//! number. See docs/testenv.md.
//!
//! Shape: [`volume`] holds the pure decisions (sizes, parameters, compatibility), [`placement`]
//! where volumes live (a zone, or a node: see its docs), [`store`] the
//! volume records on disk, [`disk`] the loop devices, file systems and mounts, and the services
//! ([`identity`], [`controller`], [`node`]) turn gRPC calls into those. The kubelet learns of the
//! driver from scripts/csi-registrar (the kubelet dials its plugin registry with the socket path as
//! HTTP/2 :authority, which h2 under tonic refuses).
//! Every call may be repeated (after a crash of the driver, a sidecar or the kubelet): each step
//! looks at what is already there first, and a restarted driver finds its volumes from its state
//! directory and the kernel's loop devices and mounts.

pub mod controller;
pub mod disk;
pub mod driver;
pub mod error;
pub mod identity;
pub mod mountinfo;
pub mod node;
pub mod placement;
pub mod proto;
pub mod server;
pub mod snapshots;
pub mod store;
pub mod volume;

pub use error::Error;
