//! A second kube-apiserver on the control plane's etcd, for one test to kill and start again: the
//! operator under test talks only to it, so a restart drops that operator's connections and
//! watches and its next lists and watches meet a fresh API server (empty watch cache, resource
//! versions it must relist past), as when the API server of a real cluster restarts, while the
//! other tests on the shared control plane go on with the first API server. It runs the first
//! one's own command line, on another port; several API servers on one etcd is how highly
//! available control planes run.

use crate::paths::state_dir;
use crate::{Error, cluster, wait_until};
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use tokio::process::{Child, Command};
use tokio::sync::Mutex;

/// The second API server; dropped, it is killed.
pub struct ApiServerReplica {
    command: Vec<OsString>,
    port: u16,
    pid_file: PathBuf,
    log: PathBuf,
    running: Mutex<Option<Child>>,
}

/// How long a starting API server may take to be ready (its post-start hooks, CRDs and caches).
const READY_SECONDS: u64 = 120;

impl ApiServerReplica {
    /// Starts it on a free loopback port and waits until it is ready.
    pub async fn start() -> Result<ApiServerReplica, Error> {
        let pids = state_dir().join("pids");
        let first = pids.join("apiserver.pid");
        let pid = std::fs::read_to_string(&first).map_err(|e| Error::io(first.display(), e))?;
        let cmdline = format!("/proc/{}/cmdline", pid.trim());
        let cmdline = std::fs::read(&cmdline).map_err(|e| Error::io(&cmdline, e))?;
        let port = free_port()?;
        let command = on_port(&cmdline, port)?;
        let replica = ApiServerReplica {
            command,
            port,
            // `scripts/testenv` stops every `apiserver-*` it finds, should this test be killed.
            pid_file: pids.join(format!("apiserver-{port}.pid")),
            log: state_dir().join("logs").join(format!("apiserver-{port}.log")),
            running: Mutex::new(None),
        };
        replica.start_again().await?;
        Ok(replica)
    }

    /// `https://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("https://{}", self.address())
    }

    /// `127.0.0.1:<port>`.
    pub fn address(&self) -> std::net::SocketAddr {
        std::net::SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// SIGKILLs it, as a crashed or evicted API server: no graceful end of its watches.
    pub async fn kill(&self) -> Result<(), Error> {
        if let Some(mut child) = self.running.lock().await.take() {
            child
                .kill()
                .await
                .map_err(|e| Error::io("killing the API server", e))?;
        }
        let _ = std::fs::remove_file(&self.pid_file);
        Ok(())
    }

    /// Starts it (again) and waits until it answers `/readyz`.
    pub async fn start_again(&self) -> Result<(), Error> {
        let mut running = self.running.lock().await;
        if running.is_none() {
            let log = std::fs::File::create(&self.log).map_err(|e| Error::io(self.log.display(), e))?;
            let errors = log.try_clone().map_err(|e| Error::io(self.log.display(), e))?;
            let (program, args) = self
                .command
                .split_first()
                .ok_or_else(|| Error::Setup("the API server's command line is empty".into()))?;
            let child = Command::new(program)
                .args(args)
                .stdin(Stdio::null())
                .stdout(log)
                .stderr(errors)
                .kill_on_drop(true)
                .spawn()
                .map_err(|e| Error::io("starting a second kube-apiserver", e))?;
            if let Some(pid) = child.id() {
                std::fs::write(&self.pid_file, pid.to_string())
                    .map_err(|e| Error::io(self.pid_file.display(), e))?;
            }
            *running = Some(child);
        }
        drop(running);
        let client = self.admin_client().await?;
        wait_until("the second API server to be ready", READY_SECONDS, || async {
            let request = http::Request::get("/readyz").body(Vec::new()).ok()?;
            client
                .request_text(request)
                .await
                .ok()
                .filter(|body| body.trim() == "ok")
        })
        .await
        .map(drop)
    }

    /// The admin kubeconfig's client, sent to this API server.
    async fn admin_client(&self) -> Result<kube::Client, Error> {
        let config = cluster::config_via(Some(&self.url())).await?;
        Ok(kube::Client::try_from(config)?)
    }
}

impl Drop for ApiServerReplica {
    fn drop(&mut self) {
        // (kill_on_drop ends the process with the Child.)
        let _ = std::fs::remove_file(&self.pid_file);
    }
}

/// The first API server's command line (NUL-separated, from /proc) with `--secure-port` set to
/// `port`.
fn on_port(cmdline: &[u8], port: u16) -> Result<Vec<OsString>, Error> {
    let mut args: Vec<String> = cmdline
        .split(|b| *b == 0)
        .filter(|arg| !arg.is_empty())
        .map(|arg| String::from_utf8_lossy(arg).into_owned())
        .collect();
    let flag = args
        .iter()
        .position(|arg| arg == "--secure-port" || arg.starts_with("--secure-port="))
        .ok_or_else(|| Error::Setup("the API server's command line has no --secure-port".into()))?;
    if args[flag].contains('=') {
        args[flag] = format!("--secure-port={port}");
    } else if flag + 1 < args.len() {
        args[flag + 1] = port.to_string();
    } else {
        return Err(Error::Setup("--secure-port without a value".into()));
    }
    Ok(args.into_iter().map(OsString::from).collect())
}

/// A port free on 127.0.0.1 now (the kernel's pick; taken by whoever binds it first).
pub(crate) fn free_port() -> Result<u16, Error> {
    let listener =
        std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| Error::io("finding a free port", e))?;
    let port = listener
        .local_addr()
        .map_err(|e| Error::io("finding a free port", e))?
        .port();
    Ok(port)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_port_is_replaced_in_either_spelling() {
        let spaced = "/bin/kube-apiserver --secure-port 6443 --bind-address 127.0.0.1 ".replace(' ', "\0");
        let spaced = spaced.as_bytes();
        let args = on_port(spaced, 7000).unwrap();
        assert_eq!(
            args[1..3],
            [OsString::from("--secure-port"), OsString::from("7000")]
        );
        assert_eq!(args.len(), 5);
        let joined = b"kube-apiserver\0--secure-port=6443\0";
        assert_eq!(
            on_port(joined, 7000).unwrap()[1],
            OsString::from("--secure-port=7000")
        );
        assert!(on_port(b"kube-apiserver\0", 7000).is_err());
    }
}
