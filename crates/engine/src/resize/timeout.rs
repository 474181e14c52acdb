//! The bound on every step and wait of a run: `spec.timeoutSeconds`, else the operator's default
//! (never none: a replica held down or never Ready would otherwise hold the StatefulSet for good),
//! and how a run that outlasted it says so, a `TimedOut` condition naming what it waited for.

use crate::conditions::{condition, remove_condition, set_condition};
use ferry_api::condition::TIMED_OUT;
use ferry_api::{VolumeResizeSpec, VolumeResizeStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// The limit of a run in seconds: the spec's, else `default` (the operator's).
pub fn limit_seconds(spec: &VolumeResizeSpec, default: i64) -> i64 {
    spec.timeout_seconds.unwrap_or(default).max(1)
}

/// How long a wait begun at `since` (seconds) has lasted at `now`, when that is past `limit`.
pub fn overrun(since: Option<i64>, limit: i64, now: &Time) -> Option<i64> {
    let took = now.0.as_second() - since?;
    (took > limit).then_some(took)
}

/// Records why the run is ending: `TimedOut` True, with `reason` and `message`.
pub fn timed_out(status: &mut VolumeResizeStatus, reason: &str, message: &str, now: &Time) {
    let generation = status.observed_generation;
    set_condition(
        &mut status.conditions,
        condition(TIMED_OUT, true, reason, message, generation, now),
    );
}

/// A new precheck begins a new attempt: an earlier run's `TimedOut` no longer says anything.
pub fn forget(status: &mut VolumeResizeStatus) {
    remove_condition(&mut status.conditions, TIMED_OUT);
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::Timestamp;

    fn at(second: i64) -> Time {
        Time(Timestamp::from_second(second).unwrap())
    }

    #[test]
    fn a_spec_without_a_timeout_gets_the_default_and_never_none() {
        let mut spec = VolumeResizeSpec::for_volumes("db", vec![]);
        assert_eq!(limit_seconds(&spec, ferry_api::DEFAULT_TIMEOUT_SECONDS), 3600);
        spec.timeout_seconds = Some(60);
        assert_eq!(limit_seconds(&spec, ferry_api::DEFAULT_TIMEOUT_SECONDS), 60);
    }

    #[test]
    fn a_wait_overruns_only_past_its_limit_and_only_once_begun() {
        assert_eq!(overrun(Some(100), 60, &at(160)), None);
        assert_eq!(overrun(Some(100), 60, &at(161)), Some(61));
        assert_eq!(overrun(None, 60, &at(99_999)), None);
    }

    #[test]
    fn the_condition_says_why_and_a_new_attempt_forgets_it() {
        let mut status = VolumeResizeStatus::default();
        timed_out(&mut status, "ReplicaNotReadyInTime", "replica 1", &at(10));
        let found = status.conditions.iter().find(|c| c.type_ == TIMED_OUT).unwrap();
        assert_eq!(
            (found.status.as_str(), found.reason.as_str()),
            ("True", "ReplicaNotReadyInTime")
        );
        forget(&mut status);
        assert!(status.conditions.is_empty());
    }
}
