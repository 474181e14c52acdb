//! The CRDs as a platform team meets them (`kubectl explain`, `kubectl get ferry`, server-side
//! apply by another tool): every field described in plain words, every kind in the `ferry`
//! category, conditions merged by their type.

use serde_json::Value;

/// Texts a foreign type or kube's derive puts in a description, which tell a user nothing about
/// the field: Go's doc of `metav1.Time`, `MicroTime` and `resource.Quantity`, and the derive's
/// default for the root.
const FOREIGN_TEXTS: [&str; 4] = [
    "Time is a wrapper",
    "MicroTime is version of Time",
    "Quantity is a fixed-point",
    "Auto-generated derived type",
];

fn crds() -> Vec<Value> {
    crate::crds::all()
        .iter()
        .map(|crd| serde_json::to_value(crd).unwrap())
        .collect()
}

fn kind(crd: &Value) -> String {
    crd["spec"]["names"]["kind"].as_str().unwrap().to_string()
}

fn root_schema(crd: &Value) -> &Value {
    &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
}

/// What is wrong with `schema`'s own description at `path`: missing (when `needed`), or a
/// foreign text.
fn description_problem(schema: &Value, path: &str, needed: bool) -> Option<String> {
    match schema.get("description").and_then(Value::as_str) {
        None | Some("") if needed => Some(format!("{path}: no description")),
        Some(text) => FOREIGN_TEXTS
            .iter()
            .find(|foreign| text.contains(*foreign))
            .map(|foreign| format!("{path}: description is Go's or the derive's text ({foreign:?}…)")),
        None => None,
    }
}

/// Walks every schema under `schema`: each field (property) must be described; a list's items
/// and a map's values must be too when they are objects with fields of their own (a list of
/// strings is described by its field); no description anywhere may be a foreign text.
fn walk(schema: &Value, path: &str, problems: &mut Vec<String>) {
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, field) in properties {
            let field_path = format!("{path}.{name}");
            problems.extend(description_problem(field, &field_path, true));
            walk(field, &field_path, problems);
        }
    }
    for (key, suffix) in [("items", "[]"), ("additionalProperties", "{}")] {
        if let Some(inner) = schema.get(key).filter(|inner| inner.is_object()) {
            let inner_path = format!("{path}{suffix}");
            let has_fields = inner.get("properties").is_some();
            problems.extend(description_problem(inner, &inner_path, has_fields));
            walk(inner, &inner_path, problems);
        }
    }
}

#[test]
fn every_field_of_every_kind_has_a_plain_description() {
    let mut problems = Vec::new();
    for crd in crds() {
        let kind = kind(&crd);
        let root = root_schema(&crd);
        problems.extend(description_problem(root, &kind, true));
        walk(root, &kind, &mut problems);
    }
    assert!(
        problems.is_empty(),
        "{} schema(s) need a description:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn every_kind_is_in_the_ferry_category_and_not_in_all() {
    for crd in crds() {
        let categories = &crd["spec"]["names"]["categories"];
        let names: Vec<&str> = categories
            .as_array()
            .map(|list| list.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        assert!(
            names.contains(&"ferry"),
            "{}: categories {categories}",
            kind(&crd)
        );
        // `kubectl get all` is for a namespace's workloads; Ferry's kinds do not belong there.
        assert!(!names.contains(&"all"), "{}: categories {categories}", kind(&crd));
    }
}

#[test]
fn status_conditions_of_every_kind_merge_by_type() {
    for crd in crds() {
        let kind = kind(&crd);
        let conditions = &root_schema(&crd)["properties"]["status"]["properties"]["conditions"];
        assert_eq!(
            conditions["type"], "array",
            "{kind}.status.conditions: {conditions}"
        );
        assert_eq!(
            conditions["x-kubernetes-list-type"], "map",
            "{kind}.status.conditions"
        );
        assert_eq!(
            conditions["x-kubernetes-list-map-keys"],
            serde_json::json!(["type"]),
            "{kind}.status.conditions"
        );
        // The API server refuses a map key that is neither required nor defaulted.
        let required = conditions["items"]["required"].as_array();
        assert!(
            required.is_some_and(|required| required.contains(&Value::from("type"))),
            "{kind}.status.conditions[]: `type` must be required, got {required:?}"
        );
    }
}
