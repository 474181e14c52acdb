//! Another project's CRDs on the control plane, as its release ships them (copied into the test bed
//! by `scripts/k8s/build.sh`: a directory of files, or one file of several documents),
//! server-side applied.

use crate::{Error, cluster, wait_until};
use futures::future::try_join_all;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use serde::Deserialize;
use std::path::Path;
use tokio::sync::OnceCell;

/// How long the API server may take to serve a newly established group in its discovery (on a
/// loaded machine, with megabytes of schemas just applied).
const SERVED_SECONDS: u64 = 120;

/// Applies every CRD of the test bed's `name` (a directory of `*.yaml` or one YAML file;
/// server-side, field manager `ferry-tests`, forced: the release's schema wins over an older one)
/// and waits until each is established and served. Once per test process (`once`): every test
/// after the first finds them applied (applying again would be harmless but sends megabytes of
/// schemas each time). Safe when tests of other processes apply them at once: an apply of the same
/// content is a no-op for the API server, and concurrent ones do not conflict.
pub async fn install(client: &Client, name: &str, once: &OnceCell<()>) -> Result<(), Error> {
    once.get_or_try_init(|| async {
        let path = cluster::test_bed_file(name).await?;
        let crds = if path.is_dir() {
            read_all(&path)?
        } else {
            read_one(&path)?
        };
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
    let mut crds = Vec::new();
    for file in &files {
        crds.extend(read_one(file)?);
    }
    Ok(crds)
}

/// The CRDs of one file, each document one (k8s-openapi checks its `apiVersion` and `kind`).
fn read_one(path: &Path) -> Result<Vec<CustomResourceDefinition>, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path.display(), e))?;
    parse(&text).map_err(|message| Error::Manifest {
        path: path.display().to_string(),
        message,
    })
}

fn parse(text: &str) -> Result<Vec<CustomResourceDefinition>, String> {
    let mut crds = Vec::new();
    for document in yaml_serde::Deserializer::from_str(text) {
        let value = serde_json::Value::deserialize(document).map_err(|e| format!("not YAML: {e}"))?;
        if value.is_null() {
            continue; // an empty document (a leading `---`)
        }
        let crd: CustomResourceDefinition =
            serde_json::from_value(value).map_err(|e| format!("not a CustomResourceDefinition: {e}"))?;
        if crd.metadata.name.as_deref().unwrap_or_default().is_empty() {
            return Err("a CustomResourceDefinition without a name".into());
        }
        crds.push(crd);
    }
    if crds.is_empty() {
        return Err("no CustomResourceDefinition".into());
    }
    Ok(crds)
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
            parse(crd).unwrap()[0].metadata.name.as_deref(),
            Some("probes.monitoring.coreos.com")
        );
        let two = format!("---\n{crd}---\n{}", crd.replace("probes", "scrapes"));
        let names: Vec<_> = parse(&two)
            .unwrap()
            .into_iter()
            .map(|crd| crd.metadata.name)
            .collect();
        assert_eq!(
            names,
            [
                Some("probes.monitoring.coreos.com".into()),
                Some("scrapes.monitoring.coreos.com".into())
            ]
        );
        assert!(parse(&crd.replace("CustomResourceDefinition", "ConfigMap")).is_err());
        assert!(parse(&crd.replace("  name: probes.monitoring.coreos.com\n", "  labels: {}\n")).is_err());
    }
}
