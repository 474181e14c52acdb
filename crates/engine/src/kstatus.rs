//! The kstatus conditions every Ferry resource carries (`Ready`, `Reconciling`, `Stalled`), so
//! `kubectl wait --for=condition=Ready`, Argo CD's and Flux's health checks and every other reader
//! of kstatus can wait on it. `Ready` is always there; `Reconciling` and `Stalled` only while
//! true, as kstatus expects of these "abnormal-true" conditions. Each carries the generation it
//! was decided for (`observedGeneration`).

use crate::conditions::{condition, remove_condition, set_condition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

pub const READY: &str = "Ready";
pub const RECONCILING: &str = "Reconciling";
pub const STALLED: &str = "Stalled";

/// Where a resource stands, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    /// Done, and nothing to do: Ready.
    Ready,
    /// Working towards it: Reconciling, not Ready.
    Reconciling,
    /// Cannot go on without someone: Stalled, not Ready.
    Stalled,
}

/// Sets the three conditions for `health`, with `reason` and `message`; stable: the same health
/// keeps each condition's transition time.
pub fn set(
    conditions: &mut Vec<Condition>,
    health: Health,
    reason: &str,
    message: &str,
    generation: Option<i64>,
    now: &Time,
) {
    let ready = condition(READY, health == Health::Ready, reason, message, generation, now);
    set_condition(conditions, ready);
    for (type_, on) in [
        (RECONCILING, health == Health::Reconciling),
        (STALLED, health == Health::Stalled),
    ] {
        if on {
            set_condition(
                conditions,
                condition(type_, true, reason, message, generation, now),
            );
        } else {
            remove_condition(conditions, type_);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::Timestamp;

    fn at(second: i64) -> Time {
        Time(Timestamp::from_second(second).unwrap())
    }

    fn of<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
        conditions.iter().find(|c| c.type_ == type_)
    }

    #[test]
    fn ready_is_always_there_and_the_abnormal_ones_only_while_true() {
        let mut conditions = Vec::new();
        set(
            &mut conditions,
            Health::Reconciling,
            "Updating",
            "canaries",
            Some(2),
            &at(1),
        );
        assert_eq!(of(&conditions, READY).unwrap().status, "False");
        assert_eq!(of(&conditions, RECONCILING).unwrap().status, "True");
        assert!(of(&conditions, STALLED).is_none());
        set(
            &mut conditions,
            Health::Stalled,
            "UpdateFailed",
            "canary not Ready",
            Some(2),
            &at(2),
        );
        assert!(of(&conditions, RECONCILING).is_none());
        assert_eq!(of(&conditions, STALLED).unwrap().reason, "UpdateFailed");
        set(
            &mut conditions,
            Health::Ready,
            "Current",
            "version 3 runs",
            Some(3),
            &at(3),
        );
        let ready = of(&conditions, READY).unwrap();
        assert_eq!(
            (ready.status.as_str(), ready.observed_generation),
            ("True", Some(3))
        );
        assert_eq!(conditions.len(), 1);
        // The same health again keeps the transition time.
        set(
            &mut conditions,
            Health::Ready,
            "Current",
            "version 3 runs",
            Some(3),
            &at(9),
        );
        assert_eq!(of(&conditions, READY).unwrap().last_transition_time, at(3));
    }
}
