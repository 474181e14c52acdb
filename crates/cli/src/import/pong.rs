//! pong1013's resize-statefulset-operator, by its annotations on a StatefulSet:
//! `resize-statefulset-operator/auto-scaled: "true"` → a `VolumeAutoscaler`, the one Ferry's
//! operator makes for that annotation (same name, same policy); `resize-statefulset-operator/
//! resize-<index>: "10Gi"` not yet carried out (above the template's size) → a `VolumeResize`.

use super::fields::quantity;
use super::{FerryObject, Source, System, Translation, derived_name};
use ferry_api::names::{SEED_ANNOTATION_AUTO_SCALED, SEED_ANNOTATION_RESIZE_PREFIX};
use ferry_api::{VolumeAutoscaler, VolumeChange, VolumeResize, VolumeResizeSpec, parse_bytes};
use ferry_engine::autoscale::seed::{
    DEFAULT_MAX_SIZE_FACTOR, default_autoscaler_name, default_spec, opted_in,
};
use k8s_openapi::api::apps::v1::StatefulSet;
use serde_json::Value;
use std::collections::BTreeMap;

const PREFIX: &str = "resize-statefulset-operator/";

pub fn applies(object: &Value) -> bool {
    let keys = |field: &str| {
        object["metadata"][field]
            .as_object()
            .is_some_and(|map| map.keys().any(|key| key.starts_with(PREFIX)))
    };
    keys("annotations") || keys("labels")
}

pub fn translate(source: &Source, object: &Value) -> Translation {
    let mut translation = Translation::new(source, System::Pong);
    let sts: StatefulSet = match serde_json::from_value(object.clone()) {
        Ok(sts) => sts,
        Err(error) => {
            translation.note(format!("not imported: not a StatefulSet Ferry can read: {error}"));
            return translation;
        }
    };
    autoscaler(source, object, &sts, &mut translation);
    resize(source, object, &mut translation);
    for key in object["metadata"]["annotations"]
        .as_object()
        .into_iter()
        .flat_map(|a| a.keys())
    {
        let known = key == SEED_ANNOTATION_AUTO_SCALED || key.starts_with(SEED_ANNOTATION_RESIZE_PREFIX);
        if key.starts_with(PREFIX) && !known {
            translation.note(format!(
                "not carried over: the annotation {key}, because pong1013's operators read only \
                 {SEED_ANNOTATION_AUTO_SCALED} and {SEED_ANNOTATION_RESIZE_PREFIX}<index>"
            ));
        }
    }
    translation
}

/// The seed's README says annotation, its script read a label: either turns it on with "true".
fn autoscaler(source: &Source, object: &Value, sts: &StatefulSet, translation: &mut Translation) {
    let annotation = object["metadata"]["annotations"][SEED_ANNOTATION_AUTO_SCALED].as_str();
    let label = object["metadata"]["labels"][SEED_ANNOTATION_AUTO_SCALED].as_str();
    let Some(value) = annotation.or(label) else { return };
    if !opted_in(value) && !label.is_some_and(opted_in) {
        translation.note(format!(
            "{SEED_ANNOTATION_AUTO_SCALED}: {value:?} turns autoscaling off: no VolumeAutoscaler"
        ));
        return;
    }
    let spec = match default_spec(sts) {
        Ok(spec) => spec,
        Err(why) => {
            translation.note(format!("{SEED_ANNOTATION_AUTO_SCALED}: not imported: {why}"));
            return;
        }
    };
    let name = default_autoscaler_name(&source.name);
    let mut autoscaler = VolumeAutoscaler::new(&name, spec);
    autoscaler.metadata = source.metadata(name, BTreeMap::new());
    translation
        .objects
        .push(FerryObject::VolumeAutoscaler(Box::new(autoscaler)));
    translation.note(format!(
        "{SEED_ANNOTATION_AUTO_SCALED}: Ferry's default policy for every volume claim template: grow \
         by 20% when 80% of the bytes or 90% of the inodes are used, at most once an hour, up to \
         maxSize ({DEFAULT_MAX_SIZE_FACTOR} times the template's size). pong1013's script grew only the \
         first template, at 80%, to the next power of two in GiB (at most 4096Gi): set increase: \
         100% for doubling. Ferry's operator reads the annotation too and leaves this autoscaler, \
         made under the name it would use, alone; remove the annotation when you like"
    ));
}

/// The `resize-<index>` annotations whose size is above the template's: pong1013's operator would
/// still carry them out.
fn resize(source: &Source, object: &Value, translation: &mut Translation) {
    let annotations = object["metadata"]["annotations"]
        .as_object()
        .into_iter()
        .flatten();
    let templates = object["spec"]["volumeClaimTemplates"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut volumes = Vec::new();
    for (key, value) in annotations {
        let Some(index) = key.strip_prefix(SEED_ANNOTATION_RESIZE_PREFIX) else {
            continue;
        };
        match wanted(index, value, templates) {
            Ok(Some(change)) => volumes.push(change),
            Ok(None) => translation.note(format!(
                "{key}: {}: not above the template's size, so nothing is left to do (pong1013's \
                 operator only grew volumes); remove the annotation",
                quantity(value).unwrap_or_default()
            )),
            Err(why) => translation.note(format!("{key}: not imported: {why}")),
        }
    }
    if volumes.is_empty() {
        return;
    }
    let name = derived_name(&source.name, "import-pong", 63);
    let mut resize = VolumeResize::new(&name, VolumeResizeSpec::for_volumes(&source.name, volumes));
    resize.metadata = source.metadata(name, BTreeMap::new());
    translation
        .objects
        .push(FerryObject::VolumeResize(Box::new(resize)));
    translation.note(format!(
        "{SEED_ANNOTATION_RESIZE_PREFIX}<index>: a VolumeResize (in place where the class can \
         expand, else by copy, a replica at a time). Remove the annotations once it is applied: \
         Ferry's operator reads them too and would ask for the same change again"
    ));
}

fn wanted(index: &str, value: &Value, templates: &[Value]) -> Result<Option<VolumeChange>, String> {
    let template = index
        .parse::<usize>()
        .ok()
        .and_then(|i| templates.get(i))
        .ok_or_else(|| {
            format!(
                "the StatefulSet has no volume claim template at index {index:?} ({} template(s))",
                templates.len()
            )
        })?;
    let name = template["metadata"]["name"].as_str().unwrap_or_default();
    let size = quantity(value).ok_or("the size is not a quantity")?;
    let want = parse_bytes(&size).map_err(|error| format!("{size:?}: {error}"))?;
    let have = quantity(&template["spec"]["resources"]["requests"]["storage"])
        .and_then(|have| parse_bytes(&have).ok());
    Ok(have.is_none_or(|have| want > have).then(|| VolumeChange {
        name: name.to_string(),
        size,
        storage_class_name: None,
        volume_attributes_class_name: None,
    }))
}
