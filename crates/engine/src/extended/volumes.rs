//! Volume claim template changes of an ExtendedStatefulSet: compared with a live StatefulSet by
//! name, size (by value) and class only (the API server fills in the rest of a stored template),
//! each a VolumeResize of that StatefulSet. A template asks for a change only when it asks for
//! something other than what it asked for when the StatefulSets last had it (`status.
//! volumeClaimTemplates`): a volume grown since by an autoscaler or by hand is kept, never shrunk
//! back; without that record (an object from before it), nothing shrinks.

use crate::trigger::request::positive_bytes;
use ferry_api::listed::Listing;
use ferry_api::quantity::requested_storage;
use ferry_api::{RequestedVolume, VolumeChange};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use std::collections::BTreeMap;

fn templates(sts: &StatefulSet) -> &[PersistentVolumeClaim] {
    sts.spec
        .as_ref()
        .and_then(|spec| spec.volume_claim_templates.as_deref())
        .unwrap_or(&[])
}

fn name(template: &PersistentVolumeClaim) -> &str {
    template.metadata.name.as_deref().unwrap_or("")
}

/// What a template asks for.
fn requested(template: &PersistentVolumeClaim) -> Option<RequestedVolume> {
    Some(RequestedVolume {
        size: requested_storage(template.spec.as_ref())?.0.clone(),
        storage_class_name: template.spec.as_ref().and_then(|s| s.storage_class_name.clone()),
    })
}

/// Whether a live template has what was asked for (the size by value; the class when one is asked).
fn has(live: &PersistentVolumeClaim, asked: &RequestedVolume) -> bool {
    let size = requested_storage(live.spec.as_ref()).and_then(|q| positive_bytes(&q.0).ok());
    let class = live.spec.as_ref().and_then(|s| s.storage_class_name.as_ref());
    size.is_some()
        && size == positive_bytes(&asked.size).ok()
        && (asked.storage_class_name.is_none() || class == asked.storage_class_name.as_ref())
}

/// The record of volume claim templates the status holds (`status.volumeClaimTemplates`).
pub fn recorded(ests: &ferry_api::ExtendedStatefulSet) -> BTreeMap<String, RequestedVolume> {
    ests.status
        .as_ref()
        .map(|s| s.volume_claim_templates.clone())
        .unwrap_or_default()
}

/// The record to keep in status: each template as `desired` asks for it where every live
/// StatefulSet has it so, else what the record said.
pub fn taken(
    previous: &BTreeMap<String, RequestedVolume>,
    desired: &StatefulSet,
    lives: &[&StatefulSet],
) -> BTreeMap<String, RequestedVolume> {
    let mut record = BTreeMap::new();
    for template in templates(desired) {
        let name = name(template).to_string();
        let asked = requested(template);
        let everywhere = |asked: &RequestedVolume| {
            !lives.is_empty()
                && lives.iter().all(|live| {
                    templates(live)
                        .iter()
                        .find(|t| self::name(t) == name)
                        .is_some_and(|t| has(t, asked))
                })
        };
        match asked {
            Some(asked) if everywhere(&asked) => {
                record.insert(name, asked);
            }
            _ => {
                if let Some(kept) = previous.get(&name) {
                    record.insert(name, kept.clone());
                }
            }
        }
    }
    record
}

/// The changes that bring `live`'s templates to `desired`'s, or why they cannot be made; `taken` is
/// the record in status (see the module's docs).
pub fn changes(
    live: &StatefulSet,
    desired: &StatefulSet,
    taken: &BTreeMap<String, RequestedVolume>,
) -> Result<Vec<VolumeChange>, String> {
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
        let recorded = taken.get(name(new));
        if recorded.is_some() && recorded == requested(new).as_ref() {
            // Asked for before and had: whatever the StatefulSet has now was made since.
            continue;
        }
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
        let shrinks = old_bytes.is_some_and(|old| new_bytes < old);
        if recorded.is_none() && shrinks {
            // No record of what was asked before: a smaller template may be one a growth passed.
            continue;
        }
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
        assert_eq!(changes(&live, &same, &BTreeMap::new()), Ok(vec![]));
        let grown = sts(serde_json::json!([{"metadata": {"name": "data"},
            "spec": {"storageClassName": "b", "resources": {"requests": {"storage": "2Gi"}}}}]));
        assert_eq!(
            changes(&live, &grown, &BTreeMap::new()),
            Ok(vec![VolumeChange {
                name: "data".into(),
                size: "2Gi".into(),
                storage_class_name: Some("b".into()),
                volume_attributes_class_name: None,
            }])
        );
        let renamed = sts(serde_json::json!([{"metadata": {"name": "logs"},
            "spec": {"resources": {"requests": {"storage": "1Gi"}}}}]));
        assert!(
            changes(&live, &renamed, &BTreeMap::new())
                .unwrap_err()
                .contains("cannot be added")
        );
    }

    fn data(size: &str) -> StatefulSet {
        sts(serde_json::json!([{"metadata": {"name": "data"},
            "spec": {"resources": {"requests": {"storage": size}}}}]))
    }

    fn record(size: &str) -> BTreeMap<String, RequestedVolume> {
        BTreeMap::from([(
            "data".to_string(),
            RequestedVolume {
                size: size.into(),
                storage_class_name: None,
            },
        )])
    }

    /// An autoscaler (or `kubectl ferry resize`) grew the StatefulSet's volumes past what the
    /// ExtendedStatefulSet asks for: that is kept, with or without a record; a shrink happens only
    /// when the template asks for something other than it did.
    #[test]
    fn a_growth_made_elsewhere_is_kept_and_only_an_asked_change_shrinks() {
        let grown = data("2Gi");
        let asks = data("1Gi");
        assert_eq!(changes(&grown, &asks, &record("1Gi")), Ok(vec![]));
        assert_eq!(changes(&grown, &asks, &BTreeMap::new()), Ok(vec![]));
        // Asked to grow past it: a change.
        assert_eq!(changes(&grown, &data("3Gi"), &record("1Gi")).unwrap().len(), 1);
        // The template lowered from what it asked (3Gi) to 1Gi: an explicit shrink.
        let shrink = changes(&data("3Gi"), &asks, &record("3Gi")).unwrap();
        assert_eq!(shrink[0].size, "1Gi");
        // The record follows what the StatefulSets have: asked and had is taken; asked and not had
        // (a resize at work, or refused) keeps what was taken before.
        assert_eq!(taken(&BTreeMap::new(), &asks, &[&data("1024Mi")]), record("1Gi"));
        assert_eq!(taken(&record("1Gi"), &data("3Gi"), &[&grown]), record("1Gi"));
        assert_eq!(taken(&BTreeMap::new(), &data("3Gi"), &[&grown]), BTreeMap::new());
    }
}
