//! An ExtendedStatefulSet's status, from the rollout's plan and what was observed: its replicas,
//! versions, zones, conditions and the columns `kubectl get` shows.

use super::desired::Desired;
use super::rollout::{self, Observed, Step};
use crate::conditions::{condition, set_condition};
use crate::kstatus::{self, Health};
use ferry_api::{ExtendedStatefulSet, ExtendedStatefulSetStatus, ZoneStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use std::collections::BTreeMap;

/// The status to write.
pub fn status_of(
    ests: &ExtendedStatefulSet,
    plan: &rollout::Plan,
    observed: &[Observed],
    desired: &[Desired],
    volume_resizes: BTreeMap<String, String>,
    problems: &[String],
    now: i64,
) -> ExtendedStatefulSetStatus {
    let progress = &plan.progress;
    let replicas: i32 = observed.iter().filter(|o| o.exists).map(|o| o.replicas).sum();
    let ready: i32 = observed.iter().map(|o| o.ready).sum();
    let wanted: i32 = desired.iter().map(|d| d.replicas).sum();
    let conditions = conditions_of(ests, plan, ready, wanted, problems, now);
    let selector = ests
        .spec
        .template
        .spec
        .selector
        .match_labels
        .iter()
        .flatten()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    ExtendedStatefulSetStatus {
        observed_generation: ests.metadata.generation,
        replicas,
        ready_replicas: ready,
        selector: Some(selector),
        version: progress.version,
        versions: rollout::versions(progress, observed)
            .into_iter()
            .map(|(version, running)| (version.to_string(), running))
            .collect(),
        zones: desired
            .iter()
            .zip(observed)
            .map(|(d, o)| ZoneStatus {
                zone: d.zone.as_ref().map(|(_, zone)| zone.clone()).unwrap_or_default(),
                stateful_set: d.name.clone(),
                replicas: d.replicas,
                ready_replicas: o.ready,
                updated_replicas: o.updated,
            })
            .collect(),
        conditions,
        volume_resizes,
        ready_column: Some(format!("{ready}/{wanted}")),
        zones_column: Some(if ests.spec.zones.is_empty() {
            "-".to_string()
        } else {
            ests.spec.zones.join(",")
        }),
        template_digest: progress.digest.clone(),
        update_step: Some(progress.step.as_str().to_string()),
        step_started_at: progress
            .step_started
            .and_then(|at| Timestamp::from_second(at).ok())
            .map(Time),
        stale_at: progress.stale_at.clone(),
        handover: None,
        volume_claim_templates: BTreeMap::new(),
    }
}

/// The conditions: Progressing (an update under way, or why it waits), Stale (a failed update),
/// Available (every wanted pod Ready) and Invalid (what was refused); and kstatus's: Stalled on a
/// failed update or a refusal, Reconciling while an update, a wait or pods not yet Ready go on,
/// else Ready.
fn conditions_of(
    ests: &ExtendedStatefulSet,
    plan: &rollout::Plan,
    ready: i32,
    wanted: i32,
    problems: &[String],
    now: i64,
) -> Vec<Condition> {
    let previous = ests.status.clone().unwrap_or_default();
    let now_time = Time(Timestamp::from_second(now).unwrap_or(Timestamp::UNIX_EPOCH));
    let generation = ests.metadata.generation;
    let progress = &plan.progress;
    let mut conditions = previous.conditions.clone();
    let updating = matches!(
        progress.step,
        Step::Canaries | Step::Rest | Step::PreUpdate | Step::PostUpdate
    );
    let progressing_message = plan.waiting.clone().unwrap_or_else(|| match progress.step {
        Step::PreUpdate => format!("version {}: pre-update Job running", progress.version),
        Step::PostUpdate => format!("version {}: post-update Job running", progress.version),
        Step::Canaries => format!("version {}: canaries updating", progress.version),
        Step::Rest => format!("version {}: updating the rest", progress.version),
        Step::Stale => format!(
            "version {} stopped: {}",
            progress.version,
            progress.stale_at.clone().unwrap_or_default()
        ),
        Step::Done => format!("version {} runs", progress.version),
    });
    let stale = progress.step == Step::Stale;
    let (all_ready, refused) = (ready >= wanted, !problems.is_empty());
    let rows: [(&str, bool, &str, String); 4] = [
        (
            "Progressing",
            updating,
            if plan.waiting.is_some() {
                "Waiting"
            } else {
                progress.step.as_str()
            },
            progressing_message,
        ),
        (
            "Stale",
            stale,
            if stale { "UpdateFailed" } else { "Current" },
            progress
                .stale_at
                .clone()
                .unwrap_or_else(|| "no failed update".to_string()),
        ),
        (
            "Available",
            all_ready,
            if all_ready { "AllReady" } else { "NotAllReady" },
            format!("{ready}/{wanted} pods Ready"),
        ),
        (
            "Invalid",
            refused,
            if refused { "Refused" } else { "Valid" },
            if refused {
                problems.join("; ")
            } else {
                "nothing refused".to_string()
            },
        ),
    ];
    let (health, reason, message) = kstatus_of(&rows, updating || plan.waiting.is_some());
    for (kind, status, reason, message) in &rows {
        set_condition(
            &mut conditions,
            condition(kind, *status, reason, message, generation, &now_time),
        );
    }
    kstatus::set(&mut conditions, health, reason, &message, generation, &now_time);
    conditions
}

/// kstatus's reading of the four conditions (Progressing, Stale, Available, Invalid, in that
/// order): Stalled on a stale version or a refusal, Reconciling while work goes on or pods are not
/// yet Ready, else Ready.
fn kstatus_of(rows: &[(&str, bool, &str, String); 4], working: bool) -> (Health, &'static str, String) {
    let (stale, all_ready, refused) = (rows[1].1, rows[2].1, rows[3].1);
    let summary = format!("{}; {}", rows[0].3, rows[2].3);
    if stale {
        (Health::Stalled, "UpdateFailed", rows[1].3.clone())
    } else if refused {
        (Health::Stalled, "Refused", rows[3].3.clone())
    } else if working {
        let reason = if rows[0].2 == "Waiting" {
            "Waiting"
        } else {
            "Updating"
        };
        (Health::Reconciling, reason, summary)
    } else if !all_ready {
        (Health::Reconciling, "PodsNotReady", summary)
    } else {
        (Health::Ready, "Current", summary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extended::desired::stateful_sets;
    use crate::extended::rollout::{Plan, Progress};

    fn ests(zones: &[&str]) -> ExtendedStatefulSet {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "ferry.dev/v1alpha1", "kind": "ExtendedStatefulSet",
            "metadata": {"name": "db", "namespace": "apps", "uid": "uid-1", "generation": 4},
            "spec": {
                "replicas": 3, "zones": zones,
                "template": {"spec": {
                    "serviceName": "db",
                    "selector": {"matchLabels": {"app": "db"}},
                    "template": {
                        "metadata": {"labels": {"app": "db"}},
                        "spec": {"containers": [{"name": "db", "image": "db:1"}]},
                    },
                }},
            },
        }))
        .unwrap()
    }

    fn plan(step: Step, waiting: Option<&str>) -> Plan {
        Plan {
            progress: Progress {
                version: 2,
                digest: Some("d2".into()),
                step,
                step_started: Some(1_000),
                stale_at: None,
            },
            apply: true,
            partitions: vec![],
            waiting: waiting.map(str::to_string),
            notices: vec![],
            create_job: None,
        }
    }

    fn observed(desired: &[Desired], ready: i32) -> Vec<Observed> {
        desired
            .iter()
            .map(|d| Observed {
                name: d.name.clone(),
                exists: true,
                replicas: d.replicas,
                live_replicas: d.replicas,
                ready,
                updated_ready: 0,
                updated: 0,
                partition: 0,
                unavailable: Vec::new(),
            })
            .collect()
    }

    fn condition_of<'a>(status: &'a ExtendedStatefulSetStatus, kind: &str) -> &'a Condition {
        status.conditions.iter().find(|c| c.type_ == kind).unwrap()
    }

    #[test]
    fn canaries_under_way_with_pods_not_ready_read_as_progressing_and_not_available() {
        let ests = ests(&[]);
        let desired = stateful_sets(&ests, None);
        let status = status_of(
            &ests,
            &plan(Step::Canaries, None),
            &observed(&desired, 1),
            &desired,
            BTreeMap::new(),
            &[],
            2_000,
        );
        assert_eq!(status.observed_generation, Some(4));
        assert_eq!((status.replicas, status.ready_replicas), (3, 1));
        assert_eq!(status.ready_column.as_deref(), Some("1/3"));
        assert_eq!(status.zones_column.as_deref(), Some("-"));
        assert_eq!(status.selector.as_deref(), Some("app=db"));
        assert_eq!(status.update_step.as_deref(), Some("Canaries"));
        let progressing = condition_of(&status, "Progressing");
        assert_eq!(
            (progressing.status.as_str(), progressing.reason.as_str()),
            ("True", "Canaries")
        );
        assert_eq!(progressing.message, "version 2: canaries updating");
        let available = condition_of(&status, "Available");
        assert_eq!(
            (available.status.as_str(), available.message.as_str()),
            ("False", "1/3 pods Ready")
        );
        assert_eq!(condition_of(&status, "Invalid").status, "False");
        // kstatus: an update under way is Reconciling, not Ready.
        assert_eq!(condition_of(&status, "Ready").status, "False");
        assert_eq!(condition_of(&status, "Reconciling").reason, "Updating");
        assert!(status.conditions.iter().all(|c| c.type_ != "Stalled"));
    }

    #[test]
    fn kstatus_reads_ready_when_the_version_runs_and_stalled_when_it_failed() {
        let ests = ests(&[]);
        let desired = stateful_sets(&ests, None);
        let done = status_of(
            &ests,
            &plan(Step::Done, None),
            &observed(&desired, 3),
            &desired,
            BTreeMap::new(),
            &[],
            2_000,
        );
        let ready = condition_of(&done, "Ready");
        assert_eq!(
            (
                ready.status.as_str(),
                ready.reason.as_str(),
                ready.observed_generation
            ),
            ("True", "Current", Some(4))
        );
        assert!(
            done.conditions
                .iter()
                .all(|c| c.type_ != "Reconciling" && c.type_ != "Stalled")
        );
        let stale = status_of(
            &ests,
            &plan(Step::Stale, None),
            &observed(&desired, 3),
            &desired,
            BTreeMap::new(),
            &[],
            2_000,
        );
        assert_eq!(condition_of(&stale, "Ready").status, "False");
        assert_eq!(condition_of(&stale, "Stalled").reason, "UpdateFailed");
    }

    #[test]
    fn a_waiting_update_and_refused_parts_say_why_per_zone() {
        let ests = ests(&["a", "b"]);
        let desired = stateful_sets(&ests, None);
        let problems = vec!["db-a: refused".to_string()];
        let status = status_of(
            &ests,
            &plan(Step::Done, Some("a new version waits")),
            &observed(&desired, 0),
            &desired,
            BTreeMap::new(),
            &problems,
            2_000,
        );
        assert_eq!(status.zones.len(), 2);
        assert_eq!(status.zones_column.as_deref(), Some("a,b"));
        let progressing = condition_of(&status, "Progressing");
        assert_eq!(
            (progressing.reason.as_str(), progressing.message.as_str()),
            ("Waiting", "a new version waits")
        );
        let invalid = condition_of(&status, "Invalid");
        assert_eq!(
            (invalid.status.as_str(), invalid.message.as_str()),
            ("True", "db-a: refused")
        );
    }
}
