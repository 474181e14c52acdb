//! What one volume's status says after a decision, and the Events it is worth: a grow, a rescue,
//! and reaching `maxSize` (once per size, remembered in status so a restart does not repeat it).

use super::{Policy, Reason, Situation, Skip, Verdict, could_shrink_by, next_allowed, trend};
use crate::conditions::{condition, set_condition};
use crate::kstatus::{self, Health};
use ferry_api::{
    AutoResize, AutoscaledVolumeStatus, ReplicaUsage, UsageSample, VolumeAutoscalerStatus, format_bytes,
    human_bytes,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

/// How many grow times status keeps: enough for the longest provider window (4 in 24 h).
pub const HISTORY_KEPT: usize = 8;

/// An Event for the autoscaler and its StatefulSet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub warning: bool,
    pub reason: &'static str,
    pub message: String,
}

/// The grow this pass made (its VolumeResize exists).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Made<'a> {
    pub resize: &'a str,
    pub from: u64,
    pub to: u64,
}

pub fn time(seconds: i64) -> Option<Time> {
    Timestamp::from_second(seconds).ok().map(Time)
}

fn when(seconds: i64) -> String {
    Timestamp::from_second(seconds)
        .map(|at| at.to_string())
        .unwrap_or_else(|_| seconds.to_string())
}

fn replica_list(replicas: &[i32]) -> String {
    let names: Vec<String> = replicas.iter().map(i32::to_string).collect();
    names.join(", ")
}

fn percent(used: u64, total: u64) -> u64 {
    if total == 0 {
        return 0;
    }
    u64::try_from(u128::from(used) * 100 / u128::from(total)).unwrap_or(100)
}

/// Why a grow happens, in words.
fn grow_cause(policy: &Policy, reason: Reason, replicas: &[i32]) -> String {
    let which = replica_list(replicas);
    match reason {
        Reason::Threshold => format!("replica {which} at or over {}% used", policy.threshold_percent),
        Reason::Inodes => format!(
            "replica {which} at or over {}% of its inodes used",
            policy.inodes_threshold_percent
        ),
        Reason::Rescue => format!(
            "replica {which} crashing on a full disk (rescue: grown although the StatefulSet is not Ready)"
        ),
        Reason::Shrink => match &policy.shrink {
            Some(shrink) => format!(
                "every replica below {}% used for {}; by copy, the fullest at {}% of the new size",
                shrink.below_percent,
                crate::duration::words(shrink.lasting_seconds),
                shrink.target_percent
            ),
            None => "the shrink policy".to_string(),
        },
    }
}

fn skip_message(policy: &Policy, situation: &Situation, skip: &Skip) -> String {
    match skip {
        Skip::BelowThreshold => {
            let fullest = situation
                .readings
                .iter()
                .map(|r| percent(r.used_bytes, r.capacity_bytes))
                .max()
                .unwrap_or(0);
            format!(
                "fullest replica at {fullest}% used (threshold {}%)",
                policy.threshold_percent
            )
        }
        Skip::UsageUnknown { replicas } => match &situation.usage_unreadable {
            Some(why) => format!("no usage for replica {}: {why}", replica_list(replicas)),
            None => format!(
                "no usage reported yet for replica {} (the kubelet reports a volume while a pod mounts it)",
                replica_list(replicas)
            ),
        },
        Skip::ResizeRunning { name } => format!("VolumeResize {name} is working on the StatefulSet"),
        Skip::AtMaxSize => format!(
            "at maxSize {}; not grown although it is over its threshold",
            format_bytes(policy.max_size)
        ),
        Skip::Cooldown { until } => format!(
            "over its threshold, but grown less than the cooldown ago; next grow allowed at {}",
            when(*until)
        ),
        Skip::ProviderLimit { until } => {
            let (window, allowed) = policy.provider.window().unwrap_or((0, 0));
            format!(
                "over its threshold, but the provider allows {allowed} modification(s) per {}h; next at {}",
                window / 3600,
                when(*until)
            )
        }
        Skip::ResizeFailed { name } => format!(
            "VolumeResize {name} failed (see its status); delete it to let the autoscaler grow this volume again"
        ),
        Skip::Stabilizing { until } => format!(
            "over its threshold since {}; grows at {} if it stays over (growAfter)",
            situation
                .over_threshold_since
                .map_or_else(|| when(situation.now), when),
            when(*until)
        ),
        Skip::OutsideWindow { opens_at } => format!(
            "a resize is due and waits for the maintenance window opening at {}",
            when(*opens_at)
        ),
        Skip::ShrinkPending { at, to } => format!(
            "every replica below {}% used since {}; shrinks to {} at {} if it stays so",
            policy.shrink.map_or(0, |shrink| shrink.below_percent),
            situation
                .below_shrink_since
                .map_or_else(|| when(situation.now), when),
            format_bytes(*to),
            when(*at)
        ),
    }
}

/// The last grow when none is made now: the recorded one, unless the resizes show a newer grow
/// that status never recorded (the pass that made it failed before writing status).
fn kept_last_resize(
    previous: Option<&AutoscaledVolumeStatus>,
    seen: Option<&AutoResize>,
) -> Option<AutoResize> {
    let recorded = previous.and_then(|p| p.last_resize.clone());
    match (recorded, seen) {
        (Some(recorded), Some(seen))
            if recorded.volume_resize != seen.volume_resize && seen.at > recorded.at =>
        {
            Some(seen.clone())
        }
        (None, Some(seen)) => Some(seen.clone()),
        (recorded, _) => recorded,
    }
}

/// The volume's new status and the Events to send, from the decision just made.
pub fn record(
    previous: Option<&AutoscaledVolumeStatus>,
    stateful_set: &str,
    volume: &str,
    policy: &Policy,
    situation: &Situation,
    verdict: &Verdict,
    made: Option<&Made>,
) -> (AutoscaledVolumeStatus, Vec<Notice>) {
    let mut history = situation.history.clone();
    let shrunk = matches!(verdict, Verdict::Shrink { .. }) && made.is_some();
    if made.is_some() && !shrunk {
        history.push(situation.now);
    }
    history.sort_unstable();
    history.dedup();
    let history = history.split_off(history.len().saturating_sub(HISTORY_KEPT));
    let capacity = made.map_or(situation.current_size, |made| made.to);
    let about = About {
        stateful_set,
        volume,
        policy,
        situation,
    };
    let said = said(&about, previous, verdict, made);
    let made_for = match verdict {
        Verdict::Grow { reason, .. } => Some(*reason),
        Verdict::Shrink { .. } => Some(Reason::Shrink),
        Verdict::Skip(_) => None,
    };
    let last_resize = match (made_for, made) {
        (Some(reason), Some(made)) => Some(AutoResize {
            at: time(situation.now),
            volume_resize: made.resize.to_string(),
            from: format_bytes(made.from),
            to: format_bytes(made.to),
            reason: reason.label().to_string(),
        }),
        _ => kept_last_resize(previous, situation.last_grow.as_ref()),
    };
    let last_shrink = if shrunk {
        Some(situation.now)
    } else {
        situation.last_shrink
    };
    let recorded_samples: Vec<trend::Sample> = previous
        .map(|p| p.usage_samples.iter().filter_map(sample_of).collect())
        .unwrap_or_default();
    let samples = trend::sampled(&recorded_samples, &situation.readings, situation.now);
    let status = AutoscaledVolumeStatus {
        stateful_set: stateful_set.to_string(),
        name: volume.to_string(),
        capacity: Some(format_bytes(capacity)),
        replicas: situation.readings.iter().map(replica_usage).collect(),
        last_resize,
        next_allowed_at: next_allowed(policy, &history, &situation.other_modifications, situation.now)
            .and_then(time),
        history: history.into_iter().filter_map(time).collect(),
        state: Some(said.state),
        message: Some(said.message),
        max_size_reported: said.max_size_reported,
        could_shrink_by: could_shrink_by(policy, situation).map(human_bytes),
        over_threshold_since: situation.over_threshold_since.and_then(time),
        // A shrink made ends the streak: the next one counts afresh.
        below_shrink_since: situation.below_shrink_since.filter(|_| !shrunk).and_then(time),
        last_shrink_at: last_shrink.and_then(time),
        usage_samples: samples.iter().filter_map(usage_sample).collect(),
        predicted_full_at: trend::full_at(&samples, &situation.readings, situation.now).and_then(time),
    };
    (status, said.notices)
}

/// The volume a decision is about.
struct About<'a> {
    stateful_set: &'a str,
    volume: &'a str,
    policy: &'a Policy,
    situation: &'a Situation,
}

/// What the status and the Events say of a decision.
struct Said {
    state: String,
    message: String,
    notices: Vec<Notice>,
    /// The size at which reaching `maxSize` was last told (once per size).
    max_size_reported: Option<String>,
}

/// What a resize made says: from, to, why, by which VolumeResize.
fn made_message(about: &About, made: &Made, why: String) -> String {
    format!(
        "{} of {}: {} → {} ({why}) by VolumeResize {}",
        about.volume,
        about.stateful_set,
        format_bytes(made.from),
        format_bytes(made.to),
        made.resize
    )
}

/// What a skip says, and its Event: reaching `maxSize` is told once per size.
fn skipped(
    about: &About,
    skip: &Skip,
    notices: &mut Vec<Notice>,
    max_size_reported: &mut Option<String>,
) -> (String, String) {
    let message = skip_message(about.policy, about.situation, skip);
    let size = format_bytes(about.situation.current_size);
    if *skip == Skip::AtMaxSize && max_size_reported.as_deref() != Some(size.as_str()) {
        notices.push(Notice {
            warning: true,
            reason: "AtMaxSize",
            message: format!("{} of {}: {message}", about.volume, about.stateful_set),
        });
        *max_size_reported = Some(size);
    }
    (skip.state().to_string(), message)
}

fn said(
    about: &About,
    previous: Option<&AutoscaledVolumeStatus>,
    verdict: &Verdict,
    made: Option<&Made>,
) -> Said {
    let About {
        stateful_set,
        volume,
        policy,
        situation,
    } = about;
    let mut notices = Vec::new();
    let mut max_size_reported = previous.and_then(|p| p.max_size_reported.clone());
    let (state, message) = match (verdict, made) {
        (
            Verdict::Grow {
                reason,
                replicas,
                capped,
                ..
            },
            Some(made),
        ) => {
            let message = made_message(about, made, grow_cause(policy, *reason, replicas));
            let rescue = *reason == Reason::Rescue;
            notices.push(Notice {
                warning: rescue,
                reason: if rescue { "AutoResizeRescue" } else { "AutoResize" },
                message: message.clone(),
            });
            if *capped {
                notices.push(Notice {
                    warning: true,
                    reason: "AtMaxSize",
                    message: format!(
                        "{volume} of {stateful_set} grown only to its maxSize {}, less than it needs",
                        format_bytes(policy.max_size)
                    ),
                });
                max_size_reported = Some(format_bytes(made.to));
            }
            ("Growing".to_string(), message)
        }
        (Verdict::Shrink { .. }, Some(made)) => {
            let why = grow_cause(policy, Reason::Shrink, &situation.replicas);
            let message = made_message(about, made, why);
            let reason = "AutoShrink";
            notices.push(Notice {
                warning: false,
                reason,
                message: message.clone(),
            });
            ("Shrinking".to_string(), message)
        }
        (Verdict::Skip(skip), _) => skipped(about, skip, &mut notices, &mut max_size_reported),
        // A resize decided but not made (its VolumeResize could not be created): say so, keep the rest.
        (Verdict::Grow { to, .. } | Verdict::Shrink { to }, None) => {
            let shrink = matches!(verdict, Verdict::Shrink { .. });
            let (state, doing) = if shrink {
                ("Shrinking", "shrinking")
            } else {
                ("Growing", "growing")
            };
            let size = format_bytes(*to);
            (
                state.to_string(),
                format!("{doing} to {size} (VolumeResize not created yet)"),
            )
        }
    };
    Said {
        state,
        message,
        notices,
        max_size_reported,
    }
}

fn sample_of(sample: &UsageSample) -> Option<trend::Sample> {
    Some((sample.at.0.as_second(), u64::try_from(sample.used_bytes).ok()?))
}

fn usage_sample(&(at, used): &trend::Sample) -> Option<UsageSample> {
    Some(UsageSample {
        at: time(at)?,
        used_bytes: i64::try_from(used).ok()?,
    })
}

fn replica_usage(reading: &super::Reading) -> ReplicaUsage {
    ReplicaUsage {
        replica: reading.replica,
        used_bytes: i64::try_from(reading.used_bytes).ok(),
        capacity_bytes: i64::try_from(reading.capacity_bytes).ok(),
        used_inodes: reading.inodes.and_then(|(used, _)| i64::try_from(used).ok()),
        inodes: reading.inodes.and_then(|(_, total)| i64::try_from(total).ok()),
    }
}

/// The status of a volume the autoscaler cannot work on (bad policy, unknown template), keeping
/// its record of earlier grows.
pub fn invalid(
    previous: Option<&AutoscaledVolumeStatus>,
    stateful_set: &str,
    volume: &str,
    message: String,
) -> AutoscaledVolumeStatus {
    AutoscaledVolumeStatus {
        stateful_set: stateful_set.to_string(),
        name: volume.to_string(),
        state: Some("Invalid".to_string()),
        message: Some(message),
        ..previous.cloned().unwrap_or_default()
    }
}

/// The state of a volume whose claims pvc-autoresizer manages, and its metric label.
pub const STATE_LEFT_TO_AUTORESIZER: &str = "ManagedByPvcAutoresizer";
pub const STATE_LEFT_TO_AUTORESIZER_LABEL: &str = "managed-by-pvc-autoresizer";

/// The status of a volume left to pvc-autoresizer (`message` says why and how to switch), keeping
/// its record of earlier grows; a warning Event when it was not so at the last poll.
pub fn left_to_autoresizer(
    previous: Option<&AutoscaledVolumeStatus>,
    stateful_set: &str,
    volume: &str,
    message: String,
) -> (AutoscaledVolumeStatus, Option<Notice>) {
    let already = previous.and_then(|p| p.state.as_deref()) == Some(STATE_LEFT_TO_AUTORESIZER);
    let notice = (!already).then(|| Notice {
        warning: true,
        reason: STATE_LEFT_TO_AUTORESIZER,
        message: format!("{volume} of {stateful_set}: {message}"),
    });
    let status = AutoscaledVolumeStatus {
        stateful_set: stateful_set.to_string(),
        name: volume.to_string(),
        state: Some(STATE_LEFT_TO_AUTORESIZER.to_string()),
        message: Some(message),
        replicas: Vec::new(),
        ..previous.cloned().unwrap_or_default()
    };
    (status, notice)
}

/// The status of a volume whose usage this installation does not read (the kubelet's stats are
/// switched off): nothing is decided, earlier grows are kept.
pub fn usage_not_read(
    previous: Option<&AutoscaledVolumeStatus>,
    stateful_set: &str,
    volume: &str,
    why: String,
) -> AutoscaledVolumeStatus {
    AutoscaledVolumeStatus {
        stateful_set: stateful_set.to_string(),
        name: volume.to_string(),
        state: Some("UsageUnknown".to_string()),
        message: Some(format!("volume usage is not read: {why}")),
        replicas: Vec::new(),
        ..previous.cloned().unwrap_or_default()
    }
}

/// A volume that could be at least this share smaller is worth a recommendation (a few MiB of
/// slack is not).
const SHRINK_WORTH_PERCENT: u64 = 25;

/// The recommendation to shrink a volume, when it could be a quarter smaller or more with the
/// data on its fullest replica held below the threshold (`couldShrinkBy`, said whether or not
/// anything shrinks it).
pub fn shrink_recommendation(
    stateful_set: &str,
    volume: &str,
    policy: &Policy,
    situation: &Situation,
) -> Option<String> {
    let by = could_shrink_by(policy, situation)?;
    let size = situation.current_size;
    (by.saturating_mul(100) >= size.saturating_mul(SHRINK_WORTH_PERCENT)).then(|| {
        format!(
            "{volume} of {stateful_set} could be {} instead of {} (its fullest replica at most {} % full)",
            format_bytes(size - by),
            format_bytes(size),
            policy.threshold_percent
        )
    })
}

/// The fullest volume, for `kubectl get vas`: e.g. `83% data`.
pub fn usage_column(volumes: &[AutoscaledVolumeStatus]) -> Option<String> {
    volumes
        .iter()
        .flat_map(|volume| {
            volume.replicas.iter().filter_map(move |replica| {
                let used = u64::try_from(replica.used_bytes?).ok()?;
                let capacity = u64::try_from(replica.capacity_bytes?).ok()?;
                Some((percent(used, capacity), volume.name.as_str()))
            })
        })
        .max()
        .map(|(percent, name)| format!("{percent}% {name}"))
}

/// The whole autoscaler's status from its volumes': the columns `kubectl get vas` shows and the
/// `AtMaxSize` condition (True while any volume is at its limit and over its threshold).
/// kstatus's view of an autoscaler: Stalled while a volume's policy or template is invalid, its
/// last resize failed, or its claims are pvc-autoresizer's (someone must act), Reconciling while a volume grows, else Ready (watching;
/// a volume at its maxSize or without a reading is not an error of the autoscaler's).
fn health_of(volumes: &[AutoscaledVolumeStatus]) -> (Health, &'static str, String) {
    let describe = |states: &[&str]| -> Vec<String> {
        volumes
            .iter()
            .filter(|v| v.state.as_deref().is_some_and(|state| states.contains(&state)))
            .map(|v| {
                format!(
                    "{} of {}: {}",
                    v.name,
                    v.stateful_set,
                    v.message.clone().unwrap_or_default()
                )
            })
            .collect()
    };
    let stalled = describe(&["Invalid", "ResizeFailed", STATE_LEFT_TO_AUTORESIZER]);
    if !stalled.is_empty() {
        return (Health::Stalled, "VolumeNeedsAttention", stalled.join("; "));
    }
    let growing = describe(&["Growing", "ResizeRunning"]);
    if !growing.is_empty() {
        return (Health::Reconciling, "Growing", growing.join("; "));
    }
    (
        Health::Ready,
        "Watching",
        format!("{} volume(s) watched", volumes.len()),
    )
}

pub fn overall(
    previous: Option<&VolumeAutoscalerStatus>,
    volumes: Vec<AutoscaledVolumeStatus>,
    shrink_recommended: &[String],
    generation: Option<i64>,
    now: i64,
) -> VolumeAutoscalerStatus {
    let now_time = time(now).unwrap_or(Time(Timestamp::UNIX_EPOCH));
    let mut conditions = previous.map(|p| p.conditions.clone()).unwrap_or_default();
    let mut shrink = condition(
        "ShrinkRecommended",
        !shrink_recommended.is_empty(),
        if shrink_recommended.is_empty() {
            "RightSized"
        } else {
            "CouldShrink"
        },
        &if shrink_recommended.is_empty() {
            "no volume could be a quarter smaller or more with its data on it now".to_string()
        } else {
            shrink_recommended.join("; ")
        },
        generation,
        &now_time,
    );
    // Right-sized is a finding: with no usage read at all, nothing was found either way.
    if shrink_recommended.is_empty() && volumes.iter().all(|volume| volume.replicas.is_empty()) {
        shrink.status = "Unknown".to_string();
        shrink.reason = "UsageUnknown".to_string();
        shrink.message = "no volume's usage has been read yet".to_string();
    }
    set_condition(&mut conditions, shrink);
    let at_max: Vec<String> = volumes
        .iter()
        .filter(|v| v.state.as_deref() == Some("AtMaxSize"))
        .map(|v| format!("{} of {}", v.name, v.stateful_set))
        .collect();
    set_condition(
        &mut conditions,
        condition(
            "AtMaxSize",
            !at_max.is_empty(),
            if at_max.is_empty() {
                "BelowMaxSize"
            } else {
                "AtMaxSize"
            },
            &if at_max.is_empty() {
                "no volume is held back by its maxSize".to_string()
            } else {
                format!("over the threshold but at maxSize: {}", at_max.join(", "))
            },
            generation,
            &now_time,
        ),
    );
    let (health, reason, message) = health_of(&volumes);
    kstatus::set(&mut conditions, health, reason, &message, generation, &now_time);
    let last_resize = volumes
        .iter()
        .filter_map(|v| v.last_resize.as_ref().map(|last| (last.at.clone(), v, last)))
        .max_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, volume, last)| format!("{} {}→{}", volume.name, last.from, last.to));
    VolumeAutoscalerStatus {
        observed_generation: generation,
        conditions,
        usage: usage_column(&volumes),
        last_resize,
        next_allowed_at: volumes.iter().filter_map(|v| v.next_allowed_at.clone()).min(),
        last_polled_at: Some(now_time),
        volumes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autoscale::{GI, MI, Reading, decide};

    const NOW: i64 = 1_000_000;

    /// The decision tests' policy with a 2Gi limit.
    fn policy() -> Policy {
        Policy {
            max_size: 2 * GI,
            ..crate::autoscale::tests::policy()
        }
    }

    fn situation(used: u64, size: u64) -> Situation {
        Situation {
            current_size: size,
            replicas: vec![0],
            readings: vec![Reading {
                replica: 0,
                used_bytes: used,
                capacity_bytes: size,
                inodes: Some((10, 1000)),
            }],
            now: NOW,
            ..Situation::default()
        }
    }

    #[test]
    fn a_grow_is_recorded_with_its_resize_history_and_next_allowed_time() {
        let situation = situation(900 * MI, GI);
        let verdict = decide(&policy(), &situation);
        let made = Made {
            resize: "db-auto-1",
            from: GI,
            to: 1229 * MI,
        };
        let (status, notices) = record(None, "db", "data", &policy(), &situation, &verdict, Some(&made));
        assert_eq!(status.state.as_deref(), Some("Growing"));
        assert_eq!(status.capacity.as_deref(), Some("1229Mi"));
        let last = status.last_resize.unwrap();
        assert_eq!((last.from.as_str(), last.to.as_str()), ("1Gi", "1229Mi"));
        assert_eq!(last.reason, "threshold");
        assert_eq!(status.history, vec![time(NOW).unwrap()]);
        assert_eq!(status.next_allowed_at, time(NOW + 3600));
        assert_eq!(notices.len(), 1);
        assert_eq!(notices[0].reason, "AutoResize");
        assert!(
            notices[0].message.contains("1Gi → 1229Mi"),
            "{}",
            notices[0].message
        );
    }

    #[test]
    fn unknown_usage_says_why_the_source_did_not_answer() {
        let silent = Situation {
            current_size: GI,
            replicas: vec![0],
            now: NOW,
            ..Situation::default()
        };
        let verdict = decide(&policy(), &silent);
        let (status, _) = record(None, "db", "data", &policy(), &silent, &verdict, None);
        assert_eq!(status.state.as_deref(), Some("UsageUnknown"));
        assert!(
            status
                .message
                .as_deref()
                .unwrap()
                .contains("the kubelet reports a volume")
        );
        let unreachable = Situation {
            usage_unreadable: Some("Prometheus http://p:9090 did not answer: connection refused".into()),
            ..silent
        };
        let verdict = decide(&policy(), &unreachable);
        let (status, _) = record(None, "db", "data", &policy(), &unreachable, &verdict, None);
        assert_eq!(status.state.as_deref(), Some("UsageUnknown"));
        assert_eq!(
            status.message.as_deref(),
            Some("no usage for replica 0: Prometheus http://p:9090 did not answer: connection refused")
        );
    }

    #[test]
    fn reaching_max_size_is_reported_once_per_size() {
        let at_max = situation(2000 * MI, 2 * GI);
        let verdict = decide(&policy(), &at_max);
        assert_eq!(verdict, Verdict::Skip(Skip::AtMaxSize));
        let (first, notices) = record(None, "db", "data", &policy(), &at_max, &verdict, None);
        assert_eq!(notices.len(), 1);
        assert_eq!(notices[0].reason, "AtMaxSize");
        assert_eq!(first.state.as_deref(), Some("AtMaxSize"));
        // The next polls, with any state in between, say nothing more.
        let below = situation(100 * MI, 2 * GI);
        let (between, notices) = record(
            Some(&first),
            "db",
            "data",
            &policy(),
            &below,
            &decide(&policy(), &below),
            None,
        );
        assert!(notices.is_empty());
        let (_, notices) = record(Some(&between), "db", "data", &policy(), &at_max, &verdict, None);
        assert!(notices.is_empty(), "{notices:?}");
    }

    #[test]
    fn history_keeps_the_last_few_grows() {
        let mut situation = situation(900 * MI, GI);
        situation.history = (0..20).map(|hour| NOW - 100 * 3600 + hour * 3600).collect();
        let verdict = decide(&policy(), &situation);
        let made = Made {
            resize: "r",
            from: GI,
            to: 1229 * MI,
        };
        let (status, _) = record(None, "db", "data", &policy(), &situation, &verdict, Some(&made));
        assert_eq!(status.history.len(), HISTORY_KEPT);
        assert_eq!(status.history.last(), time(NOW).as_ref());
    }

    #[test]
    fn the_usage_column_names_the_fullest_volume() {
        let (status, _) = record(
            None,
            "db",
            "data",
            &policy(),
            &situation(500 * MI, GI),
            &Verdict::Skip(Skip::BelowThreshold),
            None,
        );
        assert_eq!(usage_column(&[status]).as_deref(), Some("48% data"));
        assert_eq!(usage_column(&[]), None);
    }
}
