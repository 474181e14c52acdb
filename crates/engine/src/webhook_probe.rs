//! Whether the API server really calls Ferry's validating webhook. The webhooks fail open
//! (`failurePolicy: Ignore`), so a webhook the API server cannot reach (a managed control plane that
//! only reaches nodes on a few ports, a CNI it cannot route into) would be silent. The probe is a
//! server-side dry run of a VolumeResize naming a StatefulSet that does not exist: only Ferry's
//! webhook refuses it, so a refusal naming the missing StatefulSet proves the path, and an
//! acceptance proves the webhook was not called. Nothing is kept either way.
//!
//! Shared by the operator (which probes on a schedule and reports by Event and metric), `ferry
//! smoke-test` (what `helm test` runs) and `kubectl ferry version`.

use ferry_api::condition::REASON_STATEFUL_SET_NOT_FOUND;
use ferry_api::{VolumeChange, VolumeResize, VolumeResizeSpec};
use std::time::Duration;

/// The StatefulSet every probe names; none of that name may exist in the probed namespace.
pub const PROBE_STATEFUL_SET: &str = "ferry-webhook-probe-absent";

/// The VolumeResize a probe sends (server-side dry run: never stored) in `namespace`, naming
/// `stateful_set`, which must not exist there.
pub fn probe_resize(namespace: &str, stateful_set: &str) -> VolumeResize {
    let mut resize = VolumeResize::new(
        stateful_set,
        VolumeResizeSpec::for_volumes(
            stateful_set,
            vec![VolumeChange {
                name: "data".into(),
                size: "1Gi".into(),
                storage_class_name: None,
                volume_attributes_class_name: None,
            }],
        ),
    );
    resize.metadata.namespace = Some(namespace.to_string());
    resize
}

/// What the API server answered to the dry run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeAnswer {
    /// Accepted (nothing kept: a dry run).
    Accepted,
    /// Refused, with the API server's message.
    Refused(String),
    /// No answer of the API server's (a connection error, a timeout).
    Failed(String),
}

/// What an answer says of the path from the API server to the webhook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    /// The webhook refused the missing StatefulSet: the API server called it and it answered.
    Answered(String),
    /// The API server accepted a VolumeResize for a missing StatefulSet: the webhook was not called
    /// (not registered for the namespace, or unreachable, and it fails open).
    NotCalled,
    /// Something else answered (RBAC, a policy, the API server down): the probe tells nothing.
    Unknown(String),
}

/// Reads a probe's answer; `stateful_set` is the name the probe sent.
pub fn reach(answer: &ProbeAnswer, stateful_set: &str) -> Reach {
    match answer {
        ProbeAnswer::Accepted => Reach::NotCalled,
        ProbeAnswer::Refused(message)
            if message.contains(REASON_STATEFUL_SET_NOT_FOUND) && message.contains(stateful_set) =>
        {
            Reach::Answered(message.clone())
        }
        ProbeAnswer::Refused(message) | ProbeAnswer::Failed(message) => Reach::Unknown(message.clone()),
    }
}

/// When the operator probes: soon after it starts (the API server and the Service's endpoints take
/// a moment to know a new replica), rarely while the webhook answers, often while it does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeSchedule {
    pub first: Duration,
    pub while_answered: Duration,
    pub while_not: Duration,
    /// Probes in a row that find the webhook not called before it is reported: one could fall in
    /// the moment a replica's endpoint changes.
    pub not_called_to_report: u32,
}

impl Default for ProbeSchedule {
    fn default() -> Self {
        ProbeSchedule {
            first: Duration::from_secs(15),
            while_answered: Duration::from_secs(300),
            while_not: Duration::from_secs(30),
            not_called_to_report: 2,
        }
    }
}

/// What the operator last reported of the webhook's reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reported {
    /// Nothing yet.
    #[default]
    Nothing,
    Answered,
    NotCalled,
}

/// The probes' memory between two runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProbeState {
    pub reported: Reported,
    /// Probes in a row that found the webhook not called.
    pub not_called_in_a_row: u32,
}

/// What to do after a probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeStep {
    pub state: ProbeState,
    /// Report this change (an Event, the metric); `None`: nothing new to say.
    pub report: Option<Reported>,
    /// Probe again after this long.
    pub next: Duration,
}

/// The state, report and next probe after `reach` (pure: the operator only carries it out).
pub fn step(state: ProbeState, reach: &Reach, schedule: &ProbeSchedule) -> ProbeStep {
    match reach {
        Reach::Answered(_) => ProbeStep {
            state: ProbeState {
                reported: Reported::Answered,
                not_called_in_a_row: 0,
            },
            report: (state.reported != Reported::Answered).then_some(Reported::Answered),
            next: schedule.while_answered,
        },
        Reach::NotCalled => {
            let in_a_row = state.not_called_in_a_row.saturating_add(1);
            let due = in_a_row >= schedule.not_called_to_report && state.reported != Reported::NotCalled;
            ProbeStep {
                state: ProbeState {
                    reported: if due { Reported::NotCalled } else { state.reported },
                    not_called_in_a_row: in_a_row,
                },
                report: due.then_some(Reported::NotCalled),
                next: schedule.while_not,
            }
        }
        Reach::Unknown(_) => ProbeStep {
            state,
            report: None,
            next: schedule.while_not,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal() -> String {
        format!(
            "admission webhook \"volumeresizes.ferry.dev\" denied the request: {REASON_STATEFUL_SET_NOT_FOUND}: StatefulSet \"{PROBE_STATEFUL_SET}\" not found"
        )
    }

    #[test]
    fn only_the_webhooks_refusal_of_the_missing_stateful_set_proves_the_path() {
        assert_eq!(
            reach(&ProbeAnswer::Refused(refusal()), PROBE_STATEFUL_SET),
            Reach::Answered(refusal())
        );
        assert_eq!(
            reach(&ProbeAnswer::Accepted, PROBE_STATEFUL_SET),
            Reach::NotCalled
        );
        let forbidden = "volumeresizes.ferry.dev is forbidden: User \"x\" cannot create".to_string();
        assert_eq!(
            reach(&ProbeAnswer::Refused(forbidden.clone()), PROBE_STATEFUL_SET),
            Reach::Unknown(forbidden)
        );
        // Another StatefulSet's refusal is not this probe's.
        assert!(matches!(
            reach(&ProbeAnswer::Refused(refusal()), "other"),
            Reach::Unknown(_)
        ));
        assert!(matches!(
            reach(&ProbeAnswer::Failed("timed out".into()), PROBE_STATEFUL_SET),
            Reach::Unknown(_)
        ));
    }

    #[test]
    fn the_probe_is_a_resize_of_the_missing_stateful_set_in_the_namespace() {
        let resize = probe_resize("team-a", PROBE_STATEFUL_SET);
        assert_eq!(resize.metadata.namespace.as_deref(), Some("team-a"));
        assert_eq!(resize.spec.stateful_set_name, PROBE_STATEFUL_SET);
    }

    #[test]
    fn not_called_is_reported_once_after_probes_in_a_row_and_an_answer_once_after_it() {
        let schedule = ProbeSchedule::default();
        let answered = Reach::Answered(refusal());
        let first = step(ProbeState::default(), &answered, &schedule);
        assert_eq!(first.report, Some(Reported::Answered));
        assert_eq!(first.next, schedule.while_answered);
        let again = step(first.state, &answered, &schedule);
        assert_eq!(again.report, None);

        let once = step(again.state, &Reach::NotCalled, &schedule);
        assert_eq!(once.report, None, "one probe may fall in an endpoint's change");
        assert_eq!(once.next, schedule.while_not);
        let twice = step(once.state, &Reach::NotCalled, &schedule);
        assert_eq!(twice.report, Some(Reported::NotCalled));
        let thrice = step(twice.state, &Reach::NotCalled, &schedule);
        assert_eq!(thrice.report, None, "said once, not on every probe");

        let unknown = step(thrice.state, &Reach::Unknown("forbidden".into()), &schedule);
        assert_eq!((unknown.report, unknown.state), (None, thrice.state));
        let back = step(unknown.state, &answered, &schedule);
        assert_eq!(back.report, Some(Reported::Answered));
        assert_eq!(back.state.not_called_in_a_row, 0);
    }

    #[test]
    fn an_answer_between_two_misses_starts_the_count_again() {
        let schedule = ProbeSchedule::default();
        let missed = step(ProbeState::default(), &Reach::NotCalled, &schedule);
        let answered = step(missed.state, &Reach::Answered(refusal()), &schedule);
        let missed_again = step(answered.state, &Reach::NotCalled, &schedule);
        assert_eq!(missed_again.report, None);
    }
}
