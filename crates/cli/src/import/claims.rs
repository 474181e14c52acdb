//! The PersistentVolumeClaims in the file (`kubectl get sts,pvc -o yaml`), and what they say is
//! still to do for a StatefulSet: a claim smaller than its template is a resize the vshn
//! controller would have made (it compared the claims' requests with the template's).

use super::fields::{quantity, strings};
use ferry_api::{VolumeChange, parse_bytes};
use serde_json::Value;
use std::collections::BTreeMap;

/// A volume claim template of the StatefulSet, as `resize` reads them.
pub use crate::request::Template;

/// A StatefulSet's `spec.replicas`, 1 when it gives none (as the API server defaults it).
pub fn replicas(stateful_set: &Value) -> i32 {
    stateful_set["spec"]["replicas"]
        .as_i64()
        .and_then(|n| i32::try_from(n).ok())
        .unwrap_or(1)
}

/// A claim as the file gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub namespace: Option<String>,
    pub name: String,
    /// `spec.resources.requests.storage`.
    pub size: Option<String>,
    pub storage_class: Option<String>,
    /// Its annotations (pvc-autoresizer's policy lives there).
    pub annotations: BTreeMap<String, String>,
}

pub fn in_file(objects: &[Value]) -> Vec<Claim> {
    objects
        .iter()
        .filter(|o| o["kind"] == "PersistentVolumeClaim" && o["apiVersion"] == "v1")
        .map(|o| Claim {
            namespace: o["metadata"]["namespace"].as_str().map(str::to_string),
            name: o["metadata"]["name"].as_str().unwrap_or_default().to_string(),
            size: quantity(&o["spec"]["resources"]["requests"]["storage"]),
            storage_class: o["spec"]["storageClassName"].as_str().map(str::to_string),
            annotations: strings(&o["metadata"]["annotations"]),
        })
        .collect()
}

/// The claims in the file of `template` of StatefulSet `sts` in `namespace`, of the replicas it
/// runs (ordinals below `replicas`).
pub fn of_template<'a>(
    claims: &'a [Claim],
    template: &str,
    sts: &str,
    namespace: Option<&str>,
    replicas: i32,
) -> Vec<&'a Claim> {
    claims
        .iter()
        .filter(|c| c.namespace.as_deref() == namespace)
        .filter(|c| ordinal(&c.name, template, sts).is_some_and(|i| i < replicas))
        .collect()
}

/// The volume claim templates of a StatefulSet object.
pub fn templates(sts: &Value) -> Vec<Template> {
    sts["spec"]["volumeClaimTemplates"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|t| Template {
            name: t["metadata"]["name"].as_str().unwrap_or_default().to_string(),
            size: quantity(&t["spec"]["resources"]["requests"]["storage"]),
            storage_class: t["spec"]["storageClassName"].as_str().map(str::to_string),
        })
        .collect()
}

/// What the claims of one StatefulSet in the file say.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pending {
    /// Claims of this StatefulSet the file holds.
    pub seen: usize,
    /// Per template whose claims of replicas `0..replicas` are smaller (or of another class where
    /// the template names one): the change a VolumeResize makes. Never smaller than the largest
    /// such claim, so none is shrunk.
    pub changes: Vec<VolumeChange>,
    /// Smaller claims of ordinals at or above `replicas`: no pod mounts them and Ferry does not
    /// resize them (the vshn controller did).
    pub scaled_down: Vec<String>,
}

/// The claim `name` of `template` and StatefulSet `sts`: its ordinal.
fn ordinal(name: &str, template: &str, sts: &str) -> Option<i32> {
    name.strip_prefix(&format!("{template}-{sts}-"))?.parse().ok()
}

/// [`pending`] for the StatefulSet object `stateful_set` named `name` in `namespace`: its own
/// templates and replicas against the claims in the file.
pub fn pending_of(stateful_set: &Value, name: &str, namespace: Option<&str>, claims: &[Claim]) -> Pending {
    pending(
        name,
        namespace,
        &templates(stateful_set),
        replicas(stateful_set),
        claims,
    )
}

pub fn pending(
    sts: &str,
    namespace: Option<&str>,
    templates: &[Template],
    replicas: i32,
    claims: &[Claim],
) -> Pending {
    let mut pending = Pending::default();
    for template in templates {
        let Some(want) = template.size.as_deref().and_then(|s| parse_bytes(s).ok()) else {
            continue;
        };
        let mine: Vec<(i32, &Claim)> = claims
            .iter()
            .filter(|c| c.namespace.as_deref() == namespace)
            .filter_map(|c| Some((ordinal(&c.name, &template.name, sts)?, c)))
            .collect();
        pending.seen += mine.len();
        let bytes = |c: &Claim| c.size.as_deref().and_then(|s| parse_bytes(s).ok());
        let behind = |c: &Claim| {
            bytes(c).is_some_and(|have| have < want)
                || (template.storage_class.is_some() && c.storage_class != template.storage_class)
        };
        let (running, down): (Vec<_>, Vec<_>) = mine.iter().partition(|(i, _)| *i < replicas);
        pending.scaled_down.extend(
            down.iter()
                .filter(|(_, c)| behind(c))
                .map(|(_, c)| c.name.clone()),
        );
        if !running.iter().any(|(_, c)| behind(c)) {
            continue;
        }
        let largest = running
            .iter()
            .filter_map(|(_, c)| Some((bytes(c)?, c.size.clone()?)))
            .max_by_key(|(have, _)| *have)
            .filter(|(have, _)| *have > want);
        pending.changes.push(VolumeChange {
            name: template.name.clone(),
            size: largest.map_or_else(|| template.size.clone().unwrap_or_default(), |(_, size)| size),
            storage_class_name: template.storage_class.clone().filter(|class| {
                running
                    .iter()
                    .any(|(_, c)| c.storage_class.as_ref() != Some(class))
            }),
            volume_attributes_class_name: None,
        });
    }
    pending
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(name: &str, size: &str, class: &str) -> Claim {
        Claim {
            namespace: Some("apps".into()),
            name: name.into(),
            size: Some(size.into()),
            storage_class: Some(class.into()),
            annotations: BTreeMap::new(),
        }
    }

    fn template(size: &str, class: Option<&str>) -> Template {
        Template {
            name: "www".into(),
            size: Some(size.into()),
            storage_class: class.map(Into::into),
        }
    }

    #[test]
    fn claims_smaller_than_the_template_are_pending_and_none_is_shrunk() {
        let claims = [
            claim("www-web-0", "1Gi", "ssd"),
            claim("www-web-1", "3Gi", "ssd"),
            claim("www-web-2", "1Gi", "ssd"),
            claim("www-web-7", "1Gi", "ssd"),
            claim("www-webx-0", "1Gi", "ssd"),
            claim("www-web-0", "1Gi", "ssd"),
        ];
        let mut other_namespace = claims[5].clone();
        other_namespace.namespace = Some("dev".into());
        let claims = [&claims[..5], &[other_namespace]].concat();
        let found = pending("web", Some("apps"), &[template("2Gi", None)], 3, &claims);
        assert_eq!(found.seen, 4);
        assert_eq!(
            found.changes,
            [VolumeChange {
                name: "www".into(),
                size: "3Gi".into(),
                storage_class_name: None,
                volume_attributes_class_name: None,
            }]
        );
        assert_eq!(found.scaled_down, ["www-web-7"]);
    }

    #[test]
    fn nothing_is_pending_when_every_running_claim_has_the_template() {
        let claims = [
            claim("www-web-0", "2Gi", "ssd"),
            claim("www-web-1", "2048Mi", "ssd"),
        ];
        let found = pending("web", Some("apps"), &[template("2Gi", Some("ssd"))], 2, &claims);
        assert_eq!((found.seen, found.changes.len()), (2, 0));
        // Another class named by the template is pending too, at the template's size.
        let found = pending("web", Some("apps"), &[template("2Gi", Some("hdd"))], 2, &claims);
        assert_eq!(found.changes[0].storage_class_name.as_deref(), Some("hdd"));
        assert_eq!(found.changes[0].size, "2Gi");
    }
}
