//! The pre- and post-update Jobs of a version: their names, the object made from the
//! ExtendedStatefulSet's template, and where one stands.

use super::action::ExtendedAction;
use super::desired::{LABEL_EXTENDED, owner};
use super::rollout::{self, Hook, JobState, Progress, Step};
use ferry_api::ExtendedStatefulSet;
use k8s_openapi::api::batch::v1::Job;
use std::collections::BTreeMap;

/// The name of version `version`'s `hook` Job of ExtendedStatefulSet `ests`.
pub fn job_name(ests: &str, hook: Hook, version: i64) -> String {
    match hook {
        Hook::PreUpdate => format!("{ests}-pre-update-v{version}"),
        Hook::PostUpdate => format!("{ests}-post-update-v{version}"),
    }
}

/// The Job the step recorded waits on, when it waits on one.
pub fn job_to_read(ests: &str, progress: &Progress) -> Option<String> {
    match progress.step {
        Step::PreUpdate => Some(job_name(ests, Hook::PreUpdate, progress.version)),
        Step::PostUpdate => Some(job_name(ests, Hook::PostUpdate, progress.version)),
        _ => None,
    }
}

/// Where a Job stands, from its conditions.
pub fn job_state(job: Option<&Job>) -> JobState {
    let Some(job) = job else {
        return JobState::Absent;
    };
    let holds = |type_: &str| {
        job.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == type_ && c.status == "True"))
    };
    if holds("Complete") {
        JobState::Succeeded
    } else if holds("Failed") {
        JobState::Failed
    } else {
        JobState::Running
    }
}

/// Version `version`'s `hook` Job from its template, owned by the ExtendedStatefulSet; without a
/// `backoffLimit` of its own, `retryCount` (default 0) is it. `None` without a template.
pub fn hook_job(ests: &ExtendedStatefulSet, hook: Hook, version: i64) -> Option<Job> {
    let template = match hook {
        Hook::PreUpdate => ests.spec.pre_update.clone(),
        Hook::PostUpdate => ests.spec.post_update.clone(),
    }?;
    let name = ests.metadata.name.clone().unwrap_or_default();
    let mut spec = template.spec.unwrap_or_default();
    if spec.backoff_limit.is_none() {
        spec.backoff_limit = Some(
            ests.spec
                .update_strategy
                .as_ref()
                .and_then(|s| s.retry_count)
                .unwrap_or(0),
        );
    }
    let mut metadata = template.metadata.unwrap_or_default();
    metadata.name = Some(job_name(&name, hook, version));
    metadata.namespace = ests.metadata.namespace.clone();
    metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(LABEL_EXTENDED.to_string(), name);
    metadata.owner_references = owner(ests).map(|owner| vec![owner]);
    Some(Job {
        metadata,
        spec: Some(spec),
        status: None,
    })
}

/// The current version's hook Job the rollout asks for, or why it cannot be made (a problem).
pub(super) fn hook_actions(
    ests: &ExtendedStatefulSet,
    rollout: &rollout::Plan,
    hooks_off: Option<&str>,
    problems: &mut Vec<String>,
) -> Vec<ExtendedAction> {
    let Some(hook) = rollout.create_job else {
        return Vec::new();
    };
    let version = rollout.progress.version;
    if let Some(why) = hooks_off {
        let name = ests.metadata.name.as_deref().unwrap_or_default();
        problems.push(format!("{}: not created: {why}", job_name(name, hook, version)));
        return Vec::new();
    }
    hook_job(ests, hook, version)
        .map(|job| ExtendedAction::CreateHookJob { job: Box::new(job) })
        .into_iter()
        .collect()
}
