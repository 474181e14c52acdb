//! volmig's `VolumeResize` (`storage.maurice.fr/v1alpha1`) → Ferry's `VolumeResize`: the same
//! request (`newSize` is `size`, `storageClass` is `storageClassName`), made by Ferry's engine. One
//! volmig already started is not imported: it would start again from claims volmig may have
//! replaced.

use super::fields::{quantity, strings, unknown_fields};
use super::{FerryObject, Source, System, Translation};
use ferry_api::{VolumeChange, VolumeResize, VolumeResizeSpec, parse_bytes};
use serde_json::Value;

pub const GROUP: &str = "storage.maurice.fr";

/// A VolumeResize's name labels what it makes: 63 characters at most.
const MAX_NAME: usize = 63;

pub fn translate(source: &Source, object: &Value) -> Translation {
    let mut translation = Translation::new(source, System::Volmig);
    if let Some(why) = started(&object["status"]) {
        translation.note(why);
        return translation;
    }
    match request(object, &mut translation) {
        Ok(spec) => {
            let name = name(source, &mut translation);
            let mut resize = VolumeResize::new(&name, spec);
            resize.metadata = source.metadata(name, strings(&object["metadata"]["labels"]));
            translation
                .objects
                .push(FerryObject::VolumeResize(Box::new(resize)));
        }
        Err(why) => translation.note(format!("not imported: {why}")),
    }
    translation
}

/// Why a volmig resize with this status must not be imported, if it must not.
fn started(status: &Value) -> Option<String> {
    let phase = status["phase"].as_str().unwrap_or_default();
    let rows = status["volumeStatuses"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let untouched = rows
        .iter()
        .all(|row| matches!(row["phase"].as_str(), None | Some("Pending")));
    let message = status["message"].as_str().filter(|m| !m.is_empty());
    let said = message.map(|m| format!(" (\"{m}\")")).unwrap_or_default();
    let backup = status["backupConfigMapName"].as_str().filter(|b| !b.is_empty());
    match phase {
        "" | "Pending" | "Validating" if untouched => None,
        "Completed" => Some(format!(
            "not imported: volmig completed it (status.phase Completed){said}; there is nothing left to do"
        )),
        "Failed" => Some(format!(
            "not imported: volmig failed{said} at {}. volmig keeps the old volumes (Retain){}: recover \
             by hand as volmig's README says (re-bind the claims to the old volumes, re-create the \
             StatefulSet from the backup) before Ferry resizes this StatefulSet; then create a new \
             VolumeResize",
            position(status),
            backup
                .map(|b| format!(" and the StatefulSet's spec in ConfigMap {b}"))
                .unwrap_or_default()
        )),
        _ => Some(format!(
            "not imported: volmig is in the middle of it (status.phase {}{said}, at {}); a Ferry \
             VolumeResize now would start again beside it from claims volmig may already have \
             replaced. Let volmig finish (kubectl get volumeresizes.storage.maurice.fr -w), then stop \
             volmig; there is nothing left to import once it completed",
            if phase.is_empty() { "empty" } else { phase },
            position(status)
        )),
    }
}

/// Where volmig stood: `replica 1, volume data`.
fn position(status: &Value) -> String {
    let replica = status["currentReplica"].as_i64().map(|r| format!("replica {r}"));
    let volume = status["currentVolume"]
        .as_str()
        .filter(|v| !v.is_empty())
        .map(|v| format!("volume {v}"));
    let at: Vec<String> = replica.into_iter().chain(volume).collect();
    if at.is_empty() {
        "an unknown step".to_string()
    } else {
        at.join(", ")
    }
}

fn request(object: &Value, translation: &mut Translation) -> Result<VolumeResizeSpec, String> {
    let spec = &object["spec"];
    let stateful_set = spec["statefulSetName"]
        .as_str()
        .filter(|s| !s.is_empty())
        .ok_or("spec.statefulSetName is missing")?;
    let mut volumes = Vec::new();
    for (index, volume) in spec["volumes"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        volumes.push(change(volume, index)?);
        unknown_fields(
            volume,
            &["name", "newSize", "storageClass"],
            &format!("spec.volumes[{index}]"),
            translation,
        );
    }
    if volumes.is_empty() {
        return Err("spec.volumes names no volume".to_string());
    }
    unknown_fields(spec, &["statefulSetName", "volumes"], "spec", translation);
    Ok(VolumeResizeSpec::for_volumes(stateful_set, volumes))
}

fn change(volume: &Value, index: usize) -> Result<VolumeChange, String> {
    let name = volume["name"]
        .as_str()
        .filter(|n| !n.is_empty())
        .ok_or_else(|| format!("spec.volumes[{index}].name is missing"))?;
    let size =
        quantity(&volume["newSize"]).ok_or_else(|| format!("spec.volumes[{index}].newSize is missing"))?;
    parse_bytes(&size).map_err(|error| format!("spec.volumes[{index}].newSize {size:?}: {error}"))?;
    Ok(VolumeChange {
        name: name.to_string(),
        size,
        storage_class_name: volume["storageClass"].as_str().map(str::to_string),
        volume_attributes_class_name: None,
    })
}

fn name(source: &Source, translation: &mut Translation) -> String {
    if source.name.len() <= MAX_NAME {
        return source.name.clone();
    }
    let name: String = source.name.chars().take(MAX_NAME).collect();
    let name = name.trim_end_matches(['-', '.']).to_string();
    translation.note(format!(
        "named {name}: a VolumeResize's name is at most {MAX_NAME} characters (it labels the objects Ferry makes)"
    ));
    name
}
