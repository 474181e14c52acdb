//! Blue/green: which versions run, and where a Service sends traffic.

use super::{Moves, stale_after_update};
use crate::extended::action::ExtendedAction;
use crate::extended::observed::{LiveSet, Observation};
use crate::extended::rollout::{self, Step};
use crate::extended::versions::{LABEL_VERSION, Zone, annotated_version};
use std::collections::BTreeMap;

/// Each version and whether it runs (at least one pod of it).
pub(super) fn versions(zones: &[Zone], version: i64) -> BTreeMap<String, bool> {
    let mut versions = BTreeMap::from([(version.to_string(), false)]);
    for set in zones.iter().flat_map(|z| [z.old, z.new]).flatten() {
        let pods = set.object.status.as_ref().map_or(0, |s| s.replicas);
        if let Some(v) = annotated_version(&set.object) {
            let running = versions.entry(v.to_string()).or_insert(false);
            *running |= pods > 0;
        }
    }
    versions
}

/// Where the Service sends traffic: the new version once its canaries passed and a pod of it is
/// Ready, else the old one (the label value, `None` for a StatefulSet made before blue/green, whose
/// pods carry no version label).
pub(super) fn service_version(zones: &[Zone], plan: &rollout::Plan) -> Option<Option<String>> {
    let passed = match plan.progress.step {
        Step::Rest | Step::PostUpdate | Step::Done => true,
        Step::Stale => stale_after_update(&plan.progress),
        _ => false,
    };
    let label = |set: &LiveSet| {
        set.object
            .spec
            .as_ref()
            .and_then(|spec| spec.selector.match_labels.as_ref())
            .and_then(|labels| labels.get(LABEL_VERSION).cloned())
    };
    let new_ready = zones.iter().any(|z| {
        z.new
            .and_then(|n| n.object.status.as_ref())
            .is_some_and(|s| s.ready_replicas.unwrap_or(0) > 0)
    });
    let first = zones.first()?;
    if passed && new_ready || first.old.is_none() {
        return first.new.map(label);
    }
    first.old.map(label)
}

/// The Service's version selector pointed where traffic goes.
pub(super) fn switch_service(
    moves: &mut Moves,
    problems: &mut Vec<String>,
    service: &str,
    version: Option<Option<String>>,
    observation: &Observation,
) {
    let Some(version) = version else {
        return;
    };
    let Some(live) = observation.service.as_ref() else {
        problems.push(format!("Service {service} (updateStrategy.service) not found"));
        return;
    };
    let selected = live
        .spec
        .as_ref()
        .and_then(|spec| spec.selector.as_ref())
        .and_then(|selector| selector.get(LABEL_VERSION).cloned());
    if selected != version {
        moves.actions.push(ExtendedAction::SelectVersion {
            service: service.to_string(),
            version,
        });
    }
}
