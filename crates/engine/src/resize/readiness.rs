//! The kstatus conditions (`Ready`, `Reconciling`, `Stalled`) that summarise a VolumeResize's
//! phase, so `kubectl wait --for=condition=Ready vr/NAME`, Flux's health checks and every other
//! reader of kstatus can wait on it. `Ready` is always there (True once it succeeded);
//! `Reconciling` only while it works and `Stalled` only once it failed, as kstatus expects of
//! these "abnormal-true" conditions.

use crate::kstatus::{self, Health};
use ferry_api::{Phase, VolumeResizeStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

pub use crate::kstatus::{READY, RECONCILING, STALLED};

/// Sets the three conditions from `status`'s phase and message. Pure and stable: a status whose
/// phase and message did not change gets exactly the conditions it had.
pub fn summarize(status: &mut VolumeResizeStatus, generation: Option<i64>, now: &Time) {
    let phase = status.phase.unwrap_or(Phase::Pending);
    let health = match phase {
        Phase::Succeeded => Health::Ready,
        Phase::Failed => Health::Stalled,
        _ => Health::Reconciling,
    };
    let message = status.message.clone().unwrap_or_default();
    kstatus::set(
        &mut status.conditions,
        health,
        phase.as_str(),
        &message,
        generation,
        now,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::Timestamp;

    fn at(second: i64) -> Time {
        Time(Timestamp::from_second(second).unwrap())
    }

    fn status(phase: Phase, message: &str) -> VolumeResizeStatus {
        VolumeResizeStatus {
            phase: Some(phase),
            message: Some(message.into()),
            ..Default::default()
        }
    }

    fn find<'a>(status: &'a VolumeResizeStatus, type_: &str) -> Option<(&'a str, &'a str)> {
        status
            .conditions
            .iter()
            .find(|c| c.type_ == type_)
            .map(|c| (c.status.as_str(), c.reason.as_str()))
    }

    #[test]
    fn each_phase_reads_as_kstatus_expects() {
        let cases = [
            (
                Phase::Pending,
                ("False", "Pending"),
                Some(("True", "Pending")),
                None,
            ),
            (
                Phase::Running,
                ("False", "Running"),
                Some(("True", "Running")),
                None,
            ),
            (Phase::Succeeded, ("True", "Succeeded"), None, None),
            (Phase::Failed, ("False", "Failed"), None, Some(("True", "Failed"))),
        ];
        for (phase, ready, reconciling, stalled) in cases {
            let mut s = status(phase, "m");
            summarize(&mut s, Some(3), &at(10));
            assert_eq!(find(&s, READY), Some(ready), "{phase:?}");
            assert_eq!(find(&s, RECONCILING), reconciling, "{phase:?}");
            assert_eq!(find(&s, STALLED), stalled, "{phase:?}");
            assert!(
                s.conditions
                    .iter()
                    .all(|c| c.observed_generation == Some(3) && c.message == "m")
            );
        }
    }

    #[test]
    fn an_unchanged_phase_keeps_its_conditions_exactly_and_a_finish_drops_reconciling() {
        let mut s = status(Phase::Running, "copying");
        summarize(&mut s, Some(1), &at(10));
        let first = s.clone();
        summarize(&mut s, Some(1), &at(20));
        assert_eq!(s, first, "no change, no new transition time: no status write");
        s.phase = Some(Phase::Succeeded);
        summarize(&mut s, Some(1), &at(30));
        assert_eq!(find(&s, READY), Some(("True", "Succeeded")));
        assert_eq!(find(&s, RECONCILING), None);
        let ready = s.conditions.iter().find(|c| c.type_ == READY).unwrap();
        assert_eq!(ready.last_transition_time, at(30));
    }
}
