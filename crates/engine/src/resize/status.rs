//! The status a VolumeResize gets after its prechecks: pure, so a no-op reconcile computes exactly the
//! status already stored and the operator makes no write.

use crate::conditions::{condition, remove_condition, set_condition};
use crate::resize::precheck::{Precheck, Verdict};
use crate::resize::progress::update_progress;
use ferry_api::{Phase, VolumeResizeStatus, condition::*};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// Next status from the previous one and the precheck result. `generation` is the spec's
/// metadata.generation; `now` stamps conditions that change.
pub fn after_precheck(
    previous: Option<&VolumeResizeStatus>,
    check: &Precheck,
    dry_run: bool,
    generation: Option<i64>,
    now: &Time,
) -> VolumeResizeStatus {
    let mut status = previous.cloned().unwrap_or_default();
    status.observed_generation = generation;
    crate::conditions::remove_condition(&mut status.conditions, ferry_api::condition::SPEC_CHANGE_DEFERRED);
    status.plan = merge_plan(&status.plan, &check.plan);
    status.owner = check.owner.as_deref().cloned();
    let (phase, passed, reason, message, queued) = match &check.verdict {
        Verdict::Passed if dry_run => {
            let changes = check.plan.iter().filter(|row| row.strategy.is_some()).count();
            let message =
                format!("dry run: all prechecks passed; {changes} volume change(s) planned, nothing changed");
            (Phase::Succeeded, true, REASON_PASSED, message, false)
        }
        Verdict::Passed => (
            Phase::Planning,
            true,
            REASON_PASSED,
            "all prechecks passed".to_string(),
            false,
        ),
        Verdict::NothingToDo => (
            Phase::Succeeded,
            true,
            REASON_NOTHING_TO_DO,
            nothing_to_do_message(&check.plan),
            false,
        ),
        Verdict::Wait { reason, message } => (
            Phase::Pending,
            false,
            *reason,
            message.clone(),
            *reason == REASON_WAITING_FOR_OTHER,
        ),
        Verdict::Reject { reason, message } => (Phase::Failed, false, *reason, message.clone(), false),
    };
    set_condition(
        &mut status.conditions,
        condition(PRECHECKED, passed, reason, &message, generation, now),
    );
    if queued {
        set_condition(
            &mut status.conditions,
            condition(QUEUED, true, reason, &message, generation, now),
        );
    } else {
        remove_condition(&mut status.conditions, QUEUED);
    }
    if phase.is_terminal() && status.phase != Some(phase) {
        status.finished_at = Some(now.clone());
    }
    status.phase = Some(phase);
    status.message = Some(message);
    update_progress(&mut status);
    status
}

/// Keeps progress already recorded for rows that are still planned the same way.
fn merge_plan(
    previous: &[ferry_api::VolumePlan],
    planned: &[ferry_api::VolumePlan],
) -> Vec<ferry_api::VolumePlan> {
    planned
        .iter()
        .map(|row| {
            previous
                .iter()
                .find(|old| old.claim_name == row.claim_name && old.strategy == row.strategy)
                .filter(|old| old.target_size == row.target_size)
                .cloned()
                .unwrap_or_else(|| row.clone())
        })
        .collect()
}

/// Nothing to do for the running replicas; claims of other ordinals, left as they are, are named.
fn nothing_to_do_message(plan: &[ferry_api::VolumePlan]) -> String {
    let idle: Vec<&str> = plan
        .iter()
        .filter(|row| row.strategy.is_none() && row.message.is_some())
        .map(|row| row.claim_name.as_str())
        .collect();
    let mut message = "every volume already has the requested size and StorageClass".to_string();
    if !idle.is_empty() {
        message.push_str(&format!(
            "; claims of ordinals that are not running replicas are left as they are: {}",
            idle.join(", ")
        ));
    }
    message
}

/// A running resize never goes back to its prechecks (its StatefulSet may be orphan-deleted right
/// now): an edited spec waits until the run has ended, and a condition says so. Prechecks of the
/// new generation replace it.
pub fn defer_spec_change(status: &mut VolumeResizeStatus, generation: Option<i64>, now: &Time) {
    use ferry_api::condition::{REASON_RUN_IN_PROGRESS, SPEC_CHANGE_DEFERRED};
    let (Some(new), Some(running)) = (generation, status.observed_generation) else {
        return;
    };
    if new == running {
        return;
    }
    let message = format!(
        "spec generation {new} is prechecked and carried out when this run (generation {running}) has ended"
    );
    crate::conditions::set_condition(
        &mut status.conditions,
        crate::conditions::condition(
            SPEC_CHANGE_DEFERRED,
            true,
            REASON_RUN_IN_PROGRESS,
            &message,
            Some(new),
            now,
        ),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::Timestamp;

    fn t(seconds: i64) -> Time {
        Time(Timestamp::from_second(seconds).unwrap())
    }

    #[test]
    fn same_inputs_give_identical_status() {
        let check = Precheck {
            verdict: Verdict::Wait {
                reason: REASON_NOT_READY,
                message: "2/3".into(),
            },
            plan: vec![],
            owner: None,
        };
        let first = after_precheck(None, &check, false, Some(1), &t(1));
        let second = after_precheck(Some(&first), &check, false, Some(1), &t(2));
        assert_eq!(
            first, second,
            "a repeated reconcile must not change status (no write)"
        );
        assert_eq!(second.phase, Some(Phase::Pending));
    }

    #[test]
    fn reject_fails_with_reason_and_queue_sets_queued() {
        let reject = Precheck {
            verdict: Verdict::Reject {
                reason: REASON_TEMPLATE_NOT_FOUND,
                message: "no logs".into(),
            },
            plan: vec![],
            owner: None,
        };
        let status = after_precheck(None, &reject, false, Some(1), &t(1));
        assert_eq!(status.phase, Some(Phase::Failed));
        assert_eq!(status.conditions[0].reason, REASON_TEMPLATE_NOT_FOUND);
        assert_eq!(status.conditions[0].status, "False");
        assert_eq!(status.finished_at, Some(t(1)));

        let queued = Precheck {
            verdict: Verdict::Wait {
                reason: REASON_WAITING_FOR_OTHER,
                message: "wait".into(),
            },
            plan: vec![],
            owner: None,
        };
        let status = after_precheck(None, &queued, false, Some(1), &t(1));
        assert!(
            status
                .conditions
                .iter()
                .any(|c| c.type_ == QUEUED && c.status == "True")
        );
        let passed = Precheck {
            verdict: Verdict::Passed,
            plan: vec![],
            owner: None,
        };
        let status = after_precheck(Some(&status), &passed, false, Some(1), &t(2));
        assert!(status.conditions.iter().all(|c| c.type_ != QUEUED));
        assert_eq!(status.phase, Some(Phase::Planning));
    }

    #[test]
    fn dry_run_succeeds_with_the_plan_and_nothing_else() {
        let row = ferry_api::VolumePlan {
            claim_name: "data-db-0".into(),
            strategy: Some(ferry_api::ChosenStrategy::Copy),
            target_size: "1Gi".into(),
            ..Default::default()
        };
        let passed = Precheck {
            verdict: Verdict::Passed,
            plan: vec![row],
            owner: None,
        };
        let status = after_precheck(None, &passed, true, Some(1), &t(1));
        assert_eq!(status.phase, Some(Phase::Succeeded));
        assert_eq!(status.plan.len(), 1);
        assert!(status.message.unwrap().starts_with("dry run"));
        assert_eq!(status.finished_at, Some(t(1)));
    }

    #[test]
    fn an_edit_while_running_is_deferred_once_and_cleared_by_the_next_precheck() {
        use ferry_api::condition::SPEC_CHANGE_DEFERRED;
        let mut status = VolumeResizeStatus {
            observed_generation: Some(1),
            ..VolumeResizeStatus::default()
        };
        defer_spec_change(&mut status, Some(1), &t(1));
        assert!(status.conditions.is_empty(), "same generation: nothing to say");
        defer_spec_change(&mut status, Some(2), &t(2));
        let again = {
            let mut again = status.clone();
            defer_spec_change(&mut again, Some(2), &t(3));
            again
        };
        assert_eq!(again, status, "said once: no new status write every reconcile");
        assert_eq!(status.conditions[0].type_, SPEC_CHANGE_DEFERRED);
        assert_eq!(
            status.observed_generation,
            Some(1),
            "the run keeps its generation"
        );
    }
}
