//! topolvm's pvc-autoresizer, by its annotations on a StatefulSet's claims (given to them by a
//! volume claim template, or set on the claims in the file): a `VolumeAutoscaler` with a volume
//! per template whose claims it grows, with the same thresholds, increase and limit
//! (`storage_limit` → `maxSize`). Its StorageClasses in the file tell whether it acts at all.

use super::autoresizer_values::{self as values, Amount};
use super::claims::{self, Claim};
use super::fields::{quantity, strings};
use super::{FerryObject, Source, System, Translation, derived_name};
use ferry_api::{AutoscaledVolume, VolumeAutoscaler, VolumeAutoscalerSpec, parse_bytes};
use ferry_engine::autoscale::autoresizer::{
    DEFAULT_PERCENT, ENABLED, INCREASE, INITIAL_RESIZE_GROUP_BY, INODES_THRESHOLD, PRE_CAPACITY_BYTES,
    PREFIX, STORAGE_LIMIT, THRESHOLD,
};
use serde_json::Value;
use std::collections::BTreeMap;

/// The StorageClasses of the file: name → whether it lets pvc-autoresizer act.
pub type Classes = BTreeMap<String, bool>;

pub fn classes_in_file(objects: &[Value]) -> Classes {
    objects
        .iter()
        .filter(|o| o["kind"] == "StorageClass")
        .filter_map(|o| {
            let name = o["metadata"]["name"].as_str()?.to_string();
            Some((name, o["metadata"]["annotations"][ENABLED] == "true"))
        })
        .collect()
}

/// pvc-autoresizer's annotations among `annotations`, but its own record of the last grow.
fn policy_of(annotations: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    annotations
        .iter()
        .filter(|(key, _)| key.starts_with(PREFIX) && key.as_str() != PRE_CAPACITY_BYTES)
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect()
}

fn templates(object: &Value) -> &[Value] {
    object["spec"]["volumeClaimTemplates"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// A template or a claim of the StatefulSet carries pvc-autoresizer's annotations.
pub fn applies(source: &Source, object: &Value, claims: &[Claim]) -> bool {
    templates(object).iter().any(|template| {
        let name = template["metadata"]["name"].as_str().unwrap_or_default();
        !policy_of(&strings(&template["metadata"]["annotations"])).is_empty()
            || mine(source, object, name, claims)
                .iter()
                .any(|claim| !policy_of(&claim.annotations).is_empty())
    })
}

fn mine<'a>(source: &Source, object: &Value, template: &str, claims: &'a [Claim]) -> Vec<&'a Claim> {
    let replicas = claims::replicas(object);
    claims::of_template(
        claims,
        template,
        &source.name,
        source.namespace.as_deref(),
        replicas,
    )
}

/// A StorageClass: one that lets pvc-autoresizer act is worth a word; others are context.
pub fn storage_class(source: &Source, object: &Value) -> Vec<Translation> {
    if object["metadata"]["annotations"][ENABLED] != "true" {
        return Vec::new();
    }
    let mut translation = Translation::new(source, System::Autoresizer);
    translation.note(format!(
        "{ENABLED}: \"true\": pvc-autoresizer grows the claims of this class that carry \
         {STORAGE_LIMIT}, and Ferry's autoscaler leaves those claims to it. Once the \
         VolumeAutoscalers imported from their StatefulSets are applied, remove this annotation \
         (when no other claim of the class still needs pvc-autoresizer) or {STORAGE_LIMIT} from \
         the claims"
    ));
    vec![translation]
}

pub fn translate(source: &Source, object: &Value, claims: &[Claim], classes: &Classes) -> Translation {
    let mut translation = Translation::new(source, System::Autoresizer);
    let mut volumes = Vec::new();
    let mut class_names = Vec::new();
    for template in templates(object) {
        let name = template["metadata"]["name"].as_str().unwrap_or_default();
        let read = Read::of(source, object, template, claims);
        if read.policy.is_empty() {
            if read.template_only {
                translation.note(format!(
                    "volume {name}: not imported: the template carries {PREFIX} annotations but                      its claims in the file do not, and pvc-autoresizer reads the claims"
                ));
            }
            continue;
        }
        match volume(name, &read, classes, &mut translation) {
            Ok(volume) => {
                volumes.push(volume);
                class_names.extend(read.class.clone());
            }
            Err(why) => translation.note(format!("volume {name}: not imported: {why}")),
        }
    }
    if volumes.is_empty() {
        return translation;
    }
    let name = derived_name(&source.name, "autoresizer", 63);
    let spec = VolumeAutoscalerSpec {
        stateful_set_name: Some(source.name.clone()),
        selector: None,
        owner: None,
        volumes,
        maintenance_windows: Vec::new(),
        rescue_outside_windows: false,
    };
    let mut autoscaler = VolumeAutoscaler::new(&name, spec);
    autoscaler.metadata = source.metadata(name, BTreeMap::new());
    translation
        .objects
        .push(FerryObject::VolumeAutoscaler(Box::new(autoscaler)));
    general_notes(&class_names, &mut translation);
    translation
}

/// What one template's claims say, as pvc-autoresizer would read them.
struct Read {
    /// Its annotations (from the claims in the file, else the template).
    policy: BTreeMap<String, String>,
    class: Option<String>,
    /// The largest of the template's and the claims' sizes.
    size: Option<u64>,
    block: bool,
    /// Why the claims cannot be read as one policy, if they cannot.
    disagreement: Option<String>,
    /// The template has annotations its claims in the file lack.
    template_only: bool,
}

impl Read {
    fn of(source: &Source, object: &Value, template: &Value, claims: &[Claim]) -> Read {
        let name = template["metadata"]["name"].as_str().unwrap_or_default();
        let from_template = policy_of(&strings(&template["metadata"]["annotations"]));
        let mine = mine(source, object, name, claims);
        let mut policies: Vec<BTreeMap<String, String>> =
            mine.iter().map(|claim| policy_of(&claim.annotations)).collect();
        policies.dedup();
        let disagreement = (policies.len() > 1).then(|| {
            format!(
                "its claims in the file carry different {PREFIX} annotations ({}), and Ferry has one \
                 policy per volume claim template: make them agree and import again",
                mine.iter()
                    .map(|claim| format!("{}: {:?}", claim.name, policy_of(&claim.annotations)))
                    .collect::<Vec<_>>()
                    .join("; ")
            )
        });
        let sizes = mine.iter().filter_map(|c| c.size.as_deref());
        let template_size = quantity(&template["spec"]["resources"]["requests"]["storage"]);
        let size = sizes
            .chain(template_size.as_deref())
            .filter_map(|s| parse_bytes(s).ok())
            .max();
        let class = template["spec"]["storageClassName"]
            .as_str()
            .map(str::to_string)
            .or_else(|| mine.iter().find_map(|c| c.storage_class.clone()));
        let template_only = !from_template.is_empty() && policies.iter().all(BTreeMap::is_empty);
        Read {
            template_only: template_only && !policies.is_empty(),
            policy: policies.into_iter().next().unwrap_or(from_template),
            class,
            size,
            block: template["spec"]["volumeMode"] == "Block",
            disagreement,
        }
    }
}

/// The template's policy in Ferry's terms, notes for what is not exact, or why it is not imported.
fn volume(
    name: &str,
    read: &Read,
    classes: &Classes,
    translation: &mut Translation,
) -> Result<AutoscaledVolume, String> {
    if let Some(why) = &read.disagreement {
        return Err(why.clone());
    }
    let get = |key: &str| read.policy.get(key).map(String::as_str).filter(|v| !v.is_empty());
    let limit = get(STORAGE_LIMIT)
        .filter(|limit| parse_bytes(limit).is_ok())
        .ok_or_else(|| {
            format!("no positive {STORAGE_LIMIT}: pvc-autoresizer does not grow such claims either")
        })?;
    if read.block {
        return Err("a Block volume: pvc-autoresizer grows only Filesystem volumes".to_string());
    }
    class_lets_it_act(name, read, classes, translation)?;
    let value = |key: &str| get(key).unwrap_or(DEFAULT_PERCENT);
    let mut notes = Vec::new();
    let threshold = values::amount(value(THRESHOLD), true)
        .and_then(|free| values::used_threshold(free, read.size, THRESHOLD))
        .map_err(|why| format!("{THRESHOLD}: {why}"))?;
    let inodes = values::amount(value(INODES_THRESHOLD), false)
        .and_then(|free| values::used_threshold(free, read.size, INODES_THRESHOLD))
        .map_err(|why| format!("{INODES_THRESHOLD}: {why}"))?;
    let increase = values::amount(value(INCREASE), true)
        .and_then(|step: Amount| values::increase(step, value(INCREASE)))
        .map_err(|why| format!("{INCREASE}: {why}"))?;
    notes.extend([threshold.1, inodes.1, increase.1].into_iter().flatten());
    if let Some(group) = get(INITIAL_RESIZE_GROUP_BY) {
        notes.push(format!(
            "not carried over: {INITIAL_RESIZE_GROUP_BY}: {group} (new claims sized like the \
             largest of their group, by a webhook): Ferry has no such webhook, but it grows the \
             volume claim template with the volumes, so a new replica's claim starts at the size \
             the others have"
        ));
    }
    let known = [
        STORAGE_LIMIT,
        THRESHOLD,
        INODES_THRESHOLD,
        INCREASE,
        INITIAL_RESIZE_GROUP_BY,
    ];
    for key in read.policy.keys().filter(|key| !known.contains(&key.as_str())) {
        notes.push(format!(
            "not carried over: {key}, because pvc-autoresizer reads no such annotation"
        ));
    }
    for note in notes {
        translation.note(format!("volume {name}: {note}"));
    }
    Ok(AutoscaledVolume {
        name: name.to_string(),
        threshold: Some(threshold.0),
        inodes_threshold: Some(inodes.0),
        increase: Some(increase.0),
        min_increase: None,
        max_increase: None,
        max_size: limit.to_string(),
        cooldown: None,
        provider: None,
        strategy: None,
        grow_after: None,
        shrink: None,
    })
}

/// The claims' StorageClass, where the file has it, lets pvc-autoresizer act; where it does not,
/// a note says the import assumed so.
fn class_lets_it_act(
    name: &str,
    read: &Read,
    classes: &Classes,
    translation: &mut Translation,
) -> Result<(), String> {
    match read.class.as_deref().map(|class| (class, classes.get(class))) {
        Some((class, Some(false))) => Err(format!(
            "StorageClass {class} in the file is not annotated {ENABLED}: \"true\", so \
                 pvc-autoresizer does not grow these claims (unless it runs with \
                 --no-annotation-check; then make a VolumeAutoscaler by hand or annotate the \
                 class and import again)"
        )),
        Some((class, None)) => {
            translation.note(format!(
                "volume {name}: StorageClass {class} is not in the file: imported as if it has \
             {ENABLED}: \"true\" (kubectl get sts,pvc,storageclass -o yaml gives it)"
            ));
            Ok(())
        }
        Some((_, Some(true))) | None => Ok(()),
    }
}

/// How Ferry's autoscaler differs, and the switch it waits for.
fn general_notes(class_names: &[String], translation: &mut Translation) {
    translation.note(format!(
        "carried over: {THRESHOLD} and {INODES_THRESHOLD} (free space, default {DEFAULT_PERCENT}) \
         as threshold and inodesThreshold (used space), {INCREASE} (default {DEFAULT_PERCENT}) as \
         increase, {STORAGE_LIMIT} as maxSize. Ferry differs: it grows the volumes of every replica \
         of a template together, and the template, by a VolumeResize; it waits its cooldown (1h by \
         default) between grows where pvc-autoresizer waited only for the last grow to show; it \
         rounds sizes up to MiB where pvc-autoresizer rounded up to whole GiB (provider: aws-ebs \
         or one-per-6h round to GiB, with their limits on modifications)"
    ));
    let mut classes = class_names.to_vec();
    classes.sort();
    classes.dedup();
    let class = if classes.is_empty() {
        "the claims' StorageClass".to_string()
    } else {
        format!("StorageClass {}", classes.join(", "))
    };
    translation.note(format!(
        "until you switch, Ferry's autoscaler leaves claims pvc-autoresizer manages to it (state \
         ManagedByPvcAutoresizer, nothing grown): remove {STORAGE_LIMIT} from the claims \
         (kubectl annotate pvc NAME {STORAGE_LIMIT}-; the template still gives it to new \
         replicas' claims), or {ENABLED} from {class} (pvc-autoresizer then leaves every claim of \
         that class)"
    ));
}

#[cfg(test)]
#[path = "autoresizer_tests.rs"]
mod tests;
