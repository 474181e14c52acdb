use super::*;
use crate::resize::observed::{
    ClaimView, NODE_RESIZE_GRACE_SECONDS, NodeResize, PodView, StatefulSetView, TemplateView,
};
use crate::resize::sim::{World, drive, resize};
use ferry_api::{DEFAULT_TIMEOUT_SECONDS, VolumePlan};
use k8s_openapi::jiff::Timestamp;

const GI: u64 = 1 << 30;

fn now() -> Time {
    Time(Timestamp::from_second(1000).unwrap())
}

fn planned(replicas: i32) -> VolumeResizeStatus {
    VolumeResizeStatus {
        phase: Some(Phase::Planning),
        // Prechecked for the spec's generation: the route goes to the run.
        observed_generation: Some(1),
        plan: (0..replicas)
            .map(|replica| VolumePlan {
                replica,
                volume: "data".into(),
                claim_name: format!("data-db-{replica}"),
                strategy: Some(ChosenStrategy::InPlace),
                current_size: Some("1Gi".into()),
                target_size: "2Gi".into(),
                ..VolumePlan::default()
            })
            .collect(),
        ..VolumeResizeStatus::default()
    }
}

fn cluster(replicas: i32, requested: u64, capacity: u64, node_resize: NodeResize) -> Observed {
    Observed {
        stateful_set: Some(StatefulSetView {
            templates: [("data".to_string(), TemplateView::sized(GI, None))].into(),
            replicas,
            ready_replicas: replicas,
            ..StatefulSetView::default()
        }),
        backup_exists: true,
        claims: (0..replicas)
            .map(|r| {
                (
                    format!("data-db-{r}"),
                    ClaimView {
                        requested_bytes: requested,
                        capacity_bytes: capacity,
                        node_resize: node_resize.clone(),
                        ..ClaimView::default()
                    },
                )
            })
            .collect(),
        pods: (0..replicas)
            .map(|r| {
                (
                    format!("db-{r}"),
                    PodView {
                        uid: format!("uid-{r}"),
                        ready: true,
                        deleting: false,
                    },
                )
            })
            .collect(),
        ..Observed::default()
    }
}

fn plan(status: &VolumeResizeStatus, observed: &Observed) -> Decision {
    plan_in_place(
        false,
        status,
        observed,
        "db",
        "ferry-grow-backup",
        DEFAULT_TIMEOUT_SECONDS,
        &now(),
    )
}

#[test]
fn backs_up_before_touching_anything() {
    let mut observed = cluster(3, GI, GI, NodeResize::Idle);
    observed.backup_exists = false;
    let decision = plan(&planned(3), &observed);
    assert_eq!(decision.actions, vec![ResizeAction::BackupStatefulSet]);
    assert_eq!(decision.status.phase, Some(Phase::Running));
    assert_eq!(
        decision.status.created_objects.backup_config_map.as_deref(),
        Some("ferry-grow-backup")
    );
}

/// One claim asks first; once its volume has grown while its replica runs (the controller side
/// done: `FileSystemResizePending`), the others are all asked at once.
#[test]
fn expands_one_claim_then_every_other_then_waits_for_capacity() {
    let decision = plan(&planned(3), &cluster(3, GI, GI, NodeResize::Idle));
    let expand = |replica: i32| ResizeAction::ExpandClaim {
        claim: format!("data-db-{replica}"),
        bytes: 2 * GI,
    };
    assert_eq!(decision.actions, vec![expand(0)]);
    assert!(
        decision
            .status
            .plan
            .iter()
            .all(|row| row.step == Some(RowStep::Expanding))
    );
    // Asked, not grown yet: the others wait.
    let mut observed = cluster(3, GI, GI, NodeResize::Idle);
    observed.claims.get_mut("data-db-0").unwrap().requested_bytes = 2 * GI;
    assert_eq!(plan(&decision.status, &observed).actions, vec![]);
    // Grown on the controller side while db-0 runs: the driver grows volumes in use.
    observed.claims.get_mut("data-db-0").unwrap().node_resize = NodeResize::Pending { since: Some(now()) };
    assert_eq!(
        plan(&decision.status, &observed).actions,
        vec![expand(1), expand(2)]
    );

    let decision = plan(&decision.status, &cluster(3, 2 * GI, GI, NodeResize::Idle));
    assert!(decision.actions.is_empty(), "requested already: only wait");
    assert!(
        decision
            .status
            .plan
            .iter()
            .all(|row| row.step == Some(RowStep::WaitingForCapacity))
    );
    assert_eq!(decision.status.progress.as_deref(), Some("0/3"));
}

#[test]
fn offline_driver_restarts_one_pod_at_a_time_and_each_once() {
    let status = plan(&planned(3), &cluster(3, 2 * GI, GI, NodeResize::Failed)).status;
    let decision = plan(&status, &cluster(3, 2 * GI, GI, NodeResize::Failed));
    assert_eq!(
        decision.actions,
        vec![ResizeAction::EvictPod {
            pod: "db-0".into(),
            uid: "uid-0".into()
        }]
    );
    assert_eq!(decision.status.plan[0].restarted_pod.as_deref(), Some("uid-0"));

    // db-0 is being replaced: no other pod may go down meanwhile.
    let mut observed = cluster(3, 2 * GI, GI, NodeResize::Failed);
    observed.pods.get_mut("db-0").unwrap().deleting = true;
    assert!(plan(&decision.status, &observed).actions.is_empty());
    // db-0 is gone and not yet re-created, while the StatefulSet's status still says 3 Ready (it
    // lags): still no other pod goes down.
    let mut observed = cluster(3, 2 * GI, GI, NodeResize::Failed);
    observed.pods.remove("db-0");
    assert!(plan(&decision.status, &observed).actions.is_empty());

    // db-0 came back (new UID, Ready) but its resize is still finishing: never restart it again; db-1 is next.
    let mut observed = cluster(3, 2 * GI, GI, NodeResize::Failed);
    observed.pods.get_mut("db-0").unwrap().uid = "uid-0-new".into();
    let next = plan(&decision.status, &observed);
    assert_eq!(
        next.actions,
        vec![ResizeAction::EvictPod {
            pod: "db-1".into(),
            uid: "uid-1".into()
        }]
    );
}

/// A CSI driver that expands online: the external-resizer marks the claim
/// `FileSystemResizePending` while the kubelet grows the file system in the running pod. Restarting
/// the pod then would cost a replica's downtime for nothing (found on the real node's CSI driver).
#[test]
fn a_pending_file_system_resize_is_left_to_the_kubelet_while_it_may_still_finish_online() {
    let since = |seconds_ago: i64| NodeResize::Pending {
        since: Some(Time(Timestamp::from_second(1000 - seconds_ago).unwrap())),
    };
    let status = plan(&planned(2), &cluster(2, 2 * GI, GI, since(1))).status;
    let decision = plan(&status, &cluster(2, 2 * GI, GI, since(1)));
    assert_eq!(decision.actions, vec![]);
    assert_eq!(decision.status.plan[0].step, Some(RowStep::WaitingForCapacity));
    let decision = plan(&status, &cluster(2, 2 * GI, GI, since(NODE_RESIZE_GRACE_SECONDS)));
    assert_eq!(decision.actions, vec![]);
    // No word from the kubelet for longer than any online growth takes: a new pod finishes it.
    let decision = plan(
        &status,
        &cluster(2, 2 * GI, GI, since(NODE_RESIZE_GRACE_SECONDS + 1)),
    );
    assert_eq!(
        decision.actions,
        vec![ResizeAction::EvictPod {
            pod: "db-0".into(),
            uid: "uid-0".into()
        }]
    );
}

/// A CSI driver that grows a volume only while no pod uses it (ControllerExpandVolume answers
/// FAILED_PRECONDITION while it is staged): one replica at a time is kept down, with no
/// StatefulSet to re-create its pod, until its volume has grown; then the StatefulSet comes back.
#[test]
fn a_driver_refusing_to_grow_a_volume_in_use_gets_one_replica_at_a_time_kept_down_until_it_grew() {
    let refused = |observed: &mut Observed, claim: &str, refused: bool| {
        observed.claims.get_mut(claim).unwrap().expansion_refused_in_use = refused;
    };
    let mut observed = cluster(2, 2 * GI, GI, NodeResize::Idle);
    refused(&mut observed, "data-db-0", true);
    refused(&mut observed, "data-db-1", true);
    let status = plan(&planned(2), &observed).status;
    // First the StatefulSet goes, its pods running on.
    let decision = plan(&status, &observed);
    assert_eq!(decision.actions, vec![ResizeAction::OrphanDeleteStatefulSet]);
    // Then one pod, which nothing re-creates.
    let sts = observed.stateful_set.take();
    let decision = plan(&decision.status, &observed);
    assert_eq!(
        decision.actions,
        vec![ResizeAction::EvictPod {
            pod: "db-0".into(),
            uid: "uid-0".into()
        }]
    );
    let status = decision.status;
    // db-0 stays down while its volume has not grown, going and then gone; db-1 keeps running.
    observed.pods.get_mut("db-0").unwrap().deleting = true;
    assert_eq!(plan(&status, &observed).actions, vec![]);
    observed.pods.remove("db-0");
    let decision = plan(&status, &observed);
    assert_eq!(decision.actions, vec![]);
    assert_eq!(decision.status.plan[0].step, Some(RowStep::RestartingPod));
    // Grown on the controller side: the StatefulSet comes back and brings db-0 with it.
    refused(&mut observed, "data-db-0", false);
    observed.claims.get_mut("data-db-0").unwrap().node_resize = NodeResize::Pending { since: Some(now()) };
    let decision = plan(&status, &observed);
    assert_eq!(decision.actions, vec![ResizeAction::RecreateStatefulSet]);
    // db-0 is back on its grown volume: db-1 is next, the same way.
    observed.stateful_set = sts;
    observed.pods.insert(
        "db-0".into(),
        PodView {
            uid: "uid-0-new".into(),
            ready: true,
            deleting: false,
        },
    );
    let claim = observed.claims.get_mut("data-db-0").unwrap();
    claim.capacity_bytes = 2 * GI;
    claim.node_resize = NodeResize::Idle;
    let decision = plan(&decision.status, &observed);
    assert_eq!(decision.actions, vec![ResizeAction::OrphanDeleteStatefulSet]);
    assert_eq!(decision.status.plan[0].step, Some(RowStep::Expanded));
}

/// `replicas` on a driver that grows a volume only while no pod uses it, their StatefulSet
/// orphan-deleted: replica 0 stopped for its volume to grow (the eviction checked) and gone. The
/// cluster, the StatefulSet it had, and the status that stopped replica 0.
fn replica_0_stopped_offline(replicas: i32) -> (Observed, Option<StatefulSetView>, VolumeResizeStatus) {
    let mut observed = cluster(replicas, 2 * GI, GI, NodeResize::Idle);
    for claim in observed.claims.values_mut() {
        claim.expansion_refused_in_use = true;
    }
    let whole = observed.stateful_set.take();
    let status = plan(&planned(replicas), &observed).status;
    let stopped = plan(&status, &observed);
    assert_eq!(
        stopped.actions,
        vec![ResizeAction::EvictPod {
            pod: "db-0".into(),
            uid: "uid-0".into()
        }]
    );
    observed.pods.remove("db-0");
    (observed, whole, stopped.status)
}

/// A driver that never grows the volume of a replica Ferry keeps down: once the claim is overdue,
/// the StatefulSet comes back (and with it the replica) before the resize fails.
#[test]
fn a_replica_kept_down_for_a_volume_that_never_grows_comes_back_before_the_resize_fails() {
    let (mut observed, _, stopped) = replica_0_stopped_offline(2);
    let late = |seconds: i64| Time(Timestamp::from_second(1000 + seconds).unwrap());
    // The plan `seconds` after the stop, with a 60 s timeout.
    let after = |seconds: i64| {
        plan_in_place(
            false,
            &stopped,
            &observed,
            "db",
            "ferry-grow-backup",
            60,
            &late(seconds),
        )
    };
    let held = after(30);
    assert_eq!(held.actions, vec![], "within the timeout the replica stays down");
    let overdue = after(61);
    assert_eq!(overdue.actions, vec![ResizeAction::RecreateStatefulSet]);
    assert_ne!(
        overdue.status.phase,
        Some(Phase::Failed),
        "not Failed while a replica is down"
    );
    // Back, whole: now it fails, the claims keeping what they ask for.
    observed.stateful_set = cluster(2, 2 * GI, GI, NodeResize::Idle).stateful_set;
    let failed = plan_in_place(
        false,
        &overdue.status,
        &observed,
        "db",
        "ferry-grow-backup",
        60,
        &late(62),
    );
    assert_eq!(failed.status.phase, Some(Phase::Failed));
}

/// A claim of a scaled-down ordinal (listed in the plan with no strategy, no pod) is not a replica
/// that is down: it never holds back the restarts of the running ones.
#[test]
fn a_scaled_down_claim_does_not_hold_back_restarts() {
    let mut status = planned(2);
    status.plan.push(VolumePlan {
        replica: 2,
        volume: "data".into(),
        claim_name: "data-db-2".into(),
        strategy: None,
        target_size: "2Gi".into(),
        ..VolumePlan::default()
    });
    let status = plan(&status, &cluster(2, 2 * GI, GI, NodeResize::Failed)).status;
    assert_eq!(
        plan(&status, &cluster(2, 2 * GI, GI, NodeResize::Failed)).actions,
        vec![ResizeAction::EvictPod {
            pod: "db-0".into(),
            uid: "uid-0".into()
        }]
    );
}

#[test]
fn replaces_the_stateful_set_once_every_claim_has_grown() {
    let status = plan(&planned(2), &cluster(2, 2 * GI, 2 * GI, NodeResize::Idle)).status;
    let decision = plan(&status, &cluster(2, 2 * GI, 2 * GI, NodeResize::Idle));
    assert_eq!(decision.actions, vec![ResizeAction::OrphanDeleteStatefulSet]);
    assert_eq!(decision.status.progress.as_deref(), Some("2/2"));
    assert!(decision.status.plan.iter().all(|row| row.finished_at.is_some()));

    let mut deleting = cluster(2, 2 * GI, 2 * GI, NodeResize::Idle);
    deleting.stateful_set.as_mut().unwrap().deleting = true;
    assert!(
        plan(&status, &deleting).actions.is_empty(),
        "wait for the orphan delete to finish"
    );

    let mut gone = cluster(2, 2 * GI, 2 * GI, NodeResize::Idle);
    gone.stateful_set = None;
    assert_eq!(
        plan(&status, &gone).actions,
        vec![ResizeAction::RecreateStatefulSet]
    );

    let mut replaced = cluster(2, 2 * GI, 2 * GI, NodeResize::Idle);
    replaced
        .stateful_set
        .as_mut()
        .unwrap()
        .templates
        .insert("data".into(), TemplateView::sized(2 * GI, None));
    let done = plan(&status, &replaced);
    assert!(done.actions.is_empty());
    assert_eq!(done.status.phase, Some(Phase::Succeeded));
    assert!(done.status.finished_at.is_some());
}

#[test]
fn waits_for_ready_replicas_before_succeeding() {
    let mut replaced = cluster(2, 2 * GI, 2 * GI, NodeResize::Idle);
    let sts = replaced.stateful_set.as_mut().unwrap();
    sts.templates
        .insert("data".into(), TemplateView::sized(2 * GI, None));
    sts.ready_replicas = 1;
    let decision = plan(&planned(2), &replaced);
    assert_eq!(decision.status.phase, Some(Phase::Running));
    assert!(decision.actions.is_empty());
}

#[test]
fn same_observation_gives_the_same_decision() {
    let observed = cluster(3, 2 * GI, GI, NodeResize::Idle);
    let first = plan(&planned(3), &observed);
    let second = plan(&first.status, &observed);
    assert_eq!(first.status, second.status, "a repeated reconcile writes nothing");
}

#[test]
fn deleted_while_replacing_the_stateful_set_re_creates_it_before_stopping() {
    let mut gone = cluster(2, 2 * GI, 2 * GI, NodeResize::Idle);
    gone.stateful_set = None;
    let decision = plan_in_place(
        true,
        &planned(2),
        &gone,
        "db",
        "ferry-grow-backup",
        DEFAULT_TIMEOUT_SECONDS,
        &now(),
    );
    assert_eq!(decision.actions, vec![ResizeAction::RecreateStatefulSet]);
    let stopped = plan_in_place(
        true,
        &planned(2),
        &cluster(2, 2 * GI, GI, NodeResize::Idle),
        "db",
        "b",
        DEFAULT_TIMEOUT_SECONDS,
        &now(),
    );
    assert_eq!(stopped.status.phase, Some(Phase::Failed));
    assert!(stopped.actions.is_empty());
}

/// `timeoutSeconds`: a claim that never reaches its size (a driver that never finishes, a pod that
/// can never restart) fails the resize once the limit has passed, with nothing more done; the grow
/// requested stays.
#[test]
fn a_claim_that_never_reaches_its_size_fails_the_resize_after_timeout_seconds() {
    let observed = cluster(3, 2 * GI, GI, NodeResize::Failed);
    let begun = plan(&planned(3), &observed).status;
    let at = |second| Time(Timestamp::from_second(second).unwrap());
    let within = plan_in_place(false, &begun, &observed, "db", "b", 300, &at(1300));
    assert_eq!(within.status.phase, Some(Phase::Running));
    let late = plan_in_place(false, &begun, &observed, "db", "b", 300, &at(1301));
    assert_eq!(late.status.phase, Some(Phase::Failed));
    assert!(late.actions.is_empty());
    let message = late.status.message.unwrap_or_default();
    assert!(
        message.contains("data-db-0 did not reach 2Gi within timeoutSeconds (300 s")
            && message.contains("a grow is not undone"),
        "{message}"
    );
    assert_eq!(
        late.status.conditions[0].reason,
        ferry_api::condition::REASON_VOLUME_NOT_GROWN
    );
    // No `timeoutSeconds`: the default bounds it too.
    let default = |second| {
        plan_in_place(
            false,
            &begun,
            &observed,
            "db",
            "b",
            DEFAULT_TIMEOUT_SECONDS,
            &at(second),
        )
    };
    assert_eq!(
        default(1000 + DEFAULT_TIMEOUT_SECONDS).status.phase,
        Some(Phase::Running)
    );
    assert_eq!(
        default(1001 + DEFAULT_TIMEOUT_SECONDS).status.phase,
        Some(Phase::Failed)
    );
}

/// Kubernetes as far as in-place expansion needs it: claims grown as the [`Driver`] does, pods
/// re-created a tick after deletion by the StatefulSet controller, and a StatefulSet replaced by
/// orphan delete + create.
struct Expansion {
    observed: Observed,
    driver: Driver,
    /// In-use refusals, by claim.
    refusals: std::collections::BTreeMap<String, u32>,
    next_uid: u32,
    /// Pods deleted at the last tick, re-created (new UID, Ready) at the next.
    recreating: Vec<String>,
    /// Most pods down at once, and restarts per pod.
    most_down: usize,
    restarts: std::collections::BTreeMap<String, u32>,
    /// The template a re-created StatefulSet has (the backup with the request's changes).
    new_template: TemplateView,
    /// Seconds the clock moves between two reconciles (none: every reconcile at [`now`]).
    seconds_per_tick: i64,
    clock: i64,
}

/// What the simulated driver does with a claim asked to grow.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Driver {
    /// Grows the volume and its mounted file system at once.
    Online,
    /// Grows the volume; the node grows its file system only when a new pod mounts it.
    NodeOffline,
    /// Refuses to grow the volume while a pod uses it (FAILED_PRECONDITION), grows it once none does.
    RefusesInUse,
    /// Refuses to grow the volume while a pod uses it, and fails for good once none does.
    NeverGrowsUnused,
}

/// The attributes class the simulated driver refuses (its `modifyVolumeStatus` goes Infeasible).
const REFUSED_CLASS: &str = "platinum";

impl Expansion {
    fn new(driver: Driver) -> Self {
        let mut observed = cluster(3, GI, GI, NodeResize::Idle);
        observed.backup_exists = false;
        Expansion {
            observed,
            driver,
            refusals: Default::default(),
            next_uid: 0,
            recreating: Vec::new(),
            most_down: 0,
            restarts: Default::default(),
            new_template: TemplateView::sized(2 * GI, None),
            seconds_per_tick: 0,
            clock: 1000,
        }
    }

    /// The driver refuses to grow a claim's volume while its pod exists; with none, it grows the
    /// volume, and the file system grows when a new pod mounts it.
    fn grow_unused(&mut self) {
        let pods = &self.observed.pods;
        for (name, claim) in self.observed.claims.iter_mut() {
            if claim.requested_bytes <= claim.capacity_bytes || claim.node_resize != NodeResize::Idle {
                continue;
            }
            if pods.contains_key(name.trim_start_matches("data-")) {
                if !claim.expansion_refused_in_use {
                    *self.refusals.entry(name.clone()).or_default() += 1;
                }
                claim.expansion_refused_in_use = true;
            } else if self.driver == Driver::RefusesInUse {
                claim.expansion_refused_in_use = false;
                claim.node_resize = NodeResize::Pending { since: Some(now()) };
            } else {
                // Another error than "in use" now (the driver fails), and nothing grows.
                claim.expansion_refused_in_use = false;
            }
        }
    }

    fn apply(&mut self, action: &ResizeAction) {
        match action {
            ResizeAction::BackupStatefulSet => self.observed.backup_exists = true,
            ResizeAction::ExpandClaim { claim, bytes } => {
                if let Some(c) = self.observed.claims.get_mut(claim) {
                    c.requested_bytes = *bytes;
                }
            }
            ResizeAction::EvictPod { pod, uid } => {
                if self.observed.pods.get(pod).is_some_and(|p| &p.uid == uid) {
                    self.observed.pods.remove(pod);
                    self.recreating.push(pod.clone());
                    *self.restarts.entry(pod.clone()).or_default() += 1;
                }
            }
            ResizeAction::ModifyClaim { claim, class } => {
                if let Some(c) = self.observed.claims.get_mut(claim) {
                    c.attributes_class = class.clone();
                    c.modification_infeasible = None;
                }
            }
            ResizeAction::OrphanDeleteStatefulSet => self.observed.stateful_set = None,
            ResizeAction::RecreateStatefulSet => {
                if self.observed.stateful_set.is_none() {
                    self.observed.stateful_set = Some(StatefulSetView {
                        templates: [("data".to_string(), self.new_template.clone())].into(),
                        replicas: 3,
                        ready_replicas: 3,
                        ..StatefulSetView::default()
                    });
                }
            }
            other => panic!("in place never does {other:?}"),
        }
    }

    fn settle(&mut self) {
        // The external-resizer has the driver modify each volume to its claim's attributes class
        // at once, except the one it refuses.
        for claim in self.observed.claims.values_mut() {
            if claim.attributes_class != claim.current_attributes_class {
                if claim.attributes_class.as_deref() == Some(REFUSED_CLASS) {
                    claim.modification_infeasible = Some("InvalidArgument: no such tier".into());
                } else {
                    claim.current_attributes_class = claim.attributes_class.clone();
                }
            }
        }
        // The driver grows each requested claim; online it is done, on a node that grows only
        // offline the file system grows when a new pod mounts it.
        if matches!(self.driver, Driver::RefusesInUse | Driver::NeverGrowsUnused) {
            self.grow_unused();
        }
        for claim in self.observed.claims.values_mut() {
            if claim.requested_bytes > claim.capacity_bytes {
                match self.driver {
                    Driver::Online => claim.capacity_bytes = claim.requested_bytes,
                    // The kubelet could not grow it while mounted.
                    Driver::NodeOffline => claim.node_resize = NodeResize::Failed,
                    Driver::RefusesInUse | Driver::NeverGrowsUnused => {}
                }
            }
        }
        if self.observed.stateful_set.is_some() {
            for pod in std::mem::take(&mut self.recreating) {
                self.next_uid += 1;
                let claim = format!("data-{pod}");
                if let Some(c) = self.observed.claims.get_mut(&claim)
                    && c.node_resize.is_pending()
                {
                    c.capacity_bytes = c.requested_bytes;
                    c.node_resize = NodeResize::Idle;
                }
                self.observed.pods.insert(
                    pod,
                    PodView {
                        uid: format!("new-{}", self.next_uid),
                        ready: true,
                        deleting: false,
                    },
                );
            }
        }
        // The StatefulSet counts Ready pods; a pod missing or not Ready is down.
        let ready = self
            .observed
            .pods
            .values()
            .filter(|p| p.ready && !p.deleting)
            .count();
        if let Some(sts) = self.observed.stateful_set.as_mut() {
            sts.ready_replicas = ready as i32;
        }
        self.most_down = self.most_down.max(3 - ready);
    }
}

impl World for Expansion {
    fn observed(&self) -> &Observed {
        &self.observed
    }

    fn apply(&mut self, action: &ResizeAction) {
        Expansion::apply(self, action);
    }

    fn settle(&mut self) {
        Expansion::settle(self);
    }

    fn tick(&mut self) -> Time {
        self.clock += self.seconds_per_tick;
        Time(Timestamp::from_second(self.clock).unwrap())
    }
}

/// Both kinds of driver, with the operator killed after every single action: every claim ends at
/// its new size, the StatefulSet has the new template, no two replicas are ever down together, and
/// with an offline-only driver each pod is restarted exactly once.
#[test]
fn killed_after_any_action_in_place_still_completes_one_pod_at_a_time() {
    for driver in [Driver::Online, Driver::NodeOffline] {
        for_every_crash(
            || Expansion::new(driver),
            |sim, case| {
                let sts = sim.observed.stateful_set.as_ref().expect("StatefulSet present");
                assert_eq!(sts.template_bytes("data"), Some(2 * GI), "{case}");
                let expected = if driver == Driver::NodeOffline { 1 } else { 0 };
                for pod in ["db-0", "db-1", "db-2"] {
                    assert_eq!(
                        sim.restarts.get(pod).copied().unwrap_or(0),
                        expected,
                        "{case}: {pod}"
                    );
                }
            },
        );
    }
}

/// Drives a resize on `make()`'s world to its end once, then again with the operator killed after
/// each of its actions in turn: each time it succeeds, every claim at its new size, never two
/// replicas down together; `check` sees each such world (and the case, to name it).
fn for_every_crash(make: impl Fn() -> Expansion, check: impl Fn(&Expansion, &str)) {
    let (_, total) = drive(&resize(), &mut make(), planned(3), None, 100, &mut |_, _| {});
    assert!(total > 5, "{total} actions");
    for crash_at in 0..total {
        let mut sim = make();
        let (status, _) = drive(
            &resize(),
            &mut sim,
            planned(3),
            Some(crash_at),
            100,
            &mut |_, _| {},
        );
        let case = format!("{:?}, crash at {crash_at}", sim.driver);
        assert_eq!(
            status.phase,
            Some(Phase::Succeeded),
            "{case}: {:?}",
            status.message
        );
        assert!(
            sim.observed.claims.values().all(|c| c.capacity_bytes == 2 * GI),
            "{case}"
        );
        assert!(
            sim.most_down <= 1,
            "{case}: {} replicas down at once",
            sim.most_down
        );
        check(&sim, &case);
    }
}

/// A driver that grows a volume only while no pod uses it, with the operator killed after every
/// single action: only the first claim is ever asked to grow while its replica runs (the others
/// only once their replica is down, so the external-resizer, which retries a refused claim only
/// after a backoff of up to minutes, takes each at once), each replica is stopped exactly once and
/// never two together, and every claim ends at its new size.
#[test]
fn killed_after_any_action_an_offline_only_driver_is_asked_once_while_a_pod_uses_the_volume() {
    for_every_crash(
        || Expansion::new(Driver::RefusesInUse),
        |sim, case| {
            assert_eq!(
                sim.refusals.values().sum::<u32>(),
                1,
                "{case}: refused in use {:?}",
                sim.refusals
            );
            for pod in ["db-0", "db-1", "db-2"] {
                assert_eq!(sim.restarts.get(pod).copied(), Some(1), "{case}: {pod}");
            }
        },
    );
}

/// An autoscaler's rescue on an offline-only driver: db-1 crash-loops on its full disk (not Ready).
/// Restarting it costs no availability and is what finishes its growth, so it is restarted first
/// although not Ready; the others follow one at a time, and never two are down together.
#[test]
fn a_replica_down_already_is_restarted_first_on_an_offline_only_driver() {
    let mut sim = Expansion::new(Driver::NodeOffline);
    sim.observed.pods.get_mut("db-1").unwrap().ready = false;
    sim.observed.stateful_set.as_mut().unwrap().ready_replicas = 2;
    let rescue = resize().with(|spec| spec.force = true);
    let mut restarted = Vec::new();
    let watch = &mut |decision: &Decision, _: &Expansion| {
        for action in &decision.actions {
            if let ResizeAction::EvictPod { pod, .. } = action {
                restarted.push(pod.clone());
            }
        }
    };
    let (status, _) = drive(&rescue, &mut sim, planned(3), None, 100, watch);
    assert_eq!(status.phase, Some(Phase::Succeeded), "{:?}", status.message);
    assert_eq!(
        restarted.first().map(String::as_str),
        Some("db-1"),
        "{restarted:?}"
    );
    assert_eq!(restarted.len(), 3, "{restarted:?}");
    assert!(sim.observed.claims.values().all(|c| c.capacity_bytes == 2 * GI));
    assert!(sim.most_down <= 1, "{} replicas down at once", sim.most_down);
}

/// The planner acts on `targetBytes`; a row without it falls back to `targetSize`.
#[test]
fn expands_to_target_bytes() {
    let mut status = planned(3);
    status.plan[1].target_bytes = Some(3 * GI);
    // (The first claim grown in use already: the others are all asked at once.)
    let mut observed = cluster(3, GI, GI, NodeResize::Idle);
    let first = observed.claims.get_mut("data-db-0").unwrap();
    first.requested_bytes = 2 * GI;
    first.node_resize = NodeResize::Pending { since: Some(now()) };
    let decision = plan(&status, &observed);
    let requested: Vec<u64> = decision
        .actions
        .iter()
        .map(|action| match action {
            ResizeAction::ExpandClaim { bytes, .. } => *bytes,
            other => panic!("only expansions: {other:?}"),
        })
        .collect();
    assert_eq!(requested, [3 * GI, 2 * GI]);
}

/// A row whose `targetSize` is not a size (an edited status) is never expanded — and the resize
/// fails saying so, instead of ending Succeeded without it.
#[test]
fn a_target_that_is_not_a_size_fails_the_resize_instead_of_succeeding_without_it() {
    let mut status = planned(3);
    status.plan[0].target_size = "lots".into();
    let decision = plan(&status, &cluster(3, GI, GI, NodeResize::Idle));
    assert!(decision.actions.is_empty(), "{:?}", decision.actions);
    assert_eq!(decision.status.phase, Some(Phase::Failed));
    assert_eq!(
        decision.status.message.as_deref(),
        Some(r#"target size "lots" of data-db-0 is not a size"#)
    );
}

/// KEP-1790: a size the driver refused (the claim's resize status says infeasible) is lowered back
/// to the least the API server accepts, recorded on the row so it is never asked for again, and
/// the resize fails once the claim asks for no more; a claim that grew meanwhile is not lowered.
#[test]
fn a_size_the_driver_refused_is_lowered_back_recorded_and_fails_the_resize() {
    let mut observed = cluster(2, 2 * GI, GI, NodeResize::Idle);
    let refusal = "ControllerResizeInfeasible: rpc error: code = OutOfRange desc = too big";
    observed.claims.get_mut("data-db-1").unwrap().expansion_infeasible = Some(refusal.into());
    let decision = plan(&planned(2), &observed);
    assert_eq!(
        decision.actions,
        vec![ResizeAction::ExpandClaim {
            claim: "data-db-1".into(),
            bytes: GI + (1 << 20)
        }]
    );
    assert_eq!(decision.status.phase, Some(Phase::Running));
    // Written before the patch: killed here, the next pass lowers it again.
    assert_eq!(
        decision.status.plan[1].expansion_refused.as_deref(),
        Some(refusal)
    );
    assert_eq!(plan(&decision.status, &observed).actions, decision.actions);

    // Lowered: the infeasible status is gone and the claim asks for less than the target, which is
    // never asked for again; the resize fails saying why, its other claim's grow kept.
    let claim = observed.claims.get_mut("data-db-1").unwrap();
    claim.expansion_infeasible = None;
    claim.requested_bytes = GI + (1 << 20);
    let failed = plan(&decision.status, &observed);
    assert!(failed.actions.is_empty(), "{:?}", failed.actions);
    assert_eq!(failed.status.phase, Some(Phase::Failed));
    let message = failed.status.message.unwrap();
    assert!(
        message.contains("cannot grow data-db-1 to 2Gi") && message.contains("OutOfRange"),
        "{message}"
    );
    assert!(!message.contains("data-db-0"), "{message}");

    // A claim that really grew by the MiB it asked for is not lowered further.
    let claim = observed.claims.get_mut("data-db-1").unwrap();
    claim.capacity_bytes = GI + (1 << 20);
    assert!(plan(&decision.status, &observed).actions.is_empty());
}

/// `planned(3)` changing every claim to the attributes class `class` (from none), at `size`.
fn planned_attributes(class: &str, size: &str) -> VolumeResizeStatus {
    let mut status = planned(3);
    for row in &mut status.plan {
        row.target_size = size.into();
        row.target_attributes_class = Some(class.into());
    }
    status
}

/// Another attributes class, alone and with a growth, with the operator killed after every single
/// action: each claim names it and its volume has it, the re-created StatefulSet's template names
/// it, and no pod is restarted.
#[test]
fn an_attributes_class_is_changed_in_place_with_the_operator_killed_after_any_action() {
    for size in ["1Gi", "2Gi"] {
        let bytes = if size == "1Gi" { GI } else { 2 * GI };
        let template = TemplateView {
            attributes_class: Some("gold".into()),
            ..TemplateView::sized(bytes, None)
        };
        let fresh = || {
            let mut sim = Expansion::new(Driver::Online);
            sim.new_template = template.clone();
            sim
        };
        let planned = || planned_attributes("gold", size);
        let (_, total) = drive(&resize(), &mut fresh(), planned(), None, 100, &mut |_, _| {});
        for crash_at in 0..total {
            let mut sim = fresh();
            let (status, _) = drive(
                &resize(),
                &mut sim,
                planned(),
                Some(crash_at),
                100,
                &mut |_, _| {},
            );
            let case = format!("{size}, crash at {crash_at}");
            assert_eq!(
                status.phase,
                Some(Phase::Succeeded),
                "{case}: {:?}",
                status.message
            );
            for claim in sim.observed.claims.values() {
                assert_eq!(claim.current_attributes_class.as_deref(), Some("gold"), "{case}");
                assert_eq!(claim.capacity_bytes, bytes, "{case}");
            }
            let sts = sim.observed.stateful_set.as_ref().expect("StatefulSet present");
            assert_eq!(
                sts.templates["data"].attributes_class.as_deref(),
                Some("gold"),
                "{case}"
            );
            assert!(sim.restarts.is_empty(), "{case}: {:?}", sim.restarts);
            let step = if size == "1Gi" {
                RowStep::Modified
            } else {
                RowStep::Expanded
            };
            assert!(
                status.plan.iter().all(|row| row.step == Some(step)),
                "{case}: {:?}",
                status.plan
            );
            assert!(
                status
                    .message
                    .as_deref()
                    .is_some_and(|m| m.contains("VolumeAttributesClass")),
                "{case}: {:?}",
                status.message
            );
        }
    }
}

/// An attributes class the driver refuses (its claim's `modifyVolumeStatus` Infeasible): recorded on
/// the row before anything else, each claim asks for the class it had again, and the resize fails
/// saying why, the StatefulSet's template untouched.
#[test]
fn an_attributes_class_the_driver_refuses_is_taken_back_and_fails_the_resize() {
    let mut sim = Expansion::new(Driver::Online);
    let (status, _) = drive(
        &resize(),
        &mut sim,
        planned_attributes(REFUSED_CLASS, "1Gi"),
        None,
        100,
        &mut |_, _| {},
    );
    assert_eq!(status.phase, Some(Phase::Failed), "{:?}", status.message);
    let message = status.message.unwrap_or_default();
    assert!(
        message.contains("cannot give data-db-0 the VolumeAttributesClass platinum")
            && message.contains("no such tier"),
        "{message}"
    );
    for row in &status.plan {
        assert!(row.modification_refused.is_some(), "{row:?}");
    }
    for claim in sim.observed.claims.values() {
        assert_eq!(claim.attributes_class, None, "asks for what it had");
        assert_eq!(claim.current_attributes_class, None);
    }
    let sts = sim.observed.stateful_set.as_ref().expect("StatefulSet present");
    assert_eq!(sts.templates["data"].attributes_class, None);
}

/// The `TimedOut` condition of a status: its reason and message.
fn timed_out(status: &VolumeResizeStatus) -> (String, String) {
    let found = status
        .conditions
        .iter()
        .find(|c| c.type_ == ferry_api::condition::TIMED_OUT && c.status == "True")
        .unwrap_or_else(|| panic!("no TimedOut condition: {:?}", status.conditions));
    (found.reason.clone(), found.message.clone())
}

/// A driver that grows volumes only while unused, then fails for good once unused (its
/// ControllerExpandVolume keeps failing), and a resize without `timeoutSeconds`: the replica held
/// down comes back (the StatefulSet re-created) and the resize fails at the default timeout,
/// saying so; never two replicas down, nothing grown.
#[test]
fn a_replica_held_down_for_a_driver_that_never_grows_comes_back_at_the_default_timeout() {
    let mut sim = Expansion::new(Driver::NeverGrowsUnused);
    sim.seconds_per_tick = 60;
    let (status, _) = drive(&resize(), &mut sim, planned(3), None, 200, &mut |_, _| {});
    assert_eq!(status.phase, Some(Phase::Failed), "{:?}", status.message);
    let (reason, message) = timed_out(&status);
    assert_eq!(reason, ferry_api::condition::REASON_VOLUME_NOT_GROWN);
    assert!(
        message.contains("within timeoutSeconds (3600 s") && message.contains("replica(s) 0, stopped"),
        "{message}"
    );
    let began = status.plan[0].started_at.as_ref().unwrap().0.as_second();
    let took = status.finished_at.unwrap().0.as_second() - began;
    assert!(
        took > DEFAULT_TIMEOUT_SECONDS && took <= DEFAULT_TIMEOUT_SECONDS + 180,
        "ended {took} s after it began"
    );
    let sts = sim
        .observed
        .stateful_set
        .as_ref()
        .expect("the StatefulSet is back");
    assert_eq!(sts.ready_replicas, 3, "every replica runs again");
    assert_eq!(sim.restarts.get("db-0").copied(), Some(1), "{:?}", sim.restarts);
    assert!(sim.most_down <= 1, "{} replicas down at once", sim.most_down);
    assert!(sim.observed.claims.values().all(|c| c.capacity_bytes == GI));
}

/// While a replica is held down (no StatefulSet) for its volume to grow, another goes down (its
/// pod deleted, or not Ready): nothing would re-create it, so the StatefulSet comes back at once,
/// and the resize goes on.
#[test]
fn another_replica_lost_while_one_is_held_down_brings_the_stateful_set_back() {
    let (observed, _, stopped) = replica_0_stopped_offline(3);
    let held = plan(&stopped, &observed);
    assert!(
        !held.actions.contains(&ResizeAction::RecreateStatefulSet),
        "{:?}",
        held.actions
    );
    for lose in [
        |observed: &mut Observed| drop(observed.pods.remove("db-2")),
        |observed: &mut Observed| observed.pods.get_mut("db-1").unwrap().ready = false,
    ] {
        let mut lost = observed.clone();
        lose(&mut lost);
        let back = plan(&held.status, &lost);
        assert!(
            back.actions.contains(&ResizeAction::RecreateStatefulSet),
            "{:?}",
            back.actions
        );
        assert_eq!(back.status.phase, Some(Phase::Running));
        let message = back.status.message.unwrap_or_default();
        assert!(message.contains("while replica(s) 0 were held down"), "{message}");
    }
}

/// Once the StatefulSet is back for a replica lost while another was held down, the lost one is
/// starting, not crash-looping: it is not the next one stopped (it would stay down in place of the
/// one held), and no replica is stopped until every one is Ready again.
#[test]
fn a_replica_back_from_a_loss_is_not_stopped_while_it_starts() {
    let (mut observed, whole, stopped) = replica_0_stopped_offline(3);
    let held = plan(&stopped, &observed);
    observed.pods.remove("db-2");
    let back = plan(&held.status, &observed);
    assert!(back.actions.contains(&ResizeAction::RecreateStatefulSet));
    // The StatefulSet re-created both: db-0 under a new UID and Ready, db-2 starting.
    observed.stateful_set = whole;
    let mut db0 = observed.pods["db-1"].clone();
    db0.uid = "uid-0-again".into();
    observed.pods.insert("db-0".into(), db0);
    let mut db2 = observed.pods["db-1"].clone();
    db2.uid = "uid-2-again".into();
    db2.ready = false;
    observed.pods.insert("db-2".into(), db2);
    observed.stateful_set.as_mut().unwrap().ready_replicas = 2;
    let starting = plan(&back.status, &observed);
    assert!(
        starting.actions.iter().all(|action| !matches!(
            action,
            ResizeAction::EvictPod { .. } | ResizeAction::OrphanDeleteStatefulSet
        )),
        "{:?}",
        starting.actions
    );
    // Every replica Ready again: the growth goes on, one replica at a time.
    observed.pods.get_mut("db-2").unwrap().ready = true;
    observed.stateful_set.as_mut().unwrap().ready_replicas = 3;
    let again = plan(&starting.status, &observed);
    assert_eq!(again.actions, vec![ResizeAction::OrphanDeleteStatefulSet]);
}

/// Every volume grew and the StatefulSet has the new template, but a replica never becomes Ready
/// (a forced resize, a rescue, started with it down): the wait ends at `timeoutSeconds` from when
/// the last claim had its size, Failed, saying which replica.
#[test]
fn a_replica_never_ready_after_the_growth_fails_the_resize_at_the_timeout() {
    let mut replaced = cluster(2, 2 * GI, 2 * GI, NodeResize::Idle);
    let sts = replaced.stateful_set.as_mut().unwrap();
    sts.templates
        .insert("data".into(), TemplateView::sized(2 * GI, None));
    sts.ready_replicas = 1;
    replaced.pods.get_mut("db-1").unwrap().ready = false;
    let grown = plan(&planned(2), &replaced).status;
    let at = |second| Time(Timestamp::from_second(second).unwrap());
    let waiting = plan_in_place(false, &grown, &replaced, "db", "b", 60, &at(1060));
    assert_eq!(waiting.status.phase, Some(Phase::Running));
    let ended = plan_in_place(false, &grown, &replaced, "db", "b", 60, &at(1061));
    assert_eq!(ended.status.phase, Some(Phase::Failed));
    assert!(ended.actions.is_empty());
    let (reason, message) = timed_out(&ended.status);
    assert_eq!(reason, ferry_api::condition::REASON_REPLICA_NOT_READY);
    assert!(
        message.starts_with("replica(s) 1 not Ready within timeoutSeconds (60 s)"),
        "{message}"
    );
}

/// A forced resize (a rescue) started with db-1 down, which never becomes Ready, and no
/// `timeoutSeconds`: the volumes grow, and the resize ends at the default timeout instead of
/// waiting (and holding the StatefulSet) for ever.
#[test]
fn a_forced_resize_whose_down_replica_never_becomes_ready_ends_at_the_default_timeout() {
    let mut sim = Expansion::new(Driver::Online);
    sim.seconds_per_tick = 120;
    sim.observed.pods.get_mut("db-1").unwrap().ready = false;
    sim.observed.stateful_set.as_mut().unwrap().ready_replicas = 2;
    let rescue = resize().with(|spec| spec.force = true);
    let (status, _) = drive(&rescue, &mut sim, planned(3), None, 200, &mut |_, _| {});
    assert_eq!(status.phase, Some(Phase::Failed), "{:?}", status.message);
    assert_eq!(
        timed_out(&status).0,
        ferry_api::condition::REASON_REPLICA_NOT_READY
    );
    assert!(sim.observed.claims.values().all(|c| c.capacity_bytes == 2 * GI));
    let sts = sim.observed.stateful_set.as_ref().unwrap();
    assert_eq!(sts.template_bytes("data"), Some(2 * GI));
}
