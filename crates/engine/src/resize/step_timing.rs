//! When each row entered its step, and how long the steps it left took (for the step-duration
//! metric). Pure: the operator stamps the planner's new status with it before writing.

use ferry_api::{DowntimeSteps, RowStep, VolumePlan, VolumeResizeStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;

/// A step a row has just left, and how long it was in it.
#[derive(Debug, Clone, PartialEq)]
pub struct FinishedStep {
    pub step: RowStep,
    pub seconds: f64,
}

/// Sets `stepStartedAt` to `now` on rows of `next` whose step differs from `previous`, and returns
/// the steps those rows left with their durations. Rows whose step is unchanged keep their stamp, so
/// a reconcile that changes nothing writes nothing.
pub fn stamp_steps(
    previous: &VolumeResizeStatus,
    next: &mut VolumeResizeStatus,
    now: &MicroTime,
) -> Vec<FinishedStep> {
    let mut finished = Vec::new();
    for row in &mut next.plan {
        let before = previous.plan.iter().find(|old| old.claim_name == row.claim_name);
        let old_step = before.and_then(|old| old.step);
        if old_step == row.step {
            continue;
        }
        if let (Some(step), Some(since)) = (old_step, before.and_then(|old| old.step_started_at.as_ref())) {
            let seconds = seconds_between(since, now);
            // The replica is down only from its stop: the step's wait for budgets and the other
            // replicas before it is not downtime (the steps would add up past it).
            let down_since = match (step, row.stopped_at.as_ref()) {
                (RowStep::StoppingReplica, Some(stopped)) if stopped.0 > since.0 => stopped,
                _ => since,
            };
            record_downtime_step(row, step, seconds_between(down_since, now));
            finished.push(FinishedStep { step, seconds });
        }
        row.step_started_at = row.step.map(|_| now.clone());
    }
    finished
}

fn seconds_between(from: &MicroTime, to: &MicroTime) -> f64 {
    to.0.duration_since(from.0).as_secs_f64().max(0.0)
}

/// Keeps how long `step` took on the row when it is one of a copy's downtime steps (status
/// `downtimeSteps`): what a replica's downtime was made of, per replica, without the operator's log.
fn record_downtime_step(row: &mut VolumePlan, step: RowStep, seconds: f64) {
    fn slot(steps: &mut DowntimeSteps, step: RowStep) -> Option<&mut Option<i64>> {
        match step {
            RowStep::StoppingReplica => Some(&mut steps.stopping_replica),
            RowStep::FinalSync => Some(&mut steps.final_sync),
            RowStep::Swapping => Some(&mut steps.swapping),
            RowStep::StartingReplica => Some(&mut steps.starting_replica),
            _ => None,
        }
    }
    let mut steps = row.downtime_steps.clone().unwrap_or_default();
    if let Some(milliseconds) = slot(&mut steps, step) {
        // A step entered twice (an operator restart re-deciding it) adds up.
        *milliseconds = Some(milliseconds.unwrap_or(0) + (seconds * 1000.0).round() as i64);
        row.downtime_steps = Some(steps);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferry_api::VolumePlan;
    use k8s_openapi::jiff::Timestamp;

    fn at(millis: i64) -> MicroTime {
        MicroTime(Timestamp::from_millisecond(millis).unwrap())
    }

    fn status(step: Option<RowStep>, since: Option<MicroTime>) -> VolumeResizeStatus {
        VolumeResizeStatus {
            plan: vec![VolumePlan {
                claim_name: "data-db-0".into(),
                step,
                step_started_at: since,
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn a_new_step_is_stamped_and_the_old_one_timed() {
        let previous = status(Some(RowStep::WarmCopy), Some(at(1_000)));
        let mut next = status(Some(RowStep::StoppingReplica), Some(at(1_000)));
        let finished = stamp_steps(&previous, &mut next, &at(3_500));
        assert_eq!(
            finished,
            vec![FinishedStep {
                step: RowStep::WarmCopy,
                seconds: 2.5
            }]
        );
        assert_eq!(next.plan[0].step_started_at, Some(at(3_500)));
    }

    #[test]
    fn an_unchanged_step_keeps_its_stamp_so_nothing_is_written() {
        let previous = status(Some(RowStep::WarmCopy), Some(at(1_000)));
        let mut next = previous.clone();
        assert!(stamp_steps(&previous, &mut next, &at(9_000)).is_empty());
        assert_eq!(next, previous);
    }

    #[test]
    fn the_steps_of_a_downtime_are_kept_on_the_row_and_the_others_are_not() {
        let walk = [
            (RowStep::WarmCopy, 0),
            (RowStep::StoppingReplica, 10_000),
            (RowStep::FinalSync, 12_250),
            (RowStep::Swapping, 13_000),
            (RowStep::StartingReplica, 13_400),
            (RowStep::Copied, 15_900),
        ];
        let mut current = status(Some(walk[0].0), Some(at(walk[0].1)));
        for &(step, millis) in &walk[1..] {
            let mut next = current.clone();
            next.plan[0].step = Some(step);
            stamp_steps(&current, &mut next, &at(millis));
            current = next;
        }
        assert_eq!(
            current.plan[0].downtime_steps,
            Some(DowntimeSteps {
                stopping_replica: Some(2_250),
                final_sync: Some(750),
                swapping: Some(400),
                starting_replica: Some(2_500),
            })
        );
    }

    #[test]
    fn stopping_counts_from_the_replicas_stop_not_from_the_wait_before_it() {
        // Held 20 s at StoppingReplica by a budget, then stopped at 30 s, gone at 32.5 s.
        let previous = status(Some(RowStep::StoppingReplica), Some(at(10_000)));
        let mut next = previous.clone();
        next.plan[0].stopped_at = Some(at(30_000));
        next.plan[0].step = Some(RowStep::FinalSync);
        let finished = stamp_steps(&previous, &mut next, &at(32_500));
        assert_eq!(finished[0].seconds, 22.5, "the step's metric keeps the wait");
        let steps = next.plan[0].downtime_steps.clone().unwrap();
        assert_eq!(steps.stopping_replica, Some(2_500));
    }

    #[test]
    fn the_first_step_is_stamped_without_a_duration() {
        let previous = status(None, None);
        let mut next = status(Some(RowStep::CreatingTarget), None);
        assert!(stamp_steps(&previous, &mut next, &at(5_000)).is_empty());
        assert_eq!(next.plan[0].step_started_at, Some(at(5_000)));
    }
}
