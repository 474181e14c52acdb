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
