//! `ferry`: the Ferry operator binary.

use clap::{Parser, Subcommand, ValueEnum};
use ferry_operator::{Error, Settings, crd, run};
use std::net::SocketAddr;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "ferry",
    version,
    about = "Ferry: safe StatefulSet volume changes on Kubernetes"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the operator (uses in-cluster config or KUBECONFIG).
    Run {
        /// Watch only this namespace.
        #[arg(long, env = "FERRY_NAMESPACE")]
        namespace: Option<String>,
        /// Address for /healthz, /readyz and /metrics.
        #[arg(long, env = "FERRY_HTTP_ADDR", default_value = "0.0.0.0:8080")]
        http_addr: SocketAddr,
        #[arg(long, env = "FERRY_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
        log_format: LogFormat,
        /// Image for mover pods (default: the operator's own image).
        #[arg(long, env = "FERRY_MOVER_IMAGE")]
        mover_image: Option<String>,
    },
    /// Print the CustomResourceDefinitions as YAML.
    Crd,
}

#[derive(Clone, Copy, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Crd => match crd::all_yaml() {
            Ok(yaml) => {
                print!("{yaml}");
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("ferry: cannot render CRDs: {error}");
                ExitCode::FAILURE
            }
        },
        Command::Run {
            namespace,
            http_addr,
            log_format,
            mover_image,
        } => {
            init_logging(log_format);
            let runtime = match tokio::runtime::Runtime::new() {
                Ok(runtime) => runtime,
                Err(error) => {
                    eprintln!("ferry: cannot start the async runtime: {error}");
                    return ExitCode::FAILURE;
                }
            };
            match runtime.block_on(start(Settings {
                namespace,
                http_addr: Some(http_addr),
                mover_image,
            })) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    tracing::error!(%error, "operator stopped");
                    eprintln!("ferry: {error}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

async fn start(settings: Settings) -> Result<(), Error> {
    let client = kube::Client::try_default()
        .await
        .map_err(|e| Error::Config(e.to_string()))?;
    run(client, settings).await
}

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,kube=warn"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}
