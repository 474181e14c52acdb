//! One volume's situation, judged from what the operator read: its size, the grows already made
//! (from status and from the VolumeResizes autoscalers made, each counted once), whether a resize
//! is at work or failed, and which replicas crash on a full disk.

use super::rescue::{FullDisk, crashing_on_full_disk};
use super::{Reading, Situation};
use ferry_api::listed::Listing;
use ferry_api::names::{
    ANNOTATION_AUTOSCALE_FROM, ANNOTATION_AUTOSCALE_REASON, LABEL_STATEFUL_SET, LABEL_TRIGGER,
};
use ferry_api::quantity::requested_storage;
use ferry_api::{AutoResize, Phase, RowStep, VolumeResize, parse_bytes};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Pod;
use std::collections::BTreeMap;

/// One StatefulSet's replicas as the autoscaler reads them.
#[derive(Debug, Clone, Default)]
pub struct Replicas {
    /// The ordinals the StatefulSet asks for.
    pub ordinals: Vec<i32>,
    /// Its pods by ordinal (those that exist).
    pub pods: BTreeMap<i32, Pod>,
}

/// The size the template asks for, in bytes.
pub fn template_size(sts: &StatefulSet, volume: &str) -> Result<u64, String> {
    let template = sts
        .spec
        .iter()
        .flat_map(|spec| spec.volume_claim_templates.iter().flatten())
        .find(|template| template.metadata.name.as_deref() == Some(volume))
        .ok_or_else(|| {
            format!(
                "StatefulSet {:?} has no volume claim template {volume:?}",
                sts.metadata.name.as_deref().unwrap_or_default()
            )
        })?;
    let size = requested_storage(template.spec.as_ref())
        .ok_or_else(|| format!("volume claim template {volume:?} asks for no storage size"))?;
    parse_bytes(&size.0).map_err(|error| format!("volume claim template {volume:?}: {error}"))
}

fn label<'a>(resize: &'a VolumeResize, key: &str) -> Option<&'a str> {
    resize.metadata.labels.as_ref()?.get(key).map(String::as_str)
}

fn unix_seconds(resize: &VolumeResize) -> Option<i64> {
    resize
        .metadata
        .creation_timestamp
        .as_ref()
        .map(|time| time.0.as_second())
}

/// The `LABEL_TRIGGER` value of the VolumeResizes autoscalers make.
pub const TRIGGER_AUTOSCALE: &str = "autoscale";

/// A VolumeResize made this close to a recorded grow is that grow.
const SAME_GROW_SECONDS: i64 = 60;

/// Everything the decision needs for one volume of one StatefulSet.
pub struct Facts<'a> {
    pub sts: &'a str,
    pub volume: &'a str,
    pub current_size: u64,
    pub replicas: &'a Replicas,
    pub readings: Vec<Reading>,
    pub resizes: &'a Listing,
    /// Grow times the autoscaler's status records (Unix seconds).
    pub recorded_history: Vec<i64>,
    /// The last shrink status records (Unix seconds).
    pub recorded_last_shrink: Option<i64>,
    pub now: i64,
}

/// The situation [`super::decide`] judges.
pub fn situation(facts: Facts) -> Situation {
    let on_this_set = |resize: &&VolumeResize| resize.spec.stateful_set_name == facts.sts;
    // An unreadable resize that may be at work on this StatefulSet counts as running: growing
    // beside it could start a second resize of the same StatefulSet.
    let resize_running = facts.resizes.working_on(facts.sts);
    // The autoscalers' resizes of this volume (rebuilding the record if status lost it). Any
    // autoscaler's, not only this one's: cooldowns and provider windows are about the volume, and a
    // default autoscaler the garbage collector took for an orphan of the StatefulSet Ferry
    // re-created comes back with a new UID and no status. An unreadable one cannot be told to be of
    // this volume: the grow times in status stand for it.
    let mut own: Vec<&VolumeResize> = facts
        .resizes
        .readable
        .iter()
        .filter(on_this_set)
        .filter(|resize| {
            label(resize, LABEL_TRIGGER) == Some(TRIGGER_AUTOSCALE)
                && label(resize, LABEL_STATEFUL_SET) == Some(facts.sts)
                && resize
                    .spec
                    .volumes
                    .iter()
                    .any(|change| change.name == facts.volume)
        })
        .collect();
    own.sort_by_key(|resize| unix_seconds(resize));
    let resize_failed = own
        .last()
        .filter(|resize| resize.phase() == Phase::Failed)
        .and_then(|resize| resize.metadata.name.clone());
    let (grows, last_shrink) = grows_and_last_shrink(&own, facts.recorded_last_shrink);
    let history = grow_history(&facts.recorded_history, &grows);
    let other_modifications = in_place_changes_by_others(&facts, &own);
    let last_grow = own.last().map(|resize| grow_record(resize, facts.volume));

    let judged: Vec<(i32, FullDisk)> = facts
        .replicas
        .pods
        .iter()
        .filter(|(ordinal, _)| facts.replicas.ordinals.contains(ordinal))
        .map(|(ordinal, pod)| {
            let reading = facts.readings.iter().find(|r| r.replica == *ordinal);
            (*ordinal, crashing_on_full_disk(pod, reading))
        })
        .collect();
    let crashes = |which: FullDisk| -> Vec<i32> {
        judged
            .iter()
            .filter(|(_, full)| *full == which)
            .map(|(ordinal, _)| *ordinal)
            .collect()
    };
    let full_disk_crashes = crashes(FullDisk::Crashing);
    let unmeasured_crashes = crashes(FullDisk::Unmeasured);
    Situation {
        current_size: facts.current_size,
        replicas: facts.replicas.ordinals.clone(),
        readings: facts.readings,
        full_disk_crashes,
        unmeasured_crashes,
        resize_running,
        resize_failed,
        history,
        last_grow,
        other_modifications,
        usage_unreadable: None,
        over_threshold_since: None,
        below_shrink_since: None,
        last_shrink,
        window: Default::default(),
        rescue_outside_windows: false,
        now: facts.now,
    }
}

/// The autoscalers' grows among `own`, and the newest shrink (of them, or as status recorded it).
/// A shrink is a copy onto a new volume: not a grow, so neither in the cooldown nor in the
/// provider's window; its own period (`shrink.every`) counts from the newest.
fn grows_and_last_shrink<'a>(
    own: &[&'a VolumeResize],
    recorded_last_shrink: Option<i64>,
) -> (Vec<&'a VolumeResize>, Option<i64>) {
    let (shrinks, grows): (Vec<&VolumeResize>, Vec<&VolumeResize>) =
        own.iter().partition(|resize| is_shrink(resize));
    let last_shrink = shrinks
        .iter()
        .filter_map(|resize| unix_seconds(resize))
        .chain(recorded_last_shrink)
        .max();
    (grows, last_shrink)
}

/// Whether an autoscaler's VolumeResize is a shrink (its reason annotation says so).
fn is_shrink(resize: &VolumeResize) -> bool {
    resize
        .metadata
        .annotations
        .as_ref()
        .and_then(|annotations| annotations.get(ANNOTATION_AUTOSCALE_REASON))
        .map(String::as_str)
        == Some(super::Reason::Shrink.label())
}

/// The grow times status records, and those of the autoscalers' resizes it does not. A grow is
/// recorded at about the time its VolumeResize was made: one near a recorded time is that grow,
/// not another (counting it twice would halve a provider's allowance).
fn grow_history(recorded: &[i64], own: &[&VolumeResize]) -> Vec<i64> {
    let mut history = recorded.to_vec();
    history.extend(
        own.iter()
            .filter_map(|resize| unix_seconds(resize))
            .filter(|made| !recorded.iter().any(|at| (at - made).abs() <= SAME_GROW_SECONDS)),
    );
    history.sort_unstable();
    history.dedup();
    history
}

/// An autoscaler's grow as its VolumeResize records it: made at its creation, to the size it asks
/// for `volume`, from and for what its annotations say (`unknown` on one made before they were
/// written).
fn grow_record(resize: &VolumeResize, volume: &str) -> AutoResize {
    let annotation = |key: &str| {
        (resize.metadata.annotations.as_ref())
            .and_then(|a| a.get(key).cloned())
            .unwrap_or_else(|| "unknown".to_string())
    };
    AutoResize {
        at: resize.metadata.creation_timestamp.clone(),
        volume_resize: resize.metadata.name.clone().unwrap_or_default(),
        from: annotation(ANNOTATION_AUTOSCALE_FROM),
        to: (resize.spec.volumes.iter())
            .find(|change| change.name == volume)
            .map(|change| change.size.clone())
            .unwrap_or_default(),
        reason: annotation(ANNOTATION_AUTOSCALE_REASON),
    }
}

/// When VolumeResizes other than the autoscalers' (`own`) changed this volume in place (a row of
/// it grown or given another attributes class; a copy makes a new volume, which the provider counts
/// afresh), by their creation time.
fn in_place_changes_by_others(facts: &Facts, own: &[&VolumeResize]) -> Vec<i64> {
    facts
        .resizes
        .readable
        .iter()
        .filter(|resize| resize.spec.stateful_set_name == facts.sts)
        .filter(|resize| !own.iter().any(|mine| mine.metadata.uid == resize.metadata.uid))
        .filter(|resize| {
            resize.status.iter().flat_map(|status| &status.plan).any(|row| {
                row.volume == facts.volume
                    && row.strategy == Some(ferry_api::ChosenStrategy::InPlace)
                    && matches!(row.step, Some(RowStep::Expanded | RowStep::Modified))
            })
        })
        .filter_map(unix_seconds)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferry_api::names::LABEL_AUTOSCALER_UID;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;

    /// A grow of db's `data` made by the autoscaler with `uid` at `made` (Unix seconds).
    fn grow(name: &str, uid: &str, made: i64) -> VolumeResize {
        let change = serde_json::from_value(serde_json::json!({"name": "data", "size": "2Gi"})).unwrap();
        let mut resize =
            VolumeResize::new(name, ferry_api::VolumeResizeSpec::for_volumes("db", vec![change]));
        resize.metadata.labels = Some(
            [
                (LABEL_TRIGGER.to_string(), "autoscale".to_string()),
                (LABEL_AUTOSCALER_UID.to_string(), uid.to_string()),
                (LABEL_STATEFUL_SET.to_string(), "db".to_string()),
            ]
            .into(),
        );
        resize.metadata.creation_timestamp = Some(Time(Timestamp::from_second(made).unwrap()));
        resize
    }

    /// What the autoscaler of db's `data` (one replica, 1Gi, at 2000 s) sees with these
    /// VolumeResizes and these grow times in its status.
    fn seen_with(resizes: Vec<VolumeResize>, recorded_history: Vec<i64>) -> Situation {
        let replicas = Replicas {
            ordinals: vec![0],
            pods: BTreeMap::new(),
        };
        let resizes = Listing {
            readable: resizes,
            unreadable: Vec::new(),
        };
        situation(Facts {
            sts: "db",
            volume: "data",
            current_size: 1 << 30,
            replicas: &replicas,
            readings: Vec::new(),
            resizes: &resizes,
            recorded_history,
            recorded_last_shrink: None,
            now: 2000,
        })
    }

    /// The default autoscaler is deleted and made again whenever the garbage collector takes it for
    /// an orphan of the StatefulSet Ferry re-creates (same name, new UID): a new UID, no status.
    /// The volume's grows still count, so a cooldown or a provider's window holds across that.
    #[test]
    fn grows_of_the_volume_by_an_earlier_autoscaler_count_in_the_history() {
        let seen = seen_with(vec![grow("db-grow-1", "the-autoscaler-before", 1000)], Vec::new());
        assert_eq!(seen.history, vec![1000]);
    }

    /// A VolumeResize by hand (or a trigger) that grew the volume or gave it another attributes
    /// class in place counts as a modification for the provider's window; one that copied (a new
    /// volume) or changed another volume does not, nor does the autoscaler's own grow twice.
    #[test]
    fn in_place_changes_by_other_resizes_are_modifications_of_the_volume() {
        let by_hand = |name: &str, uid: &str, made: i64, volume: &str, strategy, step| {
            let mut resize = grow(name, uid, made);
            resize.metadata.labels = None;
            resize.metadata.uid = Some(uid.into());
            resize.status = Some(ferry_api::VolumeResizeStatus {
                plan: vec![ferry_api::VolumePlan {
                    volume: volume.into(),
                    strategy: Some(strategy),
                    step: Some(step),
                    ..Default::default()
                }],
                ..Default::default()
            });
            resize
        };
        use ferry_api::ChosenStrategy::{Copy, InPlace};
        let mut own = grow("db-grow-1", "autoscaler", 1000);
        own.metadata.uid = Some("own".into());
        let resizes = vec![
            own,
            by_hand("tier", "u1", 1100, "data", InPlace, RowStep::Modified),
            by_hand("bigger", "u2", 1200, "data", InPlace, RowStep::Expanded),
            by_hand("moved", "u3", 1300, "data", Copy, RowStep::Copied),
            by_hand("logs", "u4", 1400, "logs", InPlace, RowStep::Expanded),
            by_hand("refused", "u5", 1500, "data", InPlace, RowStep::Modifying),
        ];
        let seen = seen_with(resizes, vec![1000]);
        assert_eq!(seen.history, vec![1000]);
        assert_eq!(seen.other_modifications, vec![1100, 1200]);
    }
}
