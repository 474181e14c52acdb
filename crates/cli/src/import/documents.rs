//! The file `-f` names: read (or stdin for `-`) and split into objects, as kubectl reads a
//! manifest: several YAML (or JSON) documents, and the items of a `List`, which is what
//! `kubectl get -o yaml` prints for more than one object.

use crate::exit::CliError;
use serde::Deserialize;
use serde_json::Value;

/// The text of `path`, or of stdin for `-`.
pub fn read(path: &str) -> Result<String, CliError> {
    let text = if path == "-" {
        std::io::read_to_string(std::io::stdin())
    } else {
        std::fs::read_to_string(path)
    };
    text.map_err(|error| CliError::Usage(format!("-f {path}: cannot read it: {error}")))
}

/// Every object in `text`: each document, each item of a `List` (nested ones too). Empty
/// documents are skipped; a document that is not valid YAML is an error naming it.
pub fn objects(text: &str, file: &str) -> Result<Vec<Value>, CliError> {
    let mut objects = Vec::new();
    for (index, document) in yaml_serde::Deserializer::from_str(text).enumerate() {
        let value = Value::deserialize(document).map_err(|error| {
            CliError::Usage(format!(
                "{file}: document {} is not valid YAML: {error}",
                index + 1
            ))
        })?;
        flatten(value, &mut objects);
    }
    Ok(objects)
}

fn flatten(value: Value, into: &mut Vec<Value>) {
    match value {
        Value::Null => {}
        Value::Object(mut object) if is_list(&object) => {
            if let Some(Value::Array(items)) = object.remove("items") {
                for item in items {
                    flatten(item, into);
                }
            }
        }
        other => into.push(other),
    }
}

/// `kind: List` (or `StatefulSetList`, …) with `items`.
fn is_list(object: &serde_json::Map<String, Value>) -> bool {
    object
        .get("kind")
        .and_then(Value::as_str)
        .is_some_and(|kind| kind.ends_with("List"))
        && object.get("items").is_some_and(Value::is_array)
}

/// With `-n`: objects without a namespace go there; one naming another is refused, as kubectl
/// refuses it.
pub fn default_namespace(objects: &mut [Value], namespace: Option<&str>) -> Result<(), CliError> {
    let Some(namespace) = namespace else {
        return Ok(());
    };
    for object in objects.iter_mut() {
        let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
            continue;
        };
        match metadata.get("namespace").and_then(Value::as_str) {
            None => {
                metadata.insert("namespace".to_string(), Value::from(namespace));
            }
            Some(own) if own == namespace => {}
            Some(own) => {
                let name = metadata.get("name").and_then(Value::as_str).unwrap_or_default();
                return Err(CliError::Usage(format!(
                    "{name} is in namespace {own:?}, not {namespace:?} as -n says; leave -n out to \
                     keep each object's own namespace"
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn documents_and_list_items_are_objects_and_empty_documents_are_not() {
        let text = "---\n# only a comment\n---\napiVersion: v1\nkind: List\nitems:\n- {kind: A}\n- {kind: B}\n---\n{\"kind\": \"C\"}\n---\n";
        let kinds: Vec<Value> = objects(text, "f.yaml")
            .unwrap()
            .into_iter()
            .map(|o| o["kind"].clone())
            .collect();
        assert_eq!(kinds, [json!("A"), json!("B"), json!("C")]);
        assert!(objects("", "f").unwrap().is_empty());
    }

    #[test]
    fn bad_yaml_names_the_document_and_is_a_usage_error() {
        let error = objects("kind: A\n---\nkind: [\n", "f.yaml").unwrap_err();
        assert!(
            matches!(&error, CliError::Usage(m) if m.starts_with("f.yaml: document 2 ")),
            "{error}"
        );
    }

    #[test]
    fn minus_n_fills_in_the_namespace_and_refuses_another() {
        let mut objects = vec![
            json!({"metadata": {"name": "a"}}),
            json!({"metadata": {"name": "b", "namespace": "prod"}}),
        ];
        default_namespace(&mut objects, None).unwrap();
        assert!(objects[0]["metadata"].get("namespace").is_none());
        default_namespace(&mut objects[..1], Some("prod")).unwrap();
        assert_eq!(objects[0]["metadata"]["namespace"], "prod");
        default_namespace(&mut objects, Some("prod")).unwrap();
        let error = default_namespace(&mut objects, Some("dev")).unwrap_err();
        assert!(
            error.to_string().contains("namespace \"prod\", not \"dev\""),
            "{error}"
        );
    }

    #[test]
    fn a_missing_file_is_a_usage_error() {
        let error = read("/no/such/file.yaml").unwrap_err();
        assert!(
            matches!(&error, CliError::Usage(m) if m.starts_with("-f /no/such/file.yaml: cannot read it")),
            "{error}"
        );
    }
}
