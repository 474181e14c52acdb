//! Ferry's Helm chart in tests: the operator a test runs acts with exactly the permissions the
//! chart grants. The chart is rendered by the control plane's own helm for a release named after
//! the test namespace and watching only it; its ServiceAccount and RBAC are applied, and the
//! operator's client impersonates that ServiceAccount, so a permission the chart lacks fails the
//! test with the API server's 403.

use crate::{Error, cluster, paths};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
};
use kube::discovery::{ApiCapabilities, Scope};
use kube::{Client, ResourceExt};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

/// The chart in this repository.
pub fn chart_dir() -> PathBuf {
    paths::repo_root().join("deploy/helm/ferry")
}

/// Runs helm against the control plane; returns (exit code, stdout, stderr).
pub async fn helm(args: &[&str]) -> Result<(i32, String, String), Error> {
    let kubeconfig = cluster::kubeconfig_path().await?;
    // (helm is built with the control plane by `scripts/testenv up`.)
    let mut command = tokio::process::Command::new(cluster::control_plane_binary("helm")?);
    command
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(args)
        .env("HELM_CACHE_HOME", paths::state_dir().join("helm/cache"))
        .env("HELM_CONFIG_HOME", paths::state_dir().join("helm/config"))
        .env("HELM_DATA_HOME", paths::state_dir().join("helm/data"));
    cluster::captured(command, "helm").await
}

/// Runs helm for what needs no cluster (`template`, `show`): no kubeconfig, so no control plane
/// is started for it.
pub async fn helm_offline(args: &[&str]) -> Result<(i32, String, String), Error> {
    let mut command = tokio::process::Command::new(cluster::test_bed_file("helm").await?);
    command
        .args(args)
        .env("HELM_CACHE_HOME", paths::state_dir().join("helm/cache"))
        .env("HELM_CONFIG_HOME", paths::state_dir().join("helm/config"))
        .env("HELM_DATA_HOME", paths::state_dir().join("helm/data"));
    cluster::captured(command, "helm").await
}

/// `helm template` of the chart; fails with helm's message.
pub async fn render(release: &str, namespace: &str, extra: &[&str]) -> Result<String, Error> {
    render_chart(&chart_dir(), release, namespace, extra).await
}

/// `helm template` of the chart at `chart` (a directory or a packaged chart), without a cluster;
/// fails with helm's message.
pub async fn render_chart(
    chart: &std::path::Path,
    release: &str,
    namespace: &str,
    extra: &[&str],
) -> Result<String, Error> {
    let chart = chart.to_string_lossy();
    // Offline, helm assumes an old Kubernetes; the chart needs v1.34 or newer. Without the
    // `helm test` hooks: what the release runs, not its smoke test.
    let mut args = vec![
        "template",
        release,
        chart.as_ref(),
        "--namespace",
        namespace,
        "--kube-version",
        "1.34.0",
        "--skip-tests",
    ];
    args.extend_from_slice(extra);
    let (code, out, err) = helm_offline(&args).await?;
    if code != 0 {
        return Err(Error::Setup(format!("helm template: {err}")));
    }
    Ok(out)
}

/// The chart's identity for an operator that watches only `namespace`, released there.
pub struct OperatorIdentity {
    /// `system:serviceaccount:<namespace>:<name>`.
    pub user: String,
    /// Release of the cluster-scoped objects (ClusterRole, ClusterRoleBinding, the author policy
    /// and its binding) to remove at the end.
    pub release: String,
    /// The Secret the chart makes for the configuration digest's key (in the release namespace).
    pub config_digest_key_secret: String,
    /// The ConfigMap of the owners the admin teaches Ferry (`owners.kinds`; in the release
    /// namespace), made empty as the chart makes it.
    pub owners_config_map: String,
}

/// Applies the chart's ServiceAccount, RBAC, leader Lease, webhook CA and digest key Secrets, the
/// author policy (Ferry objects grant no more than their author has) and the policies confining the
/// operator's pod patches, Secret and ConfigMap writes, for a release named `namespace` watching
/// only `namespace`, with every feature switched on.
pub async fn install_identity(namespace: &str) -> Result<OperatorIdentity, Error> {
    install_identity_with(namespace, &[]).await
}

/// `features.<name>=true` for every switch of the chart's values.yaml: the operator a test runs
/// uses every feature unless the test switches it off, whatever the chart's defaults are (some are
/// off by default, their permissions reaching across the cluster).
pub fn every_feature_on() -> Result<Vec<String>, Error> {
    let path = chart_dir().join("values.yaml");
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io(path.display(), e))?;
    let values: yaml_serde::Value =
        yaml_serde::from_str(&text).map_err(|e| Error::Setup(format!("{}: {e}", path.display())))?;
    let features = values
        .get("features")
        .and_then(|features| features.as_mapping())
        .ok_or_else(|| Error::Setup(format!("{}: no features", path.display())))?;
    Ok(features
        .keys()
        .filter_map(|name| name.as_str())
        .map(|name| format!("features.{name}=true"))
        .collect())
}

/// As [`install_identity`], with more chart values (`key=value`, as `helm --set` takes them), over
/// every feature switched on ([`every_feature_on`]).
pub async fn install_identity_with(namespace: &str, values: &[&str]) -> Result<OperatorIdentity, Error> {
    let watched = format!("watchNamespaces={{{namespace}}}");
    let on = every_feature_on()?;
    let mut args = vec!["--set", watched.as_str()];
    for value in on.iter().map(String::as_str).chain(values.iter().copied()) {
        args.extend(["--set", value]);
    }
    let rendered = render(
        namespace,
        namespace,
        &[
            args.as_slice(),
            &[
                "--show-only",
                "templates/serviceaccount.yaml",
                "--show-only",
                "templates/rbac.yaml",
                "--show-only",
                "templates/self.yaml",
                "--show-only",
                "templates/author-policy.yaml",
                "--show-only",
                "templates/operator-pod-policy.yaml",
                "--show-only",
                "templates/owners.yaml",
            ],
        ]
        .concat(),
    )
    .await?;
    apply(&rendered).await?;
    let account = service_account_name(&rendered)
        .ok_or_else(|| Error::Setup("the chart renders no ServiceAccount".into()))?;
    let config_digest_key_secret = name_ending(&rendered, "-config-digest-key")
        .ok_or_else(|| Error::Setup("the chart renders no configuration digest key Secret".into()))?;
    let owners_config_map = name_ending(&rendered, "-owners")
        .ok_or_else(|| Error::Setup("the chart renders no owners ConfigMap".into()))?;
    Ok(OperatorIdentity {
        user: format!("system:serviceaccount:{namespace}:{account}"),
        release: namespace.to_string(),
        config_digest_key_secret,
        owners_config_map,
    })
}

/// The first object name in rendered YAML that ends with `suffix`.
fn name_ending(rendered: &str, suffix: &str) -> Option<String> {
    rendered
        .lines()
        .filter_map(|line| line.strip_prefix("  name: "))
        .map(|name| name.trim().to_string())
        .find(|name| name.ends_with(suffix))
}

/// The name of the first ServiceAccount in rendered YAML.
fn service_account_name(rendered: &str) -> Option<String> {
    let start = rendered.find("kind: ServiceAccount")?;
    rendered[start..]
        .lines()
        .find_map(|line| line.strip_prefix("  name: "))
        .map(|name| name.trim().to_string())
}

/// Server-side apply of YAML documents, as `kubectl apply --server-side --field-manager ferry-tests`
/// would, but in this process: a kubectl per test (two with the delete) cost the run half a CPU
/// minute, and the API server a full discovery each.
pub async fn apply(yaml: &str) -> Result<(), Error> {
    use serde::Deserialize;
    let client = cluster::client().await?;
    for document in yaml_serde::Deserializer::from_str(yaml) {
        let value = yaml_serde::Value::deserialize(document)
            .map_err(|e| Error::Setup(format!("apply: YAML: {e}")))?;
        if value.is_null() {
            continue;
        }
        let object: DynamicObject =
            yaml_serde::from_value(value).map_err(|e| Error::Setup(format!("apply: an object: {e}")))?;
        let types = object
            .types
            .clone()
            .ok_or_else(|| Error::Setup("apply: an object without apiVersion and kind".into()))?;
        let kind = GroupVersionKind::try_from(&types)
            .map_err(|e| Error::Setup(format!("apply: {}: {e}", types.kind)))?;
        let (resource, capabilities) = api_resource(&client, &kind).await?;
        let api: Api<DynamicObject> = match (&capabilities.scope, object.namespace()) {
            (Scope::Namespaced, Some(namespace)) => {
                Api::namespaced_with(client.clone(), &namespace, &resource)
            }
            (Scope::Namespaced, None) => Api::default_namespaced_with(client.clone(), &resource),
            (Scope::Cluster, _) => Api::all_with(client.clone(), &resource),
        };
        api.patch(
            &object.name_any(),
            &PatchParams::apply("ferry-tests"),
            &Patch::Apply(&object),
        )
        .await?;
    }
    Ok(())
}

/// The API resource of a kind, discovered once per process.
async fn api_resource(
    client: &Client,
    kind: &GroupVersionKind,
) -> Result<(ApiResource, ApiCapabilities), Error> {
    type Known = HashMap<(String, String, String), (ApiResource, ApiCapabilities)>;
    static KNOWN: OnceLock<Mutex<Known>> = OnceLock::new();
    let known = KNOWN.get_or_init(Mutex::default);
    let key = (kind.group.clone(), kind.version.clone(), kind.kind.clone());
    if let Some(found) = known.lock().ok().and_then(|map| map.get(&key).cloned()) {
        return Ok(found);
    }
    let found = kube::discovery::pinned_kind(client, kind).await?;
    if let Ok(mut map) = known.lock() {
        map.insert(key, found.clone());
    }
    Ok(found)
}

/// Removes the cluster-scoped objects of a release made by [`install_identity`] (the namespaced
/// ones go with the namespace).
pub async fn remove_identity(identity: &OperatorIdentity) -> Result<(), Error> {
    remove_release(&identity.release).await
}

/// Removes the cluster-scoped objects a test applied from the chart rendered for `release`
/// (labelled `app.kubernetes.io/instance=<release>`): ClusterRoles and their bindings, admission
/// policies and their bindings.
pub async fn remove_release(release: &str) -> Result<(), Error> {
    use k8s_openapi::api::admissionregistration::v1::{
        ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
    };
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
    let client = cluster::client().await?;
    let selector = ListParams::default().labels(&format!("app.kubernetes.io/instance={release}"));
    delete_labelled::<ClusterRole>(&client, &selector).await?;
    delete_labelled::<ClusterRoleBinding>(&client, &selector).await?;
    delete_labelled::<ValidatingAdmissionPolicy>(&client, &selector).await?;
    delete_labelled::<ValidatingAdmissionPolicyBinding>(&client, &selector).await
}

/// Deletes every cluster-scoped `K` that `selector` picks.
async fn delete_labelled<K>(client: &Client, selector: &ListParams) -> Result<(), Error>
where
    K: kube::Resource<Scope = k8s_openapi::ClusterResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    Api::<K>::all(client.clone())
        .delete_collection(&DeleteParams::default(), selector)
        .await?;
    Ok(())
}

/// A client for the control plane that acts as `user` (impersonation by the admin identity).
pub async fn client_as(user: &str) -> Result<Client, Error> {
    client_as_via(user, None).await
}

/// [`client_as`], reaching the API server at `url` when given (an [`crate::api_path::ApiPath`]).
pub async fn client_as_via(user: &str, url: Option<&str>) -> Result<Client, Error> {
    let mut config = cluster::config_via(url).await?;
    config.auth_info.impersonate = Some(user.to_string());
    Ok(Client::try_from(config)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_rendered_service_account() {
        let rendered = "---\n# Source: ferry/templates/serviceaccount.yaml\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: ns-ferry\n  namespace: ns\n";
        assert_eq!(service_account_name(rendered).as_deref(), Some("ns-ferry"));
        assert_eq!(service_account_name("kind: Role\n"), None);
    }
}
