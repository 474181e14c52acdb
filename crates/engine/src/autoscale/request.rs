//! The VolumeResize an autoscaler's grow becomes: an ordinary one (same engine, safety, history).

use super::Reason;
use ferry_api::names::{ANNOTATION_AUTOSCALE_FROM, ANNOTATION_AUTOSCALE_REASON};
use ferry_api::{AutoscaleStrategy, Strategy, VolumeChange, VolumeResizeSpec, format_bytes};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// What one grow (or shrink: `reason` says) changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grow<'a> {
    pub autoscaler_uid: &'a str,
    pub stateful_set: &'a str,
    pub volume: &'a str,
    pub to_bytes: u64,
    pub reason: Reason,
    pub strategy: AutoscaleStrategy,
    /// The time of the grow before this one (Unix seconds), so the same size reached again later
    /// (after a manual shrink) gets a new name.
    pub previous_grow: Option<i64>,
}

/// The name is the same for the same decision, so an operator that made the VolumeResize and was
/// killed before it recorded it, or a second pass that reads a cache not yet updated, gets a
/// conflict instead of a second resize.
pub fn resize_name(grow: &Grow) -> String {
    let mut hasher = Sha256::new();
    hasher.update(
        format!(
            "{}\0{}\0{}\0{}",
            grow.autoscaler_uid,
            grow.volume,
            grow.to_bytes,
            grow.previous_grow.unwrap_or(0)
        )
        .as_bytes(),
    );
    let digest = crate::names::hex_digest(hasher, 4);
    let prefix: String = grow.stateful_set.chars().take(46).collect();
    format!("{}-auto-{digest}", prefix.trim_end_matches(['-', '.']))
}

/// The grow's decision as annotations on its VolumeResize: the size before and the reason.
pub fn decision_annotations(from_bytes: u64, reason: Reason) -> BTreeMap<String, String> {
    BTreeMap::from([
        (ANNOTATION_AUTOSCALE_FROM.to_string(), format_bytes(from_bytes)),
        (
            ANNOTATION_AUTOSCALE_REASON.to_string(),
            reason.label().to_string(),
        ),
    ])
}

/// The VolumeResize's spec: grow the one template (and every claim) in place, or by copy where the
/// policy allows it and the class cannot expand. A rescue is forced: the StatefulSet is not Ready
/// because the volume is full, and waiting for it to be Ready would wait forever.
pub fn resize_spec(grow: &Grow) -> VolumeResizeSpec {
    let mut spec = VolumeResizeSpec::for_volumes(
        grow.stateful_set,
        vec![VolumeChange {
            name: grow.volume.to_string(),
            size: format_bytes(grow.to_bytes),
            storage_class_name: None,
            volume_attributes_class_name: None,
        }],
    );
    spec.strategy = match (grow.reason, grow.strategy) {
        // Only a copy makes a volume smaller.
        (Reason::Shrink, _) => Strategy::Copy,
        (_, AutoscaleStrategy::InPlace) => Strategy::InPlace,
        (_, AutoscaleStrategy::AllowCopy) => Strategy::Auto,
    };
    spec.force = grow.reason == Reason::Rescue;
    // Nobody watches an autoscaler's grow: a step that never ends (a driver that never finishes,
    // a pod that can never restart) must end it, so the autoscaler reports ResizeFailed.
    spec.timeout_seconds = Some(AUTOSCALE_TIMEOUT_SECONDS);
    spec
}

/// `timeoutSeconds` of the VolumeResizes an autoscaler makes: an hour for any step before a copy's
/// swap (a warm copy of some 700 GB at 200 MB/s) and for an in-place grow to reach its size.
pub const AUTOSCALE_TIMEOUT_SECONDS: i64 = 3600;

#[cfg(test)]
mod tests {
    use super::*;

    fn grow() -> Grow<'static> {
        Grow {
            autoscaler_uid: "uid-1",
            stateful_set: "db",
            volume: "data",
            to_bytes: 1229 << 20,
            reason: Reason::Threshold,
            strategy: AutoscaleStrategy::InPlace,
            previous_grow: None,
        }
    }

    #[test]
    fn the_same_grow_has_the_same_name_and_another_grow_another() {
        assert_eq!(resize_name(&grow()), resize_name(&grow()));
        assert!(resize_name(&grow()).starts_with("db-auto-"));
        let later = Grow {
            previous_grow: Some(100),
            ..grow()
        };
        assert_ne!(resize_name(&grow()), resize_name(&later));
        let long = Grow {
            stateful_set: "a-very-long-stateful-set-name-that-goes-on-and-on-and-on",
            ..grow()
        };
        assert!(resize_name(&long).len() <= 63, "{}", resize_name(&long));
    }

    #[test]
    fn the_spec_grows_one_template_in_place_and_forces_only_a_rescue() {
        let spec = resize_spec(&grow());
        assert_eq!(spec.stateful_set_name, "db");
        assert_eq!(spec.volumes.len(), 1);
        assert_eq!(spec.volumes[0].name, "data");
        assert_eq!(spec.volumes[0].size, "1229Mi");
        assert_eq!(spec.strategy, Strategy::InPlace);
        assert!(!spec.force);
        let rescue = resize_spec(&Grow {
            reason: Reason::Rescue,
            strategy: AutoscaleStrategy::AllowCopy,
            ..grow()
        });
        assert!(rescue.force);
        assert_eq!(rescue.timeout_seconds, Some(AUTOSCALE_TIMEOUT_SECONDS));
        assert_eq!(rescue.strategy, Strategy::Auto);
        let shrink = resize_spec(&Grow {
            reason: Reason::Shrink,
            to_bytes: 256 << 20,
            ..grow()
        });
        assert_eq!((shrink.strategy, shrink.force), (Strategy::Copy, false));
        assert_eq!(shrink.volumes[0].size, "256Mi");
    }
}
