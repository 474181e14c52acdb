//! A StatefulSet, its claims and the VolumeResizes naming it, reduced to what the triggers read.

use ferry_api::listed::Listing;
use ferry_api::quantity::requested_storage;
use ferry_api::{Phase, VolumeResize};
use ferry_engine::trigger::ResizeSummary;
use ferry_engine::trigger::request::{Claim, Subject, Template};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kube::ResourceExt;
use std::borrow::Borrow;

/// The StatefulSet's volume claim templates, in order.
pub fn templates_of(sts: &StatefulSet) -> Vec<Template> {
    sts.spec
        .iter()
        .flat_map(|spec| spec.volume_claim_templates.iter().flatten())
        .map(|template| Template {
            name: template.name_any(),
            size: requested_storage(template.spec.as_ref()).map(|q| q.0.clone()),
            storage_class: template.spec.as_ref().and_then(|s| s.storage_class_name.clone()),
            attributes_class: template
                .spec
                .as_ref()
                .and_then(|s| s.volume_attributes_class_name.clone()),
        })
        .collect()
}

/// `<template>-<sts>-<ordinal>` → (template, ordinal), for the templates given.
fn claim_of(name: &str, sts: &str, templates: &[Template]) -> Option<(String, i32)> {
    templates.iter().find_map(|template| {
        let ordinal = ferry_engine::names::ordinal_after(name, &format!("{}-{sts}", template.name))?;
        Some((template.name.clone(), ordinal))
    })
}

pub fn subject(sts: &StatefulSet, claims: &[PersistentVolumeClaim]) -> Subject {
    let name = sts.name_any();
    let templates = templates_of(sts);
    let claims = claims
        .iter()
        .filter(|claim| claim.metadata.deletion_timestamp.is_none())
        .filter_map(|claim| {
            let (template, ordinal) = claim_of(&claim.name_any(), &name, &templates)?;
            let spec = claim.spec.as_ref();
            Some(Claim {
                template,
                ordinal,
                size: requested_storage(spec).map(|q| q.0.clone()),
                storage_class: spec.and_then(|s| s.storage_class_name.clone()),
                attributes_class: spec.and_then(|s| s.volume_attributes_class_name.clone()),
            })
        })
        .collect();
    Subject {
        name,
        uid: sts.uid().unwrap_or_default(),
        annotations: sts.annotations().clone(),
        templates,
        claims,
        replicas: crate::ordinals::replicas(sts),
        first_ordinal: crate::ordinals::first_ordinal(sts),
    }
}

/// The VolumeResizes of `namespace` that name `stateful_set`.
pub fn resizes_of(
    resizes: &[impl Borrow<VolumeResize>],
    namespace: &str,
    stateful_set: &str,
) -> Vec<ResizeSummary> {
    resizes
        .iter()
        .map(Borrow::borrow)
        .filter(|r| r.namespace().as_deref() == Some(namespace) && r.spec.stateful_set_name == stateful_set)
        .map(|r| ResizeSummary {
            name: r.name_any(),
            // Being deleted counts as done: it will not carry the request out.
            phase: if r.metadata.deletion_timestamp.is_some() && !r.phase().is_terminal() {
                Phase::Failed
            } else {
                r.phase()
            },
            volumes: r.spec.volumes.clone(),
            message: r.status.as_ref().and_then(|s| s.message.clone()),
            progress: r.status.as_ref().and_then(|s| s.progress.clone()),
        })
        .collect()
}

/// The VolumeResizes of a listing that this Ferry cannot read and that name `stateful_set`, as the
/// triggers read them: each at work (Running) unless its phase is known to be finished, with no
/// volumes (none can be trusted), so a request waits for it instead of starting a second resize
/// beside it.
pub fn unreadable_of(listing: &Listing, stateful_set: &str) -> Vec<ResizeSummary> {
    listing
        .unreadable
        .iter()
        .filter(|unreadable| unreadable.stateful_set().as_deref() == Some(stateful_set))
        .map(|unreadable| ResizeSummary {
            name: unreadable.name(),
            phase: match unreadable.phase() {
                Some(phase) if phase.is_terminal() => phase,
                _ => Phase::Running,
            },
            volumes: Vec::new(),
            message: Some(format!("this Ferry cannot read it: {}", unreadable.error)),
            progress: None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_are_matched_to_their_template_and_ordinal() {
        let templates = vec![
            Template {
                name: "data".into(),
                size: None,
                storage_class: None,
                attributes_class: None,
            },
            Template {
                name: "data-log".into(),
                size: None,
                storage_class: None,
                attributes_class: None,
            },
        ];
        assert_eq!(
            claim_of("data-web-3", "web", &templates),
            Some(("data".into(), 3))
        );
        assert_eq!(
            claim_of("data-log-web-0", "web", &templates),
            Some(("data-log".into(), 0))
        );
        assert_eq!(claim_of("data-web-x", "web", &templates), None);
        assert_eq!(claim_of("data-webby-1", "web", &templates), None);
        assert_eq!(claim_of("data-web-1-ferry-tmp", "web", &templates), None);
    }

    fn listing(objects: &[(&str, &str, &str)]) -> Listing {
        Listing::from_objects(objects.iter().map(|(name, sts, phase)| {
            // `Teleporting`: a row step only a newer Ferry knows, so the object is unreadable here.
            serde_json::from_value(serde_json::json!({
                "apiVersion": "ferry.dev/v1alpha1", "kind": "VolumeResize",
                "metadata": {"name": name, "namespace": "ns"},
                "spec": {"statefulSetName": sts, "volumes": [{"name": "data", "size": "2Gi"}]},
                "status": {"phase": phase, "plan": [{"replica": 0, "volume": "data",
                    "claimName": "data-db-0", "targetSize": "2Gi", "step": "Teleporting"}]},
            }))
            .unwrap()
        }))
    }

    #[test]
    fn unreadable_resizes_of_the_statefulset_count_as_running_unless_known_finished() {
        let listing = listing(&[
            ("future", "db", "Running"),
            ("unknown-phase", "db", "Migrating"),
            ("old", "db", "Succeeded"),
            ("elsewhere", "web", "Running"),
        ]);
        let summaries = unreadable_of(&listing, "db");
        let phases: Vec<(&str, Phase)> = summaries.iter().map(|s| (s.name.as_str(), s.phase)).collect();
        assert_eq!(
            phases,
            [
                ("future", Phase::Running),
                ("unknown-phase", Phase::Running),
                ("old", Phase::Succeeded)
            ]
        );
        assert!(summaries.iter().all(|s| s.volumes.is_empty()));
        assert!(
            summaries[0]
                .message
                .as_deref()
                .is_some_and(|m| m.contains("Teleporting"))
        );
        assert!(unreadable_of(&listing, "cache").is_empty());
    }
}
