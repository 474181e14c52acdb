//! The admission webhook's decision on an update of a StatefulSet: does it change the size,
//! StorageClass or VolumeAttributesClass of volume claim templates (which Kubernetes refuses, and
//! Ferry then does as a VolumeResize), something else in them that nobody can change, or nothing
//! of them at all. Pure.

use super::request::positive_bytes;
use ferry_api::VolumeChange;
use ferry_api::quantity::requested_storage;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplateEdit {
    /// The templates are unchanged (quantities compared by value): nothing to do.
    Unchanged,
    /// Sizes, classes or attributes classes changed: put the stored templates back and record
    /// these changes.
    Resize(Vec<VolumeChange>),
    /// A change nobody can make to a StatefulSet; the message says which and why.
    Refuse(String),
}

fn templates(sts: &StatefulSet) -> &[PersistentVolumeClaim] {
    sts.spec
        .as_ref()
        .and_then(|spec| spec.volume_claim_templates.as_deref())
        .unwrap_or(&[])
}

fn template_name(template: &PersistentVolumeClaim) -> &str {
    template.metadata.name.as_deref().unwrap_or("")
}

fn size_of(template: &PersistentVolumeClaim) -> Option<String> {
    requested_storage(template.spec.as_ref()).map(|quantity| quantity.0.clone())
}

fn class_of(template: &PersistentVolumeClaim) -> Option<String> {
    template.spec.as_ref()?.storage_class_name.clone()
}

fn attributes_of(template: &PersistentVolumeClaim) -> Option<String> {
    template.spec.as_ref()?.volume_attributes_class_name.clone()
}

/// The template without what Ferry can change (size, class, attributes class) and what the API
/// server ignores (status), to compare the rest.
fn without_resizable(template: &PersistentVolumeClaim) -> PersistentVolumeClaim {
    let mut rest = template.clone();
    rest.status = None;
    if let Some(spec) = rest.spec.as_mut() {
        spec.storage_class_name = None;
        spec.volume_attributes_class_name = None;
        if let Some(requests) = spec.resources.as_mut().and_then(|r| r.requests.as_mut()) {
            requests.remove("storage");
        }
    }
    rest
}

/// Compares the stored StatefulSet with the update.
pub fn template_edit(stored: &StatefulSet, update: &StatefulSet) -> TemplateEdit {
    let (before, after) = (templates(stored), templates(update));
    fn names(list: &[PersistentVolumeClaim]) -> Vec<&str> {
        list.iter().map(template_name).collect()
    }
    if names(before) != names(after) {
        return TemplateEdit::Refuse(format!(
            "volumeClaimTemplates cannot be added, removed, renamed or reordered (stored: [{}], update: [{}]); Ferry changes the size, storageClassName and volumeAttributesClassName of existing templates",
            names(before).join(", "),
            names(after).join(", ")
        ));
    }
    let mut changes = Vec::new();
    for (old, new) in before.iter().zip(after) {
        let name = template_name(old);
        if without_resizable(old) != without_resizable(new) {
            return TemplateEdit::Refuse(format!(
                "volume claim template {name:?}: only its storage size, storageClassName and volumeAttributesClassName can change (access modes, volume mode, selectors, labels and the rest stay as they are)"
            ));
        }
        let (old_size, new_size) = (size_of(old), size_of(new));
        let new_bytes = match new_size.as_deref().map(positive_bytes) {
            Some(Ok(bytes)) => Some(bytes),
            Some(Err(error)) => {
                return TemplateEdit::Refuse(format!("volume claim template {name:?}: {error}"));
            }
            None => None,
        };
        let old_bytes = old_size.as_deref().and_then(|s| positive_bytes(s).ok());
        let Some(new_size) = new_size else {
            if old_size.is_some() {
                return TemplateEdit::Refuse(format!(
                    "volume claim template {name:?}: the update removes its storage request; give the size it should have"
                ));
            }
            continue;
        };
        let (old_class, new_class) = (class_of(old), class_of(new));
        let class_changes = old_class != new_class;
        if class_changes && new_class.as_deref().is_none_or(str::is_empty) {
            return TemplateEdit::Refuse(format!(
                "volume claim template {name:?}: the update removes storageClassName {}; name the StorageClass the volumes should move to",
                old_class.as_deref().unwrap_or("")
            ));
        }
        let (old_attributes, new_attributes) = (attributes_of(old), attributes_of(new));
        let attributes_change = old_attributes != new_attributes;
        if attributes_change && new_attributes.as_deref().is_none_or(str::is_empty) {
            return TemplateEdit::Refuse(format!(
                "volume claim template {name:?}: the update removes volumeAttributesClassName {}; Kubernetes keeps a volume's class once it has one: name the class the volumes should have",
                old_attributes.as_deref().unwrap_or("")
            ));
        }
        if old_bytes != new_bytes || class_changes || attributes_change {
            changes.push(VolumeChange {
                name: name.to_string(),
                size: new_size,
                storage_class_name: new_class.filter(|_| class_changes),
                volume_attributes_class_name: new_attributes.filter(|_| attributes_change),
            });
        }
    }
    if changes.is_empty() {
        TemplateEdit::Unchanged
    } else {
        changes.sort_by(|a, b| a.name.cmp(&b.name));
        TemplateEdit::Resize(changes)
    }
}
/// Which templates of a StatefulSet VolumeAutoscalers govern, as far as could be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Governed {
    /// Template → the VolumeAutoscaler governing it.
    Known(BTreeMap<String, String>),
    /// The VolumeAutoscalers could not be read (why): any template may be autoscaled, so a shrink
    /// is kept aside rather than risked (fail closed).
    Unknown(String),
}

/// A smaller size for an autoscaled template (or one that may be), kept aside without a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetAside {
    pub template: String,
    /// Why: "is autoscaled by VolumeAutoscaler db", or that the autoscalers could not be read.
    pub because: String,
    /// The size in the update (the manifest's, usually).
    pub requested: String,
    /// The size the StatefulSet has.
    pub live: String,
}

/// Takes out of `changes` those that only lower the size of a template an autoscaler governs
/// (or may govern, when the autoscalers could not be read): a GitOps tool re-applying the
/// manifest's original size after the autoscaler grew the volume must not shrink it back (a
/// copy, for nothing, to a disk about full). A larger size, or a class change, is a request like
/// any other.
pub fn without_autoscaled_shrinks(
    stored: &StatefulSet,
    changes: Vec<VolumeChange>,
    governed: &Governed,
) -> (Vec<VolumeChange>, Vec<SetAside>) {
    let mut kept = Vec::new();
    let mut set_aside = Vec::new();
    for change in changes {
        let live = live_size(stored, &change.name);
        let live_bytes = live.as_deref().and_then(|size| positive_bytes(size).ok());
        let requested_bytes = positive_bytes(&change.size).ok();
        let because = match governed {
            Governed::Known(autoscaled) => autoscaled
                .get(&change.name)
                .map(|autoscaler| format!("is autoscaled by VolumeAutoscaler {autoscaler}")),
            Governed::Unknown(why) => Some(format!(
                "may be autoscaled (Ferry could not read the VolumeAutoscalers: {why}; apply again to retry)"
            )),
        };
        match (because, live, live_bytes, requested_bytes) {
            (Some(because), Some(live), Some(live_bytes), Some(requested_bytes))
                if change.storage_class_name.is_none() && requested_bytes <= live_bytes =>
            {
                set_aside.push(SetAside {
                    template: change.name.clone(),
                    because,
                    requested: change.size.clone(),
                    live,
                });
            }
            _ => kept.push(change),
        }
    }
    (kept, set_aside)
}

/// The size the stored StatefulSet's template `name` asks for.
fn live_size(stored: &StatefulSet, name: &str) -> Option<String> {
    templates(stored)
        .iter()
        .find(|template| template_name(template) == name)
        .and_then(size_of)
}

/// The changes that ask a template for less than it has: `name old → new` each.
pub fn shrinks(stored: &StatefulSet, changes: &[VolumeChange]) -> Vec<String> {
    changes
        .iter()
        .filter_map(|change| {
            let live = live_size(stored, &change.name)?;
            let smaller = positive_bytes(&change.size).ok()? < positive_bytes(&live).ok()?;
            smaller.then(|| format!("{} {live} → {}", change.name, change.size))
        })
        .collect()
}

/// What an edit of a StatefulSet's claim templates may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TemplateEdits {
    /// Every change of size or class is carried out by a VolumeResize (shrinks by copy).
    #[default]
    CarriedOut,
    /// As the seed's webhook did: a smaller size is refused (a shrink needs a VolumeResize made on
    /// purpose); growth and class changes are carried out.
    ShrinksRefused,
}
