//! The one simulator driver for every planner (test only): a simulated VolumeResize reconciled
//! through the engine's one entry point ([`crate::resize::plan::plan`]), routing included, against a
//! simulated cluster (a [`World`]: the copy's in `copy/tests.rs`, in-place expansion's in
//! `in_place/tests.rs`), with the operator killed after any action.

use crate::resize::action::ResizeAction;
use crate::resize::observed::Observed;
use crate::resize::run::Decision;
use ferry_api::{Phase, VolumeResizeSpec, VolumeResizeStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// Kubernetes as far as a planner needs it.
pub trait World {
    /// What the operator would observe now.
    fn observed(&self) -> &Observed;
    /// Carry out one action, as the API server and the operator's executor would.
    fn apply(&mut self, action: &ResizeAction);
    /// What the cluster's own controllers do between two reconciles.
    fn settle(&mut self);
    /// The clock at the next reconcile.
    fn tick(&mut self) -> Time;
}

/// The simulated VolumeResize `r` (UID `abcd1234-…`) on StatefulSet `db`: its spec and what its
/// metadata says.
#[derive(Clone)]
pub struct Resize {
    pub spec: VolumeResizeSpec,
    pub deleting: bool,
    pub rollback_requested: bool,
}

/// The suffix Ferry's object names get from the simulated resize's UID.
pub const SUFFIX: &str = "abcd1234";

pub fn resize() -> Resize {
    Resize {
        spec: VolumeResizeSpec::for_volumes("db", vec![]),
        deleting: false,
        rollback_requested: false,
    }
}

impl Resize {
    pub fn with(mut self, change: impl FnOnce(&mut VolumeResizeSpec)) -> Resize {
        change(&mut self.spec);
        self
    }

    /// What the engine decides at one reconcile, as the operator asks it.
    pub fn plan(
        &self,
        status: &VolumeResizeStatus,
        observed: &Observed,
        now: &Time,
    ) -> crate::resize::plan::Decision {
        let input = crate::resize::plan::Input {
            facts: crate::resize::route::Facts {
                status: Some(status),
                generation: Some(1),
                deleting: self.deleting,
                has_finalizer: true,
                rollback_requested: self.rollback_requested,
            },
            spec: &self.spec,
            name: "r",
            uid: "abcd1234-0000-4000-8000-000000000000",
            now,
            default_timeout_seconds: ferry_api::DEFAULT_TIMEOUT_SECONDS,
        };
        crate::resize::plan::plan(&input, observed.clone())
    }

    /// The run's step at this reconcile; `None` once the route leaves the run (finished, letting
    /// go, retention).
    pub fn step(&self, status: &VolumeResizeStatus, observed: &Observed, now: &Time) -> Option<Decision> {
        match self.plan(status, observed, now) {
            crate::resize::plan::Decision::Run { step, .. } => Some(step),
            _ => None,
        }
    }
}

/// Reconciles from `status` until the run ends or `max` reconciles: plan, record the status
/// (written before acting), act. `crash_at` kills the operator after that many actions in total: the
/// rest of that reconcile's actions never happen, and the next reconcile starts from the persisted
/// status and a fresh observation. `inspect` sees each decision and the world after it acted.
pub fn drive<W: World>(
    resize: &Resize,
    world: &mut W,
    mut status: VolumeResizeStatus,
    crash_at: Option<usize>,
    max: usize,
    inspect: &mut dyn FnMut(&Decision, &W),
) -> (VolumeResizeStatus, usize) {
    let mut executed = 0;
    for _ in 0..max {
        let now = world.tick();
        let Some(decision) = resize.step(&status, world.observed(), &now) else {
            break;
        };
        status = decision.status.clone();
        if status.phase.is_some_and(Phase::is_terminal) {
            break;
        }
        for action in &decision.actions {
            if crash_at == Some(executed) {
                executed += 1;
                break;
            }
            world.apply(action);
            executed += 1;
        }
        inspect(&decision, world);
        world.settle();
    }
    (status, executed)
}
