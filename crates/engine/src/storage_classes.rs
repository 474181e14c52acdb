//! Which StorageClass a claim that names none gets, decided once for the operator and the plugin
//! alike (a plan and the migration it starts must agree).

use k8s_openapi::api::storage::v1::StorageClass;

/// The annotations that make a class the default: the GA key and the beta one, which the API
/// server's DefaultStorageClass admission still honours.
pub const DEFAULT_CLASS_ANNOTATIONS: [&str; 2] = [
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
];

/// Whether `class` is annotated as a default (either key, value `"true"`).
pub fn is_annotated_default(class: &StorageClass) -> bool {
    let annotations = class.metadata.annotations.as_ref();
    DEFAULT_CLASS_ANNOTATIONS
        .iter()
        .any(|key| annotations.and_then(|a| a.get(*key)).map(String::as_str) == Some("true"))
}

/// The class a claim or template is on: `None` (no `storageClassName`) gets the default class,
/// `""` is no class at all.
pub fn class_of<'a>(named: Option<&'a str>, default: Option<&'a str>) -> Option<&'a str> {
    match named {
        None => default,
        Some("") => None,
        Some(class) => Some(class),
    }
}

/// The default class, as the API server chooses it: of the classes annotated as default, the most
/// recently made; ties by name (the first). `None` when no class is annotated.
pub fn default_class(classes: &[StorageClass]) -> Option<String> {
    classes
        .iter()
        .filter(|class| is_annotated_default(class))
        .filter_map(|class| {
            let name = class.metadata.name.clone()?;
            Some((name, class.metadata.creation_timestamp.as_ref().map(|t| t.0)))
        })
        .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(&a.0)))
        .map(|(name, _)| name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
    use std::collections::BTreeMap;

    fn class(name: &str, key: Option<&str>, made_at: Option<i64>) -> StorageClass {
        StorageClass {
            metadata: ObjectMeta {
                name: Some(name.into()),
                annotations: key.map(|key| BTreeMap::from([(key.to_string(), "true".to_string())])),
                creation_timestamp: made_at
                    .map(|s| Time(k8s_openapi::jiff::Timestamp::from_second(s).unwrap())),
                ..ObjectMeta::default()
            },
            provisioner: "csi.example".into(),
            ..StorageClass::default()
        }
    }

    #[test]
    fn the_newest_annotated_class_is_the_default_whichever_key_it_carries() {
        let [ga, beta] = DEFAULT_CLASS_ANNOTATIONS;
        assert_eq!(default_class(&[]), None);
        assert_eq!(default_class(&[class("plain", None, Some(99))]), None);
        let classes = [
            class("a", Some(ga), Some(10)),
            class("b", Some(beta), Some(20)),
            class("c", Some(ga), Some(5)),
            class("newest-but-plain", None, Some(30)),
        ];
        assert_eq!(default_class(&classes).as_deref(), Some("b"));
        let tied = [class("y", Some(ga), Some(10)), class("x", Some(ga), Some(10))];
        assert_eq!(default_class(&tied).as_deref(), Some("x"));
    }

    #[test]
    fn no_class_named_is_the_default_and_an_empty_one_is_none() {
        assert_eq!(class_of(None, Some("std")), Some("std"));
        assert_eq!(class_of(Some(""), Some("std")), None);
        assert_eq!(class_of(Some("fast"), Some("std")), Some("fast"));
        assert_eq!(class_of(None, None), None);
    }

    #[test]
    fn a_value_other_than_true_is_not_a_default() {
        let mut off = class("off", Some(DEFAULT_CLASS_ANNOTATIONS[0]), Some(1));
        off.metadata.annotations = Some(BTreeMap::from([(
            DEFAULT_CLASS_ANNOTATIONS[0].to_string(),
            "false".to_string(),
        )]));
        assert!(!is_annotated_default(&off));
        assert_eq!(default_class(&[off]), None);
    }
}
