//! Objects tests build again and again: StatefulSets with volume claim templates, and waits on them.

use crate::{Error, wait_until};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use kube::Api;
use serde_json::json;

/// A copy of the StorageClass `from` named `name`, carrying only `annotations` (cluster-scoped: name
/// it after the test's namespace, and delete it at the end); returns `name`.
pub async fn annotated_class_copy(
    client: &kube::Client,
    from: &str,
    name: &str,
    annotations: std::collections::BTreeMap<String, String>,
) -> Result<String, Error> {
    use k8s_openapi::api::storage::v1::StorageClass;
    let classes = Api::<StorageClass>::all(client.clone());
    let mut class = classes.get(from).await?;
    class.metadata = kube::core::ObjectMeta {
        name: Some(name.to_string()),
        annotations: Some(annotations),
        ..Default::default()
    };
    classes.create(&Default::default(), &class).await?;
    Ok(name.to_string())
}

/// A StatefulSet `name` with `replicas` pods and one volume claim template `data` of `size` in
/// `class`. Pods run a placeholder container (kwok fakes them).
pub fn stateful_set(name: &str, replicas: i32, class: &str, size: &str) -> StatefulSet {
    stateful_set_with(name, replicas, &[("data", class, size)])
}

/// Volume claim templates (ReadWriteOnce) from (template name, class, size).
pub fn claim_templates(templates: &[(&str, &str, &str)]) -> Vec<serde_json::Value> {
    templates
        .iter()
        .map(|(template, class, size)| {
            json!({
                "metadata": {"name": template},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": class,
                    "resources": {"requests": {"storage": size}},
                },
            })
        })
        .collect()
}

/// Like [`stateful_set`] with several templates: (template name, class, size).
pub fn stateful_set_with(name: &str, replicas: i32, templates: &[(&str, &str, &str)]) -> StatefulSet {
    let templates = claim_templates(templates);
    let mounts: Vec<_> = templates
        .iter()
        .map(|t| json!({"name": t["metadata"]["name"], "mountPath": format!("/{}", t["metadata"]["name"].as_str().unwrap_or("data"))}))
        .collect();
    // A fixture is built from constants; failing to deserialize it is a bug in this file.
    #[allow(clippy::expect_used)]
    serde_json::from_value(json!({
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10", "volumeMounts": mounts}]},
            },
            "volumeClaimTemplates": templates,
        },
    }))
    .expect("fixture StatefulSet is valid")
}

/// Creates `sts` with its pods pinned to a node that does not exist, so they stay Pending and the
/// StatefulSet is never Ready; returns once the scheduler has marked `<name>-0` unschedulable.
pub async fn create_unschedulable(
    sets: &Api<StatefulSet>,
    pods: &Api<Pod>,
    mut sts: StatefulSet,
) -> Result<(), Error> {
    if let Some(pod) = sts.spec.as_mut().and_then(|spec| spec.template.spec.as_mut()) {
        pod.node_selector = Some([("ferry.dev/no-such-node".to_string(), "true".to_string())].into());
    }
    let first = format!("{}-0", sts.metadata.name.clone().unwrap_or_default());
    sets.create(&Default::default(), &sts).await?;
    wait_until(&format!("{first} to be marked unschedulable"), 60, || async {
        let pod = pods.get_opt(&first).await.ok().flatten()?;
        let conditions = pod.status?.conditions?;
        conditions
            .iter()
            .any(|c| c.type_ == "PodScheduled" && c.status == "False")
            .then_some(())
    })
    .await
}

/// Waits until the StatefulSet reports all its replicas Ready.
pub async fn wait_ready(
    api: &Api<StatefulSet>,
    name: &str,
    replicas: i32,
    seconds: u64,
) -> Result<StatefulSet, Error> {
    let what = format!("StatefulSet {name} to have {replicas} Ready replicas");
    crate::wait::wait_for_object(api, name, &what, seconds, |sts: &StatefulSet| {
        sts.status.as_ref().and_then(|s| s.ready_replicas).unwrap_or(0) == replicas
    })
    .await
}

/// The directory behind a bound PVC on this machine: a hostPath directory (kwok nodes), the
/// mounted file system of a `local` PV, or a CSI volume of the real node mounted for as long as the
/// returned [`crate::volume_dir::VolumeDir`] lives.
pub async fn claim_directory(
    claims: &Api<PersistentVolumeClaim>,
    volumes: &Api<PersistentVolume>,
    claim: &str,
) -> Result<crate::volume_dir::VolumeDir, Error> {
    let volume = bound_volume(claims, volumes, claim).await?;
    let name = volume.metadata.name.clone().unwrap_or_default();
    crate::volume_dir::VolumeDir::of(&name, &volume.spec.unwrap_or_default())
}

/// The PV a claim is bound to, waiting up to 60 s for the binding.
pub async fn bound_volume(
    claims: &Api<PersistentVolumeClaim>,
    volumes: &Api<PersistentVolume>,
    claim: &str,
) -> Result<PersistentVolume, Error> {
    let volume_name = wait_until(&format!("PVC {claim} to be bound"), 60, || async {
        claims.get_opt(claim).await.ok().flatten()?.spec?.volume_name
    })
    .await?;
    Ok(volumes.get(&volume_name).await?)
}

/// Fills a directory with `files` files of varied sizes (real random bytes) in a small tree.
pub fn write_sample_data(dir: &std::path::Path, files: usize) -> Result<(), Error> {
    use rand::RngCore;
    let mut rng = rand::rng();
    for index in 0..files {
        let sub = dir.join(format!("d{}", index % 7));
        std::fs::create_dir_all(&sub).map_err(|e| Error::io(sub.display(), e))?;
        let mut data = vec![0u8; 512 + (index * 977) % 65_536];
        rng.fill_bytes(&mut data);
        let path = sub.join(format!("f{index}"));
        std::fs::write(&path, &data).map_err(|e| Error::io(path.display(), e))?;
    }
    Ok(())
}

/// A checksum of every file's path and content under `dir`, computed by `find` and `sha256sum`
/// (independent of Ferry's own code).
pub fn tree_checksum(dir: &std::path::Path) -> Result<String, Error> {
    let output = std::process::Command::new("sh")
        .arg("-c")
        .arg("find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum | sha256sum")
        .current_dir(dir)
        .output()
        .map_err(|e| Error::io(dir.display(), e))?;
    if !output.status.success() {
        return Err(Error::Setup(format!("checksum of {} failed", dir.display())));
    }
    Ok(String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string())
}
