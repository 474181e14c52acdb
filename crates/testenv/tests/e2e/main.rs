//! The test environment itself on the real local control plane: the mover-pod executor, the
//! StorageClasses of both kinds of node, and the real node. One test binary.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod claims;
mod cross_node;
mod csi;
mod executor;
mod fresh;
mod prometheus_operator;
mod real_node;
mod real_pods;
mod storage;
