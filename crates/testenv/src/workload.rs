//! Workloads that run for real on the real node: a StatefulSet whose pods keep writing numbered
//! records to their volume, acknowledge each one outside it, and on SIGTERM go on writing for a
//! second (a database's checkpoint) before they exit. After a resize, every acknowledged record must
//! be on the volume the replica ends up with.

use crate::{Error, REAL_NODE_KEY, paths};
use k8s_openapi::api::apps::v1::StatefulSet;
use serde_json::json;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Images imported into the real node's containerd by `scripts/images`.
pub const BUSYBOX_IMAGE: &str = "ferry.local/busybox:dev";
pub const FERRY_IMAGE: &str = "ferry.local/ferry:dev";
pub const POSTGRES_IMAGE: &str = "ferry.local/postgres:dev";

/// The file, on the first template's volume, that the writer appends its records to.
pub const RECORDS_FILE: &str = "records";

/// Where the writers of a namespace acknowledge their records on this machine: a hostPath
/// directory, so the acknowledgements survive whatever happens to the volumes.
pub fn acks_dir(namespace: &str) -> PathBuf {
    paths::state_dir().join("acks").join(namespace)
}

/// The writer script: numbering goes on from the last acknowledgement, so a restarted replica
/// continues the same sequence.
const WRITER: &str = r#"
# A first start seeds the volume with some bulk data, so there is something to copy.
[ -f "/$VOLUME/seed" ] || head -c "$((SEED_KIB * 1024))" /dev/urandom > "/$VOLUME/seed"
acked="/acks/$(hostname)"
i=$(tail -n 1 "$acked" 2>/dev/null || true)
i=${i:-0}
stopping=0
trap 'stopping=1' TERM
write() { i=$((i + 1)); echo "record $i" >> "/$VOLUME/records" && echo "$i" >> "$acked"; }
# The 50 ms between records is a read that times out on a FIFO nobody writes to: the shell's own
# builtin (a `sleep` would be a fork and an exec of busybox twenty times a second per replica), and
# SIGTERM still ends it at once.
mkfifo /tmp/tick 2>/dev/null
exec 3<>/tmp/tick
while [ "$stopping" = 0 ]; do
  write
  read -t 0.05 tick <&3
done
# Graceful shutdown: like a database checkpoint, write CHECKPOINT_KIB at once, then keep writing
# records for a second after SIGTERM.
[ "$CHECKPOINT_KIB" -gt 0 ] && head -c "$((CHECKPOINT_KIB * 1024))" /dev/urandom > "/$VOLUME/checkpoint-$i"
n=0
while [ "$n" -lt 20 ]; do write; n=$((n + 1)); read -t 0.05 tick <&3; done
exit 0
"#;

/// A StatefulSet on the real node (node selector and toleration for its taint) running the writer
/// on the first of `templates` ((name, class, size)), which it first seeds with `seed_kib` KiB of
/// random data (file `seed`) and to which it writes `checkpoint_kib` KiB when told to stop; every
/// template is mounted at `/<name>`.
pub fn writer_stateful_set(
    name: &str,
    replicas: i32,
    templates: &[(&str, &str, &str)],
    namespace: &str,
    seed_kib: u64,
    checkpoint_kib: u64,
) -> Result<StatefulSet, Error> {
    let acks = acks_dir(namespace);
    std::fs::create_dir_all(&acks).map_err(|e| Error::io(acks.display(), e))?;
    let claim_templates = crate::fixtures::claim_templates(templates);
    let mut mounts: Vec<_> = templates
        .iter()
        .map(|(template, _, _)| json!({"name": template, "mountPath": format!("/{template}")}))
        .collect();
    mounts.push(json!({"name": "acks", "mountPath": "/acks"}));
    let first = templates
        .first()
        .map(|(template, _, _)| *template)
        .unwrap_or("data");
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
                "spec": {
                    "nodeSelector": {REAL_NODE_KEY: "true"},
                    "tolerations": [{"key": REAL_NODE_KEY, "operator": "Exists", "effect": "NoSchedule"}],
                    "terminationGracePeriodSeconds": 30,
                    "containers": [{
                        "name": "writer",
                        "image": BUSYBOX_IMAGE,
                        "imagePullPolicy": "Never",
                        "command": ["sh", "-c", WRITER],
                        "env": [
                            {"name": "VOLUME", "value": first},
                            {"name": "SEED_KIB", "value": seed_kib.to_string()},
                            {"name": "CHECKPOINT_KIB", "value": checkpoint_kib.to_string()},
                        ],
                        "volumeMounts": mounts,
                        "startupProbe": startup_probe(first),
                    }],
                    "volumes": [{"name": "acks", "hostPath": {"path": acks.display().to_string(), "type": "Directory"}}],
                },
            },
            "volumeClaimTemplates": claim_templates,
        },
    }))
    .map_err(|e| Error::Setup(format!("writer StatefulSet: {e}")))
}

/// Ready once the first record is written, checked every second until then. A startup probe, not a
/// readiness probe: a probe is a `runc exec` (a container start's worth of CPU), and a readiness
/// probe would go on every second for the pod's whole life; with only a startup probe the kubelet
/// stops probing once it passed and the pod stays Ready while the container runs. A test that needs
/// readiness to change later (an unready marker, a version that never becomes Ready) sets its own.
/// The failure threshold keeps a replica that never writes from being killed for 10 minutes.
pub fn startup_probe(volume: &str) -> serde_json::Value {
    json!({
        "exec": {"command": ["test", "-s", format!("/{volume}/{RECORDS_FILE}")]},
        "periodSeconds": 1,
        "failureThreshold": 600,
    })
}

/// The acknowledged record numbers of a replica (pod name) of the namespace.
pub fn acknowledged(namespace: &str, pod: &str) -> Result<BTreeSet<u64>, Error> {
    let path = acks_dir(namespace).join(pod);
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io(path.display(), e))?;
    Ok(text.lines().filter_map(|line| line.trim().parse().ok()).collect())
}

/// The record numbers in a records file (on a volume's directory on this machine).
pub fn records(volume_dir: &Path) -> Result<BTreeSet<u64>, Error> {
    let path = volume_dir.join(RECORDS_FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io(path.display(), e))?;
    Ok(text
        .lines()
        .filter_map(|line| line.strip_prefix("record "))
        .filter_map(|number| number.trim().parse().ok())
        .collect())
}

/// Acknowledged records missing from the volume: empty when nothing acknowledged was lost.
pub fn lost_records(namespace: &str, pod: &str, volume_dir: &Path) -> Result<Vec<u64>, Error> {
    // Acknowledgements first: a record acknowledged by then was written before, so it is in the
    // records read next. (The other order counts a record written and acknowledged in between, by
    // a replica that writes on, as lost.)
    let acked = acknowledged(namespace, pod)?;
    let on_volume = records(volume_dir)?;
    Ok(acked
        .into_iter()
        .filter(|number| !on_volume.contains(number))
        .collect())
}

/// The size `df` reports for `path` in a pod (through `kubectl exec`), in bytes.
pub async fn df_bytes(namespace: &str, pod: &str, path: &str) -> Result<u64, Error> {
    let (code, out, err) = crate::kubectl(&["-n", namespace, "exec", pod, "--", "df", "-k", path]).await?;
    if code != 0 {
        return Err(Error::Setup(format!("df in {pod}: {err}")));
    }
    out.lines()
        .last()
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|kib| kib.parse::<u64>().ok())
        .map(|kib| kib * 1024)
        .ok_or_else(|| Error::Setup(format!("df in {pod} printed {out:?}")))
}
