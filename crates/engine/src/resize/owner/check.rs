//! Prechecks of an owned StatefulSet: which owner, whether Ferry knows it, and whether its table
//! entry fits the resource (every changed template kept by it, a place for every changed class).

use crate::owners::{OwnerReading, read_owner};
use crate::resize::observed::{Observed, StatefulSetView};
use ferry_api::condition::{REASON_OWNER_MISMATCH, REASON_OWNER_UNKNOWN};
use ferry_api::{OwnerField, OwnerPolicy, OwnerStatus, VolumeResizeSpec, format_bytes, parse_bytes};

/// The owner a run of `spec` goes through (`None`: nobody else owns the StatefulSet), or why the
/// request cannot go ahead: (reason, message).
pub fn owner_of(
    spec: &VolumeResizeSpec,
    observed: &Observed,
    sts: &StatefulSetView,
) -> Result<Option<OwnerStatus>, (&'static str, String)> {
    let Some(owner) = &observed.owner else {
        return Ok(None);
    };
    let mut status = OwnerStatus {
        api_version: owner.api_version.clone(),
        kind: owner.kind.clone(),
        name: owner.name.clone(),
        uid: owner.uid.clone(),
        ..OwnerStatus::default()
    };
    let who = format!("{} {:?} ({})", owner.kind, owner.name, owner.api_version);
    if spec.owner_policy == OwnerPolicy::Ignore {
        status.ignored = true;
        return Ok(Some(status));
    }
    if member_of_extended(owner, sts) {
        return Ok(None);
    }
    let Some(entry) = &owner.entry else {
        return Err((
            REASON_OWNER_UNKNOWN,
            format!(
                "StatefulSet {:?} is controlled by {who}, an owner Ferry does not know: it would undo or fight a resize of its StatefulSet. Tell Ferry where {} keeps its volumes (an entry in the operator's ferry-owners ConfigMap, see docs/owned-statefulsets.md), or set spec.ownerPolicy: Ignore to resize it as if nobody owned it",
                sts.name, owner.kind
            ),
        ));
    };
    let Some(object) = &owner.object else {
        return Err((
            REASON_OWNER_MISMATCH,
            format!(
                "StatefulSet {:?} is controlled by {who}, which does not exist",
                sts.name
            ),
        ));
    };
    let templates: Vec<&str> = sts.templates.keys().map(String::as_str).collect();
    let reading = read_owner(entry, object, &sts.name, &templates).map_err(|why| {
        (
            REASON_OWNER_MISMATCH,
            format!(
                "{who} owns StatefulSet {:?}, but Ferry cannot read its volumes: {why}",
                sts.name
            ),
        )
    })?;
    fits(spec, &who, &reading, &sts.name)?;
    status.pause_switch = entry
        .pause
        .as_ref()
        .zip(reading.pause.as_ref())
        .map(|(switch, path)| OwnerField {
            path: path.text().to_string(),
            value: switch.value.to_string(),
        });
    status.writes = planned_writes(spec, &reading);
    Ok(Some(status))
}

/// The fields of the owner a run of `spec` writes, with the values it gives them: each changed
/// template's size (as the run writes it: the owner's own text where it states the same quantity)
/// and, where the request changes them, class and attributes class.
fn planned_writes(spec: &VolumeResizeSpec, reading: &OwnerReading) -> Vec<OwnerField> {
    let mut fields = Vec::new();
    for change in &spec.volumes {
        let Some(kept) = reading.volumes.get(&change.name) else {
            continue;
        };
        let size = match (parse_bytes(&change.size), &kept.size_now) {
            (Ok(bytes), Some(now)) if parse_bytes(now).ok() == Some(bytes) => now.clone(),
            (Ok(bytes), _) => format_bytes(bytes),
            (Err(_), _) => change.size.clone(),
        };
        let places = [
            (Some(&kept.size), Some(&size)),
            (kept.storage_class.as_ref(), change.storage_class_name.as_ref()),
            (
                kept.attributes_class.as_ref(),
                change.volume_attributes_class_name.as_ref(),
            ),
        ];
        for (path, value) in places {
            if let (Some(path), Some(value)) = (path, value) {
                fields.push(OwnerField {
                    path: path.text().to_string(),
                    value: serde_json::Value::from(value.as_str()).to_string(),
                });
            }
        }
    }
    fields
}

/// Every template the request changes is one the owner keeps, with a place for each new class.
fn fits(
    spec: &VolumeResizeSpec,
    who: &str,
    reading: &OwnerReading,
    sts_name: &str,
) -> Result<(), (&'static str, String)> {
    for change in &spec.volumes {
        let Some(kept) = reading.volumes.get(&change.name) else {
            return Err((
                REASON_OWNER_MISMATCH,
                format!(
                    "{who} owns StatefulSet {:?}, but Ferry's table says nowhere where it keeps volume claim template {:?}",
                    sts_name, change.name
                ),
            ));
        };
        let places = [
            (
                change.storage_class_name.is_some() && kept.storage_class.is_none(),
                "StorageClass",
            ),
            (
                change.volume_attributes_class_name.is_some() && kept.attributes_class.is_none(),
                "VolumeAttributesClass",
            ),
        ];
        if let Some((_, what)) = places.iter().find(|(missing, _)| *missing) {
            return Err((
                REASON_OWNER_MISMATCH,
                format!(
                    "{who} keeps no {what} for volume claim template {:?}, so the resize's new {what} could not be written into it",
                    change.name
                ),
            ));
        }
    }
    Ok(())
}

/// One of an ExtendedStatefulSet's several StatefulSets (a zone's, a version's): its template is
/// every member's, so a resize of one member is not written into it (that would resize every
/// zone); Ferry's own controller keeps a size a member was given outside it, and never shrinks
/// it back.
fn member_of_extended(owner: &crate::resize::observed::OwnerView, sts: &StatefulSetView) -> bool {
    crate::owners::group_of(&owner.api_version) == ferry_api::names::GROUP
        && owner.kind == "ExtendedStatefulSet"
        && owner.name != sts.name
}
