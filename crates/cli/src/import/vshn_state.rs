//! The vshn statefulset-resize-controller keeps its whole state on the StatefulSet: the claims
//! it resizes (annotation `pvcs`, a JSON list written by Go, field names as in its struct), the
//! replicas before it scaled to zero (`replicas`), a scale-up under way (`scalup`), and the
//! labels `failed` (it gave up) and `resize-inplace` (its in-place mode). Releases before
//! `sts-resize.vshn.net/` used `sts-resize.appuio.ch/`.

use super::fields::quantity;
use serde_json::Value;

pub const PREFIXES: [&str; 2] = ["sts-resize.vshn.net/", "sts-resize.appuio.ch/"];

/// What the controller wrote on one StatefulSet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marks {
    pub prefix: &'static str,
    pub claims: Vec<Claim>,
    /// `replicas`: the replicas before it scaled to zero.
    pub original_replicas: Option<i32>,
    /// `scalup: "true"`: scaling back up (it never removes it after a success).
    pub scaling_up: bool,
    /// Label `failed: "true"`: a copy Job failed; it waits for a person and never resumes.
    pub failed: bool,
    /// Label `resize-inplace: "true"`: its in-place mode (claims patched, nothing copied).
    pub in_place: bool,
}

/// One entry of `pvcs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub name: String,
    pub original_size: Option<String>,
    pub target_size: Option<String>,
    pub backed_up: bool,
    pub restored: bool,
}

impl Claim {
    fn read(entry: &Value) -> Claim {
        Claim {
            name: entry["SourceName"].as_str().unwrap_or_default().to_string(),
            original_size: quantity(&entry["Spec"]["resources"]["requests"]["storage"]),
            target_size: quantity(&entry["TargetSize"]),
            backed_up: entry["BackedUp"].as_bool().unwrap_or(false),
            restored: entry["Restored"].as_bool().unwrap_or(false),
        }
    }
}

/// Where a resize of the controller stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Nothing under way (`leftovers`: a finished resize's `replicas`/`scalup` are still there).
    Idle { leftovers: bool },
    /// Claims recorded, none backed up: scaling down or copying to the backups; the original
    /// claims still hold the data.
    BackingUp,
    /// A claim backed up and not restored: it may have been deleted and re-created empty at the
    /// new size; its data may be only in its backup.
    Restoring,
    /// Every claim done; pods are coming back (`running` of the original replicas).
    ScalingUp { running: i32 },
    /// Scaled to zero by the controller with no claim recorded.
    ScaledDown,
    /// It gave up and waits for a person.
    Failed,
}

/// The controller's marks on a StatefulSet; `None` without any. An unreadable `pvcs` is an error.
pub fn read(object: &Value) -> Result<Option<Marks>, String> {
    let annotations = &object["metadata"]["annotations"];
    let labels = &object["metadata"]["labels"];
    let marked = |prefix: &str| {
        [annotations, labels]
            .iter()
            .filter_map(|map| map.as_object())
            .any(|map| map.keys().any(|key| key.starts_with(prefix)))
    };
    let Some(prefix) = PREFIXES.into_iter().find(|prefix| marked(prefix)) else {
        return Ok(None);
    };
    let key = |name: &str| format!("{prefix}{name}");
    let claims = match annotations[key("pvcs")].as_str() {
        None | Some("") | Some("null") => Vec::new(),
        Some(text) => serde_json::from_str::<Vec<Value>>(text)
            .map_err(|error| {
                format!(
                    "annotation {} is not the controller's list of claims: {error}",
                    key("pvcs")
                )
            })?
            .iter()
            .map(Claim::read)
            .collect(),
    };
    let original_replicas = match annotations[key("replicas")].as_str() {
        None => None,
        Some(text) => Some(text.trim().parse().map_err(|_| {
            format!(
                "annotation {} is {text:?}, not a number of replicas",
                key("replicas")
            )
        })?),
    };
    Ok(Some(Marks {
        prefix,
        claims,
        original_replicas,
        scaling_up: annotations[key("scalup")] == "true",
        failed: labels[key("failed")] == "true",
        in_place: labels[key("resize-inplace")] == "true",
    }))
}

/// The stage, from the marks and the StatefulSet's `spec.replicas` and `status.replicas` (absent
/// from a file exported without status).
pub fn stage(marks: &Marks, spec_replicas: Option<i32>, status_replicas: Option<i32>) -> Stage {
    if marks.failed {
        return Stage::Failed;
    }
    if marks.claims.iter().any(|c| c.backed_up && !c.restored) {
        return Stage::Restoring;
    }
    if !marks.claims.is_empty() {
        return Stage::BackingUp;
    }
    match (marks.original_replicas, marks.scaling_up) {
        (Some(original), true) => match status_replicas {
            Some(running) if running < original => Stage::ScalingUp { running },
            _ => Stage::Idle { leftovers: true },
        },
        (Some(_), false) if spec_replicas == Some(0) => Stage::ScaledDown,
        (original, scaling_up) => Stage::Idle {
            leftovers: original.is_some() || scaling_up,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sts(annotations: Value, labels: Value) -> Value {
        json!({"metadata": {"name": "web", "annotations": annotations, "labels": labels}})
    }

    fn entry(backed_up: bool, restored: bool) -> Value {
        json!({"Namespace": "apps", "SourceName": "www-web-0", "Labels": {"app": "nginx"},
               "Spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
               "TargetSize": "2Gi", "TargetStorageClass": null, "SourceStorageClass": null,
               "BackedUp": backed_up, "Restored": restored})
    }

    fn marks(annotations: Value, labels: Value) -> Marks {
        read(&sts(annotations, labels)).unwrap().unwrap()
    }

    #[test]
    fn the_pvcs_annotation_reads_as_the_controller_wrote_it() {
        let pvcs = serde_json::to_string(&json!([entry(true, false)])).unwrap();
        let marks = marks(
            json!({"sts-resize.vshn.net/pvcs": pvcs, "sts-resize.vshn.net/replicas": "3"}),
            json!({}),
        );
        assert_eq!(marks.prefix, "sts-resize.vshn.net/");
        assert_eq!(marks.original_replicas, Some(3));
        assert_eq!(
            marks.claims,
            [Claim {
                name: "www-web-0".into(),
                original_size: Some("1Gi".into()),
                target_size: Some("2Gi".into()),
                backed_up: true,
                restored: false
            }]
        );
        let old = self::marks(json!({}), json!({"sts-resize.appuio.ch/failed": "true"}));
        assert_eq!((old.prefix, old.failed), ("sts-resize.appuio.ch/", true));
        assert_eq!(read(&sts(json!({"other": "x"}), json!({}))).unwrap(), None);
        let bad = read(&sts(json!({"sts-resize.vshn.net/pvcs": "{"}), json!({}))).unwrap_err();
        assert!(bad.contains("sts-resize.vshn.net/pvcs"), "{bad}");
    }

    #[test]
    fn each_stage_is_told_from_the_marks_and_the_replicas() {
        let pvcs = |entries: Value| serde_json::to_string(&entries).unwrap();
        let m = |annotations: Value| marks(annotations, json!({}));
        let key = |k: &str| format!("sts-resize.vshn.net/{k}");
        let backing_up = m(json!({key("pvcs"): pvcs(json!([entry(false, false)])), key("replicas"): "3"}));
        assert_eq!(stage(&backing_up, Some(0), Some(0)), Stage::BackingUp);
        let restoring = m(json!({key("pvcs"): pvcs(json!([entry(false, false), entry(true, false)]))}));
        assert_eq!(stage(&restoring, Some(0), None), Stage::Restoring);
        let up = m(json!({key("pvcs"): "[]", key("replicas"): "3", key("scalup"): "true"}));
        assert_eq!(stage(&up, Some(3), Some(1)), Stage::ScalingUp { running: 1 });
        assert_eq!(stage(&up, Some(3), Some(3)), Stage::Idle { leftovers: true });
        assert_eq!(stage(&up, Some(3), None), Stage::Idle { leftovers: true });
        let down = m(json!({key("pvcs"): "null", key("replicas"): "3"}));
        assert_eq!(stage(&down, Some(0), Some(0)), Stage::ScaledDown);
        let idle = m(json!({key("pvcs"): "[]"}));
        assert_eq!(stage(&idle, Some(3), Some(3)), Stage::Idle { leftovers: false });
        let failed = marks(
            json!({key("pvcs"): pvcs(json!([entry(true, false)]))}),
            json!({key("failed"): "true"}),
        );
        assert_eq!(stage(&failed, Some(0), Some(0)), Stage::Failed);
    }
}
