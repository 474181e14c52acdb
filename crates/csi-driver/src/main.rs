//! `ferry-csi`: one instance of the test CSI driver (see the library docs).

use clap::Parser;
use ferry_csi_driver::server::{Config, serve};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "ferry-csi",
    about = "A CSI driver for Ferry's tests: real file systems on loop devices"
)]
struct Cli {
    /// The CSI driver name, e.g. block.csi.ferry.dev.
    #[arg(long)]
    driver_name: String,
    /// The unix socket the CSI services listen on (the sidecars' and the kubelet's --csi-address).
    #[arg(long)]
    endpoint: PathBuf,
    /// The node this driver serves (the kubelet's node name).
    #[arg(long)]
    node_id: String,
    /// The zone of that node (topology.kubernetes.io/zone of every volume).
    #[arg(long)]
    zone: String,
    /// Where volume records and images live.
    #[arg(long)]
    state_dir: PathBuf,
    /// Volumes must be attached (ControllerPublishVolume) before the node stages them.
    #[arg(long)]
    attach_required: bool,
    /// The largest volume in bytes (default: the size of the file system holding --state-dir).
    #[arg(long)]
    max_volume_bytes: Option<u64>,
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let cli = Cli::parse();
    let config = Config {
        name: cli.driver_name,
        node_id: cli.node_id,
        zone: cli.zone,
        attach_required: cli.attach_required,
        max_volume_bytes: cli.max_volume_bytes,
        state_dir: cli.state_dir,
    };
    match serve(config, &cli.endpoint).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!(%error, "ferry-csi stopped");
            std::process::ExitCode::FAILURE
        }
    }
}
