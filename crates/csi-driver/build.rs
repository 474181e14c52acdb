//! Generates the gRPC code of the CSI spec (proto/csi.proto, v1.12.0 from the Go module
//! github.com/container-storage-interface/spec). Needs `protoc` (Debian's protobuf-compiler;
//! scripts/install-deps installs it).
fn main() -> Result<(), Box<dyn std::error::Error>> {
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_protos(&["proto/csi.proto"], &["proto"])?;
    Ok(())
}
