//! An owner's resource read through its table entry: which of the StatefulSet's templates it keeps,
//! where, and what it says of each now; and the JSON Patches that pause it, let it go and write a
//! resize's result into it.

use crate::owners::path::{Found, Path, Vars};
use crate::owners::{OwnerKind, pattern};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// One template of the StatefulSet as the owner keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnedVolume {
    pub size: Path,
    pub storage_class: Option<Path>,
    pub attributes_class: Option<Path>,
    /// The size the owner asks for now (its text, `50Gi`), if it says one.
    pub size_now: Option<String>,
}

/// What an owner keeps of one StatefulSet.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnerReading {
    /// By template name.
    pub volumes: BTreeMap<String, OwnedVolume>,
    pub pause: Option<Path>,
    pub observed_generation: Option<Path>,
}

/// Reads `owner` (the resource, as JSON) as `entry` describes it, for its StatefulSet `stateful_set`
/// whose templates are `templates`. Fails when the StatefulSet is not one the entry describes or a
/// path of the entry cannot be read in this resource.
pub fn read_owner(
    entry: &OwnerKind,
    owner: &Value,
    stateful_set: &str,
    templates: &[&str],
) -> Result<OwnerReading, String> {
    let owner_name = owner
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let bound = Vars::from([("owner".to_string(), owner_name.to_string())]);
    let vars = entry
        .stateful_sets
        .iter()
        .find_map(|name| pattern::matches(name, stateful_set, &bound))
        .ok_or_else(|| {
            format!(
                "StatefulSet {stateful_set:?} is not named as {} {owner_name:?} names its StatefulSets ({})",
                entry.kind,
                entry.stateful_sets.join(", ")
            )
        })?;
    let mut volumes = BTreeMap::new();
    for volume in &entry.volumes {
        let named = match &volume.claim_template_name {
            Some(path) => match Path::parse(path, &vars)?.find(owner) {
                Found::Value {
                    value: Value::String(name),
                    ..
                } if !name.is_empty() => Some(name.clone()),
                _ => None,
            },
            None => None,
        };
        for template in templates {
            let matched = match &named {
                Some(name) => (name == template).then(|| vars.clone()),
                None => pattern::matches(&volume.claim_template, template, &vars),
            };
            let Some(vars) = matched else { continue };
            let size = Path::parse(&volume.size, &vars)?;
            let size_now = match size.find(owner) {
                Found::Value { value, .. } => value.as_str().map(str::to_string),
                Found::Absent { .. } => None,
                Found::Unreachable(why) => return Err(why),
            };
            let optional =
                |path: &Option<String>| path.as_deref().map(|path| Path::parse(path, &vars)).transpose();
            let owned = OwnedVolume {
                size,
                storage_class: optional(&volume.storage_class)?,
                attributes_class: optional(&volume.attributes_class)?,
                size_now,
            };
            for path in [&owned.storage_class, &owned.attributes_class]
                .into_iter()
                .flatten()
            {
                if let Found::Unreachable(why) = path.find(owner) {
                    return Err(why);
                }
            }
            volumes.entry(template.to_string()).or_insert(owned);
        }
    }
    let plain = |path: &Option<String>| path.as_deref().map(|path| Path::parse(path, &vars)).transpose();
    Ok(OwnerReading {
        volumes,
        pause: plain(&entry.pause.as_ref().map(|pause| pause.path.clone()))?,
        observed_generation: plain(&entry.observed_generation)?,
    })
}

/// What one template becomes in the owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateWrite {
    pub template: String,
    pub size: String,
    /// `None`: left as the owner has it.
    pub storage_class: Option<String>,
    pub attributes_class: Option<String>,
}

impl OwnerReading {
    /// The JSON Patch that writes `writes` into `owner` (guarded by its resourceVersion, so an edit
    /// since it was read fails it), or none when the owner already says all of it.
    pub fn write_ops(&self, owner: &Value, writes: &[TemplateWrite]) -> Result<Vec<Value>, String> {
        let mut ops = Vec::new();
        for write in writes {
            let Some(volume) = self.volumes.get(&write.template) else {
                return Err(format!("the owner keeps no template {:?}", write.template));
            };
            ops.extend(volume.size.write(owner, &json!(write.size))?);
            for (path, value) in [
                (&volume.storage_class, &write.storage_class),
                (&volume.attributes_class, &write.attributes_class),
            ] {
                if let (Some(path), Some(value)) = (path, value) {
                    ops.extend(path.write(owner, &json!(value))?);
                }
            }
        }
        Ok(guarded(owner, ops))
    }

    /// What the pause switch says now (`None`: not set).
    pub fn pause_now<'a>(&self, owner: &'a Value) -> Option<&'a Value> {
        match self.pause.as_ref()?.find(owner) {
            Found::Value { value, .. } => Some(value),
            _ => None,
        }
    }

    /// The JSON Patch that sets the pause switch to `value`, or removes it (`None`).
    pub fn pause_ops(&self, owner: &Value, value: Option<&Value>) -> Result<Vec<Value>, String> {
        let Some(path) = &self.pause else {
            return Ok(Vec::new());
        };
        let ops = match value {
            Some(value) => path.write(owner, value)?,
            None => path.remove(owner)?,
        };
        Ok(guarded(owner, ops))
    }

    /// The generation of its resource the owner says it last acted on, if it says one.
    pub fn observed_generation(&self, owner: &Value) -> Option<i64> {
        match self.observed_generation.as_ref()?.find(owner) {
            Found::Value { value, .. } => value.as_i64(),
            _ => None,
        }
    }
}

/// `ops` behind a test of the resource version they were computed from (none stay none).
fn guarded(owner: &Value, ops: Vec<Value>) -> Vec<Value> {
    if ops.is_empty() {
        return ops;
    }
    let version = owner
        .pointer("/metadata/resourceVersion")
        .cloned()
        .unwrap_or(Value::Null);
    let mut guarded = vec![json!({"op": "test", "path": "/metadata/resourceVersion", "value": version})];
    guarded.extend(ops);
    guarded
}
