//! The prometheus-operator's CRDs on the control plane: the files its release ships
//! (`example/prometheus-operator-crd`, copied by `scripts/k8s/build.sh`), server-side applied.

use crate::{Error, cluster, wait_until};
use futures::future::try_join_all;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use std::path::Path;
use tokio::sync::OnceCell;

/// Once per test process: every test after the first finds them applied. Applying again would be
/// harmless (same field manager, same content) but sends 4 MB of schemas each time.
static INSTALLED: OnceCell<()> = OnceCell::const_new();

/// How long the API server may take to serve a newly established group in its discovery.
const SERVED_SECONDS: u64 = 30;

/// Applies every CRD of the pinned release (server-side, field manager `ferry-tests`, forced: the
/// release's schema wins over an older one) and waits until each is established and served.
/// Idempotent, and safe when tests (of this process or others) call it at once: an apply of the
/// same content is a no-op for the API server, and concurrent ones do not conflict.
pub async fn install_crds(client: &Client) -> Result<(), Error> {
    INSTALLED
        .get_or_try_init(|| async {
            let crds = read_all(&cluster::test_bed_file("prometheus-operator-crds").await?)?;
            try_join_all(crds.iter().map(|crd| cluster::install_crd(client, crd))).await?;
            for crd in &crds {
                wait_served(client, crd).await?;
            }
            Ok::<(), Error>(())
        })
        .await
        .map(drop)
}

/// Every `*.yaml` of `dir` as a CRD (sorted by name); a file that is not one fails.
fn read_all(dir: &Path) -> Result<Vec<CustomResourceDefinition>, Error> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir.display(), e))?;
    let mut files: Vec<_> = entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(Error::Manifest {
            path: dir.display().to_string(),
            message: "no CRD files".into(),
        });
    }
    files.iter().map(|path| read_one(path)).collect()
}

/// One CRD file (k8s-openapi checks its `apiVersion` and `kind`).
fn read_one(path: &Path) -> Result<CustomResourceDefinition, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path.display(), e))?;
    parse(&text).map_err(|message| Error::Manifest {
        path: path.display().to_string(),
        message,
    })
}

fn parse(text: &str) -> Result<CustomResourceDefinition, String> {
    let crd: CustomResourceDefinition =
        yaml_serde::from_str(text).map_err(|e| format!("not a CustomResourceDefinition: {e}"))?;
    if crd.metadata.name.as_deref().unwrap_or_default().is_empty() {
        return Err("a CustomResourceDefinition without a name".into());
    }
    Ok(crd)
}

/// Waits until discovery lists the CRD's resource in each served version: the operator checks
/// discovery at start and leaves out the controller of a resource it does not find there.
async fn wait_served(client: &Client, crd: &CustomResourceDefinition) -> Result<(), Error> {
    let plural = &crd.spec.names.plural;
    for version in crd.spec.versions.iter().filter(|version| version.served) {
        let group_version = format!("{}/{}", crd.spec.group, version.name);
        wait_until(
            &format!("{group_version} {plural} in discovery"),
            SERVED_SECONDS,
            || async {
                let resources = client.list_api_group_resources(&group_version).await.ok()?;
                resources
                    .resources
                    .iter()
                    .any(|resource| resource.name == *plural)
                    .then_some(())
            },
        )
        .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_named_custom_resource_definition_parses() {
        let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: probes.monitoring.coreos.com\nspec:\n  group: monitoring.coreos.com\n  names:\n    kind: Probe\n    plural: probes\n  scope: Namespaced\n  versions: []\n";
        assert_eq!(
            parse(crd).unwrap().metadata.name.as_deref(),
            Some("probes.monitoring.coreos.com")
        );
        assert!(parse(&crd.replace("CustomResourceDefinition", "ConfigMap")).is_err());
        assert!(parse(&crd.replace("  name: probes.monitoring.coreos.com\n", "  labels: {}\n")).is_err());
    }
}
