//! Shared setup for the CLI's tests on the local control plane: the CRD, a namespace per test,
//! running the real `kubectl-ferry` binary against it, the operator in-process when a test needs
//! it, and writing a VolumeResize's status directly (test-only field manager, no operator running)
//! to show states the operator would reach.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ferry_api::VolumeResize;
use ferry_operator::{Settings, run};
use ferry_testenv::fixtures::{stateful_set, wait_ready};
use ferry_testenv::{TestNamespace, client};
use k8s_openapi::api::apps::v1::StatefulSet;
use kube::api::PostParams;
use kube::{Api, Client, ResourceExt};
use serde_json::json;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;
use tokio::task::JoinHandle;

pub const BIN: &str = env!("CARGO_BIN_EXE_kubectl-ferry");
/// Field manager for statuses the tests write themselves.
pub const TEST_MANAGER: &str = "kubectl-ferry-tests";

pub struct Env {
    pub client: Client,
    pub ns: TestNamespace,
    pub kubeconfig: PathBuf,
    operator: Option<JoinHandle<()>>,
    /// The Helm chart's identity the operator acts as, once started.
    identity: Option<ferry_testenv::chart::OperatorIdentity>,
}

/// What one run of the binary did.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Env {
    pub async fn start(prefix: &str) -> Env {
        let client = client().await.unwrap();
        install_crd(&client).await;
        let ns = TestNamespace::create(&client, prefix).await.unwrap();
        let kubeconfig = ferry_testenv::cluster::kubeconfig_path().await.unwrap();
        Env {
            client,
            ns,
            kubeconfig,
            operator: None,
            identity: None,
        }
    }

    /// Runs the operator in-process, watching only this test's namespace, as the Helm chart's
    /// ServiceAccount (its RBAC only).
    pub async fn start_operator(&mut self) {
        let identity = ferry_testenv::chart::install_identity(&self.ns.name)
            .await
            .unwrap();
        let operator_client = ferry_testenv::chart::client_as(&identity.user).await.unwrap();
        self.identity = Some(identity);
        // Movers run from the image built for the real nodes (no registry is reachable).
        let settings = Settings {
            namespaces: vec![self.ns.name.clone()],
            mover_image: Some(ferry_testenv::workload::FERRY_IMAGE.to_string()),
            ..Settings::default()
        };
        let client = operator_client;
        self.operator = Some(tokio::spawn(async move {
            if let Err(error) = run(client, settings).await {
                eprintln!("operator stopped: {error}");
            }
        }));
    }

    /// Runs the operator in-process with the admin's rights, acting only while it holds the Lease
    /// `<namespace>/ferry-leader`, as an operator run outside the cluster (the demo's) runs: no
    /// pod shows it, its Lease does.
    pub async fn start_operator_leading(&mut self) {
        let settings = Settings {
            namespaces: vec![self.ns.name.clone()],
            mover_image: Some(ferry_testenv::workload::FERRY_IMAGE.to_string()),
            leader_election: Some(ferry_operator::leader::LeaderElection {
                namespace: self.ns.name.clone(),
                name: "ferry-leader".into(),
                lease_duration: Duration::from_secs(15),
            }),
            ..Settings::default()
        };
        let client = self.client.clone();
        self.operator = Some(tokio::spawn(async move {
            if let Err(error) = run(client, settings).await {
                eprintln!("operator stopped: {error}");
            }
        }));
    }

    pub async fn finish(self) {
        if let Some(operator) = self.operator {
            operator.abort();
        }
        if let Some(identity) = &self.identity {
            ferry_testenv::chart::remove_identity(identity).await.unwrap();
        }
        self.ns.cleanup().await.unwrap();
    }

    /// The binary with `--kubeconfig` and `-n` for this test.
    pub fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(BIN);
        command
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(["-n", &self.ns.name])
            .args(args)
            .env_remove("NO_COLOR")
            .stdin(Stdio::null())
            .kill_on_drop(true);
        command
    }

    /// Runs `kubectl-ferry --kubeconfig … -n <ns> ARGS` to the end (60 s at most).
    pub async fn ferry(&self, args: &[&str]) -> Run {
        let output = tokio::time::timeout(Duration::from_secs(120), self.command(args).output())
            .await
            .unwrap_or_else(|_| panic!("kubectl-ferry {args:?} did not finish"))
            .unwrap();
        let run = Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        };
        eprintln!("$ kubectl-ferry {}\n{run:#?}", args.join(" "));
        run
    }

    pub async fn stateful_set(&self, name: &str, replicas: i32, class: &str, ready: bool) {
        let api: Api<StatefulSet> = self.ns.api();
        api.create(
            &PostParams::default(),
            &stateful_set(name, replicas, class, "1Gi"),
        )
        .await
        .unwrap();
        if ready {
            wait_ready(&api, name, replicas, 120).await.unwrap();
        }
    }

    /// A StatefulSet whose pods can never be scheduled, so it never becomes Ready: a VolumeResize
    /// of it stays Pending whether or not an operator runs.
    pub async fn unready_stateful_set(&self, name: &str) {
        let mut sts = stateful_set(name, 1, ferry_testenv::CLASS_FIXED, "1Gi");
        if let Some(pod) = sts.spec.as_mut().and_then(|s| s.template.spec.as_mut()) {
            pod.node_selector = Some([("ferry.dev/no-such-node".to_string(), "true".to_string())].into());
        }
        let api: Api<StatefulSet> = self.ns.api();
        api.create(&PostParams::default(), &sts).await.unwrap();
    }

    pub fn resizes(&self) -> Api<VolumeResize> {
        self.ns.api()
    }

    pub async fn create_resize(&self, name: &str, spec: serde_json::Value) -> VolumeResize {
        let resize: VolumeResize = serde_json::from_value(json!({
            "apiVersion": "ferry.dev/v1alpha1", "kind": "VolumeResize",
            "metadata": {"name": name}, "spec": spec,
        }))
        .unwrap();
        self.resizes()
            .create(&PostParams::default(), &resize)
            .await
            .unwrap()
    }

    /// Writes the whole status as the operator would (replacing the status subresource), with
    /// `observedGeneration` current so that an operator, were one running, would leave it alone.
    /// Reads it back a moment later and writes again if something else (an operator outside the
    /// test, e.g. one left by `scripts/demo`) overwrote it first.
    pub async fn set_status(&self, name: &str, status: serde_json::Value) {
        let api = self.resizes();
        for _ in 0..20 {
            let mut current = serde_json::to_value(api.get(name).await.unwrap()).unwrap();
            let mut status = status.clone();
            if status.get("observedGeneration").is_none() {
                status["observedGeneration"] = current["metadata"]["generation"].clone();
            }
            current["status"] = status.clone();
            let body: VolumeResize = serde_json::from_value(current).unwrap();
            let params = PostParams {
                field_manager: Some(TEST_MANAGER.into()),
                ..Default::default()
            };
            match api.replace_status(name, &params, &body).await {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 409 => continue,
                Err(error) => panic!("cannot write the status of {name}: {error}"),
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
            let written = serde_json::to_value(api.get(name).await.unwrap()).unwrap();
            if written["status"]["phase"] == status["phase"]
                && written["status"]["message"] == status["message"]
            {
                return;
            }
        }
        panic!("the status of {name} kept changing under the test");
    }

    pub async fn resize_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .resizes()
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .iter()
            .map(|r| r.name_any())
            .collect();
        names.sort();
        names
    }

    /// A copy of the kubeconfig with its user changed by `edit` (a YAML mapping of the user).
    pub fn kubeconfig_with(&self, dir: &std::path::Path, edit: impl Fn(&mut yaml_serde::Mapping)) -> PathBuf {
        let text = std::fs::read_to_string(&self.kubeconfig).unwrap();
        let mut config: yaml_serde::Value = yaml_serde::from_str(&text).unwrap();
        for user in config["users"].as_sequence_mut().unwrap() {
            edit(user["user"].as_mapping_mut().unwrap());
        }
        let path = dir.join("kubeconfig");
        std::fs::write(&path, yaml_serde::to_string(&config).unwrap()).unwrap();
        path
    }
}

/// Runs the binary with the given kubeconfig (no `-n`).
pub async fn ferry_with(kubeconfig: &std::path::Path, args: &[&str]) -> Run {
    let output = tokio::process::Command::new(BIN)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    let run = Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    eprintln!("$ kubectl-ferry {args:?}\n{run:#?}");
    run
}

/// A stand-in API server that answers 404 to everything, as one without the ferry.dev group does.
pub async fn no_crd_server() -> std::net::SocketAddr {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buffer = [0u8; 4096];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buffer).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buffer[..n]),
                    }
                }
                let body = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","details":{},"code":404}"#;
                let response = format!(
                    "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(response.as_bytes()).await;
            });
        }
    });
    address
}

/// A plan row as the operator writes it.
pub fn plan_row(replica: i32, strategy: &str, extra: serde_json::Value) -> serde_json::Value {
    let mut row = json!({
        "replica": replica, "volume": "data", "claimName": format!("data-db-{replica}"),
        "strategy": strategy, "currentSize": "1Gi", "targetSize": "2Gi",
        "currentStorageClass": ferry_testenv::CLASS_FIXED,
    });
    row.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    row
}

/// A condition as the operator writes it.
pub fn condition(type_: &str, status: &str, reason: &str, message: &str) -> serde_json::Value {
    json!({"type": type_, "status": status, "reason": reason, "message": message,
           "lastTransitionTime": "2025-01-01T00:00:00Z"})
}

/// Installs the CRDs the operator waits for (VolumeResize, VolumeAutoscaler, ExtendedStatefulSet).
pub async fn install_crd(client: &Client) {
    for crd in ferry_operator::crd::all() {
        ferry_testenv::cluster::install_crd(client, &crd).await.unwrap();
    }
}

/// An HTTP CONNECT proxy on loopback (what a kubeconfig's `proxy-url: http://...` names): it
/// tunnels each CONNECT to the address asked for and counts the tunnels it opened.
pub async fn connect_proxy() -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let tunnels = std::sync::Arc::new(AtomicUsize::new(0));
    let counted = tunnels.clone();
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            let counted = counted.clone();
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buffer = [0u8; 1];
                // Byte by byte, so nothing of the tunnelled stream is read with the request.
                while !request.ends_with(b"\r\n\r\n") {
                    match client.read(&mut buffer).await {
                        Ok(0) | Err(_) => return,
                        Ok(_) => request.push(buffer[0]),
                    }
                }
                let head = String::from_utf8_lossy(&request);
                let Some(target) = head
                    .strip_prefix("CONNECT ")
                    .and_then(|rest| rest.split(' ').next())
                else {
                    let _ = client.write_all(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n").await;
                    return;
                };
                // Loopback only: the tests never send traffic anywhere else.
                let Ok(mut upstream) = tokio::net::TcpStream::connect(target).await else {
                    let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\n\r\n").await;
                    return;
                };
                if !upstream.peer_addr().is_ok_and(|peer| peer.ip().is_loopback()) {
                    return;
                }
                counted.fetch_add(1, Ordering::SeqCst);
                if client
                    .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    .await
                    .is_ok()
                {
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
                }
            });
        }
    });
    (address, tunnels)
}

/// A copy of the kubeconfig with every cluster changed by `edit` (a YAML mapping of the cluster).
pub fn kubeconfig_with_cluster(
    kubeconfig: &std::path::Path,
    dir: &std::path::Path,
    edit: impl Fn(&mut yaml_serde::Mapping),
) -> PathBuf {
    let text = std::fs::read_to_string(kubeconfig).unwrap();
    let mut config: yaml_serde::Value = yaml_serde::from_str(&text).unwrap();
    for cluster in config["clusters"].as_sequence_mut().unwrap() {
        edit(cluster["cluster"].as_mapping_mut().unwrap());
    }
    let path = dir.join("kubeconfig-proxied");
    std::fs::write(&path, yaml_serde::to_string(&config).unwrap()).unwrap();
    path
}
