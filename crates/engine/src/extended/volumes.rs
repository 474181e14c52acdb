//! Volume claim template changes of an ExtendedStatefulSet: compared with a live StatefulSet by
//! name, size (by value) and class only (the API server fills in the rest of a stored template),
//! each a VolumeResize of that StatefulSet.

use crate::trigger::request::positive_bytes;
use ferry_api::VolumeChange;
use ferry_api::listed::Listing;
use ferry_api::quantity::requested_storage;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;

fn templates(sts: &StatefulSet) -> &[PersistentVolumeClaim] {
    sts.spec
        .as_ref()
        .and_then(|spec| spec.volume_claim_templates.as_deref())
        .unwrap_or(&[])
}

fn name(template: &PersistentVolumeClaim) -> &str {
    template.metadata.name.as_deref().unwrap_or("")
}

/// The changes that bring `live`'s templates to `desired`'s, or why they cannot be made.
pub fn changes(live: &StatefulSet, desired: &StatefulSet) -> Result<Vec<VolumeChange>, String> {
    let live_names: Vec<&str> = templates(live).iter().map(name).collect();
    let desired_names: Vec<&str> = templates(desired).iter().map(name).collect();
    if live_names != desired_names {
        return Err(format!(
            "volumeClaimTemplates cannot be added, removed, renamed or reordered (running: [{}], wanted: [{}]); their size and storageClassName can change",
            live_names.join(", "),
            desired_names.join(", ")
        ));
    }
    let mut changes = Vec::new();
    for (old, new) in templates(live).iter().zip(templates(desired)) {
        let old_size = requested_storage(old.spec.as_ref()).map(|q| q.0.clone());
        let Some(new_size) = requested_storage(new.spec.as_ref()).map(|q| q.0.clone()) else {
            continue;
        };
        let new_bytes = positive_bytes(&new_size)
            .map_err(|error| format!("volume claim template {:?}: {error}", name(new)))?;
        let old_bytes = old_size.as_deref().and_then(|size| positive_bytes(size).ok());
        let old_class = old.spec.as_ref().and_then(|s| s.storage_class_name.clone());
        let new_class = new.spec.as_ref().and_then(|s| s.storage_class_name.clone());
        let class_changes = new_class.is_some() && new_class != old_class;
        if old_bytes != Some(new_bytes) || class_changes {
            changes.push(VolumeChange {
                name: name(new).to_string(),
                size: new_size,
                storage_class_name: new_class.filter(|_| class_changes),
                volume_attributes_class_name: None,
            });
        }
    }
    Ok(changes)
}

/// Why the resize named `resize` cannot be made, when one by that name is already there: it ended
/// (nothing is at work on the StatefulSet, see [`Listing::working_on`]), or cannot be read by this
/// Ferry.
pub(super) fn ended_under_name(resizes: &Listing, resize: &str, stateful_set: &str) -> Option<String> {
    if let Some(ended) = resizes
        .readable
        .iter()
        .find(|r| r.metadata.name.as_deref() == Some(resize))
    {
        return Some(format!(
            "VolumeResize {resize} of {stateful_set} ended {:?}; delete it to try again",
            ended.phase()
        ));
    }
    resizes
        .unreadable
        .iter()
        .find(|r| r.name() == resize)
        .map(|unreadable| {
            format!(
                "VolumeResize {resize} of {stateful_set} cannot be read by this Ferry ({}); delete it to try again",
                unreadable.error
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sts(templates: serde_json::Value) -> StatefulSet {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "db"},
            "spec": {"selector": {}, "template": {}, "volumeClaimTemplates": templates},
        }))
        .unwrap()
    }

    #[test]
    fn only_size_and_class_count_and_defaults_filled_in_by_the_server_do_not() {
        let live = sts(serde_json::json!([{
            "apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem", "storageClassName": "a",
                     "resources": {"requests": {"storage": "1Gi"}}},
            "status": {"phase": "Pending"},
        }]));
        let same = sts(serde_json::json!([{"metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "a", "resources": {"requests": {"storage": "1024Mi"}}}}]));
        assert_eq!(changes(&live, &same), Ok(vec![]));
        let grown = sts(serde_json::json!([{"metadata": {"name": "data"},
            "spec": {"storageClassName": "b", "resources": {"requests": {"storage": "2Gi"}}}}]));
        assert_eq!(
            changes(&live, &grown),
            Ok(vec![VolumeChange {
                name: "data".into(),
                size: "2Gi".into(),
                storage_class_name: Some("b".into()),
                volume_attributes_class_name: None,
            }])
        );
        let renamed = sts(serde_json::json!([{"metadata": {"name": "logs"},
            "spec": {"resources": {"requests": {"storage": "1Gi"}}}}]));
        assert!(changes(&live, &renamed).unwrap_err().contains("cannot be added"));
    }
}
