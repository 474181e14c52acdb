//! The generated gRPC code (build.rs).

#[allow(
    clippy::all,
    clippy::pedantic,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]
pub mod csi {
    tonic::include_proto!("csi.v1");
}
