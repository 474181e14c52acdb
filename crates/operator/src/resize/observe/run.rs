//! The run's part of an observation: what a running resize acts on (the backup, claims, pods,
//! mover pods, budgets, volumes).

use super::views::{claim_view, pod_view, volume_view};
use crate::Error;
use crate::resize::Resizing;
use crate::resize::apply::objects::{MOVER_CONTAINER, SERVING_PASS, backup_name, uid_suffix};
use ferry_api::names::{
    ANNOTATION_BACKED_UP_UID, ANNOTATION_FINAL_PASS, ANNOTATION_RECREATED_BY, FINAL_PASS_GO, LABEL_MOVER_PASS,
};
use ferry_api::{VolumePlan, VolumeResize};
use ferry_engine::resize::action::Pass;
use ferry_engine::resize::copy::{is_result_line, mover_name, temp_claim_name, usage_pod_name};
use ferry_engine::resize::{MoverPhase, MoverView, Observed};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::LogParams;
use kube::core::{Selector, SelectorExt};
use kube::runtime::reflector::ObjectRef;
use kube::{Api, ResourceExt};
use std::collections::BTreeMap;

/// The objects a run reads, fetched together: a reconcile in the replica's downtime waits for one
/// round trip, not one per list.
pub struct RunReads {
    backup: Option<ConfigMap>,
    claims: Vec<PersistentVolumeClaim>,
    pods: Vec<Pod>,
    budgets: Vec<PodDisruptionBudget>,
    /// The volumes the plan records, by name (`None`: not found), read beside the lists.
    recorded_volumes: Vec<(String, Option<PersistentVolume>)>,
}

/// Reads the backup, the namespace's claims, pods and PodDisruptionBudgets, and the volumes the
/// plan records, at once.
pub async fn fetch_run(ctx: &Resizing, resize: &VolumeResize, namespace: &str) -> Result<RunReads, Error> {
    let backup_api = Api::<ConfigMap>::namespaced(ctx.client.clone(), namespace);
    let claims_api = Api::<PersistentVolumeClaim>::namespaced(ctx.client.clone(), namespace);
    let pods_api = Api::<Pod>::namespaced(ctx.client.clone(), namespace);
    let budgets_api = Api::<PodDisruptionBudget>::namespaced(ctx.client.clone(), namespace);
    let name = backup_name(resize);
    let resize_name = resize.name_any();
    let floors = &ctx.read_floors;
    let volumes_api = Api::<PersistentVolume>::all(ctx.client.clone());
    let recorded = recorded_volume_names(resize);
    let (backup, claims, pods, budgets, volumes) = futures::try_join!(
        backup_api.get_opt(&name),
        floors.list(&claims_api, namespace, &resize_name),
        floors.list(&pods_api, namespace, &resize_name),
        floors.list(&budgets_api, namespace, &resize_name),
        futures::future::try_join_all(recorded.iter().map(|name| volumes_api.get_opt(name))),
    )?;
    Ok(RunReads {
        backup,
        claims,
        pods,
        budgets,
        recorded_volumes: recorded.into_iter().zip(volumes).collect(),
    })
}

/// What a run puts into `observed` (the StatefulSet's view is there already) from `reads`: the
/// backup, the plan's claims and Ferry's temporary ones, the replicas' pods, Ferry's mover pods with
/// their progress, the PodDisruptionBudgets over the replicas, and the volumes this resize may touch
/// (read here, together, as are the progress lines).
pub async fn read_run(
    ctx: &Resizing,
    resize: &VolumeResize,
    namespace: &str,
    stateful_set: Option<&StatefulSet>,
    mut reads: RunReads,
    observed: &mut Observed,
) -> Result<(), Error> {
    let recorded = std::mem::take(&mut reads.recorded_volumes);
    sort_reads(resize, stateful_set, reads, observed);
    super::clone_failures::read(&ctx.client, resize, namespace, observed).await;
    // Only a claim bound to a volume the plan does not record yet costs a second round trip.
    let volume_names: Vec<String> = claimed_volume_names(observed)
        .into_iter()
        .filter(|name| !recorded.iter().any(|(known, _)| known == name))
        .collect();
    let progressing = progressing(resize, observed);
    let pods_api = Api::<Pod>::namespaced(ctx.client.clone(), namespace);
    let volumes_api = Api::<PersistentVolume>::all(ctx.client.clone());
    // A result its follower already read is the log's last line: no second read through the kubelet.
    let known: Vec<Option<String>> = progressing
        .iter()
        .map(|name| {
            let uid = observed.movers.get(name).map(|mover| mover.uid.as_str());
            uid.and_then(|uid| ctx.results.take_result(uid))
        })
        .collect();
    let (volumes, progress) = futures::join!(
        futures::future::try_join_all(volume_names.iter().map(|name| volumes_api.get_opt(name))),
        futures::future::join_all(progressing.iter().zip(known).map(|(name, known)| async {
            match known {
                Some(line) => Some(line),
                None => last_progress_line(&pods_api, name).await,
            }
        })),
    );
    let resize_ref = ObjectRef::new(&resize.name_any()).within(namespace);
    for (name, line) in progressing.into_iter().zip(progress) {
        let Some(mover) = observed.movers.get_mut(&name) else {
            continue;
        };
        if line.as_deref().is_some_and(is_result_line) {
            // Its pass is over, synced and verified: that is the outcome, before the kubelet
            // notices the container's exit.
            mover.phase = MoverPhase::Succeeded;
            mover.result = line;
        } else {
            mover.progress = line;
            ctx.results
                .follow(&pods_api, &name, &mover.uid, resize_ref.clone());
        }
    }
    // A standby final mover running: open the stream its go may come by, while the replica serves
    // (which waits for it to open).
    for (name, mover) in &mut observed.movers {
        if mover.awaiting_go && mover.phase == MoverPhase::Running {
            ctx.direct_go
                .attach(&pods_api, namespace, name, resize_ref.clone());
            mover.go_stream_opening = ctx.direct_go.opening(namespace, name);
        }
    }
    for (name, volume) in recorded.into_iter().chain(volume_names.into_iter().zip(volumes?)) {
        // Only a volume bound (or reserved) to a claim of this namespace is this resize's to touch:
        // a name in status never reaches a PV of someone else's namespace.
        if let Some(volume) = volume
            && claimed_in(&volume, namespace)
        {
            observed.volumes.insert(name, volume_view(&volume));
        }
    }
    Ok(())
}

/// The rows of the resize's plan (none before its prechecks).
fn plan_of(resize: &VolumeResize) -> &[VolumePlan] {
    resize
        .status
        .as_ref()
        .map(|s| s.plan.as_slice())
        .unwrap_or_default()
}

/// What of the namespace's lists is this run's: the backup, the plan's claims and Ferry's
/// temporary ones, the replicas' pods, the movers, and the budgets over the replicas.
fn sort_reads(
    resize: &VolumeResize,
    stateful_set: Option<&StatefulSet>,
    reads: RunReads,
    observed: &mut Observed,
) {
    let sts_name = &resize.spec.stateful_set_name;
    let RunReads {
        backup,
        claims,
        pods,
        budgets,
        recorded_volumes: _,
    } = reads;
    observed.backup_exists = backup.is_some();
    let backed_up_uid = backup
        .as_ref()
        .and_then(|b| b.annotations().get(ANNOTATION_BACKED_UP_UID).cloned());
    if let (Some(sts), Some(view)) = (stateful_set, observed.stateful_set.as_mut()) {
        view.foreign = foreign(sts, backed_up_uid.as_deref(), resize.uid().as_deref());
    }
    let plan = plan_of(resize);
    let suffix = uid_suffix(resize);
    let claim_names: Vec<String> = plan
        .iter()
        .flat_map(|row| [row.claim_name.clone(), temp_claim_name(row, &suffix)])
        .collect();
    observed.claims = claims
        .into_iter()
        .filter(|claim| claim_names.contains(&claim.name_any()))
        .map(|claim| (claim.name_any(), claim_view(&claim)))
        .collect();
    let pod_names: Vec<String> = plan
        .iter()
        .map(|row| ferry_engine::names::pod(sts_name, row.replica))
        .collect();
    let mover_names: Vec<String> = plan
        .iter()
        .flat_map(|row| {
            [
                mover_name(row, &suffix, Pass::Warm),
                mover_name(row, &suffix, Pass::Final),
                usage_pod_name(row, &suffix),
                ferry_engine::names::serving_mover(&row.claim_name, &suffix),
            ]
        })
        .collect();
    let mut pod_labels = BTreeMap::new();
    for pod in pods {
        let name = pod.name_any();
        if pod_names.contains(&name) {
            pod_labels = pod.labels().clone();
            observed.pods.insert(name, pod_view(&pod));
        } else if mover_names.contains(&name) {
            observed.movers.insert(name, mover_view(&pod));
        }
    }
    observed.disruptions_allowed = if pod_labels.is_empty() {
        None
    } else {
        budgets
            .iter()
            .filter(|budget| budget_selects(budget, &pod_labels))
            .map(|budget| budget.status.as_ref().map(|s| s.disruptions_allowed).unwrap_or(0))
            .min()
    };
}

/// The volumes the plan recorded, each once.
fn recorded_volume_names(resize: &VolumeResize) -> Vec<String> {
    let mut names: Vec<String> = plan_of(resize)
        .iter()
        .flat_map(|row| [row.source_volume.clone(), row.target_volume.clone()])
        .flatten()
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The volumes the observed claims are bound to, each once.
fn claimed_volume_names(observed: &Observed) -> Vec<String> {
    let mut names: Vec<String> = (observed.claims.values())
        .filter_map(|claim| claim.volume_name.clone())
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The movers making a pass: a mover waiting on standby prints nothing, and a usage pod's one
/// line is its result.
fn progressing(resize: &VolumeResize, observed: &Observed) -> Vec<String> {
    let suffix = uid_suffix(resize);
    let usage_names: Vec<String> = plan_of(resize)
        .iter()
        .map(|row| usage_pod_name(row, &suffix))
        .collect();
    observed
        .movers
        .iter()
        .filter(|(name, mover)| {
            mover.phase == MoverPhase::Running && !mover.awaiting_go && !usage_names.contains(name)
        })
        .map(|(name, _)| name.clone())
        .collect()
}

/// Whether a PodDisruptionBudget's selector picks pods with these labels. An empty selector picks
/// every pod of the namespace, as in the disruption controller; one this Ferry cannot parse (an
/// operator the API server would not accept) is taken to pick them, so the budget is respected.
fn budget_selects(budget: &PodDisruptionBudget, labels: &BTreeMap<String, String>) -> bool {
    let Some(selector) = budget.spec.as_ref().and_then(|s| s.selector.clone()) else {
        return false;
    };
    Selector::try_from(selector)
        .ok()
        .is_none_or(|selector| selector.matches(labels))
}

/// The volume's claimRef points into `namespace`.
pub fn claimed_in(volume: &PersistentVolume, namespace: &str) -> bool {
    volume
        .spec
        .as_ref()
        .and_then(|s| s.claim_ref.as_ref())
        .and_then(|c| c.namespace.as_deref())
        == Some(namespace)
}

/// The last line a running mover printed (its latest progress), from the pod's log. Progress is
/// only shown, never acted on, so a log that cannot be read yet (container starting, a kubelet that
/// does not serve logs) just leaves the last figures in status.
async fn last_progress_line(pods: &Api<Pod>, name: &str) -> Option<String> {
    let params = LogParams {
        container: Some(MOVER_CONTAINER.to_string()),
        tail_lines: Some(1),
        limit_bytes: Some(4096),
        ..LogParams::default()
    };
    match pods.logs(name, &params).await {
        Ok(text) => text.lines().last().map(str::to_string),
        Err(error) => {
            tracing::debug!(pod = name, %error, "mover progress not readable yet");
            None
        }
    }
}

fn mover_view(pod: &Pod) -> MoverView {
    let status = pod.status.as_ref();
    let terminated = status
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|statuses| statuses.first())
        .and_then(|c| c.state.as_ref())
        .and_then(|state| state.terminated.clone());
    let message = terminated.as_ref().and_then(|t| t.message.clone());
    // The mover's one container has ended: that is the outcome. The pod's phase follows only after
    // the kubelet's next status sync and its sandbox is stopped (a second or two on a real node,
    // all of it replica downtime for a final pass).
    let phase = match (
        terminated.as_ref().map(|t| t.exit_code),
        status.and_then(|s| s.phase.as_deref()),
    ) {
        (Some(0), _) | (None, Some("Succeeded")) => MoverPhase::Succeeded,
        (Some(exit_code), _) => MoverPhase::Failed {
            exit_code,
            message: message.clone().unwrap_or_default(),
        },
        (None, Some("Failed")) => MoverPhase::Failed {
            exit_code: -1,
            message: String::new(),
        },
        (None, Some("Running")) => MoverPhase::Running,
        _ => MoverPhase::Waiting,
    };
    // A final mover waits on standby while its annotation is there and not yet `go` (one made by an
    // earlier Ferry, without the annotation, began its pass when it was created).
    let awaiting_go = pod
        .annotations()
        .get(ANNOTATION_FINAL_PASS)
        .is_some_and(|go| go != FINAL_PASS_GO);
    MoverView {
        phase,
        uid: pod.uid().unwrap_or_default(),
        awaiting_go,
        // A standby tracking changes turns Ready (its readiness probe) once it has caught up.
        armed: ferry_engine::pods::ready(pod),
        // Set by the run's observer, which knows the operator's streams.
        go_stream_opening: false,
        serving: pod.labels().get(LABEL_MOVER_PASS).map(String::as_str) == Some(SERVING_PASS),
        pod_ip: status.and_then(|s| s.pod_ip.clone()),
        result: message,
        progress: None,
        stuck: stuck_reason(pod),
        created: pod.metadata.creation_timestamp.clone(),
    }
}

/// Container states in which a pod waits for something that will not come by itself.
const HOPELESS_WAITS: [&str; 5] = [
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "CreateContainerConfigError",
    "CreateContainerError",
];

/// Why a pending pod cannot run: the scheduler finds no node for it, or its container cannot start.
fn stuck_reason(pod: &Pod) -> Option<String> {
    let status = pod.status.as_ref()?;
    let unschedulable = status.conditions.iter().flatten().find(|c| {
        c.type_ == "PodScheduled" && c.status == "False" && c.reason.as_deref() == Some("Unschedulable")
    });
    if let Some(condition) = unschedulable {
        return Some(format!(
            "Unschedulable: {}",
            condition.message.clone().unwrap_or_default()
        ));
    }
    status
        .container_statuses
        .iter()
        .flatten()
        .filter_map(|c| c.state.as_ref()?.waiting.as_ref())
        .find(|waiting| {
            waiting
                .reason
                .as_deref()
                .is_some_and(|reason| HOPELESS_WAITS.contains(&reason))
        })
        .map(|waiting| {
            format!(
                "{}: {}",
                waiting.reason.clone().unwrap_or_default(),
                waiting.message.clone().unwrap_or_default()
            )
        })
}

/// Created by someone else while the resize ran: its UID is neither the one Ferry backed up
/// (`backed_up_uid`, none before the backup) nor one of Ferry's own re-creates (annotated with the
/// resize's UID).
fn foreign(sts: &StatefulSet, backed_up_uid: Option<&str>, resize_uid: Option<&str>) -> bool {
    let recreated_by = sts.annotations().get(ANNOTATION_RECREATED_BY).map(String::as_str);
    backed_up_uid.is_some_and(|original| {
        sts.uid().as_deref() != Some(original) && (recreated_by.is_none() || recreated_by != resize_uid)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(phase: &str, terminated: Option<(i32, &str)>) -> Pod {
        let state = match terminated {
            Some((exit_code, message)) => json!({"terminated": {"exitCode": exit_code, "message": message}}),
            None => json!({"running": {}}),
        };
        serde_json::from_value(json!({
            "metadata": {"name": "m"},
            "status": {"phase": phase, "containerStatuses": [{
                "name": "mover", "image": "i", "imageID": "", "ready": false, "restartCount": 0, "state": state,
            }]},
        }))
        .unwrap()
    }

    #[test]
    fn a_mover_is_done_when_its_container_ends_not_when_the_pod_phase_follows() {
        let done = mover_view(&pod("Running", Some((0, r#"{"files":1}"#))));
        assert_eq!(done.phase, MoverPhase::Succeeded);
        assert_eq!(done.result.as_deref(), Some(r#"{"files":1}"#));
        let failed = mover_view(&pod("Running", Some((3, "verify mismatch"))));
        assert_eq!(
            failed.phase,
            MoverPhase::Failed {
                exit_code: 3,
                message: "verify mismatch".into()
            }
        );
        assert_eq!(mover_view(&pod("Running", None)).phase, MoverPhase::Running);
        assert_eq!(
            mover_view(&pod("Succeeded", Some((0, "")))).phase,
            MoverPhase::Succeeded
        );
        assert_eq!(mover_view(&pod("Pending", None)).phase, MoverPhase::Waiting);
    }

    /// A standby is armed when its pod is Ready (its readiness probe passed), not merely running.
    #[test]
    fn a_mover_is_armed_when_its_pod_is_ready() {
        let mut running = pod("Running", None);
        assert!(!mover_view(&running).armed);
        let conditions =
            |ready: &str| serde_json::from_value(json!([{"type": "Ready", "status": ready}])).unwrap();
        let status = running.status.as_mut().unwrap();
        status.conditions = Some(conditions("False"));
        assert!(!mover_view(&running).armed);
        running.status.as_mut().unwrap().conditions = Some(conditions("True"));
        assert!(mover_view(&running).armed);
    }

    fn budget(selector: serde_json::Value) -> PodDisruptionBudget {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "db"},
            "spec": {"maxUnavailable": 0, "selector": selector},
        }))
        .unwrap()
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_budget_selects_pods_as_the_disruption_controller_does() {
        let db = labels(&[("app", "db"), ("tier", "data")]);
        let selects = |selector| budget_selects(&budget(selector), &db);
        assert!(
            selects(serde_json::json!({})),
            "an empty selector picks every pod"
        );
        assert!(selects(serde_json::json!({"matchLabels": {"app": "db"}})));
        assert!(!selects(serde_json::json!({"matchLabels": {"app": "web"}})));
        assert!(selects(serde_json::json!({"matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["data", "cache"]},
            {"key": "zone", "operator": "DoesNotExist"},
        ]})));
        assert!(!selects(serde_json::json!({"matchExpressions": [
            {"key": "tier", "operator": "NotIn", "values": ["data"]},
        ]})));
        assert!(!selects(serde_json::json!({"matchExpressions": [
            {"key": "zone", "operator": "Exists"},
        ]})));
        assert!(
            selects(serde_json::json!({"matchExpressions": [
                {"key": "tier", "operator": "Near", "values": ["data"]},
            ]})),
            "an operator the API server would refuse is taken to pick the pod"
        );
        let no_selector: PodDisruptionBudget =
            serde_json::from_value(serde_json::json!({"metadata": {"name": "x"}, "spec": {}})).unwrap();
        assert!(!budget_selects(&no_selector, &db), "no selector picks nothing");
    }
}
