//! Schemas written by hand for fields whose full OpenAPI schema would make the CRD huge (a whole
//! pod template): the API server keeps them as given and checks them when Ferry creates the
//! object made from them. And the schema changes schemars attributes cannot make.

use schemars::{Schema, SchemaGenerator, json_schema};

/// Any object, kept as given.
pub fn preserve_unknown_object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// A StatefulSet spec: the fields Ferry reads must be there; the rest is kept as given.
pub fn stateful_set_spec(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "required": ["selector", "template"],
        "properties": {
            "selector": {
                "description": "The StatefulSet's label query over its pods (a LabelSelector); it must match the pod template's labels.",
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": true,
            },
            "template": {
                "description": "The pod template each replica is made from (a PodTemplateSpec).",
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": true,
            },
            "volumeClaimTemplates": {
                "description": "The claims each replica gets (PersistentVolumeClaims). Unlike a StatefulSet's, their size and StorageClass may change: Ferry carries a change out as a VolumeResize.",
                "type": "array",
                "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            },
        },
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// `updateOnEnvChange`, the quarks name of `updateOnConfigChange` (a serde alias), must be in the
/// schema or the API server prunes it. Neither has a schema default: the API server would fill in
/// `updateOnConfigChange: false` beside the alias, and an object naming both cannot be read.
pub fn update_on_env_change_alias(schema: &mut Schema) {
    let Some(properties) = schema.get_mut("properties").and_then(|p| p.as_object_mut()) else {
        return;
    };
    // kube's derive also builds a schema of each field with rules of its own, with this
    // transform, and finds the field by position there: add nothing to those.
    let Some(canonical) = properties
        .get_mut("updateOnConfigChange")
        .and_then(|p| p.as_object_mut())
    else {
        return;
    };
    canonical.remove("default");
    properties.insert(
        "updateOnEnvChange".to_string(),
        serde_json::json!({
            "type": "boolean",
            "description": "The quarks name of updateOnConfigChange, accepted in its place (not both).",
        }),
    );
}

/// The start of Go's doc of a foreign type, which k8s-openapi copies into the type's schema, and
/// the plain words a user reads instead (`kubectl explain`).
const PLAIN_WORDS: [(&str, &str); 2] = [
    (
        "Time is a wrapper",
        "A time, RFC 3339 in UTC (e.g. `2025-01-31T08:00:00Z`).",
    ),
    (
        "Quantity is a fixed-point",
        "A quantity: CPU in cores or thousandths (`2`, `500m`), memory in bytes with a suffix (`256Mi`, `1Gi`).",
    ),
];

/// Replaces Go's doc of `metav1.Time` and `resource.Quantity` anywhere in a field's schema (a
/// list of times, a container's resources): a field's doc comment replaces only its own
/// description, not those of the items or values under it.
pub fn plain_foreign_descriptions(schema: &mut Schema) {
    if let Some(object) = schema.as_object_mut() {
        replace_foreign(object);
    }
}

fn replace_foreign(object: &mut serde_json::Map<String, serde_json::Value>) {
    if let Some(serde_json::Value::String(text)) = object.get_mut("description")
        && let Some((_, plain)) = PLAIN_WORDS.iter().find(|(go, _)| text.starts_with(go))
    {
        *text = (*plain).to_string();
    }
    for value in object.values_mut() {
        match value {
            serde_json::Value::Object(inner) => replace_foreign(inner),
            serde_json::Value::Array(list) => list
                .iter_mut()
                .filter_map(serde_json::Value::as_object_mut)
                .for_each(replace_foreign),
            _ => {}
        }
    }
}
