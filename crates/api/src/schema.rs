//! Schemas written by hand for fields whose full OpenAPI schema would make the CRD huge (a whole
//! pod template): the API server keeps them as given and checks them when Ferry creates the
//! object made from them.

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
            "selector": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "template": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "volumeClaimTemplates": {
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
