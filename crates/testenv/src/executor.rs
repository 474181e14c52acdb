//! The mover-pod executor: what a kubelet would do for pods labelled `ferry.dev/mover` on the fake
//! nodes. It runs the pod's (single) container command as a real local process with each volume
//! mount mapped to the directory behind it (PVC → PV → hostPath), then writes the pod status —
//! Running, then Succeeded or Failed with the exit code and the termination message.
//!
//! Limits, because there is no container runtime: paths are mapped by rewriting the command line,
//! the working directory and `FERRY_RESULT_FILE` (so a read-only mount is not enforced); only the
//! first container runs; `restartPolicy` is treated as `Never`. A pod whose container has an exec
//! readiness probe is Ready only once the probe passed (`probe`); any other once it runs.

mod mounts;
mod probe;
mod status;

use crate::{Error, MOVER_LABEL, REAL_NODES};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Container, Namespace, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::runtime::controller::Action;
use kube::runtime::{Controller, watcher};
use kube::{Api, Client, ResourceExt};
pub use mounts::rewrite;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;

const DEFAULT_TERMINATION_PATH: &str = "/dev/termination-log";
/// Namespace annotation whose `K=V,...` pairs are added to mover processes (fault injection).
pub const MOVER_ENV_ANNOTATION: &str = "testenv.ferry.dev/mover-env";
/// The kubelet keeps at most this much of a termination message.
const TERMINATION_MESSAGE_LIMIT: usize = 4096;

struct Executor {
    client: Client,
    work_dir: PathBuf,
    mover_bin: Option<PathBuf>,
    /// Running processes by pod UID; sending on the channel kills the process.
    running: Mutex<HashMap<String, oneshot::Sender<()>>>,
    /// Pods whose process this executor ran to the end: never started again, never declared lost
    /// (a watch event may still show them Running from before their end was recorded).
    finished: Mutex<HashSet<String>>,
}

/// Runs the executor until the watch stream ends.
pub async fn run(client: Client, work_dir: PathBuf, mover_bin: Option<PathBuf>) -> Result<(), Error> {
    std::fs::create_dir_all(&work_dir).map_err(|e| Error::io(work_dir.display(), e))?;
    let executor = Arc::new(Executor {
        client: client.clone(),
        work_dir,
        mover_bin,
        running: Mutex::default(),
        finished: Mutex::default(),
    });
    Controller::new(
        Api::<Pod>::all(client),
        watcher::Config::default().labels(MOVER_LABEL),
    )
    .run(
        reconcile,
        |_, error, _| {
            tracing::warn!(%error, "mover pod reconcile failed; retrying");
            Action::requeue(Duration::from_secs(1))
        },
        executor,
    )
    .for_each(|result| async move {
        if let Err(error) = result {
            tracing::warn!(%error, "mover pod reconcile error");
        }
    })
    .await;
    Ok(())
}

/// `testenv.ferry.dev/mover-env: "K=V,K2=V2"` on the pod's namespace.
async fn injected_environment(client: &Client, pod: &Pod) -> Result<Vec<(String, String)>, Error> {
    let namespace = Api::<Namespace>::all(client.clone())
        .get(&pod.namespace().unwrap_or_default())
        .await?;
    let pairs = namespace
        .annotations()
        .get(MOVER_ENV_ANNOTATION)
        .cloned()
        .unwrap_or_default();
    Ok(pairs
        .split(',')
        .filter_map(|pair| pair.split_once('='))
        .map(|(name, value)| (name.trim().to_string(), value.trim().to_string()))
        .collect())
}

/// The pod's process, started by this executor, runs now.
fn is_running(executor: &Executor, uid: &str) -> bool {
    executor
        .running
        .lock()
        .map(|running| running.contains_key(uid))
        .unwrap_or(false)
}

/// This executor started the pod's process (it runs, or ran to its end).
fn is_known(executor: &Executor, uid: &str) -> bool {
    is_running(executor, uid)
        || executor
            .finished
            .lock()
            .map(|finished| finished.contains(uid))
            .unwrap_or(false)
}

/// Where a pod's process output (its container log) goes.
pub fn output_log(work_dir: &std::path::Path, uid: &str) -> PathBuf {
    work_dir.join(uid).join("output.log")
}

async fn reconcile(pod: Arc<Pod>, executor: Arc<Executor>) -> Result<Action, Error> {
    let uid = pod.uid().unwrap_or_default();
    if pod.metadata.deletion_timestamp.is_some() {
        if let Some(kill) = executor
            .running
            .lock()
            .ok()
            .and_then(|mut running| running.remove(&uid))
        {
            let _ = kill.send(());
        }
        return Ok(Action::await_change());
    }
    // A running pod's downward API files follow its metadata (a final mover's go).
    if is_running(&executor, &uid) {
        mounts::write_downward(&pod, &executor.work_dir.join(&uid))?;
    }
    let phase = pod
        .status
        .as_ref()
        .and_then(|s| s.phase.clone())
        .unwrap_or_default();
    let node = pod.spec.as_ref().and_then(|s| s.node_name.clone());
    // The real nodes' kubelets run their own pods; this stands in for the kwok nodes' kubelet only.
    let scheduled = node
        .as_ref()
        .is_some_and(|node| !REAL_NODES.contains(&node.as_str()));
    if phase == "Succeeded" || phase == "Failed" || !scheduled || is_known(&executor, &uid) {
        return Ok(Action::await_change());
    }
    let pods: Api<Pod> = Api::namespaced(executor.client.clone(), &pod.namespace().unwrap_or_default());
    if phase == "Running" {
        // Started by an earlier executor whose process is gone, as when a node reboots.
        status::finish(
            &pods,
            &pod,
            None,
            137,
            "the executor restarted and lost the process",
        )
        .await?;
        return Ok(Action::await_change());
    }
    start(executor, pod, pods).await
}

/// Starts the pod's first container as a local process, its mounts mapped, its output logged, and
/// records it Running; its end is recorded when it exits.
async fn start(executor: Arc<Executor>, pod: Arc<Pod>, pods: Api<Pod>) -> Result<Action, Error> {
    let uid = pod.uid().unwrap_or_default();
    let Some(container) = pod.spec.as_ref().and_then(|s| s.containers.first()).cloned() else {
        return Ok(Action::await_change());
    };
    let pod_dir = executor.work_dir.join(&uid);
    let Some(mut mounts) = mounts::resolve(&executor.client, &pod, &container, &pod_dir).await? else {
        return Ok(Action::requeue(Duration::from_secs(1)));
    };
    let termination_file = pod_dir.join("termination-log");
    std::fs::write(&termination_file, b"").map_err(|e| Error::io(termination_file.display(), e))?;
    let termination_path = container
        .termination_message_path
        .clone()
        .unwrap_or_else(|| DEFAULT_TERMINATION_PATH.to_string());
    mounts.push((termination_path, termination_file.clone()));

    let mut argv: Vec<String> = container
        .command
        .iter()
        .flatten()
        .chain(container.args.iter().flatten())
        .map(|a| rewrite(a, &mounts))
        .collect();
    if argv.is_empty() {
        let message = "the executor needs an explicit container command";
        status::finish(&pods, &pod, None, 128, message).await?;
        return Ok(Action::await_change());
    }
    local_mover(&mut argv, executor.mover_bin.as_deref());
    let mut command = command_for(
        &executor,
        &pod,
        &container,
        &argv,
        &mounts,
        &pod_dir,
        &termination_file,
    )
    .await?;
    let log_path = output_log(&executor.work_dir, &uid);
    let log = std::fs::File::create(&log_path).and_then(|log| Ok((log.try_clone()?, log)));
    let (log, log_err) = log.map_err(|e| Error::io(log_path.display(), e))?;
    command.stdout(log).stderr(log_err);
    let child = match command.spawn() {
        Ok(child) => child,
        Err(error) => {
            let message = format!("cannot start {:?}: {error}", argv[0]);
            status::finish(&pods, &pod, None, 127, &message).await?;
            return Ok(Action::await_change());
        }
    };
    let started = status::now();
    let readiness = probe::of(&container, &mounts, executor.mover_bin.as_deref());
    status::started(&pods, &pod, &started, readiness.is_none()).await?;
    if let Some(readiness) = readiness {
        tokio::spawn(probe::until_ready(
            readiness,
            executor.clone(),
            pods.clone(),
            pod.clone(),
        ));
    }
    tracing::info!(pod = %pod.name_any(), command = ?argv, "mover pod started");

    let (kill_tx, kill_rx) = oneshot::channel();
    if let Ok(mut running) = executor.running.lock() {
        running.insert(uid.clone(), kill_tx);
    }
    tokio::spawn(record_exit(
        executor.clone(),
        child,
        kill_rx,
        pods,
        pod,
        started,
        termination_file,
    ));
    Ok(Action::await_change())
}

/// The mover binary built here in place of the image's, where `argv` runs `ferry-mover`.
fn local_mover(argv: &mut [String], mover_bin: Option<&Path>) {
    if let (Some(first), Some(bin)) = (argv.first_mut(), mover_bin)
        && (first == "ferry-mover" || first.ends_with("/ferry-mover"))
    {
        *first = bin.display().to_string();
    }
}

/// The mover's process as the container asks: its command (the mover binary built here in place
/// of the image's), a clean environment, the pod's and the test's environment, its directory.
async fn command_for(
    executor: &Executor,
    pod: &Pod,
    container: &Container,
    argv: &[String],
    mounts: &[(String, PathBuf)],
    pod_dir: &Path,
    termination_file: &Path,
) -> Result<tokio::process::Command, Error> {
    let mut command = tokio::process::Command::new(&argv[0]);
    command
        .args(&argv[1..])
        .env_clear()
        .env(
            "PATH",
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        )
        .env("HOSTNAME", pod.name_any())
        .env("FERRY_RESULT_FILE", termination_file)
        .current_dir(
            container
                .working_dir
                .as_deref()
                .map(|d| rewrite(d, mounts))
                .unwrap_or_else(|| pod_dir.display().to_string()),
        )
        .stdin(Stdio::null())
        .kill_on_drop(true);
    // Fault injection for tests: the namespace can add environment to every mover process in it.
    for (name, value) in injected_environment(&executor.client, pod).await? {
        command.env(name, value);
    }
    for (name, value) in mounts::environment(pod, container) {
        command.env(name, rewrite(&value, mounts));
    }
    Ok(command)
}

/// Waits for the process (or the pod's deletion, which kills it) and records its end in the pod's
/// status, its termination message read from the file it wrote.
async fn record_exit(
    executor: Arc<Executor>,
    mut child: tokio::process::Child,
    kill_rx: oneshot::Receiver<()>,
    pods: Api<Pod>,
    pod: Arc<Pod>,
    started: Time,
    termination_file: PathBuf,
) {
    let uid = pod.uid().unwrap_or_default();
    let exit = tokio::select! {
        exit = child.wait() => exit,
        _ = kill_rx => { let _ = child.kill().await; child.wait().await }
    };
    let code = match exit {
        Ok(status) => status
            .code()
            .unwrap_or_else(|| 128 + std::os::unix::process::ExitStatusExt::signal(&status).unwrap_or(9)),
        Err(_) => 128,
    };
    let mut message = std::fs::read(&termination_file).unwrap_or_default();
    message.truncate(TERMINATION_MESSAGE_LIMIT);
    let message = String::from_utf8_lossy(&message).into_owned();
    if let Err(error) = status::finish(&pods, &pod, Some(&started), code, &message).await {
        tracing::warn!(%error, pod = %pod.name_any(), "could not record the mover pod's end");
    }
    tracing::info!(pod = %pod.name_any(), code, "mover pod finished");
    if let Ok(mut finished) = executor.finished.lock() {
        finished.insert(uid.clone());
    }
    if let Ok(mut running) = executor.running.lock() {
        running.remove(&uid);
    }
}
