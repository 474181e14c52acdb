//! topolvm's pvc-autoresizer (github.com/topolvm/pvc-autoresizer): its annotations and which
//! claims it resizes, by its own rule, so that Ferry's autoscaler leaves those claims to it
//! rather than both growing the same claim; and the words that say how to switch to Ferry.

use ferry_api::parse_bytes;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use k8s_openapi::api::storage::v1::StorageClass;
use std::collections::BTreeSet;

/// Every annotation of pvc-autoresizer starts so.
pub const PREFIX: &str = "resize.topolvm.io/";
/// On a StorageClass: `"true"` lets pvc-autoresizer resize its claims.
pub const ENABLED: &str = "resize.topolvm.io/enabled";
/// On a claim: the size it may grow to; without it (or zero) pvc-autoresizer leaves the claim.
pub const STORAGE_LIMIT: &str = "resize.topolvm.io/storage_limit";
/// On a claim: grow when free space is below this (`10%` or a quantity of bytes).
pub const THRESHOLD: &str = "resize.topolvm.io/threshold";
/// On a claim: grow when free inodes are below this percent.
pub const INODES_THRESHOLD: &str = "resize.topolvm.io/inodes-threshold";
/// On a claim: how much a grow adds (`10%` of the current size, or a quantity).
pub const INCREASE: &str = "resize.topolvm.io/increase";
/// On a claim: a label key; a new claim starts at the largest size of its group (a webhook).
pub const INITIAL_RESIZE_GROUP_BY: &str = "resize.topolvm.io/initial-resize-group-by";
/// pvc-autoresizer's own state on a claim it grew (the capacity before).
pub const PRE_CAPACITY_BYTES: &str = "resize.topolvm.io/pre_capacity_bytes";
/// Its default for the threshold, the inodes threshold and the increase.
pub const DEFAULT_PERCENT: &str = "10%";

fn annotation<'a>(
    meta: &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    key: &str,
) -> Option<&'a str> {
    meta.annotations.as_ref()?.get(key).map(String::as_str)
}

/// The class lets pvc-autoresizer act: its annotation is exactly `"true"` (it indexes classes
/// by the annotation's value and asks for "true").
pub fn class_enabled(class: &StorageClass) -> bool {
    annotation(&class.metadata, ENABLED) == Some("true")
}

/// The claim asks pvc-autoresizer to grow it: a storage limit that is a positive quantity (an
/// empty, zero or malformed one makes it skip the claim; a negative one is always "reached").
pub fn has_storage_limit(claim: &PersistentVolumeClaim) -> bool {
    annotation(&claim.metadata, STORAGE_LIMIT).is_some_and(|limit| parse_bytes(limit).is_ok())
}

/// Whether pvc-autoresizer resizes `claim`, by its rule: the claim's StorageClass (among
/// `classes`) is annotated `resize.topolvm.io/enabled: "true"`, the claim has a positive
/// `resize.topolvm.io/storage_limit`, its volume mode is Filesystem, and it is Bound. (Run with
/// `--no-annotation-check`, pvc-autoresizer ignores the class's annotation; Ferry cannot see that.)
pub fn manages(claim: &PersistentVolumeClaim, classes: &[StorageClass]) -> bool {
    let Some(spec) = &claim.spec else { return false };
    let Some(class_name) = spec.storage_class_name.as_deref() else {
        return false;
    };
    let enabled = classes
        .iter()
        .any(|class| class.metadata.name.as_deref() == Some(class_name) && class_enabled(class));
    let filesystem = spec
        .volume_mode
        .as_deref()
        .is_none_or(|mode| mode == "Filesystem");
    let bound = claim.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound");
    enabled && has_storage_limit(claim) && filesystem && bound
}

/// Why Ferry does not autoscale a volume whose `claims` pvc-autoresizer manages, and how to
/// switch; `None` when it manages none of them.
pub fn refusal(claims: &[PersistentVolumeClaim], classes: &[StorageClass]) -> Option<String> {
    let managed: Vec<&PersistentVolumeClaim> = claims.iter().filter(|c| manages(c, classes)).collect();
    if managed.is_empty() {
        return None;
    }
    let names: Vec<&str> = managed
        .iter()
        .filter_map(|c| c.metadata.name.as_deref())
        .collect();
    let class_names: BTreeSet<&str> = managed
        .iter()
        .filter_map(|c| c.spec.as_ref()?.storage_class_name.as_deref())
        .collect();
    let class_names: Vec<&str> = class_names.into_iter().collect();
    Some(format!(
        "not autoscaled: topolvm's pvc-autoresizer resizes claim(s) {} (StorageClass {} has \
         {ENABLED}: \"true\" and the claims {STORAGE_LIMIT}), and two autoscalers would grow \
         the same claims. To let Ferry autoscale them, remove {STORAGE_LIMIT} from the claims \
         (and from the volume claim template, which gives it to new replicas' claims), or \
         {ENABLED} from the StorageClass (pvc-autoresizer then leaves every claim of the \
         class); `kubectl ferry import -f` of the StatefulSet and its claims turns their \
         {PREFIX} annotations into a VolumeAutoscaler",
        names.join(", "),
        class_names.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn class(name: &str, enabled: Option<&str>) -> StorageClass {
        let annotations = enabled.map_or(json!({}), |value| json!({ENABLED: value}));
        serde_json::from_value(json!({
            "metadata": {"name": name, "annotations": annotations},
            "provisioner": "topolvm.io",
        }))
        .unwrap()
    }

    fn claim(name: &str, limit: Option<&str>) -> PersistentVolumeClaim {
        let annotations = limit.map_or(json!({}), |value| json!({STORAGE_LIMIT: value}));
        serde_json::from_value(json!({
            "metadata": {"name": name, "annotations": annotations},
            "spec": {"storageClassName": "topolvm", "volumeMode": "Filesystem"},
            "status": {"phase": "Bound"},
        }))
        .unwrap()
    }

    #[test]
    fn a_bound_filesystem_claim_with_a_limit_of_an_enabled_class_is_managed() {
        let classes = [class("topolvm", Some("true")), class("other", None)];
        assert!(manages(&claim("data-db-0", Some("100Gi")), &classes));
        // Its volume mode may be left to the default.
        let mut defaulted = claim("data-db-0", Some("100Gi"));
        defaulted.spec.as_mut().unwrap().volume_mode = None;
        assert!(manages(&defaulted, &classes));
    }

    #[test]
    fn each_part_of_the_rule_is_needed() {
        let enabled = [class("topolvm", Some("true"))];
        // The class: not annotated, annotated otherwise than exactly "true", or not known.
        assert!(!manages(&claim("c", Some("100Gi")), &[class("topolvm", None)]));
        assert!(!manages(
            &claim("c", Some("100Gi")),
            &[class("topolvm", Some("True"))]
        ));
        assert!(!manages(&claim("c", Some("100Gi")), &[]));
        // The limit: missing, empty, zero, malformed or negative.
        for limit in [None, Some(""), Some("0"), Some("lots"), Some("-1Gi")] {
            assert!(!manages(&claim("c", limit), &enabled), "{limit:?}");
        }
        // A block volume, a claim not bound yet, a claim of no class.
        let mut block = claim("c", Some("100Gi"));
        block.spec.as_mut().unwrap().volume_mode = Some("Block".into());
        assert!(!manages(&block, &enabled));
        let mut pending = claim("c", Some("100Gi"));
        pending.status.as_mut().unwrap().phase = Some("Pending".into());
        assert!(!manages(&pending, &enabled));
        let mut classless = claim("c", Some("100Gi"));
        classless.spec.as_mut().unwrap().storage_class_name = None;
        assert!(!manages(&classless, &enabled));
    }

    #[test]
    fn the_refusal_names_the_claims_the_class_and_each_way_to_switch() {
        let classes = [class("topolvm", Some("true"))];
        let claims = [
            claim("data-db-0", Some("100Gi")),
            claim("data-db-1", None),
            claim("data-db-2", Some("100Gi")),
        ];
        let message = refusal(&claims, &classes).unwrap();
        assert!(message.contains("claim(s) data-db-0, data-db-2 "), "{message}");
        assert!(message.contains("StorageClass topolvm has"), "{message}");
        assert!(message.contains(&format!("remove {STORAGE_LIMIT} from the claims")));
        assert!(message.contains(&format!("or {ENABLED} from the StorageClass")));
        assert!(message.contains("kubectl ferry import"));
        assert_eq!(refusal(&claims[1..2], &classes), None);
    }
}
