//! Mapping a pod's volume mounts to directories on this machine, and its command line onto them.

use crate::Error;
use k8s_openapi::api::core::v1::{Container, PersistentVolume, PersistentVolumeClaim, Pod};
use kube::{Api, Client, ResourceExt};
use std::path::{Path, PathBuf};

/// (path inside the pod, path on this machine) for every mount of `container`; `None` while a claim
/// is not bound yet.
pub async fn resolve(
    client: &Client,
    pod: &Pod,
    container: &Container,
    pod_dir: &Path,
) -> Result<Option<Vec<(String, PathBuf)>>, Error> {
    let namespace = pod.namespace().unwrap_or_default();
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), &namespace);
    let volumes: Api<PersistentVolume> = Api::all(client.clone());
    let pod_volumes = pod
        .spec
        .as_ref()
        .map(|s| s.volumes.clone().unwrap_or_default())
        .unwrap_or_default();
    let mut mounts = Vec::new();
    for mount in container.volume_mounts.iter().flatten() {
        let Some(volume) = pod_volumes.iter().find(|v| v.name == mount.name) else {
            continue;
        };
        let base = if let Some(source) = &volume.persistent_volume_claim {
            let Some(claim) = claims.get_opt(&source.claim_name).await? else {
                return Ok(None);
            };
            let Some(volume_name) = claim.spec.and_then(|s| s.volume_name) else {
                return Ok(None);
            };
            let Some(pv) = volumes.get_opt(&volume_name).await? else {
                return Ok(None);
            };
            match pv.spec.and_then(|s| s.host_path).map(|h| PathBuf::from(h.path)) {
                Some(path) => path,
                None => {
                    return Err(Error::Setup(format!(
                        "volume {volume_name} is not a hostPath volume"
                    )));
                }
            }
        } else if let Some(host) = &volume.host_path {
            PathBuf::from(&host.path)
        } else if volume.empty_dir.is_some() {
            let dir = pod_dir.join("volumes").join(&volume.name);
            std::fs::create_dir_all(&dir).map_err(|e| Error::io(dir.display(), e))?;
            dir
        } else if volume.downward_api.is_some() {
            write_downward(pod, pod_dir)?;
            pod_dir.join("volumes").join(&volume.name)
        } else {
            continue;
        };
        let host = match mount.sub_path.as_deref() {
            Some(sub) if !sub.is_empty() => base.join(sub),
            _ => base,
        };
        mounts.push((mount.mount_path.clone(), host));
    }
    std::fs::create_dir_all(pod_dir).map_err(|e| Error::io(pod_dir.display(), e))?;
    Ok(Some(mounts))
}

/// Writes the pod's downward API volumes (name, namespace, labels and annotations by key) under
/// `pod_dir/volumes/<volume>`, as the kubelet does at the start and again whenever the pod's
/// metadata changes. Each file is replaced whole (a reader never sees half of it).
pub fn write_downward(pod: &Pod, pod_dir: &Path) -> Result<(), Error> {
    let volumes = pod.spec.as_ref().and_then(|s| s.volumes.as_ref());
    for volume in volumes.into_iter().flatten() {
        let Some(items) = volume.downward_api.as_ref().and_then(|d| d.items.as_ref()) else {
            continue;
        };
        let dir = pod_dir.join("volumes").join(&volume.name);
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(dir.display(), e))?;
        for item in items {
            let Some(field) = item.field_ref.as_ref().map(|f| f.field_path.as_str()) else {
                continue;
            };
            let value = field_value(pod, field).unwrap_or_default();
            let path = dir.join(&item.path);
            if std::fs::read_to_string(&path).ok().as_deref() == Some(value.as_str()) {
                continue;
            }
            let temporary = dir.join(format!(".{}.new", item.path));
            std::fs::write(&temporary, &value).map_err(|e| Error::io(temporary.display(), e))?;
            std::fs::rename(&temporary, &path).map_err(|e| Error::io(path.display(), e))?;
        }
    }
    Ok(())
}

/// A downward API field of `pod`: `metadata.name`, `metadata.namespace`,
/// `metadata.annotations['k']`, `metadata.labels['k']` (a missing key is empty, as for the kubelet).
fn field_value(pod: &Pod, field: &str) -> Option<String> {
    let keyed = |prefix: &str| field.strip_prefix(prefix)?.strip_suffix("']").map(str::to_string);
    match field {
        "metadata.name" => Some(pod.name_any()),
        "metadata.namespace" => pod.namespace(),
        _ => {
            if let Some(key) = keyed("metadata.annotations['") {
                Some(pod.annotations().get(&key).cloned().unwrap_or_default())
            } else {
                keyed("metadata.labels['").map(|key| pod.labels().get(&key).cloned().unwrap_or_default())
            }
        }
    }
}

/// The container's environment: plain values, and the downward-API fields a mover needs.
pub fn environment(pod: &Pod, container: &Container) -> Vec<(String, String)> {
    container
        .env
        .iter()
        .flatten()
        .filter_map(|var| {
            if let Some(value) = &var.value {
                return Some((var.name.clone(), value.clone()));
            }
            let field = var.value_from.as_ref()?.field_ref.as_ref()?.field_path.as_str();
            let value = match field {
                "metadata.name" => pod.name_any(),
                "metadata.namespace" => pod.namespace().unwrap_or_default(),
                "spec.nodeName" => pod.spec.as_ref()?.node_name.clone()?,
                _ => return None,
            };
            Some((var.name.clone(), value))
        })
        .collect()
}

/// Replaces each mount path that appears in `text` as a whole path component prefix (`/data`,
/// `/data/x`, `--source=/data`) with the directory behind it. Longer mount paths win.
pub fn rewrite(text: &str, mounts: &[(String, PathBuf)]) -> String {
    let mut sorted: Vec<&(String, PathBuf)> =
        mounts.iter().filter(|(path, _)| path.starts_with('/')).collect();
    sorted.sort_by_key(|(path, _)| std::cmp::Reverse(path.len()));
    let mut out = String::with_capacity(text.len());
    let mut index = 0;
    'scan: while index < text.len() {
        let rest = &text[index..];
        let at_boundary = index == 0 || text[..index].ends_with(|c: char| !is_path_char(c));
        if at_boundary {
            for (inside, outside) in &sorted {
                let path = inside.trim_end_matches('/');
                if let Some(after) = rest.strip_prefix(path)
                    && (after.is_empty()
                        || after.starts_with('/')
                        || after.starts_with(|c: char| !is_path_char(c)))
                {
                    out.push_str(&outside.display().to_string());
                    index += path.len();
                    continue 'scan;
                }
            }
        }
        let Some(c) = rest.chars().next() else { break };
        out.push(c);
        index += c.len_utf8();
    }
    out
}

fn is_path_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '/' | '.' | '_' | '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn downward_files_follow_the_pods_annotations() {
        let mut pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "m", "namespace": "ns", "annotations": {"ferry.dev/final-pass": ""}},
            "spec": {"containers": [], "volumes": [{"name": "signal", "downwardAPI": {"items": [
                {"path": "go", "fieldRef": {"fieldPath": "metadata.annotations['ferry.dev/final-pass']"}},
                {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}},
                {"path": "missing", "fieldRef": {"fieldPath": "metadata.labels['x']"}},
            ]}}]},
        }))
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let file =
            |name: &str| std::fs::read_to_string(dir.path().join("volumes/signal").join(name)).unwrap();
        write_downward(&pod, dir.path()).unwrap();
        assert_eq!(
            (
                file("go").as_str(),
                file("name").as_str(),
                file("missing").as_str()
            ),
            ("", "m", "")
        );
        pod.annotations_mut()
            .insert("ferry.dev/final-pass".into(), "go".into());
        write_downward(&pod, dir.path()).unwrap();
        assert_eq!(file("go"), "go");
    }

    #[test]
    fn rewrites_whole_path_prefixes_only() {
        let mounts = vec![
            ("/data".to_string(), PathBuf::from("/v/pvc-1")),
            ("/data/sub".to_string(), PathBuf::from("/v/pvc-2")),
            ("/dev/termination-log".to_string(), PathBuf::from("/w/term")),
        ];
        assert_eq!(rewrite("/data", &mounts), "/v/pvc-1");
        assert_eq!(rewrite("/data/x/y", &mounts), "/v/pvc-1/x/y");
        assert_eq!(rewrite("/data/sub/z", &mounts), "/v/pvc-2/z");
        assert_eq!(rewrite("--source=/data", &mounts), "--source=/v/pvc-1");
        assert_eq!(
            rewrite("ls /data > /dev/termination-log", &mounts),
            "ls /v/pvc-1 > /w/term"
        );
        assert_eq!(
            rewrite("/database /mydata data", &mounts),
            "/database /mydata data"
        );
        assert_eq!(rewrite("'/data'", &mounts), "'/v/pvc-1'");
    }
}
