//! The prometheus-operator binary as a child process of the test, watching only the test's
//! namespace, on the control plane's admin kubeconfig. Tests kill it and start it again (as a
//! crashed or rescheduled operator); dropped, it is killed.

use super::PROMETHEUS_IMAGE;
use crate::paths::state_dir;
use crate::{Error, api_server, cluster};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};
use tokio::sync::Mutex;

/// How long a starting operator may take to answer `/healthz` (it first checks the API server's
/// version, discovery and its permissions).
const READY_SECONDS: u64 = 60;

/// A running prometheus-operator; dropped, it is killed.
pub struct PrometheusOperator {
    namespace: String,
    binary: PathBuf,
    kubeconfig: PathBuf,
    port: u16,
    log: PathBuf,
    pid_file: PathBuf,
    running: Mutex<Option<Child>>,
}

impl PrometheusOperator {
    /// Starts it for `namespace` (its `--namespaces`: it sees and makes objects there only) and
    /// waits until it serves `/healthz`, which it does once its controllers are set up.
    pub async fn start(namespace: &str) -> Result<PrometheusOperator, Error> {
        let kubeconfig = cluster::kubeconfig_path().await?;
        on_loopback(&kubeconfig).await?;
        let operator = PrometheusOperator {
            namespace: namespace.to_string(),
            binary: cluster::test_bed_file("prometheus-operator").await?,
            kubeconfig,
            port: api_server::free_port()?,
            log: state_dir()
                .join("logs")
                .join(format!("prometheus-operator-{namespace}.log")),
            // `scripts/testenv down` stops every `prometheus-operator-*` a killed test left.
            pid_file: state_dir()
                .join("pids")
                .join(format!("prometheus-operator-{namespace}.pid")),
            running: Mutex::new(None),
        };
        operator.start_again().await?;
        Ok(operator)
    }

    /// Its log (both streams, every start appended), under the run's logs dir.
    pub fn log(&self) -> &Path {
        &self.log
    }

    /// `http://127.0.0.1:<port>/metrics`, its metrics.
    pub fn metrics_url(&self) -> String {
        format!("http://127.0.0.1:{}/metrics", self.port)
    }

    /// SIGKILLs it, as a crashed operator: no graceful end of anything it was doing.
    pub async fn kill(&self) -> Result<(), Error> {
        if let Some(mut child) = self.running.lock().await.take() {
            child
                .kill()
                .await
                .map_err(|e| Error::io("killing prometheus-operator", e))?;
        }
        let _ = std::fs::remove_file(&self.pid_file);
        Ok(())
    }

    /// Starts it (again, after [`Self::kill`]; not a second one while it runs) and waits until it
    /// is ready.
    pub async fn start_again(&self) -> Result<(), Error> {
        let mut running = self.running.lock().await;
        // (One that ended on its own is started again too.)
        let ended = match running.as_mut() {
            Some(child) => child
                .try_wait()
                .map_err(|e| Error::io("prometheus-operator", e))?
                .is_some(),
            None => true,
        };
        if ended {
            *running = Some(self.spawn()?);
        }
        if let Some(child) = running.as_mut() {
            self.wait_ready(child).await?;
        }
        Ok(())
    }

    fn spawn(&self) -> Result<Child, Error> {
        let mut log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(|e| Error::io(self.log.display(), e))?;
        let args = self.args();
        writeln!(log, "--- starting {} {}", self.binary.display(), args.join(" "))
            .map_err(|e| Error::io(self.log.display(), e))?;
        let errors = log.try_clone().map_err(|e| Error::io(self.log.display(), e))?;
        let mut command = Command::new(&self.binary);
        command
            .args(&args)
            // (It takes its kubeconfig from the environment only: it has no flag for one.)
            .env("KUBECONFIG", &self.kubeconfig)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(errors)
            .kill_on_drop(true);
        // Nothing but the control plane on loopback: no proxy in between.
        for proxy in [
            "HTTPS_PROXY",
            "https_proxy",
            "HTTP_PROXY",
            "http_proxy",
            "ALL_PROXY",
            "all_proxy",
        ] {
            command.env_remove(proxy);
        }
        let child = command.spawn().map_err(|e| Error::io(self.binary.display(), e))?;
        if let Some(pid) = child.id() {
            std::fs::write(&self.pid_file, pid.to_string())
                .map_err(|e| Error::io(self.pid_file.display(), e))?;
        }
        Ok(child)
    }

    fn args(&self) -> Vec<String> {
        vec![
            format!("--namespaces={}", self.namespace),
            // The reloader runs from the image Prometheus runs from (both are in it).
            format!("--prometheus-config-reloader={PROMETHEUS_IMAGE}"),
            format!("--web.listen-address=127.0.0.1:{}", self.port),
        ]
    }

    /// Polls its `/healthz` until it answers 200; fails at once with its log when it exits.
    async fn wait_ready(&self, child: &mut Child) -> Result<(), Error> {
        let deadline = Instant::now() + Duration::from_secs(READY_SECONDS);
        loop {
            if let Some(status) = child
                .try_wait()
                .map_err(|e| Error::io("prometheus-operator", e))?
            {
                return Err(Error::Exited {
                    what: format!("prometheus-operator for {}", self.namespace),
                    status: status.to_string(),
                    log: self.log.display().to_string(),
                });
            }
            if healthy(self.port).await {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(Error::Timeout {
                    what: format!("prometheus-operator for {} to serve /healthz", self.namespace),
                    seconds: READY_SECONDS,
                });
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

impl Drop for PrometheusOperator {
    fn drop(&mut self) {
        // (kill_on_drop ends the process with the Child.)
        let _ = std::fs::remove_file(&self.pid_file);
    }
}

/// Whether `GET /healthz` on 127.0.0.1:`port` answers 200 (HTTP/1.0: one request, then closed).
async fn healthy(port: u16) -> bool {
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.ok()?;
        stream
            .write_all(b"GET /healthz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            .await
            .ok()?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.ok()?;
        Some(status_is_ok(&answer))
    };
    tokio::time::timeout(Duration::from_secs(2), exchange)
        .await
        .ok()
        .flatten()
        .unwrap_or(false)
}

fn status_is_ok(answer: &[u8]) -> bool {
    let status_line = answer.split(|b| *b == b'\n').next().unwrap_or_default();
    let status_line = String::from_utf8_lossy(status_line);
    status_line.split_whitespace().nth(1) == Some("200")
}

/// Refuses a kubeconfig whose API server is not on this machine's loopback: the operator under
/// test must reach nothing else.
async fn on_loopback(kubeconfig: &Path) -> Result<(), Error> {
    let config = cluster::config_via(None).await?;
    let host = config.cluster_url.host().unwrap_or_default();
    let loopback = host == "localhost"
        || host
            .trim_matches(['[', ']'])
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if loopback {
        Ok(())
    } else {
        Err(Error::Setup(format!(
            "{}: the API server {} is not on loopback",
            kubeconfig.display(),
            config.cluster_url
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_200_status_line_is_healthy() {
        assert!(status_is_ok(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n"));
        assert!(!status_is_ok(b"HTTP/1.0 404 Not Found\r\n\r\n"));
        assert!(!status_is_ok(b""));
    }
}
