//! What a plan works from besides the cluster, and what it decides: one shape for the rolling
//! plan and the blue/green one, so the operator reads either the same way.

use super::action::ExtendedAction;
use super::desired::Desired;
use super::rollout::{self, Observed, Progress};
use super::status::status_of;
use ferry_api::{ExtendedStatefulSet, ExtendedStatefulSetStatus, Handover};
use std::collections::BTreeMap;

/// What the plan works from besides the cluster.
pub struct Input<'a> {
    pub ests: &'a ExtendedStatefulSet,
    /// The update progress its status records ([`progress`](super::plan::progress)).
    pub previous: &'a Progress,
    /// The digest of the referenced configuration, when its changes roll the pods.
    pub config_digest: Option<&'a str>,
    /// Why hook Jobs cannot be made, when they cannot (the feature switched off).
    pub hooks_off: Option<&'a str>,
    /// Why `updateStrategy.service` cannot be switched, when it cannot (the feature switched off):
    /// then no replica moves to a new version, which its Service would not follow.
    pub service_off: Option<&'a str>,
    /// Problems found before planning (configuration left unfollowed), listed in the status.
    pub problems: Vec<String>,
    pub now: i64,
}

/// When to look again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recheck {
    /// An update, a resize or a wait is under way: pods' readiness and watch times move.
    Soon,
    /// Nothing under way: only a change (or the periodic look) wakes it.
    Idle,
    /// Blue/green: a replica is moving between versions, down while it moves; each of its steps
    /// waits on a claim or volume no watch reports.
    Moving,
    /// Refused at its start over claims already here: claims are not watched, so their deletion
    /// is seen by looking again.
    Refused,
}

/// What to do now, and what the status will say.
#[derive(Debug, Clone)]
pub struct Decision {
    pub actions: Vec<ExtendedAction>,
    /// Events: (warning, reason, message).
    pub notices: Vec<(bool, &'static str, String)>,
    pub recheck: Recheck,
    pub(super) rollout: rollout::Plan,
    pub(super) observed: Vec<Observed>,
    pub(super) desired: Vec<Desired>,
    pub(super) volume_resizes: BTreeMap<String, String>,
    /// The record of volume claim templates asked for and had (`status.volumeClaimTemplates`).
    pub(super) volume_claim_templates: BTreeMap<String, ferry_api::RequestedVolume>,
    pub(super) problems: Vec<String>,
    /// Blue/green: the move to record (`None`: none under way).
    pub(super) handover: Option<Handover>,
    /// Blue/green: each version's StatefulSet and whether it runs (else from the rollout).
    pub(super) versions: Option<BTreeMap<String, bool>>,
    pub(super) now: i64,
}

impl Decision {
    /// The status to write, with what the API server refused of the actions among its problems.
    pub fn status(&self, ests: &ExtendedStatefulSet, refused: &[String]) -> ExtendedStatefulSetStatus {
        let problems: Vec<String> = self.problems.iter().chain(refused).cloned().collect();
        let mut status = status_of(
            ests,
            &self.rollout,
            &self.observed,
            &self.desired,
            self.volume_resizes.clone(),
            &problems,
            self.now,
        );
        if let Some(versions) = &self.versions {
            status.versions = versions.clone();
        }
        status.handover = self.handover.clone();
        status.volume_claim_templates = self.volume_claim_templates.clone();
        status
    }

    /// The move recorded by this pass (blue/green).
    pub fn handover(&self) -> Option<&Handover> {
        self.handover.as_ref()
    }
}
