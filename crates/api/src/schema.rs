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
