//! `kubectl-ferry`: the kubectl plugin of Ferry.

use clap::Parser;
use kubectl_ferry::{Cli, commands};

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return std::process::ExitCode::from(1);
        }
    };
    let code = runtime.block_on(commands::run(cli));
    std::process::ExitCode::from(code.as_u8())
}
