//! The autoscaler's one entry point, [`plan`]: the VolumeAutoscaler and what the operator read for
//! each StatefulSet and volume it governs → each volume's status, the VolumeResizes to make, the
//! Events, and what each decision counts in the metrics.

pub use super::action::AutoscaleAction;
use super::measure::{self, Measurement, Target};
use super::record::{self, Made, Notice};
use super::request::{Grow, decision_annotations, resize_name, resize_spec};
use super::situation::{Facts, Replicas, situation, template_size};
use super::{Policy, Reading, Reason, Situation, Verdict, autoresizer, decide, policy, streaks};
use ferry_api::listed::Listing;
use ferry_api::{AutoscaledVolume, AutoscaledVolumeStatus, VolumeAutoscaler};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Toleration};
use k8s_openapi::api::storage::v1::StorageClass;
use std::collections::BTreeMap;

/// What the plan works from besides the cluster.
pub struct Input<'a> {
    pub autoscaler: &'a VolumeAutoscaler,
    /// Why usage cannot be read, when it cannot (the feature switched off): nothing is decided.
    pub usage_not_read: Option<&'a str>,
    pub now: i64,
}

/// One volume of one StatefulSet as read.
#[derive(Debug, Clone, Default)]
pub struct VolumeObservation {
    /// The largest size its claims ask for.
    pub largest_claim: u64,
    /// Usage per replica, from the kubelets of the nodes its pods run on (or Prometheus).
    pub readings: Vec<Reading>,
    /// Why the usage source could not answer, when it could not (a node's kubelet, Prometheus).
    pub usage_unreadable: Option<String>,
    /// The usage pods this autoscaler runs on the volume's claims (a rescue's measurements).
    pub measurements: Vec<Measurement>,
    /// Its claims of the StatefulSet's replicas (those that exist): whether another autoscaler
    /// manages them.
    pub claims: Vec<PersistentVolumeClaim>,
}

/// One governed StatefulSet as read.
#[derive(Debug, Clone, Default)]
pub struct SetObservation {
    pub object: StatefulSet,
    pub replicas: Replicas,
    /// By volume name (the autoscaler's volumes).
    pub volumes: BTreeMap<String, VolumeObservation>,
}

/// What the operator read for one VolumeAutoscaler.
#[derive(Debug, Clone)]
pub struct Observation {
    /// The VolumeResizes of the namespace, from the API server (a resize made in the last pass
    /// must be seen in this one).
    pub resizes: Listing,
    /// The StatefulSets it governs, or why it governs none.
    pub stateful_sets: Result<Vec<SetObservation>, String>,
    /// The StorageClasses, read when a claim carries pvc-autoresizer's storage limit (else empty).
    pub storage_classes: Vec<StorageClass>,
}

/// What one volume's decision was, for the metrics and the log.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    pub stateful_set: String,
    pub volume: String,
    /// Its fullest replica's used share, when any was read.
    pub fullest: Option<f64>,
    pub outcome: Outcome,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Resized {
        resize: String,
        reason: Reason,
        replicas: Vec<i32>,
    },
    /// Skipped, and why (the skip's metric label).
    Skipped(&'static str),
}

/// What to do now, and what the status will say.
#[derive(Debug, Clone, Default)]
pub struct Decision {
    /// Each volume's status, in the order of the StatefulSets and the autoscaler's volumes.
    pub volumes: Vec<AutoscaledVolumeStatus>,
    pub actions: Vec<AutoscaleAction>,
    /// Events, each for the autoscaler and (named) its StatefulSet.
    pub notices: Vec<(Notice, Option<String>)>,
    pub judged: Vec<Judged>,
    /// Volumes that could be much smaller with the data on them now (the `ShrinkRecommended`
    /// condition's message), whether or not anything shrinks them.
    pub shrink_recommended: Vec<String>,
}

/// Every volume of every StatefulSet the autoscaler governs, judged on its own.
pub fn plan(input: Input, observation: &Observation) -> Decision {
    let autoscaler = input.autoscaler;
    let mut decision = Decision::default();
    let sets = match &observation.stateful_sets {
        Ok(sets) => sets,
        Err(message) => {
            // Ferry's own resize re-creates the StatefulSet: absent for a moment, not a mistake.
            // (An unreadable one that may be at work on it is assumed to be doing the same.) An
            // autoscaler that targets by selector or owner looks for its own running resizes.
            let (named, working) = match &autoscaler.spec.stateful_set_name {
                Some(named) => (named.clone(), observation.resizes.working_on(named)),
                None => match own_running_resize(autoscaler, &observation.resizes) {
                    Some((named, resize)) => (named, Some(resize)),
                    None => (String::new(), None),
                },
            };
            let message = match working {
                Some(resize) => format!("VolumeResize {resize} is re-creating the StatefulSet"),
                None => message.clone(),
            };
            for volume in &autoscaler.spec.volumes {
                let previous = previous_of(autoscaler, &named, &volume.name);
                let status = record::invalid(previous, &named, &volume.name, message.clone());
                decision.volumes.push(status);
            }
            return decision;
        }
    };
    for set in sets {
        for volume in &autoscaler.spec.volumes {
            one_volume(&input, observation, set, volume, &mut decision);
        }
    }
    decision
}

/// The status an earlier pass recorded for this volume.
/// The StatefulSet and name of a resize this autoscaler made that has not ended, if one has not.
fn own_running_resize(
    autoscaler: &VolumeAutoscaler,
    resizes: &ferry_api::listed::Listing,
) -> Option<(String, String)> {
    let uid = autoscaler.metadata.uid.as_deref()?;
    resizes
        .readable
        .iter()
        .find(|resize| {
            !resize.phase().is_terminal()
                && resize
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|labels| labels.get(ferry_api::names::LABEL_AUTOSCALER_UID))
                    == Some(&uid.to_string())
        })
        .map(|resize| {
            let name = resize.metadata.name.clone().unwrap_or_default();
            (resize.spec.stateful_set_name.clone(), name)
        })
}

fn previous_of<'a>(
    autoscaler: &'a VolumeAutoscaler,
    stateful_set: &str,
    volume: &str,
) -> Option<&'a AutoscaledVolumeStatus> {
    autoscaler.status.as_ref().and_then(|status| {
        status
            .volumes
            .iter()
            .find(|v| v.stateful_set == stateful_set && v.name == volume)
    })
}

/// Policy → usage → situation → verdict → the grow's VolumeResize → the volume's status.
fn one_volume(
    input: &Input,
    observation: &Observation,
    set: &SetObservation,
    volume: &AutoscaledVolume,
    decision: &mut Decision,
) {
    let sts = set.object.metadata.name.clone().unwrap_or_default();
    let previous = previous_of(input.autoscaler, &sts, &volume.name);
    if left_to_autoresizer(observation, set, &sts, volume, previous, decision) {
        return;
    }
    let (policy, situation) = match judged(input, observation, set, volume, previous) {
        Ok(judged) => judged,
        Err(status) => {
            decision.volumes.push(*status);
            return;
        }
    };
    let verdict = decide(&policy, &situation);
    let (outcome, made) = carried_out(input, &sts, volume, &situation, &verdict, decision);
    // A resize takes over from the measurements (a finished usage pod still holds its claim
    // against deletion, which a copy's swap needs).
    let superseded = matches!(verdict, Verdict::Grow { .. } | Verdict::Shrink { .. })
        || situation.resize_running.is_some();
    decision
        .actions
        .extend(measure_actions(input, set, volume, &situation, superseded));
    if let Some(line) = record::shrink_recommendation(&sts, &volume.name, &policy, &situation) {
        decision.shrink_recommended.push(line);
    }
    let made = made.as_ref().map(|(resize, to)| Made {
        resize,
        from: situation.current_size,
        to: *to,
    });
    let (status, notices) = record::record(
        previous,
        &sts,
        &volume.name,
        &policy,
        &situation,
        &verdict,
        made.as_ref(),
    );
    decision.volumes.push(status);
    decision
        .notices
        .extend(notices.into_iter().map(|notice| (notice, Some(sts.clone()))));
    decision.judged.push(Judged {
        stateful_set: sts,
        volume: volume.name.clone(),
        fullest: fullest(&situation.readings),
        outcome,
    });
}

/// What the verdict comes to: a resize asked for (its name and size), or the skip.
fn carried_out(
    input: &Input,
    sts: &str,
    volume: &AutoscaledVolume,
    situation: &Situation,
    verdict: &Verdict,
    decision: &mut Decision,
) -> (Outcome, Option<(String, u64)>) {
    // A grow's name follows the last grow; a shrink's the newer of the last grow and shrink.
    let (to, reason, replicas, previous) = match verdict {
        Verdict::Grow {
            to, reason, replicas, ..
        } => (*to, *reason, replicas.clone(), situation.history.last().copied()),
        Verdict::Shrink { to } => (
            *to,
            Reason::Shrink,
            situation.replicas.clone(),
            situation.last_shrink.max(situation.history.last().copied()),
        ),
        Verdict::Skip(skip) => return (Outcome::Skipped(skip.label()), None),
    };
    let grow = Grow {
        autoscaler_uid: input.autoscaler.metadata.uid.as_deref().unwrap_or_default(),
        stateful_set: sts,
        volume: &volume.name,
        to_bytes: to,
        reason,
        strategy: volume.strategy.unwrap_or_default(),
        previous_grow: previous,
    };
    let name = resize_name(&grow);
    decision.actions.push(AutoscaleAction::CreateVolumeResize {
        stateful_set: sts.to_string(),
        name: name.clone(),
        spec: Box::new(resize_spec(&grow)),
        annotations: decision_annotations(situation.current_size, reason),
    });
    let outcome = Outcome::Resized {
        resize: name.clone(),
        reason,
        replicas,
    };
    (outcome, Some((name, to)))
}

/// Whether pvc-autoresizer manages the volume's claims: then Ferry leaves it alone rather than
/// grow it twice, says so in status, and with an Event when that starts.
fn left_to_autoresizer(
    observation: &Observation,
    set: &SetObservation,
    sts: &str,
    volume: &AutoscaledVolume,
    previous: Option<&AutoscaledVolumeStatus>,
    decision: &mut Decision,
) -> bool {
    let Some(read) = set.volumes.get(&volume.name) else {
        return false;
    };
    let Some(message) = autoresizer::refusal(&read.claims, &observation.storage_classes) else {
        return false;
    };
    // No rescue measurement of a volume Ferry does not grow.
    decision.actions.extend(measure::remove_all(&read.measurements));
    let (status, notice) = record::left_to_autoresizer(previous, sts, &volume.name, message);
    decision.volumes.push(status);
    decision
        .notices
        .extend(notice.map(|notice| (notice, Some(sts.to_string()))));
    decision.judged.push(Judged {
        stateful_set: sts.to_string(),
        volume: volume.name.clone(),
        fullest: None,
        outcome: Outcome::Skipped(record::STATE_LEFT_TO_AUTORESIZER_LABEL),
    });
    true
}

/// The volume's policy and situation, or the status that says why nothing can be decided (a
/// policy that does not parse, usage not read, a template without a size).
fn judged(
    input: &Input,
    observation: &Observation,
    set: &SetObservation,
    volume: &AutoscaledVolume,
    previous: Option<&AutoscaledVolumeStatus>,
) -> Result<(Policy, Situation), Box<AutoscaledVolumeStatus>> {
    let sts = set.object.metadata.name.as_deref().unwrap_or_default();
    let invalid = |message| Box::new(record::invalid(previous, sts, &volume.name, message));
    let policy = policy::from_spec(volume).map_err(invalid)?;
    if let Some(why) = input.usage_not_read {
        let status = record::usage_not_read(previous, sts, &volume.name, why.to_string());
        return Err(Box::new(status));
    }
    let template_size = template_size(&set.object, &volume.name).map_err(invalid)?;
    let read = set.volumes.get(&volume.name).cloned().unwrap_or_default();
    let measured = measure::readings(&read.measurements, &read.readings, input.now);
    let mut readings = read.readings;
    readings.extend(measured);
    let mut situation = situation(Facts {
        sts,
        volume: &volume.name,
        current_size: template_size.max(read.largest_claim),
        replicas: &set.replicas,
        readings,
        resizes: &observation.resizes,
        recorded_history: previous
            .map(|p| p.history.iter().map(|at| at.0.as_second()).collect())
            .unwrap_or_default(),
        recorded_last_shrink: recorded_time(previous.and_then(|p| p.last_shrink_at.as_ref())),
        now: input.now,
    });
    situation.usage_unreadable = read.usage_unreadable;
    let windows = crate::windows::parse(&input.autoscaler.spec.maintenance_windows).map_err(invalid)?;
    situation.window = crate::windows::state(&windows, input.now);
    situation.rescue_outside_windows = input.autoscaler.spec.rescue_outside_windows;
    streaks::update(
        &policy,
        &mut situation,
        recorded_time(previous.and_then(|p| p.over_threshold_since.as_ref())),
        recorded_time(previous.and_then(|p| p.below_shrink_since.as_ref())),
    );
    Ok((policy, situation))
}

fn recorded_time(time: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>) -> Option<i64> {
    time.map(|time| time.0.as_second())
}

/// The usage pods to make and delete for the volume's rescue measurements.
fn measure_actions(
    input: &Input,
    set: &SetObservation,
    volume: &AutoscaledVolume,
    situation: &Situation,
    superseded: bool,
) -> Vec<AutoscaleAction> {
    let sts = set.object.metadata.name.as_deref().unwrap_or_default();
    let measurements = set
        .volumes
        .get(&volume.name)
        .map(|read| read.measurements.as_slice())
        .unwrap_or_default();
    if superseded {
        return measure::remove_all(measurements);
    }
    let pod_spec = (set.object.spec.as_ref()).and_then(|spec| spec.template.spec.as_ref());
    let tolerations: Vec<Toleration> = pod_spec
        .and_then(|pod| pod.tolerations.clone())
        .unwrap_or_default();
    let run_as = pod_spec.and_then(crate::pods::run_as);
    let targets = situation
        .unmeasured_crashes
        .iter()
        .map(|&replica| {
            let node = set
                .replicas
                .pods
                .get(&replica)
                .and_then(|pod| pod.spec.as_ref()?.node_name.clone());
            let target = Target {
                claim: crate::names::claim(&volume.name, sts, replica),
                node,
                tolerations: tolerations.clone(),
                run_as: run_as.clone(),
            };
            (replica, target)
        })
        .collect();
    let uid = input.autoscaler.metadata.uid.as_deref().unwrap_or_default();
    measure::actions(uid, measurements, &targets, input.now)
}

/// The fullest replica's used share, when any was read.
fn fullest(readings: &[Reading]) -> Option<f64> {
    readings
        .iter()
        .filter(|r| r.capacity_bytes > 0)
        .map(|r| r.used_bytes as f64 / r.capacity_bytes as f64)
        .fold(None, |most: Option<f64>, ratio| {
            Some(most.map_or(ratio, |m| m.max(ratio)))
        })
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
