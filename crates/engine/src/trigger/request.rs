//! What a StatefulSet asks Ferry to do, read from its annotations (an edit kept aside by the
//! admission webhook, Ferry's by-name annotations, the seed operator's by-index ones) or, with
//! `ferry.dev/sync-claims: "true"`, from claims that differ from the template. Pure.

use ferry_api::names::{
    ANNOTATION_ATTRIBUTES_CLASS_PREFIX, ANNOTATION_REQUESTED_TEMPLATES, ANNOTATION_RESIZE_PREFIX,
    ANNOTATION_STORAGE_CLASS_PREFIX, ANNOTATION_SYNC_CLAIMS, SEED_ANNOTATION_RESIZE_PREFIX,
};
use ferry_api::{VolumeChange, parse_bytes};
use std::collections::{BTreeMap, BTreeSet};

/// One volume claim template of the StatefulSet, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pub name: String,
    pub size: Option<String>,
    pub storage_class: Option<String>,
    pub attributes_class: Option<String>,
}

/// One existing claim made from a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub template: String,
    pub ordinal: i32,
    pub size: Option<String>,
    pub storage_class: Option<String>,
    pub attributes_class: Option<String>,
}

/// What the StatefulSet looks like to the triggers.
#[derive(Debug, Clone, Default)]
pub struct Subject {
    pub name: String,
    pub uid: String,
    pub annotations: BTreeMap<String, String>,
    /// In the order of `spec.volumeClaimTemplates` (the seed annotation names them by index).
    pub templates: Vec<Template>,
    pub claims: Vec<Claim>,
    pub replicas: i32,
    pub first_ordinal: i32,
}

impl Subject {
    /// The ordinals with a replica now (claims of others are scaled down).
    pub fn running_ordinals(&self) -> std::ops::Range<i32> {
        self.first_ordinal..self.first_ordinal.saturating_add(self.replicas.max(0))
    }
}

/// Where a request came from; also the value of the `ferry.dev/trigger` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Source {
    TemplateEdit,
    Annotation,
    SeedAnnotation,
    Drift,
}

impl Source {
    pub fn label(self) -> &'static str {
        match self {
            Source::TemplateEdit => "template-edit",
            Source::Annotation => "annotation",
            Source::SeedAnnotation => "seed-annotation",
            Source::Drift => "drift",
        }
    }
}

/// A well-formed request: the changes (sorted by template), where they came from, and the
/// annotations that carry it (removed once it is done).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub changes: Vec<VolumeChange>,
    pub sources: BTreeSet<Source>,
    pub annotations: Vec<String>,
}

/// What the annotations and claims say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reading {
    Nothing,
    Request(Request),
    /// Asked for, but not something Ferry can do as written; the message says why.
    Invalid {
        message: String,
    },
}

/// One template's wish while reading; sizes and classes from different annotations must agree.
#[derive(Default)]
struct Wish {
    size: Option<(String, String)>,
    class: Option<(String, String)>,
    attributes: Option<(String, String)>,
}

impl Wish {
    fn want_size(&mut self, size: &str, from: &str) -> Result<(), String> {
        let bytes = positive_bytes(size).map_err(|error| format!("{from}: {error}"))?;
        match &self.size {
            Some((other, other_from)) if positive_bytes(other).ok() != Some(bytes) => Err(format!(
                "{from} asks for {size} but {other_from} asks for {other}; keep one"
            )),
            _ => {
                self.size = Some((size.to_string(), from.to_string()));
                Ok(())
            }
        }
    }

    fn want_class(&mut self, class: &str, from: &str) -> Result<(), String> {
        want_named(&mut self.class, "StorageClass", class, from)
    }

    fn want_attributes(&mut self, class: &str, from: &str) -> Result<(), String> {
        want_named(&mut self.attributes, "VolumeAttributesClass", class, from)
    }
}

/// One wish for a class of `kind`: named, and the same wherever it is asked.
fn want_named(
    wish: &mut Option<(String, String)>,
    kind: &str,
    class: &str,
    from: &str,
) -> Result<(), String> {
    if class.is_empty() {
        return Err(format!("{from}: the {kind} name is empty"));
    }
    match wish {
        Some((other, other_from)) if other != class => Err(format!(
            "{from} asks for {kind} {class:?} but {other_from} asks for {other:?}; keep one"
        )),
        _ => {
            *wish = Some((class.to_string(), from.to_string()));
            Ok(())
        }
    }
}

/// A size that parses and is above zero (`parse_bytes` refuses zero).
pub fn positive_bytes(size: &str) -> Result<u64, String> {
    parse_bytes(size).map_err(|error| error.to_string())
}

/// Reads every request on the StatefulSet; drift counts only when nothing else is asked.
pub fn read(subject: &Subject) -> Reading {
    let mut wishes: BTreeMap<String, Wish> = BTreeMap::new();
    let mut sources = BTreeSet::new();
    let mut carriers = Vec::new();
    if let Err(message) = read_annotations(subject, &mut wishes, &mut sources, &mut carriers) {
        return Reading::Invalid { message };
    }
    if wishes.is_empty() {
        return drift(subject);
    }
    let mut changes = Vec::new();
    for (name, wish) in wishes {
        let Some(template) = subject.templates.iter().find(|t| t.name == name) else {
            return Reading::Invalid {
                message: format!(
                    "StatefulSet {:?} has no volume claim template {name:?} (it has: {})",
                    subject.name,
                    known_templates(subject)
                ),
            };
        };
        let size = match (wish.size, &template.size) {
            (Some((size, _)), _) => size,
            (None, Some(current)) => current.clone(),
            (None, None) => {
                return Reading::Invalid {
                    message: format!(
                        "volume claim template {name:?} requests no storage size; give one with {ANNOTATION_RESIZE_PREFIX}{name}"
                    ),
                };
            }
        };
        changes.push(VolumeChange {
            name,
            size,
            storage_class_name: wish.class.map(|(class, _)| class),
            volume_attributes_class_name: wish.attributes.map(|(class, _)| class),
        });
    }
    carriers.sort();
    carriers.dedup();
    Reading::Request(Request {
        changes,
        sources,
        annotations: carriers,
    })
}

fn known_templates(subject: &Subject) -> String {
    if subject.templates.is_empty() {
        "none".to_string()
    } else {
        subject
            .templates
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn read_annotations(
    subject: &Subject,
    wishes: &mut BTreeMap<String, Wish>,
    sources: &mut BTreeSet<Source>,
    carriers: &mut Vec<String>,
) -> Result<(), String> {
    for (key, value) in &subject.annotations {
        if key == ANNOTATION_REQUESTED_TEMPLATES {
            let recorded: Vec<VolumeChange> = serde_json::from_str(value)
                .map_err(|error| format!("{key}: not a list of {{name, size, storageClassName}}: {error}"))?;
            for change in recorded {
                let wish = wishes.entry(change.name.clone()).or_default();
                wish.want_size(&change.size, "the edited volumeClaimTemplates")?;
                if let Some(class) = &change.storage_class_name {
                    wish.want_class(class, "the edited volumeClaimTemplates")?;
                }
                if let Some(class) = &change.volume_attributes_class_name {
                    wish.want_attributes(class, "the edited volumeClaimTemplates")?;
                }
            }
            sources.insert(Source::TemplateEdit);
        } else if let Some(template) = key.strip_prefix(ANNOTATION_RESIZE_PREFIX) {
            wishes
                .entry(template.to_string())
                .or_default()
                .want_size(value, key)?;
            sources.insert(Source::Annotation);
        } else if let Some(template) = key.strip_prefix(ANNOTATION_STORAGE_CLASS_PREFIX) {
            wishes
                .entry(template.to_string())
                .or_default()
                .want_class(value, key)?;
            sources.insert(Source::Annotation);
        } else if let Some(template) = key.strip_prefix(ANNOTATION_ATTRIBUTES_CLASS_PREFIX) {
            wishes
                .entry(template.to_string())
                .or_default()
                .want_attributes(value, key)?;
            sources.insert(Source::Annotation);
        } else if let Some(index) = key.strip_prefix(SEED_ANNOTATION_RESIZE_PREFIX) {
            let template = index
                .parse::<usize>()
                .ok()
                .and_then(|index| subject.templates.get(index))
                .ok_or_else(|| {
                    format!(
                        "{key}: StatefulSet {:?} has no volume claim template at index {index:?} (it has {} template(s): {})",
                        subject.name,
                        subject.templates.len(),
                        known_templates(subject)
                    )
                })?;
            wishes
                .entry(template.name.clone())
                .or_default()
                .want_size(value, key)?;
            sources.insert(Source::SeedAnnotation);
        } else {
            continue;
        }
        carriers.push(key.clone());
    }
    Ok(())
}

/// With `ferry.dev/sync-claims: "true"`: the running replicas' claims that are smaller than their
/// template, or of another class where the template names one, ask for the template, and never
/// for less than the largest of those claims (one expanded by hand is not shrunk; a VolumeResize
/// gives every claim of a template one size). With `"exact"`: the template's size exactly, a
/// shrink included.
fn drift(subject: &Subject) -> Reading {
    let exact = match subject
        .annotations
        .get(ANNOTATION_SYNC_CLAIMS)
        .map(String::as_str)
    {
        None | Some("false") => return Reading::Nothing,
        Some("true") => false,
        Some("exact") => true,
        Some(other) => {
            return Reading::Invalid {
                message: format!(
                    "{ANNOTATION_SYNC_CLAIMS}: {other:?} is not one of \"true\" (grow claims to the template), \"exact\" (also shrink) or \"false\""
                ),
            };
        }
    };
    let running = subject.running_ordinals();
    let mut changes = Vec::new();
    for template in &subject.templates {
        let Some(size) = &template.size else { continue };
        let Ok(bytes) = positive_bytes(size) else { continue };
        let claims: Vec<&Claim> = subject
            .claims
            .iter()
            .filter(|c| c.template == template.name && running.contains(&c.ordinal))
            .collect();
        let claim_bytes = |claim: &Claim| claim.size.as_deref().and_then(|s| positive_bytes(s).ok());
        let class_differs = template.storage_class.is_some()
            && claims
                .iter()
                .any(|claim| claim.storage_class != template.storage_class);
        let size_differs = claims.iter().any(|claim| match claim_bytes(claim) {
            Some(have) if !exact => have < bytes,
            have => have != Some(bytes),
        });
        if !size_differs && !class_differs {
            continue;
        }
        // Grow only: the largest claim's size when it is above the template's.
        let largest = claims
            .iter()
            .filter_map(|claim| Some((claim_bytes(claim)?, claim.size.clone()?)))
            .max_by_key(|(have, _)| *have)
            .filter(|(have, _)| !exact && *have > bytes);
        changes.push(VolumeChange {
            name: template.name.clone(),
            size: largest.map_or_else(|| size.clone(), |(_, size)| size),
            storage_class_name: template.storage_class.clone().filter(|_| class_differs),
            volume_attributes_class_name: None,
        });
    }
    if changes.is_empty() {
        return Reading::Nothing;
    }
    Reading::Request(Request {
        changes,
        sources: BTreeSet::from([Source::Drift]),
        annotations: Vec::new(),
    })
}

/// Two change lists ask for the same thing (sizes compared as quantities, in any order).
pub fn same_target(a: &[VolumeChange], b: &[VolumeChange]) -> bool {
    type Target = (Option<u64>, Option<String>, Option<String>);
    let key = |changes: &[VolumeChange]| -> BTreeMap<String, Target> {
        changes
            .iter()
            .map(|c| {
                let target = (
                    parse_bytes(&c.size).ok(),
                    c.storage_class_name.clone(),
                    c.volume_attributes_class_name.clone(),
                );
                (c.name.clone(), target)
            })
            .collect()
    };
    key(a) == key(b)
}

/// Every template and every running replica's claim already has what the request asks.
pub fn satisfied(subject: &Subject, request: &Request) -> bool {
    let running = subject.running_ordinals();
    request.changes.iter().all(|change| {
        let bytes = parse_bytes(&change.size).ok();
        let class_matches = |class: &Option<String>| {
            change.storage_class_name.is_none() || *class == change.storage_class_name
        };
        let attributes_match = |class: &Option<String>| {
            change.volume_attributes_class_name.is_none() || *class == change.volume_attributes_class_name
        };
        let template_ok = subject.templates.iter().any(|t| {
            t.name == change.name
                && t.size.as_deref().and_then(|s| parse_bytes(s).ok()) == bytes
                && class_matches(&t.storage_class)
                && attributes_match(&t.attributes_class)
        });
        template_ok
            && subject
                .claims
                .iter()
                .filter(|c| c.template == change.name && running.contains(&c.ordinal))
                .all(|c| {
                    c.size.as_deref().and_then(|s| parse_bytes(s).ok()) == bytes
                        && class_matches(&c.storage_class)
                        && attributes_match(&c.attributes_class)
                })
    })
}

/// Says the changes the way a person writes them: `data 1Gi → 2Gi, logs → class fast`.
pub fn describe(changes: &[VolumeChange], templates: &[Template]) -> String {
    changes
        .iter()
        .map(|change| {
            let current = templates.iter().find(|t| t.name == change.name);
            let from = current.and_then(|t| t.size.clone()).unwrap_or_else(|| "?".into());
            let mut text = if current.and_then(|t| t.size.as_deref().and_then(|s| parse_bytes(s).ok()))
                == parse_bytes(&change.size).ok()
            {
                format!("{} {}", change.name, change.size)
            } else {
                format!("{} {from} → {}", change.name, change.size)
            };
            if let Some(class) = &change.storage_class_name {
                text.push_str(&format!(" on StorageClass {class}"));
            }
            if let Some(class) = &change.volume_attributes_class_name {
                text.push_str(&format!(" with VolumeAttributesClass {class}"));
            }
            text
        })
        .collect::<Vec<_>>()
        .join(", ")
}
