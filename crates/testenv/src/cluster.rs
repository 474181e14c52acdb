//! Connecting tests to the local control plane, starting it when it is not running.

use crate::{Error, paths};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use std::path::PathBuf;
use tokio::sync::OnceCell;

static STARTED: OnceCell<PathBuf> = OnceCell::const_new();

/// Path of the control plane's kubeconfig, after making sure it runs (`scripts/testenv up` once per
/// test process when it does not).
pub async fn kubeconfig_path() -> Result<PathBuf, Error> {
    STARTED
        .get_or_try_init(|| async {
            let path = paths::state_dir().join("kubeconfig");
            if path.exists() && connect(&path).await.is_ok() {
                return Ok(path);
            }
            let script = paths::repo_root().join("scripts/testenv");
            let status = tokio::process::Command::new(&script)
                .arg("up")
                .stdout(std::process::Stdio::null())
                .status()
                .await
                .map_err(|e| Error::io(script.display(), e))?;
            if !status.success() {
                return Err(Error::Setup(format!("`scripts/testenv up` failed ({status})")));
            }
            Ok(path)
        })
        .await
        .cloned()
}

/// A client for the local control plane (a new one per call: clients are bound to the runtime that
/// made them, and every `#[tokio::test]` has its own).
pub async fn client() -> Result<Client, Error> {
    let path = kubeconfig_path().await?;
    connect(&path).await
}

/// The control plane's kubeconfig as a client configuration (admin), sent to the API server at
/// `url` when given (an [`crate::api_path::ApiPath`], an [`crate::api_server::ApiServerReplica`]).
pub async fn config_via(url: Option<&str>) -> Result<Config, Error> {
    let path = kubeconfig_path().await?;
    let kubeconfig = Kubeconfig::read_from(&path)?;
    let mut config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    if let Some(url) = url {
        config.cluster_url = url
            .parse()
            .map_err(|e| Error::Setup(format!("API server URL {url}: {e}")))?;
    }
    Ok(config)
}

async fn connect(path: &PathBuf) -> Result<Client, Error> {
    let kubeconfig = Kubeconfig::read_from(path)?;
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    let client = Client::try_from(config)?;
    client.apiserver_version().await?;
    Ok(client)
}

/// One of the binaries built with the running control plane (kubectl, helm, ...).
pub fn control_plane_binary(name: &str) -> Result<PathBuf, Error> {
    let bin_dir = std::fs::read_to_string(paths::state_dir().join("bin-dir"))
        .map_err(|e| Error::io("testenv bin-dir", e))?;
    Ok(PathBuf::from(bin_dir.trim()).join(name))
}

/// A file of the test bed's bin dir (helm, prometheus-operator, its CRDs, ...): the running control
/// plane's, else (no control plane ran yet, or it was started before that file was part of the test
/// bed) the one `scripts/k8s/build.sh` fills (cached: warm, a check).
pub async fn test_bed_file(name: &str) -> Result<PathBuf, Error> {
    if let Ok(path) = control_plane_binary(name)
        && path.exists()
    {
        return Ok(path);
    }
    let script = paths::repo_root().join("scripts/k8s/build.sh");
    let output = tokio::process::Command::new(&script)
        .stderr(std::process::Stdio::inherit())
        .output()
        .await
        .map_err(|e| Error::io(script.display(), e))?;
    if !output.status.success() {
        return Err(Error::Setup(format!(
            "scripts/k8s/build.sh failed ({})",
            output.status
        )));
    }
    let path = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim()).join(name);
    if !path.exists() {
        return Err(Error::Setup(format!(
            "{} is missing after scripts/k8s/build.sh",
            path.display()
        )));
    }
    Ok(path)
}

/// Runs the control plane's own kubectl against it; returns (exit code, stdout, stderr).
pub async fn kubectl(args: &[&str]) -> Result<(i32, String, String), Error> {
    let kubeconfig = kubeconfig_path().await?;
    let mut command = tokio::process::Command::new(control_plane_binary("kubectl")?);
    command.arg("--kubeconfig").arg(&kubeconfig).args(args);
    captured(command, "kubectl").await
}

/// Runs `command` to its end; returns (exit code, stdout, stderr).
pub(crate) async fn captured(
    mut command: tokio::process::Command,
    what: &str,
) -> Result<(i32, String, String), Error> {
    let output = command.output().await.map_err(|e| Error::io(what, e))?;
    Ok((
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    ))
}

/// Installs (server-side apply, field manager `ferry-tests`) a CRD and waits until it is
/// established.
pub async fn install_crd(
    client: &Client,
    crd: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
) -> Result<(), Error> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::api::{Api, Patch, PatchParams};
    use kube::runtime::wait::{await_condition, conditions};
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let name = crd.metadata.name.clone().unwrap_or_default();
    crds.patch(
        &name,
        &PatchParams::apply("ferry-tests").force(),
        &Patch::Apply(crd),
    )
    .await?;
    // A watch, so it returns once established; the limit allows for a loaded machine: another
    // project's release applies ten or more CRDs of megabytes each at once (prometheus-operator's,
    // ECK's), whose OpenAPI the API server builds before it calls them established, while other
    // test binaries run beside (30 s was exceeded in CI).
    const ESTABLISHED_SECONDS: u64 = 180;
    let established = await_condition(crds, &name, conditions::is_crd_established());
    match tokio::time::timeout(std::time::Duration::from_secs(ESTABLISHED_SECONDS), established).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(error)) => Err(Error::Setup(format!("CRD {name}: {error}"))),
        Err(_) => Err(Error::Timeout {
            what: format!("CRD {name} to be established"),
            seconds: ESTABLISHED_SECONDS,
        }),
    }
}
