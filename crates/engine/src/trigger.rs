//! Triggers: a StatefulSet's own edit, annotations and template drift, each turned into one
//! VolumeResize. `decide` reads the StatefulSet and the VolumeResizes that name it and says what
//! to write; the operator applies it (annotations first, with the StatefulSet's resourceVersion as
//! a precondition, then the create), so every step is idempotent and a crash between two steps is
//! finished by the next pass.

pub mod request;
pub mod template_edit;

#[cfg(test)]
mod tests;

use ferry_api::names::{ANNOTATION_RESIZE_BY, ANNOTATION_RESIZE_STATUS};
use ferry_api::{Phase, VolumeChange, VolumeResizeSpec};
pub use request::{Reading, Request, Source, Subject, read, same_target, satisfied};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// A VolumeResize that names the StatefulSet.
#[derive(Debug, Clone, PartialEq)]
pub struct ResizeSummary {
    pub name: String,
    pub phase: Phase,
    pub volumes: Vec<VolumeChange>,
    pub message: Option<String>,
    pub progress: Option<String>,
}

impl ResizeSummary {
    fn active(&self) -> bool {
        !self.phase.is_terminal()
    }
}

/// A VolumeResize to create.
#[derive(Debug, Clone, PartialEq)]
pub struct NewResize {
    pub name: String,
    pub spec: VolumeResizeSpec,
    /// The `ferry.dev/trigger` label: where the request came from.
    pub trigger: &'static str,
}

/// An Event on the StatefulSet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub warning: bool,
    pub reason: &'static str,
    pub message: String,
}

/// What to write: annotation changes on the StatefulSet (`None` removes), then a VolumeResize to
/// create, and the Events to publish.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Decision {
    pub annotations: BTreeMap<String, Option<String>>,
    pub create: Option<NewResize>,
    pub notices: Vec<Notice>,
}

pub const REASON_REQUESTED: &str = "ResizeRequested";
pub const REASON_SUCCEEDED: &str = "ResizeSucceeded";
pub const REASON_FAILED: &str = "ResizeFailed";
pub const REASON_WAITING: &str = "ResizeWaiting";
pub const REASON_INVALID: &str = "ResizeRequestInvalid";
pub const REASON_UNCHANGED: &str = "ResizeNotNeeded";
pub const REASON_DEPRECATED: &str = "DeprecatedAnnotation";

/// The VolumeResize name a request gets: the StatefulSet's name, and a digest of its UID and the
/// changes, so the webhook, the operator and a restarted operator all name it the same, and a
/// request after a re-create (new UID) gets a new one. At most 63 characters (it is a label value).
pub fn resize_name(stateful_set: &str, uid: &str, changes: &[VolumeChange]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(uid.as_bytes());
    for change in changes {
        let bytes = request::positive_bytes(&change.size).unwrap_or_default();
        hasher.update(
            format!(
                "\0{}\0{bytes}\0{}",
                change.name,
                change.storage_class_name.as_deref().unwrap_or("")
            )
            .as_bytes(),
        );
    }
    let digest = crate::names::hex_digest(hasher, 4);
    let prefix: String = stateful_set.chars().take(44).collect();
    format!("{}-resize-{digest}", prefix.trim_end_matches(['-', '.']))
}

/// Decides the next writes for one StatefulSet from its request and the VolumeResizes naming it.
pub fn decide(subject: &Subject, resizes: &[ResizeSummary]) -> Decision {
    let mut decision = Decision::default();
    let status_before = subject.annotations.get(ANNOTATION_RESIZE_STATUS);
    let resize_by = subject.annotations.get(ANNOTATION_RESIZE_BY);
    let served = resize_by.and_then(|name| resizes.iter().find(|r| &r.name == name));

    let request = match read(subject) {
        Reading::Invalid { message } => {
            decision.set_status(status_before, "Invalid", &message, true, REASON_INVALID);
            return decision;
        }
        Reading::Nothing => {
            // Nothing asked any more (drift resolved, or the request removed by hand): report how
            // the VolumeResize ended, then forget it.
            if resize_by.is_some() {
                match served {
                    Some(served) if served.active() => {}
                    Some(served) => {
                        let what = request::describe(&served.volumes, &subject.templates);
                        decision.report_outcome(status_before, served, &what);
                        decision.annotations.insert(ANNOTATION_RESIZE_BY.into(), None);
                    }
                    None => {
                        decision.annotations.insert(ANNOTATION_RESIZE_BY.into(), None);
                    }
                }
            }
            return decision;
        }
        Reading::Request(request) => request,
    };
    let what = request::describe(&request.changes, &subject.templates);
    let drift_only = request.annotations.is_empty();

    if let Some(served) = served.filter(|r| same_target(&r.volumes, &request.changes)) {
        if served.phase == Phase::Succeeded {
            decision.finish(&request, drift_only);
        }
        decision.report_outcome(status_before, served, &what);
        return decision;
    }

    if satisfied(subject, &request) {
        decision.finish(&request, drift_only);
        let message = format!("{what}: already so, nothing to change; the request is removed");
        decision.set_status(status_before, "Unchanged", &message, false, REASON_UNCHANGED);
        return decision;
    }

    // A resize already under way for exactly this (created before a crash, or by hand): adopt it.
    if let Some(running) = resizes
        .iter()
        .find(|r| r.active() && same_target(&r.volumes, &request.changes))
    {
        decision
            .annotations
            .insert(ANNOTATION_RESIZE_BY.into(), Some(running.name.clone()));
        let message = format!("VolumeResize {} is changing {what}", running.name);
        decision.set_status(status_before, "Running", &message, false, REASON_REQUESTED);
        return decision;
    }
    // One resize at a time per StatefulSet: a newer request waits for the running one.
    if let Some(running) = resizes.iter().find(|r| r.active()) {
        let message = format!(
            "VolumeResize {} is working on this StatefulSet; {what} starts when it is done",
            running.name
        );
        decision.set_status(status_before, "Waiting", &message, false, REASON_WAITING);
        return decision;
    }

    let name = resize_name(&subject.name, &subject.uid, &request.changes);
    decision
        .annotations
        .insert(ANNOTATION_RESIZE_BY.into(), Some(name.clone()));
    let message = format!("VolumeResize {name} is changing {what}");
    decision.set_status(status_before, "Running", &message, false, REASON_REQUESTED);
    if resizes.iter().any(|r| r.name == name) {
        // Made before (a crash after the create, or a failure under the same UID): the next pass
        // reports on it instead of making another.
        return decision;
    }
    let trigger = request
        .sources
        .iter()
        .next()
        .copied()
        .unwrap_or(Source::Annotation);
    decision.create = Some(NewResize {
        name,
        spec: VolumeResizeSpec::for_volumes(&subject.name, request.changes.clone()),
        trigger: trigger.label(),
    });
    for key in request
        .annotations
        .iter()
        .filter(|key| key.starts_with(ferry_api::names::SEED_ANNOTATION_RESIZE_PREFIX))
    {
        let by_name = request
            .changes
            .iter()
            .map(|c| {
                format!(
                    "{}{}: {:?}",
                    ferry_api::names::ANNOTATION_RESIZE_PREFIX,
                    c.name,
                    c.size
                )
            })
            .collect::<Vec<_>>()
            .join(", ");
        decision.notices.push(Notice {
            warning: true,
            reason: REASON_DEPRECATED,
            message: format!(
                "{key} (template by index) is understood but deprecated; name the template instead: {by_name}"
            ),
        });
    }
    decision
}

impl Decision {
    /// The status of a VolumeResize that serves the request: running, succeeded or failed.
    fn report_outcome(&mut self, before: Option<&String>, served: &ResizeSummary, what: &str) {
        match served.phase {
            Phase::Succeeded => {
                let message = format!("VolumeResize {} changed {what}", served.name);
                self.set_status(before, "Succeeded", &message, false, REASON_SUCCEEDED);
            }
            Phase::Failed => {
                let message = format!(
                    "VolumeResize {} failed: {}; delete it to try again, or change the request",
                    served.name,
                    served.message.as_deref().unwrap_or("no message")
                );
                self.set_status(before, "Failed", &message, true, REASON_FAILED);
            }
            _ => {
                let message = format!(
                    "VolumeResize {} is changing {what}{}",
                    served.name,
                    served
                        .progress
                        .as_deref()
                        .map(|p| format!(" ({p} done)"))
                        .unwrap_or_default()
                );
                self.set_status(before, "Running", &message, false, REASON_REQUESTED);
            }
        }
    }

    /// The request is done: remove what carried it (drift has nothing to remove, and keeps
    /// `resize-by` so the same drift is not resized twice).
    fn finish(&mut self, request: &Request, drift_only: bool) {
        for key in &request.annotations {
            self.annotations.insert(key.clone(), None);
        }
        if !drift_only {
            self.annotations.insert(ANNOTATION_RESIZE_BY.into(), None);
        }
    }

    /// Writes `<state>: <message>` to the status annotation; an Event only when the state changes
    /// (progress updates are not news).
    fn set_status(
        &mut self,
        before: Option<&String>,
        state: &str,
        message: &str,
        warning: bool,
        reason: &'static str,
    ) {
        let value = format!("{state}: {message}");
        let state_before = before.and_then(|b| b.split_once(':')).map(|(state, _)| state);
        if state_before != Some(state) {
            self.notices.push(Notice {
                warning,
                reason,
                message: message.to_string(),
            });
        }
        if before != Some(&value) {
            self.annotations
                .insert(ANNOTATION_RESIZE_STATUS.into(), Some(value));
        }
    }
}
