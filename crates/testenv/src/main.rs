//! `ferry-testenv`: the test agent that `scripts/testenv up` runs next to the control plane.

use clap::{Parser, Subcommand};
use ferry_testenv::{Error, executor, kubelet, storage};
use kube::config::{KubeConfigOptions, Kubeconfig};
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Parser)]
#[command(about = "Ferry's test agent: hostPath storage driver and mover-pod executor")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the path of the vendored etcd binary.
    EtcdPath,
    /// Run the storage driver and the mover-pod executor.
    Agent {
        #[arg(long)]
        kubeconfig: PathBuf,
        /// Directory under which PV directories are made.
        #[arg(long)]
        volumes_dir: PathBuf,
        /// Directory under which the real node's disks (loop-mounted ext4) are made and mounted.
        #[arg(long)]
        disks_dir: PathBuf,
        /// Scratch space for mover pods (termination logs, output, emptyDirs).
        #[arg(long)]
        work_dir: PathBuf,
        /// The ferry-mover binary to run for mover pods whose command is `ferry-mover`.
        #[arg(long, env = "FERRY_MOVER_BIN")]
        mover_bin: Option<PathBuf>,
        /// Serve the pods' logs here, as the fake nodes' kubelet (needs the two TLS files).
        #[arg(long, requires_all = ["tls_cert_file", "tls_key_file"])]
        kubelet_address: Option<SocketAddr>,
        #[arg(long)]
        tls_cert_file: Option<PathBuf>,
        #[arg(long)]
        tls_key_file: Option<PathBuf>,
    },
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    match run(Cli::parse()).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("ferry-testenv: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> Result<(), Error> {
    match cli.command {
        Command::EtcdPath => {
            let Ok(path) = etcd_bin_vendored_linux_amd64::etcd_bin_path();
            println!("{}", path.display());
            Ok(())
        }
        Command::Agent {
            kubeconfig,
            volumes_dir,
            disks_dir,
            work_dir,
            mover_bin,
            kubelet_address,
            tls_cert_file,
            tls_key_file,
        } => {
            let config = kube::Config::from_custom_kubeconfig(
                Kubeconfig::read_from(&kubeconfig)?,
                &KubeConfigOptions::default(),
            )
            .await?;
            let client = kube::Client::try_from(config)?;
            let logs = async {
                match (kubelet_address, tls_cert_file, tls_key_file) {
                    (Some(address), Some(cert), Some(key)) => {
                        kubelet::serve(client.clone(), work_dir.clone(), address, cert, key).await
                    }
                    _ => Ok(()),
                }
            };
            // The first part to fail ends the agent, so `scripts/testenv` sees it.
            tokio::try_join!(
                storage::run(client.clone(), volumes_dir, disks_dir),
                executor::run(client.clone(), work_dir.clone(), mover_bin),
                logs
            )
            .map(|_| ())
        }
    }
}
