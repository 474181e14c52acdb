//! The quarks `ExtendedStatefulSet` (`fissile.cloudfoundry.org/v1alpha1`, later
//! `quarks.cloudfoundry.org`) → Ferry's: the same rules under Ferry's names (`updateOnEnvChange`
//! is `updateOnConfigChange`, `az` is `zones`), the replicas moved from the template to the spec.

use super::fields::{strings, unknown_fields};
use super::quarks_fields::{replicas, scaling, update_strategy, zones};
use super::{FerryObject, Source, System, Translation};
use ferry_api::{ExtendedStatefulSet, ExtendedStatefulSetSpec, StatefulSetTemplate, TemplateMetadata};
use k8s_openapi::api::apps::v1::StatefulSetSpec;
use serde_json::Value;

pub const GROUPS: [&str; 2] = ["fissile.cloudfoundry.org", "quarks.cloudfoundry.org"];

/// Ferry's CRD: the StatefulSets add a zone suffix and their pods an ordinal.
const MAX_NAME: usize = 52;

const KNOWN: [&str; 8] = [
    "az",
    "zones",
    "zoneNodeLabel",
    "scaling",
    "updateOnEnvChange",
    "updateOnConfigChange",
    "updateStrategy",
    "template",
];

pub fn translate(source: &Source, object: &Value) -> Translation {
    let mut translation = Translation::new(source, System::Quarks);
    let result = name(&source.name, &mut translation).and_then(|name| {
        let spec = spec(&object["spec"], &mut translation)?;
        Ok((name, spec))
    });
    match result {
        Ok((name, spec)) => {
            let mut ests = ExtendedStatefulSet::new(&name, spec);
            ests.metadata = source.metadata(name, strings(&object["metadata"]["labels"]));
            leftovers(object, &ests.spec, &mut translation);
            translation
                .objects
                .push(FerryObject::ExtendedStatefulSet(Box::new(ests)));
        }
        Err(why) => translation.note(format!("not imported: {why}")),
    }
    translation
}

/// Kubernetes names are lowercase (the seed's own example, `MyExtendedStatefulSet`, is not one).
fn name(given: &str, translation: &mut Translation) -> Result<String, String> {
    let name = given.to_lowercase();
    let valid = !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    if !valid {
        return Err(format!(
            "metadata.name {given:?} is not a name Ferry can use: lowercase letters, digits, '-' and \
             '.', starting and ending with a letter or digit, at most {MAX_NAME} characters; rename it \
             in the file"
        ));
    }
    if name != given {
        translation.note(format!(
            "named {name}: Kubernetes names are lowercase, and {given:?} is not"
        ));
    }
    Ok(name)
}

fn spec(spec: &Value, translation: &mut Translation) -> Result<ExtendedStatefulSetSpec, String> {
    unknown_fields(spec, &KNOWN, "spec", translation);
    let template = &spec["template"];
    let mut annotations = strings(&template["metadata"]["annotations"]);
    let watch_times = [
        watch_annotation(&mut annotations, "canary"),
        watch_annotation(&mut annotations, "update"),
    ];
    let scaling = scaling(&spec["scaling"], translation);
    let mut stateful_set = template["spec"].clone();
    let given = stateful_set.as_object_mut().and_then(|s| s.remove("replicas"));
    let replicas = replicas(
        given.as_ref().and_then(Value::as_i64),
        scaling.as_ref(),
        translation,
    );
    let stateful_set: StatefulSetSpec = serde_json::from_value(stateful_set)
        .map_err(|error| format!("spec.template.spec is not a StatefulSet spec: {error}"))?;
    unknown_fields(
        &template["metadata"],
        &["labels", "annotations"],
        "spec.template.metadata",
        translation,
    );
    let labels = strings(&template["metadata"]["labels"]);
    Ok(ExtendedStatefulSetSpec {
        replicas,
        scaling,
        update_on_config_change: spec["updateOnEnvChange"]
            .as_bool()
            .or(spec["updateOnConfigChange"].as_bool())
            .unwrap_or(false),
        update_strategy: update_strategy(
            &spec["updateStrategy"],
            watch_times.each_ref().map(Option::as_deref),
            translation,
        ),
        pre_update: None,
        post_update: None,
        zones: zones(spec, translation),
        template: StatefulSetTemplate {
            metadata: (!labels.is_empty() || !annotations.is_empty())
                .then_some(TemplateMetadata { labels, annotations }),
            spec: stateful_set,
        },
    })
}

/// The later quarks' watch time annotation on the template (`…/canary-watch-time-ms`), taken out
/// of the annotations Ferry passes on.
fn watch_annotation(
    annotations: &mut std::collections::BTreeMap<String, String>,
    which: &str,
) -> Option<String> {
    let keys: Vec<String> = GROUPS
        .iter()
        .flat_map(|group| {
            [
                format!("{group}/{which}-watch-time-ms"),
                format!("{group}/{which}-watch-time"),
            ]
        })
        .collect();
    keys.iter().find_map(|key| annotations.remove(key))
}

/// Notes on what quarks did that this object no longer does by itself.
fn leftovers(object: &Value, spec: &ExtendedStatefulSetSpec, translation: &mut Translation) {
    let has_claims = spec
        .template
        .spec
        .volume_claim_templates
        .as_ref()
        .is_some_and(|templates| !templates.is_empty());
    translation.note(format!(
        "Ferry runs it as a new StatefulSet ({}), beside quarks' own (one per version, named after \
         it), which it does not adopt: {}",
        if spec.zones.is_empty() {
            "<name>"
        } else {
            "<name>-z<index> per zone"
        },
        if has_claims {
            "its pods start on new, empty claims. Move the data first (docs/migrate.md: re-bind each \
             old volume to the claim name Ferry's StatefulSet will use), then delete quarks' \
             StatefulSets"
        } else {
            "new pods start, and quarks' StatefulSets are deleted with quarks' ExtendedStatefulSet"
        }
    ));
    let finalizers = object["metadata"]["finalizers"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    if let Some(finalizer) = finalizers
        .iter()
        .filter_map(Value::as_str)
        .find(|f| GROUPS.iter().any(|g| f.starts_with(g)))
    {
        translation.note(format!(
            "not carried over: the finalizer {finalizer}, because it is quarks'; with quarks' operator \
             gone, delete the old object with it removed (kubectl patch … --type=merge -p \
             '{{\"metadata\":{{\"finalizers\":null}}}}')"
        ));
    }
}
