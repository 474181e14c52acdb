//! Reading fields of the other systems' objects, which come as plain JSON values.

use super::Translation;
use serde_json::Value;
use std::collections::BTreeMap;

/// A quantity as YAML may give it: `"1Gi"`, or a bare number of bytes.
pub fn quantity(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        _ => None,
    }
}

/// A map of strings (labels, annotations); values that are not strings are left out.
pub fn strings(value: &Value) -> BTreeMap<String, String> {
    value
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(key, value)| Some((key.clone(), value.as_str()?.to_string())))
        .collect()
}

/// A note for each field of `object` Ferry has no place for (`known` are those it has).
pub fn unknown_fields(object: &Value, known: &[&str], path: &str, translation: &mut Translation) {
    for key in object.as_object().into_iter().flat_map(|o| o.keys()) {
        if !known.contains(&key.as_str()) {
            translation.note(format!(
                "not carried over: {path}.{key}, because Ferry has no such field"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn quantities_and_strings_read_as_yaml_gives_them() {
        assert_eq!(quantity(&json!("1Gi")).as_deref(), Some("1Gi"));
        assert_eq!(quantity(&json!(1024)).as_deref(), Some("1024"));
        assert_eq!(quantity(&json!(null)), None);
        let map = strings(&json!({"a": "1", "b": 2}));
        assert_eq!(map, BTreeMap::from([("a".to_string(), "1".to_string())]));
    }
}
