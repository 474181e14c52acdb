//! Admission reviews in and out: reading a request body (anything malformed is a `BadReview`, a
//! 4xx answer) and the mutating decision on StatefulSet updates. Pure: the VolumeResizes come
//! from the controller's store.

use ferry_api::names::ANNOTATION_REQUESTED_TEMPLATES;
use ferry_api::{VolumeChange, VolumeResize};
use ferry_engine::trigger::template_edit::{
    Governed, TemplateEdit, TemplateEdits, shrinks, template_edit, without_autoscaled_shrinks,
};
use ferry_engine::trigger::{request, resize_name, same_target};
use k8s_openapi::api::apps::v1::StatefulSet;
use kube::ResourceExt;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};
use std::borrow::Borrow;

/// A request body that is not a usable admission review; the message says what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadReview(pub String);

/// Parses an AdmissionReview (admission.k8s.io/v1) carrying a request.
pub fn parse(body: &[u8]) -> Result<AdmissionRequest<DynamicObject>, BadReview> {
    let review: AdmissionReview<DynamicObject> = serde_json::from_slice(body).map_err(|error| {
        BadReview(format!(
            "the body is not an admission.k8s.io/v1 AdmissionReview: {error}"
        ))
    })?;
    if review.types.kind != "AdmissionReview" {
        return Err(BadReview(format!(
            "expected kind AdmissionReview, got {:?}",
            review.types.kind
        )));
    }
    let request: Result<AdmissionRequest<DynamicObject>, _> = review.try_into();
    request.map_err(|_| BadReview("the AdmissionReview carries no request".to_string()))
}

fn expect_kind(request: &AdmissionRequest<DynamicObject>, group: &str, kind: &str) -> Result<(), BadReview> {
    if request.kind.group == group && request.kind.kind == kind {
        Ok(())
    } else {
        Err(BadReview(format!(
            "this endpoint reviews {group}/{kind}, not {}/{}",
            request.kind.group, request.kind.kind
        )))
    }
}

fn typed<T: serde::de::DeserializeOwned>(object: &DynamicObject, what: &str) -> Result<T, BadReview> {
    serde_json::to_value(object)
        .and_then(serde_json::from_value)
        .map_err(|error| BadReview(format!("{what} is not a valid object: {error}")))
}

/// `~` and `/` escaped for a JSON pointer segment (RFC 6901).
fn pointer_segment(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Whether a StatefulSet update changes its volume claim templates (what the mutating review needs
/// the VolumeResizes for).
pub fn edits_templates(request: &AdmissionRequest<DynamicObject>) -> Result<bool, BadReview> {
    expect_kind(request, "apps", "StatefulSet")?;
    let (Operation::Update, Some(new_object), Some(old_object)) =
        (&request.operation, &request.object, &request.old_object)
    else {
        return Ok(false);
    };
    let stored: StatefulSet = typed(old_object, "oldObject")?;
    let update: StatefulSet = typed(new_object, "object")?;
    Ok(template_edit(&stored, &update) != TemplateEdit::Unchanged)
}

/// The mutating review of a StatefulSet update: a change to the size or class of its volume
/// claim templates is taken out of the update (the stored templates go back, so the API server's
/// immutability check passes) and recorded in an annotation for the operator, with a warning
/// naming the VolumeResize that will carry it out. A smaller size for a template an autoscaler
/// governs (or may govern: `governed` unknown) is only taken out, with a warning: the manifest's
/// original size re-applied after a grow. Every other update passes untouched.
pub fn review_stateful_set(
    request: &AdmissionRequest<DynamicObject>,
    resizes: &[impl Borrow<VolumeResize>],
    governed: &Governed,
    edits: TemplateEdits,
) -> Result<AdmissionResponse, BadReview> {
    expect_kind(request, "apps", "StatefulSet")?;
    let response = AdmissionResponse::from(request);
    if request.operation != Operation::Update {
        return Ok(response);
    }
    let (Some(new_object), Some(old_object)) = (&request.object, &request.old_object) else {
        return Err(BadReview(
            "an UPDATE review needs both object and oldObject".to_string(),
        ));
    };
    let stored: StatefulSet = typed(old_object, "oldObject")?;
    let update: StatefulSet = typed(new_object, "object")?;
    let changes = match template_edit(&stored, &update) {
        TemplateEdit::Unchanged => return Ok(response),
        TemplateEdit::Refuse(message) => return Ok(response.deny(message)),
        TemplateEdit::Resize(changes) => changes,
    };
    let (changes, set_aside) = without_autoscaled_shrinks(&stored, changes, governed);
    let shrunk = shrinks(&stored, &changes);
    if edits == TemplateEdits::ShrinksRefused && !shrunk.is_empty() {
        return Ok(response.deny(format!(
            "this Ferry installation refuses shrinking a volume claim template by editing the StatefulSet \
             (--refuse-template-shrinks): {}; create a VolumeResize to shrink (kubectl ferry resize)",
            shrunk.join(", ")
        )));
    }
    let stored_templates = old_object
        .data
        .pointer("/spec/volumeClaimTemplates")
        .cloned()
        .unwrap_or(serde_json::Value::Array(Vec::new()));
    let put_back = serde_json::json!({
        "op": "replace", "path": "/spec/volumeClaimTemplates", "value": stored_templates,
    });
    let mut warnings: Vec<String> = set_aside
        .iter()
        .map(|aside| {
            format!(
                "Ferry: volume claim template {} {}; the update's {} is below its {} and kept aside (to shrink, create a VolumeResize)",
                aside.template, aside.because, aside.requested, aside.live
            )
        })
        .collect();
    if changes.is_empty() {
        return patched(response, vec![put_back], warnings);
    }
    warnings.insert(0, carrier_warning(request, &stored, resizes, &changes));
    let recorded = serde_json::to_string(&changes)
        .map_err(|error| BadReview(format!("cannot record the change: {error}")))?;
    let record = if new_object.metadata.annotations.is_some() {
        serde_json::json!({
            "op": "add",
            "path": format!("/metadata/annotations/{}", pointer_segment(ANNOTATION_REQUESTED_TEMPLATES)),
            "value": recorded,
        })
    } else {
        serde_json::json!({
            "op": "add", "path": "/metadata/annotations",
            "value": {ANNOTATION_REQUESTED_TEMPLATES: recorded},
        })
    };
    patched(response, vec![put_back, record], warnings)
}

/// The response with `operations` as its JSON patch and `warnings`.
fn patched(
    response: AdmissionResponse,
    operations: Vec<serde_json::Value>,
    warnings: Vec<String>,
) -> Result<AdmissionResponse, BadReview> {
    let patch: json_patch::Patch = serde_json::from_value(serde_json::Value::Array(operations))
        .map_err(|error| BadReview(format!("cannot build the patch: {error}")))?;
    let mut response = response
        .with_patch(patch)
        .map_err(|error| BadReview(format!("cannot encode the patch: {error}")))?;
    response.warnings = Some(warnings);
    Ok(response)
}

/// The warning naming the VolumeResize that carries the change out: one already at work on the
/// same target, else the one the operator will make (after any other at work on the StatefulSet).
fn carrier_warning(
    request: &AdmissionRequest<DynamicObject>,
    stored: &StatefulSet,
    resizes: &[impl Borrow<VolumeResize>],
    changes: &[VolumeChange],
) -> String {
    let name = stored.name_any();
    let namespace = request.namespace.clone().unwrap_or_default();
    let on_this = |resize: &&VolumeResize| {
        resize.namespace().as_deref() == Some(namespace.as_str())
            && resize.spec.stateful_set_name == name
            && !resize.phase().is_terminal()
    };
    let running_same = resizes
        .iter()
        .map(Borrow::borrow)
        .filter(on_this)
        .find(|r| same_target(&r.spec.volumes, changes));
    let running_other = resizes
        .iter()
        .map(Borrow::borrow)
        .filter(on_this)
        .find(|r| !same_target(&r.spec.volumes, changes));
    let resize = running_same
        .map(|r| r.name_any())
        .unwrap_or_else(|| resize_name(&name, &stored.uid().unwrap_or_default(), changes));
    let templates = crate::trigger::templates_of(stored);
    let mut warning = format!(
        "Ferry: volumeClaimTemplates change ({}) kept aside; VolumeResize {resize} carries it out (kubectl get vr {resize} -n {namespace})",
        request::describe(changes, &templates)
    );
    if let (None, Some(other)) = (running_same, running_other) {
        warning.push_str(&format!(" after VolumeResize {} is done", other.name_any()));
    }
    warning
}

/// The validating review of a StatefulSet create: refused while a VolumeResize is replacing a
/// StatefulSet of that name (its orphan window), unless it is that resize's own re-create. A GitOps
/// tool or parent operator re-creating it there would start pods on volumes being swapped; denied,
/// it retries, and by then Ferry's StatefulSet (with the new templates) is back.
pub fn review_stateful_set_create(
    request: &AdmissionRequest<DynamicObject>,
    resizes: &[impl Borrow<VolumeResize>],
) -> Result<AdmissionResponse, BadReview> {
    expect_kind(request, "apps", "StatefulSet")?;
    let response = AdmissionResponse::from(request);
    if request.operation != Operation::Create {
        return Ok(response);
    }
    let Some(object) = &request.object else {
        return Err(BadReview("a CREATE review needs an object".to_string()));
    };
    let name = object
        .metadata
        .name
        .clone()
        .unwrap_or_else(|| request.name.clone());
    let namespace = request.namespace.clone().unwrap_or_default();
    let replacing = resizes.iter().map(Borrow::borrow).find(|resize: &&VolumeResize| {
        resize.namespace().as_deref() == Some(namespace.as_str())
            && resize.spec.stateful_set_name == name
            && (!resize.phase().is_terminal() || resize.metadata.deletion_timestamp.is_some())
    });
    let Some(replacing) = replacing else {
        return Ok(response);
    };
    let recreated_by = object
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ferry_api::names::ANNOTATION_RECREATED_BY));
    if recreated_by.is_some() && recreated_by == replacing.metadata.uid.as_ref() {
        return Ok(response);
    }
    Ok(response.deny(format!(
        "Ferry is replacing StatefulSet {name} to change its volumes (VolumeResize {}); it comes back by itself within seconds, with the new volume claim templates. Creating it now would start its pods on volumes being swapped: try again once it is back (kubectl get sts {name} -n {namespace})",
        replacing.name_any()
    )))
}

/// The review of a new VolumeResize: its object, when this is one.
pub fn volume_resize_to_validate(
    request: &AdmissionRequest<DynamicObject>,
) -> Result<Option<VolumeResize>, BadReview> {
    expect_kind(request, "ferry.dev", "VolumeResize")?;
    if request.operation != Operation::Create {
        return Ok(None);
    }
    let Some(object) = &request.object else {
        return Err(BadReview("a CREATE review needs an object".to_string()));
    };
    let mut resize: VolumeResize = typed(object, "object")?;
    if resize.metadata.namespace.is_none() {
        resize.metadata.namespace = request.namespace.clone();
    }
    Ok(Some(resize))
}

#[cfg(test)]
#[path = "review_tests.rs"]
mod tests;
