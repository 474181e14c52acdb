//! Which planner a VolumeResize needs now, decided from its own state alone: the one place that
//! routes between prechecks, the run (forward, stopping on deletion, rollback on request),
//! retention and letting go. The operator observes what the chosen planner reads and applies what
//! it decides; it never branches on anything else.

use crate::resize::run::Decision;
use ferry_api::{ChosenStrategy, Phase, RowStep, VolumeResizeStatus};

/// What a reconcile of a VolumeResize does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// Check the request against the cluster (a new spec generation, or still waiting).
    Precheck,
    /// Carry the run one step further.
    Run(Run),
    /// Finished: release retained old volumes when their time is up.
    Retention,
    /// Deleted and at a safe point, or finished retaining nothing: hand over what is left and
    /// remove the finalizer.
    LetGo,
    /// Nothing to do until something changes.
    Idle,
}

/// Which way a run goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Run {
    Forward,
    /// Deleted: stop at the next safe point.
    Stopping,
    /// `ferry.dev/rollback-requested`: put copied replicas back on their old volumes.
    Revert,
}

/// The facts routing looks at, read from the VolumeResize object.
#[derive(Debug, Clone, Copy, Default)]
pub struct Facts<'a> {
    pub status: Option<&'a VolumeResizeStatus>,
    pub generation: Option<i64>,
    pub deleting: bool,
    pub has_finalizer: bool,
    pub rollback_requested: bool,
}

impl Facts<'_> {
    fn phase(&self) -> Phase {
        self.status.and_then(|s| s.phase).unwrap_or(Phase::Pending)
    }

    /// A rollback was asked for and has replicas left to put back; not while the copy itself still
    /// runs or rolls back on its own.
    fn reverting(&self) -> bool {
        let Some(status) = self.status else {
            return false;
        };
        let step_is = |steps: &[RowStep]| {
            status
                .plan
                .iter()
                .any(|row| row.step.is_some_and(|s| steps.contains(&s)))
        };
        let start = matches!(self.phase(), Phase::Succeeded | Phase::Failed) && step_is(&[RowStep::Copied]);
        // Under way until the revert planner itself ends it (Failed, "rolled back on request").
        let under_way =
            self.phase() == Phase::RollingBack && step_is(&[RowStep::Reverting, RowStep::Reverted]);
        self.rollback_requested && (start || under_way)
    }
}

/// Where a VolumeResize goes next.
pub fn route(facts: &Facts) -> Route {
    let phase = facts.phase();
    let under_way = matches!(phase, Phase::Running | Phase::RollingBack);
    if facts.deleting {
        return match () {
            _ if !facts.has_finalizer => Route::Idle,
            // A requested rollback is finished rather than cut short: each of its steps is safe.
            _ if under_way && facts.reverting() => Route::Run(Run::Revert),
            _ if under_way => Route::Run(Run::Stopping),
            _ => Route::LetGo,
        };
    }
    let current_generation = facts.status.and_then(|s| s.observed_generation) == facts.generation;
    // Past its prechecks for this spec, a resize carries out its plan; a run under way never goes
    // back to prechecks, whatever the spec says now.
    let prechecked = current_generation && phase != Phase::Pending;
    if !prechecked && !under_way {
        return Route::Precheck;
    }
    if facts.reverting() {
        return Route::Run(Run::Revert);
    }
    match phase {
        Phase::Planning | Phase::Running | Phase::RollingBack => Route::Run(Run::Forward),
        Phase::Succeeded | Phase::Failed
            if facts
                .status
                .is_some_and(|s| !s.created_objects.retained_volumes.is_empty()) =>
        {
            Route::Retention
        }
        // Finished with nothing retained: nothing is left for a deletion to wait for, so the
        // finalizer goes (with Ferry uninstalled it would hold the namespace's deletion).
        Phase::Succeeded | Phase::Failed if facts.has_finalizer => Route::LetGo,
        _ => Route::Idle,
    }
}

/// One step of a run: the planner for its kind (rollback on request, in place, copy).
pub fn plan_run(
    run: Run,
    copy: &crate::resize::copy::CopyContext,
    status: &VolumeResizeStatus,
    observed: &crate::resize::observed::Observed,
    now: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
) -> Decision {
    if run == Run::Revert {
        return crate::resize::revert::plan_revert(copy, status, observed, now);
    }
    let all_in_place = status
        .plan
        .iter()
        .all(|row| row.strategy != Some(ChosenStrategy::Copy));
    if all_in_place {
        crate::resize::in_place::plan_in_place(
            copy.stopping,
            status,
            observed,
            copy.sts_name,
            copy.backup_name,
            copy.step_timeout_seconds,
            now,
        )
    } else {
        crate::resize::copy::plan_copy(copy, status, observed, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferry_api::VolumePlan;

    fn status(phase: Phase, generation: i64) -> VolumeResizeStatus {
        VolumeResizeStatus {
            phase: Some(phase),
            observed_generation: Some(generation),
            ..VolumeResizeStatus::default()
        }
    }

    fn facts(status: Option<&VolumeResizeStatus>, generation: i64) -> Facts<'_> {
        Facts {
            status,
            generation: Some(generation),
            ..Facts::default()
        }
    }

    #[test]
    fn a_new_or_waiting_resize_is_prechecked() {
        assert_eq!(route(&facts(None, 1)), Route::Precheck);
        assert_eq!(
            route(&facts(Some(&status(Phase::Pending, 1)), 1)),
            Route::Precheck
        );
        assert_eq!(
            route(&facts(Some(&status(Phase::Succeeded, 1)), 2)),
            Route::Precheck
        );
    }

    #[test]
    fn a_run_under_way_keeps_running_whatever_the_spec_generation() {
        for phase in [Phase::Running, Phase::RollingBack] {
            assert_eq!(
                route(&facts(Some(&status(phase, 1)), 1)),
                Route::Run(Run::Forward)
            );
            assert_eq!(
                route(&facts(Some(&status(phase, 1)), 2)),
                Route::Run(Run::Forward)
            );
        }
        assert_eq!(
            route(&facts(Some(&status(Phase::Planning, 1)), 1)),
            Route::Run(Run::Forward)
        );
        // Planning has touched nothing yet: a newer spec is prechecked again.
        assert_eq!(
            route(&facts(Some(&status(Phase::Planning, 1)), 2)),
            Route::Precheck
        );
    }

    #[test]
    fn finished_resizes_wait_for_retention_or_for_nothing() {
        let mut done = status(Phase::Succeeded, 1);
        assert_eq!(route(&facts(Some(&done), 1)), Route::Idle);
        done.created_objects.retained_volumes.push("pv-old".into());
        assert_eq!(route(&facts(Some(&done), 1)), Route::Retention);
    }

    /// A finished resize that retains nothing lets its finalizer go at once: deleting it (or its
    /// namespace) never waits on Ferry; one that retains volumes keeps it until they are released.
    #[test]
    fn a_finished_resize_retaining_nothing_lets_its_finalizer_go() {
        for phase in [Phase::Succeeded, Phase::Failed] {
            let finalized = |status| Facts {
                has_finalizer: true,
                ..facts(Some(status), 1)
            };
            let done = status(phase, 1);
            assert_eq!(route(&finalized(&done)), Route::LetGo, "{phase:?}");
            let mut retaining = done.clone();
            retaining.created_objects.retained_volumes.push("pv-old".into());
            assert_eq!(route(&finalized(&retaining)), Route::Retention, "{phase:?}");
        }
    }

    #[test]
    fn a_rollback_request_reverts_copied_rows_and_finishes_even_when_deleted() {
        let mut copied = status(Phase::Succeeded, 1);
        copied.plan.push(VolumePlan {
            step: Some(RowStep::Copied),
            ..VolumePlan::default()
        });
        let requested = Facts {
            rollback_requested: true,
            ..facts(Some(&copied), 1)
        };
        assert_eq!(route(&requested), Route::Run(Run::Revert));
        let mut reverting = copied.clone();
        reverting.phase = Some(Phase::RollingBack);
        reverting.plan[0].step = Some(RowStep::Reverting);
        let deleted = Facts {
            deleting: true,
            has_finalizer: true,
            rollback_requested: true,
            ..facts(Some(&reverting), 1)
        };
        assert_eq!(route(&deleted), Route::Run(Run::Revert));
        // Without the request it is an ordinary rollback of a failed copy going on.
        let own = Facts {
            rollback_requested: false,
            ..deleted
        };
        assert_eq!(route(&own), Route::Run(Run::Stopping));
    }

    #[test]
    fn a_deleted_resize_stops_at_a_safe_point_then_lets_go() {
        let running = status(Phase::Running, 1);
        let deleted = |status, has_finalizer| Facts {
            deleting: true,
            has_finalizer,
            ..facts(status, 1)
        };
        assert_eq!(route(&deleted(Some(&running), true)), Route::Run(Run::Stopping));
        let failed = status(Phase::Failed, 1);
        assert_eq!(route(&deleted(Some(&failed), true)), Route::LetGo);
        assert_eq!(route(&deleted(None, true)), Route::LetGo);
        assert_eq!(route(&deleted(Some(&running), false)), Route::Idle);
    }
}
