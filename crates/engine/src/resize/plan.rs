//! The engine's one entry point: from what a VolumeResize is (its spec, its status, the facts of its
//! object) and what the operator observed, what happens now. It routes (prechecks, the run forward,
//! stopping on deletion, rollback on request, retention, letting go) and runs the planner the route
//! picks. The operator reads what [`scope`] says, calls [`plan`], writes the status, acts and
//! reports; it never decides anything itself.

use crate::names;
use crate::resize::copy::CopyContext;
use crate::resize::observed::Observed;
use crate::resize::owner;
use crate::resize::precheck::{Precheck, Verdict, precheck};
use crate::resize::readiness;
use crate::resize::retention::{RetentionDecision, plan_retention};
use crate::resize::route::{Facts, Route, Run, plan_run, route};
use crate::resize::run::Decision as RunDecision;
use crate::resize::status::{after_precheck, defer_spec_change};
use crate::resize::step_timing::{FinishedStep, stamp_steps};
use crate::resize::timeout;
use ferry_api::{VolumeResizeSpec, VolumeResizeStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, Time};
use std::collections::BTreeSet;

/// What the operator reads before planning: one model ([`Observed`]), filled as far as the route
/// at hand looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The StatefulSet, its templates and claims, StorageClasses, the replicas' nodes, the other
    /// VolumeResizes on the StatefulSet.
    Request,
    /// The StatefulSet, the plan's claims and their volumes, the replicas' pods, Ferry's mover
    /// pods, the backup, the PodDisruptionBudgets.
    Run,
    /// The retained old volumes.
    Retention,
    /// Nothing.
    Nothing,
}

/// What to read for a VolumeResize in this state.
pub fn scope(facts: &Facts) -> Scope {
    match route(facts) {
        Route::Precheck => Scope::Request,
        Route::Run(_) => Scope::Run,
        Route::Retention => Scope::Retention,
        Route::LetGo | Route::Idle => Scope::Nothing,
    }
}

/// The VolumeResize as the engine needs it.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    pub facts: Facts<'a>,
    pub spec: &'a VolumeResizeSpec,
    pub name: &'a str,
    pub uid: &'a str,
    pub now: &'a Time,
    /// `timeoutSeconds` where the spec sets none (the operator's `--default-timeout-seconds`).
    pub default_timeout_seconds: i64,
}

/// What a reconcile does.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Prechecks ran. `status` is the status to write when it differs from the stored one.
    Prechecked(Prechecked),
    /// One step of the run: write `step.status`, then carry out `step.actions` in order.
    Run {
        step: RunDecision,
        /// Steps rows have just left, with how long each took (for the step-duration metric).
        finished_steps: Vec<FinishedStep>,
    },
    /// Release retained old volumes whose time is up.
    Retention(RetentionDecision),
    /// Deleted at a safe point: hand over what it retained, release its hold, drop its finalizer.
    LetGo,
    /// Nothing to do until something changes.
    Idle,
}

/// The outcome of prechecks, before and after the StatefulSet's hold is asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct Prechecked {
    pub check: Precheck,
    pub status: VolumeResizeStatus,
    /// The prechecks passed and the run may start once this resize holds the StatefulSet (one
    /// resize at a time): the operator takes the hold, and calls [`Prechecked::held_by`] when
    /// another resize has it.
    pub needs_hold: bool,
}

impl Prechecked {
    /// Another VolumeResize holds the StatefulSet: this one waits its turn.
    pub fn held_by(self, holder: &str, input: &Input) -> Prechecked {
        let mut check = self.check;
        check.verdict = Verdict::Wait {
            reason: ferry_api::condition::REASON_WAITING_FOR_OTHER,
            message: format!(
                "VolumeResize {holder:?} is working on StatefulSet {:?}; this one waits its turn",
                input.spec.stateful_set_name
            ),
        };
        prechecked(check, input)
    }
}

fn prechecked(check: Precheck, input: &Input) -> Prechecked {
    let mut status = after_precheck(
        input.facts.status,
        &check,
        input.spec.dry_run,
        input.facts.generation,
        input.now,
    );
    timeout::forget(&mut status);
    readiness::summarize(&mut status, input.facts.generation, input.now);
    let needs_hold = check.verdict == Verdict::Passed && !input.spec.dry_run;
    Prechecked {
        check,
        status,
        needs_hold,
    }
}

/// What happens now to this VolumeResize, given what was observed in the [`scope`] of its state.
pub fn plan(input: &Input, observed: Observed) -> Decision {
    let status = input.facts.status;
    match (route(&input.facts), status) {
        (Route::Precheck, _) => Decision::Prechecked(prechecked(precheck(input.spec, &observed), input)),
        (Route::Run(run), Some(status)) => {
            // A volume re-created under a recorded name is not the row's: pinned once, here.
            let observed = observed.pinned_to(&status.plan);
            let backup_name = names::backup(input.name);
            let suffix = names::uid_suffix(input.uid);
            let timeout = timeout::limit_seconds(input.spec, input.default_timeout_seconds);
            let copy = CopyContext::for_run(input.spec, &backup_name, &suffix, run == Run::Stopping, timeout);
            // A StatefulSet another controller owns: its owner is paused before the run's first
            // step and takes the result after its last.
            let clock = owner::Clock {
                now: input.now,
                limit_seconds: timeout,
            };
            let again = (run == Run::Revert)
                .then(|| owner::again_for_rollback(status))
                .flatten();
            let status = again.as_ref().unwrap_or(status);
            let mut step = match owner::before_run(status, &observed, clock) {
                owner::Before::Act(decision) => decision,
                owner::Before::Go(status) => {
                    let step = owner::recorded_end(&status)
                        .unwrap_or_else(|| plan_run(run, &copy, &status, &observed, input.now));
                    owner::after_run(&status, step, &observed, clock)
                }
            };
            let finished_steps = stamp_steps(status, &mut step.status, &MicroTime(input.now.0));
            defer_spec_change(&mut step.status, input.facts.generation, input.now);
            readiness::summarize(&mut step.status, input.facts.generation, input.now);
            Decision::Run { step, finished_steps }
        }
        (Route::Retention, Some(status)) => {
            let retained = |name: &&String| status.created_objects.retained_volumes.contains(name);
            let existing: BTreeSet<String> = observed.volumes.keys().filter(retained).cloned().collect();
            let releasing: BTreeSet<String> = observed
                .volumes
                .iter()
                .filter(|(name, volume)| retained(name) && volume.reclaim_policy == "Delete")
                .map(|(name, _)| name.clone())
                .collect();
            let mut retention = plan_retention(
                status,
                input.spec.retain_old_volumes.as_deref(),
                &existing,
                &releasing,
                input.now,
            );
            readiness::summarize(&mut retention.status, input.facts.generation, input.now);
            Decision::Retention(retention)
        }
        (Route::LetGo, _) => Decision::LetGo,
        (Route::Idle | Route::Run(_) | Route::Retention, _) => Decision::Idle,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resize::observed::{StatefulSetView, TemplateView, VolumeView};
    use ferry_api::condition::{
        QUEUED, REASON_STATEFUL_SET_NOT_FOUND, REASON_WAITING_FOR_OTHER, SPEC_CHANGE_DEFERRED,
    };
    use ferry_api::{ChosenStrategy, Phase, VolumeChange, VolumePlan};
    use k8s_openapi::jiff::Timestamp;

    fn spec() -> VolumeResizeSpec {
        VolumeResizeSpec::for_volumes(
            "db",
            vec![VolumeChange {
                name: "data".into(),
                size: "2Gi".into(),
                storage_class_name: None,
                volume_attributes_class_name: None,
            }],
        )
    }

    fn now() -> Time {
        Time(Timestamp::from_second(1000).unwrap())
    }

    fn input<'a>(
        spec: &'a VolumeResizeSpec,
        status: Option<&'a VolumeResizeStatus>,
        now: &'a Time,
    ) -> Input<'a> {
        Input {
            facts: Facts {
                status,
                generation: Some(1),
                has_finalizer: true,
                ..Facts::default()
            },
            spec,
            name: "r",
            uid: "abcd1234-0000",
            now,
            default_timeout_seconds: ferry_api::DEFAULT_TIMEOUT_SECONDS,
        }
    }

    fn running() -> VolumeResizeStatus {
        VolumeResizeStatus {
            phase: Some(Phase::Running),
            observed_generation: Some(1),
            plan: vec![VolumePlan {
                replica: 0,
                volume: "data".into(),
                claim_name: "data-db-0".into(),
                strategy: Some(ChosenStrategy::InPlace),
                target_size: "2Gi".into(),
                ..VolumePlan::default()
            }],
            ..VolumeResizeStatus::default()
        }
    }

    #[test]
    fn what_is_read_follows_the_route() {
        let (spec, now) = (spec(), now());
        assert_eq!(scope(&input(&spec, None, &now).facts), Scope::Request);
        let status = running();
        assert_eq!(scope(&input(&spec, Some(&status), &now).facts), Scope::Run);
        let done = VolumeResizeStatus {
            phase: Some(Phase::Succeeded),
            created_objects: ferry_api::CreatedObjects {
                retained_volumes: vec!["pv-old-0".into()],
                ..Default::default()
            },
            ..running()
        };
        assert_eq!(scope(&input(&spec, Some(&done), &now).facts), Scope::Retention);
        let mut deleted = input(&spec, Some(&done), &now);
        deleted.facts.deleting = true;
        assert_eq!(scope(&deleted.facts), Scope::Nothing);
        assert_eq!(plan(&deleted, Observed::default()), Decision::LetGo);
        deleted.facts.has_finalizer = false;
        assert_eq!(plan(&deleted, Observed::default()), Decision::Idle);
    }

    #[test]
    fn a_new_resize_is_prechecked_and_a_passing_one_asks_for_the_hold() {
        let (spec, now) = (spec(), now());
        let Decision::Prechecked(missing) = plan(&input(&spec, None, &now), Observed::default()) else {
            panic!("prechecks first");
        };
        assert!(!missing.needs_hold, "a refused request holds nothing");
        assert_eq!(missing.status.phase, Some(Phase::Failed));
        assert!(
            missing.status.conditions[0].reason == REASON_STATEFUL_SET_NOT_FOUND,
            "{:?}",
            missing.status.conditions
        );

        let observed = Observed {
            stateful_set: Some(StatefulSetView {
                name: "db".into(),
                replicas: 1,
                ready_replicas: 1,
                templates: [("data".to_string(), TemplateView::sized(1 << 30, Some("standard")))].into(),
                ..StatefulSetView::default()
            }),
            storage_classes: [(
                "standard".to_string(),
                crate::resize::observed::StorageClassView {
                    allow_expansion: true,
                    ..Default::default()
                },
            )]
            .into(),
            ..Observed::default()
        };
        let input = input(&spec, None, &now);
        let Decision::Prechecked(passed) = plan(&input, observed) else {
            panic!("prechecks first");
        };
        assert!(passed.needs_hold, "{:?}", passed.check.verdict);
        assert_eq!(passed.status.phase, Some(Phase::Planning));
        // Another resize has the StatefulSet: this one waits, queued, and holds nothing.
        let waiting = passed.held_by("other", &input);
        assert_eq!(waiting.status.phase, Some(Phase::Pending));
        assert!(
            waiting
                .status
                .conditions
                .iter()
                .any(|c| c.type_ == QUEUED && c.reason == REASON_WAITING_FOR_OTHER)
        );
        assert!(!waiting.needs_hold);
    }

    #[test]
    fn a_run_under_way_never_goes_back_to_prechecks_when_the_spec_changes() {
        let (spec, now) = (spec(), now());
        let status = running();
        let mut edited = input(&spec, Some(&status), &now);
        edited.facts.generation = Some(2);
        let Decision::Run { step, .. } = plan(&edited, Observed::default()) else {
            panic!("the run goes on");
        };
        assert!(
            step.status
                .conditions
                .iter()
                .any(|c| c.type_ == SPEC_CHANGE_DEFERRED && c.status == "True")
        );
    }

    #[test]
    fn retention_counts_only_the_volumes_it_retained() {
        let (spec, now) = (spec(), now());
        let done = VolumeResizeStatus {
            phase: Some(Phase::Succeeded),
            finished_at: Some(now.clone()),
            created_objects: ferry_api::CreatedObjects {
                retained_volumes: vec!["pv-old-0".into(), "pv-gone".into()],
                ..Default::default()
            },
            ..running()
        };
        let volume = |policy: &str| VolumeView {
            reclaim_policy: policy.into(),
            ..VolumeView::default()
        };
        let observed = Observed {
            volumes: [
                ("pv-old-0".to_string(), volume("Retain")),
                ("pv-someone-else".to_string(), volume("Delete")),
            ]
            .into(),
            ..Observed::default()
        };
        let Decision::Retention(retention) = plan(&input(&spec, Some(&done), &now), observed) else {
            panic!("retention");
        };
        assert_eq!(
            retention.status.created_objects.retained_volumes,
            vec!["pv-old-0".to_string()],
            "a retained volume that is gone is no longer listed; another volume never is"
        );
        assert!(retention.actions.is_empty(), "kept until retention is up");
    }
}
