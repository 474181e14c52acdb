//! Another project's operator (prometheus-operator, ECK's) as a child process of the test, watching
//! only the test's namespace, on the control plane's admin kubeconfig: the real owners of the
//! StatefulSets in tests of owned StatefulSets (#58). Tests kill it and start it again (as a crashed
//! or rescheduled operator); dropped, it is killed. Its binary is the test bed's
//! (`scripts/k8s/build.sh`).

use crate::paths::state_dir;
use crate::{Error, api_server, cluster};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};
use tokio::sync::Mutex;

/// How long a starting operator may take to answer on its port (it first checks the API server's
/// version, discovery and its permissions).
const READY_SECONDS: u64 = 60;

/// Which operator, and how it is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    /// prometheus-operator, its config reloader run from this image.
    Prometheus { config_reloader: &'static str },
    /// ECK's operator (`elastic-operator manager`).
    Eck,
}

impl Operator {
    /// Its binary in the test bed, and the prefix of its log and pid files.
    fn name(self) -> &'static str {
        match self {
            Operator::Prometheus { .. } => "prometheus-operator",
            Operator::Eck => "eck-operator",
        }
    }

    /// Its arguments: the one namespace it watches, and the loopback port it answers on.
    fn args(self, namespace: &str, port: u16) -> Vec<String> {
        match self {
            Operator::Prometheus { config_reloader } => vec![
                format!("--namespaces={namespace}"),
                format!("--prometheus-config-reloader={config_reloader}"),
                format!("--web.listen-address=127.0.0.1:{port}"),
            ],
            Operator::Eck => vec![
                "manager".into(),
                // It keeps a ConfigMap of its own there: the test's namespace, so parallel tests'
                // operators share nothing.
                format!("--operator-namespace={namespace}"),
                format!("--namespaces={namespace}"),
                "--enable-leader-election=false".into(),
                "--disable-telemetry".into(),
                "--metrics-host=127.0.0.1".into(),
                format!("--metrics-port={port}"),
                // Nothing answers for Elasticsearch (a stand-in): give up on it quickly.
                "--elasticsearch-client-timeout=5s".into(),
            ],
        }
    }

    /// What it serves once its controllers are set up (ECK serves no health check: its metrics
    /// server starts with its manager).
    fn ready_path(self) -> &'static str {
        match self {
            Operator::Prometheus { .. } => "/healthz",
            Operator::Eck => "/metrics",
        }
    }
}

/// A running operator; dropped, it is killed.
pub struct OperatorProcess {
    operator: Operator,
    namespace: String,
    binary: PathBuf,
    kubeconfig: PathBuf,
    port: u16,
    log: PathBuf,
    pid_file: PathBuf,
    running: Mutex<Option<Child>>,
}

impl OperatorProcess {
    /// Starts `operator` for `namespace` (it sees and makes objects there only) and waits until it
    /// answers on its port, which it does once its controllers are set up.
    pub async fn start(operator: Operator, namespace: &str) -> Result<OperatorProcess, Error> {
        let kubeconfig = cluster::kubeconfig_path().await?;
        on_loopback(&kubeconfig).await?;
        let name = operator.name();
        let process = OperatorProcess {
            operator,
            namespace: namespace.to_string(),
            binary: cluster::test_bed_file(name).await?,
            kubeconfig,
            port: api_server::free_port()?,
            log: state_dir().join("logs").join(format!("{name}-{namespace}.log")),
            // `scripts/testenv down` stops every `<name>-*` a killed test left.
            pid_file: state_dir().join("pids").join(format!("{name}-{namespace}.pid")),
            running: Mutex::new(None),
        };
        process.start_again().await?;
        Ok(process)
    }

    /// Its log (both streams, every start appended), under the run's logs dir.
    pub fn log(&self) -> &Path {
        &self.log
    }

    /// SIGKILLs it, as a crashed operator: no graceful end of anything it was doing.
    pub async fn kill(&self) -> Result<(), Error> {
        if let Some(mut child) = self.running.lock().await.take() {
            child
                .kill()
                .await
                .map_err(|e| Error::io(format!("killing {}", self.operator.name()), e))?;
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
                .map_err(|e| Error::io(self.operator.name(), e))?
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
        let args = self.operator.args(&self.namespace, self.port);
        writeln!(log, "--- starting {} {}", self.binary.display(), args.join(" "))
            .map_err(|e| Error::io(self.log.display(), e))?;
        let errors = log.try_clone().map_err(|e| Error::io(self.log.display(), e))?;
        let resolver = loopback_resolver()?;
        // In a mount namespace of its own whose /etc/resolv.conf names only loopback, where nothing
        // answers: ECK asks for its Elasticsearch pods by their cluster DNS names, which no resolver
        // here knows, and a test sends nothing off this machine. (unshare and sh exec it: the pid
        // recorded is the operator's.)
        let mut command = Command::new("unshare");
        command
            .args(["--mount", "--propagation", "private", "--", "/bin/sh", "-c"])
            .arg("mount --bind \"$0\" /etc/resolv.conf && exec \"$@\"")
            .arg(&resolver)
            .arg(&self.binary)
            .args(&args)
            // Nothing from the test's environment: ECK reads any variable named as one of its
            // flags (`NAMESPACES`), and the control plane is on loopback, no proxy in between.
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            // (They take the kubeconfig from the environment only: no flag for one.)
            .env("KUBECONFIG", &self.kubeconfig)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(errors)
            .kill_on_drop(true);
        let child = command.spawn().map_err(|e| Error::io(self.binary.display(), e))?;
        if let Some(pid) = child.id() {
            std::fs::write(&self.pid_file, pid.to_string())
                .map_err(|e| Error::io(self.pid_file.display(), e))?;
        }
        Ok(child)
    }

    /// Polls its ready path until it answers 200; fails at once with its log when it exits.
    async fn wait_ready(&self, child: &mut Child) -> Result<(), Error> {
        let deadline = Instant::now() + Duration::from_secs(READY_SECONDS);
        loop {
            if let Some(status) = child.try_wait().map_err(|e| Error::io(self.operator.name(), e))? {
                return Err(Error::Exited {
                    what: format!("{} for {}", self.operator.name(), self.namespace),
                    status: status.to_string(),
                    log: self.log.display().to_string(),
                });
            }
            if answers(self.port, self.operator.ready_path()).await {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(Error::Timeout {
                    what: format!(
                        "{} for {} to serve {}",
                        self.operator.name(),
                        self.namespace,
                        self.operator.ready_path()
                    ),
                    seconds: READY_SECONDS,
                });
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

impl Drop for OperatorProcess {
    fn drop(&mut self) {
        // (kill_on_drop ends the process with the Child.)
        let _ = std::fs::remove_file(&self.pid_file);
    }
}

/// A resolv.conf naming only 127.0.0.1 (one try, one second): a lookup fails at once.
fn loopback_resolver() -> Result<PathBuf, Error> {
    let path = state_dir().join("loopback-resolv.conf");
    std::fs::write(&path, "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n")
        .map_err(|e| Error::io(path.display(), e))?;
    Ok(path)
}

/// Whether `GET path` on 127.0.0.1:`port` answers 200 (HTTP/1.0: one request, then closed).
async fn answers(port: u16, path: &str) -> bool {
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.ok()?;
        stream
            .write_all(format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").as_bytes())
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
