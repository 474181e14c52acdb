//! The fields of a quarks ExtendedStatefulSet that Ferry's has under another shape: zones (`az`,
//! or `zones` as cf-operator named them), scaling, the update strategy with BOSH-style watch times
//! (milliseconds, or a `min-max` range), and the replicas the template gives.

use super::Translation;
use super::fields::unknown_fields;
use ferry_api::{Scaling, UpdateStrategy};
use serde_json::Value;

/// Zone node labels whose values Ferry's zones are (it pins by `topology.kubernetes.io/zone`;
/// the beta label had the same values).
const ZONE_LABELS: [&str; 2] = [
    "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/zone",
];

/// `zones`, else `az`: a list of zone names, or one name; null or empty is no zones.
pub fn zones(spec: &Value, translation: &mut Translation) -> Vec<String> {
    let given = if spec["zones"].is_null() {
        &spec["az"]
    } else {
        &spec["zones"]
    };
    let zones: Vec<String> = match given {
        Value::String(zone) => vec![zone.clone()],
        Value::Array(items) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    };
    let zones: Vec<String> = zones.into_iter().filter(|z| !z.is_empty()).collect();
    if let Some(label) = spec["zoneNodeLabel"].as_str()
        && !ZONE_LABELS.contains(&label)
    {
        translation.note(format!(
            "not carried over: spec.zoneNodeLabel {label}, because Ferry pins each zone's replicas by \
             the node label topology.kubernetes.io/zone; label the nodes with it"
        ));
    }
    if !zones.is_empty() {
        translation.note(format!(
            "zones {}: one StatefulSet per zone, <name>-z<index>, pinned by topology.kubernetes.io/zone; \
             pods get the env FERRY_ZONE and FERRY_ZONE_INDEX and the label ferry.dev/zone, not \
             quarks' own zone labels and env",
            zones.join(", ")
        ));
    }
    zones
}

pub fn scaling(value: &Value, translation: &mut Translation) -> Option<Scaling> {
    if !value.is_object() {
        return None;
    }
    unknown_fields(value, &["min", "max", "oddOnly"], "spec.scaling", translation);
    let number = |key: &str| value[key].as_i64().and_then(|n| i32::try_from(n).ok());
    Some(Scaling {
        min: number("min"),
        max: number("max"),
        odd_only: value["oddOnly"].as_bool(),
    })
}

/// Retries of a hook Job Ferry allows (its CRD's bound).
const MAX_RETRIES: i32 = 10;

pub fn update_strategy(
    value: &Value,
    watch_times: [Option<&str>; 2],
    translation: &mut Translation,
) -> Option<UpdateStrategy> {
    if !value.is_object() && watch_times.iter().all(Option::is_none) {
        return None;
    }
    let known = [
        "canaries",
        "retryCount",
        "updateNotReady",
        "canaryWatchTime",
        "updateWatchTime",
    ];
    unknown_fields(value, &known, "spec.updateStrategy", translation);
    let number = |key: &str| value[key].as_i64().and_then(|n| i32::try_from(n).ok());
    let mut retry_count = number("retryCount");
    if let Some(retries) = retry_count {
        let kept = retries.clamp(0, MAX_RETRIES);
        translation.note(format!(
            "updateStrategy.retryCount {kept}{}: in Ferry it is how often a failed preUpdate or \
             postUpdate Job runs again (when the Job sets no backoffLimit); this object has no such \
             Job, so it changes nothing until one is added",
            if kept == retries {
                String::new()
            } else {
                format!(" (was {retries}; Ferry allows 0 to {MAX_RETRIES})")
            }
        ));
        retry_count = Some(kept);
    }
    let [canary_annotation, update_annotation] = watch_times;
    Some(UpdateStrategy {
        canaries: number("canaries"),
        canary_watch_time: watch_time(
            &value["canaryWatchTime"],
            canary_annotation,
            "canaryWatchTime",
            translation,
        ),
        update_watch_time: watch_time(
            &value["updateWatchTime"],
            update_annotation,
            "updateWatchTime",
            translation,
        ),
        update_not_ready: value["updateNotReady"].as_bool(),
        retry_count,
        ..UpdateStrategy::default()
    })
}

/// A watch time as Ferry writes it (`30s`, `5m`) from milliseconds (BOSH's and quarks' unit), a
/// BOSH range `min-max` (its upper bound: how long BOSH waits at most), or a Ferry duration.
fn watch_time(
    field: &Value,
    annotation: Option<&str>,
    name: &str,
    translation: &mut Translation,
) -> Option<String> {
    let text = match field {
        Value::Number(ms) => ms.to_string(),
        Value::String(text) => text.clone(),
        _ => annotation?.to_string(),
    };
    let upper = text
        .rsplit_once('-')
        .map_or(text.as_str(), |(_, upper)| upper.trim());
    if let Ok(ms) = upper.parse::<u64>() {
        return Some(duration(ms.div_ceil(1000)));
    }
    if ferry_engine::duration::seconds(&text).is_some() {
        return Some(text);
    }
    translation.note(format!(
        "not carried over: updateStrategy.{name} {text:?}, because it is neither milliseconds nor a \
         duration such as 2m (Ferry's default applies)"
    ));
    None
}

fn duration(seconds: u64) -> String {
    match seconds {
        0 => "1s".to_string(),
        s if s % 3600 == 0 => format!("{}h", s / 3600),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

/// The replicas of the ExtendedStatefulSet: the template's (a StatefulSet's default 1 when it
/// gives none), moved into the scaling rules, which the API server enforces, with a note when
/// that changes them.
pub fn replicas(given: Option<i64>, scaling: Option<&Scaling>, translation: &mut Translation) -> i32 {
    let asked = given.and_then(|n| i32::try_from(n).ok()).unwrap_or(1);
    let mut replicas = asked;
    let (min, max, odd) = scaling.map_or((None, None, false), |s| (s.min, s.max, s.odd_only == Some(true)));
    if let Some(min) = min {
        replicas = replicas.max(min);
    }
    if let Some(max) = max {
        replicas = replicas.min(max);
    }
    if odd && replicas % 2 == 0 {
        replicas = if max.is_none_or(|max| replicas < max) {
            replicas + 1
        } else {
            replicas - 1
        };
    }
    let from = match given {
        Some(n) => format!("the template's spec.replicas is {n}"),
        None => "the template gives no spec.replicas (a StatefulSet's default is 1)".to_string(),
    };
    if replicas != asked {
        translation.note(format!(
            "spec.replicas {replicas}: {from}, which spec.scaling does not allow (Ferry's API server \
             refuses replicas outside min, max and oddOnly)"
        ));
    } else if given.is_none() {
        translation.note(format!("spec.replicas {replicas}: {from}"));
    }
    replicas
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::{Source, System};
    use serde_json::json;

    fn translation() -> Translation {
        Translation::new(&Source::of(&json!({})), System::Quarks)
    }

    #[test]
    fn zones_come_from_az_or_zones_as_a_list_or_one_name() {
        let mut t = translation();
        assert!(zones(&json!({"az": null}), &mut t).is_empty());
        assert!(t.notes.is_empty());
        assert_eq!(zones(&json!({"az": "z1"}), &mut t), ["z1"]);
        assert_eq!(
            zones(&json!({"zones": ["a", "b"], "az": ["c"]}), &mut t),
            ["a", "b"]
        );
        zones(
            &json!({"zoneNodeLabel": "failure-domain.beta.kubernetes.io/zone"}),
            &mut t,
        );
        let before = t.notes.len();
        zones(&json!({"zoneNodeLabel": "rack"}), &mut t);
        assert!(
            t.notes[before].contains("spec.zoneNodeLabel rack"),
            "{:?}",
            t.notes
        );
    }

    #[test]
    fn watch_times_are_milliseconds_ranges_or_durations() {
        let mut t = translation();
        let strategy = update_strategy(
            &json!({"canaryWatchTime": 30000, "updateWatchTime": "1000-120000"}),
            [None, None],
            &mut t,
        )
        .unwrap();
        assert_eq!(strategy.canary_watch_time.as_deref(), Some("30s"));
        assert_eq!(strategy.update_watch_time.as_deref(), Some("2m"));
        let strategy = update_strategy(&json!(null), [Some("90500"), Some("1h")], &mut t).unwrap();
        assert_eq!(strategy.canary_watch_time.as_deref(), Some("91s"));
        assert_eq!(strategy.update_watch_time.as_deref(), Some("1h"));
        assert!(t.notes.is_empty(), "{:?}", t.notes);
        update_strategy(&json!({"canaryWatchTime": "soon"}), [None, None], &mut t);
        assert!(
            t.notes[0].contains("updateStrategy.canaryWatchTime \"soon\""),
            "{:?}",
            t.notes
        );
        assert_eq!(update_strategy(&json!(null), [None, None], &mut t), None);
    }

    #[test]
    fn retry_count_is_kept_within_ferrys_bound_and_explained() {
        let mut t = translation();
        let strategy =
            update_strategy(&json!({"retryCount": 12, "maxInFlight": 2}), [None, None], &mut t).unwrap();
        assert_eq!(strategy.retry_count, Some(10));
        assert!(
            t.notes
                .iter()
                .any(|n| n.contains("spec.updateStrategy.maxInFlight"))
        );
        assert!(
            t.notes
                .iter()
                .any(|n| n.starts_with("updateStrategy.retryCount 10 (was 12"))
        );
    }

    #[test]
    fn replicas_move_into_the_scaling_rules() {
        let odd = Scaling {
            min: Some(3),
            max: Some(13),
            odd_only: Some(true),
        };
        let mut t = translation();
        assert_eq!(replicas(None, Some(&odd), &mut t), 3);
        assert!(t.notes[0].contains("gives no spec.replicas"), "{:?}", t.notes);
        assert_eq!(replicas(Some(4), Some(&odd), &mut t), 5);
        assert_eq!(replicas(Some(20), Some(&odd), &mut t), 13);
        let even_max = Scaling {
            min: Some(1),
            max: Some(4),
            odd_only: Some(true),
        };
        assert_eq!(replicas(Some(4), Some(&even_max), &mut t), 3);
        let before = t.notes.len();
        assert_eq!(replicas(Some(2), None, &mut t), 2);
        assert_eq!(t.notes.len(), before, "the template's own count needs no note");
    }
}
