//! The copy, its rollback on request and its stop on deletion against a small simulated cluster,
//! driven through the engine's one entry point ([`crate::resize::plan::plan`]) as the operator drives it —
//! routing included: a clean run, failures (rollback), and the operator killed after every single
//! action; each time it must converge with the data intact and nothing leaked.

use super::*;
use crate::resize::observed::{ClaimView, MoverView, PodView, StatefulSetView, TemplateView, VolumeView};
use crate::resize::sim::{Resize, SUFFIX, World, drive, resize};
use crate::volume_writes::VolumeWrite;
use ferry_api::{Mode, MoverSettings};
use k8s_openapi::jiff::Timestamp;
use std::collections::BTreeMap;

const REPLICAS: i32 = 3;
/// Ticks between a final pass's end and its serving mover's exit seen.
const SERVER_EXIT_SEEN_AFTER: u32 = 5;

mod remote;

/// Kubernetes as far as the copy needs it; `data` maps a volume to what is stored on it.
#[derive(Clone)]
struct Cluster {
    observed: Observed,
    data: BTreeMap<String, String>,
    next_id: u32,
    fail_final_of: Option<String>,
    /// How many bytes of use each character of `data` stands for.
    bytes_per_char: u64,
    /// Mover pods that end (with this phase) after the given number of further ticks.
    finishing: BTreeMap<String, (u32, MoverPhase)>,
    /// Extra ticks the failing final mover (`fail_final_of`) runs before it fails.
    fail_final_delay: u32,
    /// Final movers are never scheduled (no node fits them).
    unschedulable_final: bool,
    /// Warm movers run forever.
    endless_warm: bool,
    /// How long each warm pass of a claim takes, in seconds, in order (0.5 past the list).
    warm_seconds: Vec<f64>,
    /// Warm movers started so far, by pod name.
    warm_starts: BTreeMap<String, usize>,
    /// Measuring pods are never scheduled.
    unschedulable_usage: bool,
    /// Claims created onto a reserved volume, bound by the PV controller a tick later (the planner
    /// sees them Pending once).
    binding: Vec<String>,
    /// The PV controller's claim worker loses a conflict to its volume worker: the volume gets
    /// bound, the claim stays Pending until something touches it.
    stall_binding: bool,
    /// Seconds on the simulated clock (advanced by `drive`).
    clock: i64,
    /// Ticks a deleted replica pod stays Terminating (its grace period), writing to its volume all
    /// the while, as a database flushing on SIGTERM does.
    grace_ticks: u32,
    /// Replica pods Terminating, with the ticks they have left.
    terminating: BTreeMap<String, u32>,
    /// A GitOps tool's self-heal: after the StatefulSet has been missing for this many ticks, it is
    /// created again from Git, with the old templates (someone else's StatefulSet to Ferry).
    gitops_after: Option<u32>,
    /// Ticks the StatefulSet has been missing.
    absent_ticks: u32,
    /// A PodDisruptionBudget `minAvailable`: evicting a Ready pod that would leave fewer Ready is
    /// refused, and `disruptions_allowed` follows the Ready pods.
    min_available: Option<i32>,
    /// The StatefulSet controller deletes this pod (a rolling update's next step) at the moment
    /// Ferry takes the StatefulSet off; nothing re-creates it while the StatefulSet is gone.
    lost_at_take_off: Option<String>,
    /// What the measuring pods report copying the data needs (JSON of `CopyNeeds`; none: an older
    /// mover that does not say).
    usage_needs: Option<&'static str>,
    /// What a measuring pod run as the StatefulSet's user says it could not recreate.
    usage_not_as_user: Option<&'static str>,
    /// Measuring pods that end well with no result (one that could not write its message).
    usage_silent: bool,
    /// The driver makes no clone: a claim asking for one stays Pending.
    refuses_clones: bool,
    /// What the provisioner reports for a clone it refuses (none: it says nothing).
    clone_failure: Option<String>,
    /// Claims made as clones (by the claim's name).
    clones_made: Vec<String>,
    /// The capabilities of every mover pod started, in order.
    mover_capabilities: Vec<Vec<String>>,
    /// Every mover pod started, with the clone time it was given.
    mover_cloned_at: Vec<(String, Option<i64>)>,
    /// Each mover pod's source and target claims.
    mover_claims: BTreeMap<String, (String, String)>,
    /// Ticks a final mover tracking changes takes for its catch-up pass before it is armed (its
    /// pod Ready).
    catch_up_ticks: u32,
    /// Tracking standbys still catching up, with the ticks they have left.
    catching_up: BTreeMap<String, u32>,
    /// Every final mover started, and whether it was asked to track changes.
    final_tracking: Vec<(String, bool)>,
    /// A pod the StatefulSet controller makes for this replica never becomes Ready.
    never_ready: Option<String>,
    /// Ticks the operator takes to open the stream a running standby gets its go by.
    go_stream_ticks: u32,
    /// Standbys whose go stream still opens, with the ticks they have left.
    opening_streams: BTreeMap<String, u32>,
    /// Every serving mover started, by pod name.
    servers_started: Vec<String>,
    /// Every mover started with what it pulls from (a copy from another node).
    pulls: Vec<(String, Option<crate::resize::action::PullFrom>)>,
    /// Every target claim made, with the node it was made on.
    target_nodes: Vec<(String, Option<String>)>,
}

impl World for Cluster {
    fn observed(&self) -> &Observed {
        &self.observed
    }

    fn apply(&mut self, action: &ResizeAction) {
        Cluster::apply(self, action);
    }

    fn settle(&mut self) {
        Cluster::settle(self);
    }

    /// One second per reconcile on the simulated clock.
    fn tick(&mut self) -> Time {
        self.clock += 1;
        Time(Timestamp::from_second(self.clock).unwrap())
    }
}

/// The StatefulSet as it is before the resize (old size and class), as Git has it too.
fn old_stateful_set() -> StatefulSetView {
    StatefulSetView {
        templates: [("data".to_string(), TemplateView::sized(1 << 30, Some("standard")))].into(),
        replicas: REPLICAS,
        ..StatefulSetView::default()
    }
}

impl Cluster {
    fn new() -> Self {
        let mut cluster = Cluster {
            observed: Observed {
                backup_exists: false,
                ..Observed::default()
            },
            data: BTreeMap::new(),
            next_id: 0,
            fail_final_of: None,
            bytes_per_char: 1 << 20,
            finishing: BTreeMap::new(),
            fail_final_delay: 0,
            unschedulable_final: false,
            endless_warm: false,
            warm_seconds: Vec::new(),
            warm_starts: BTreeMap::new(),
            unschedulable_usage: false,
            binding: Vec::new(),
            stall_binding: false,
            clock: 1,
            grace_ticks: 2,
            terminating: BTreeMap::new(),
            gitops_after: None,
            absent_ticks: 0,
            min_available: None,
            lost_at_take_off: None,
            usage_needs: None,
            usage_not_as_user: None,
            usage_silent: false,
            refuses_clones: false,
            clone_failure: None,
            clones_made: Vec::new(),
            mover_capabilities: Vec::new(),
            mover_cloned_at: Vec::new(),
            mover_claims: BTreeMap::new(),
            catch_up_ticks: 1,
            catching_up: BTreeMap::new(),
            final_tracking: Vec::new(),
            never_ready: None,
            go_stream_ticks: 0,
            opening_streams: BTreeMap::new(),
            servers_started: Vec::new(),
            pulls: Vec::new(),
            target_nodes: Vec::new(),
        };
        cluster.observed.stateful_set = Some(StatefulSetView {
            ready_replicas: REPLICAS,
            ..old_stateful_set()
        });
        for replica in 0..REPLICAS {
            let claim = format!("data-db-{replica}");
            let volume = format!("pv-old-{replica}");
            cluster.bind(&claim, &volume, "Delete");
            cluster.data.insert(volume, format!("payload-{replica}"));
        }
        cluster.settle();
        cluster
    }

    /// A mover's pass: the source's data onto the target now (or a failure), the outcome seen at
    /// the next tick.
    fn copy_and_finish(&mut self, pod: &str, final_pass: bool) {
        let Some((source, target)) = self.mover_claims.get(pod).cloned() else {
            return;
        };
        let fails = final_pass && self.fail_final_of.as_deref() == Some(source.as_str());
        let volume_of = |name: &str| self.observed.claims.get(name).and_then(|c| c.volume_name.clone());
        let phase = if fails {
            MoverPhase::Failed {
                exit_code: 3,
                message: "verify mismatch".into(),
            }
        } else {
            if let (Some(from), Some(to)) = (volume_of(&source), volume_of(&target)) {
                let copied = self.data.get(&from).cloned().unwrap_or_default();
                self.data.insert(to, copied);
            }
            // The final pass tells the mover serving its source to stop; its node's kubelet
            // reports that exit later than the final mover's result is read.
            let serving = format!("{source}-ferry-{SUFFIX}-serve");
            if final_pass && self.observed.movers.contains_key(&serving) {
                self.finishing
                    .insert(serving, (SERVER_EXIT_SEEN_AFTER, MoverPhase::Succeeded));
            }
            MoverPhase::Succeeded
        };
        let delay = if fails { self.fail_final_delay } else { 0 };
        self.finishing.insert(pod.to_string(), (delay, phase));
    }

    fn ready_pods(&self) -> i32 {
        self.observed
            .pods
            .values()
            .filter(|p| p.ready && !p.deleting)
            .count() as i32
    }

    /// Replicas without a Ready pod that is staying.
    fn replicas_down(&self) -> Vec<i32> {
        self.observed.replicas_down("db", 0..REPLICAS)
    }

    fn id(&mut self) -> String {
        self.next_id += 1;
        format!("uid-{}", self.next_id)
    }

    fn bind(&mut self, claim: &str, volume: &str, policy: &str) {
        let uid = self.id();
        self.observed.claims.insert(
            claim.into(),
            ClaimView {
                uid: uid.clone(),
                volume_name: Some(volume.into()),
                bound: true,
                ..ClaimView::default()
            },
        );
        self.observed.volumes.insert(
            volume.into(),
            VolumeView {
                uid: format!("pv-uid-{}", self.next_id),
                reclaim_policy: policy.into(),
                claim_name: Some(claim.into()),
                claim_uid: Some(uid),
                phase: "Bound".into(),
                attributes_class: None,
            },
        );
    }

    /// Every claim and volume of the replicas, and the template, name the attributes class
    /// `class` (provisioned with it).
    fn with_attributes(mut self, class: &str) -> Self {
        let class = Some(class.to_string());
        for claim in self.observed.claims.values_mut() {
            claim.attributes_class = class.clone();
        }
        for volume in self.observed.volumes.values_mut() {
            volume.attributes_class = class.clone();
        }
        if let Some(sts) = self.observed.stateful_set.as_mut() {
            for template in sts.templates.values_mut() {
                template.attributes_class = class.clone();
            }
        }
        self
    }

    /// What the StatefulSet controller does: re-create missing pods while the StatefulSet exists;
    /// and mover pods end.
    fn settle(&mut self) {
        // The provisioner deletes a volume with policy Delete that no claim holds (Released), data
        // and all: a reclaim policy set back too early loses the copy.
        let held = |volume: &VolumeView, claims: &BTreeMap<String, ClaimView>| {
            let claim = volume.claim_name.as_ref().and_then(|name| claims.get(name));
            claim.is_some_and(|c| Some(&c.uid) == volume.claim_uid.as_ref())
        };
        let released: Vec<String> = self
            .observed
            .volumes
            .iter()
            .filter(|(_, v)| v.reclaim_policy == "Delete" && !held(v, &self.observed.claims))
            .map(|(name, _)| name.clone())
            .collect();
        for volume in released {
            self.observed.volumes.remove(&volume);
            self.data.remove(&volume);
        }
        // The PV controller sees a reservation (Available) a tick after it was made, and binds
        // claims created onto a reserved volume at the tick after that.
        for volume in self.observed.volumes.values_mut() {
            if volume.claim_uid.is_none() && volume.claim_name.is_some() {
                volume.phase = "Available".into();
            }
        }
        for claim in std::mem::take(&mut self.binding) {
            let Some(c) = self.observed.claims.get_mut(&claim) else {
                continue;
            };
            let volume = c
                .volume_name
                .clone()
                .and_then(|v| self.observed.volumes.get_mut(&v));
            // The PV controller binds a claim only to a volume of its own attributes class.
            if let Some(volume) = volume
                && volume.claim_name.as_deref() == Some(claim.as_str())
                && volume.claim_uid.as_ref().is_none_or(|uid| uid == &c.uid)
                && volume.attributes_class == c.attributes_class
            {
                volume.claim_uid = Some(c.uid.clone());
                volume.phase = "Bound".into();
                c.bound = !self.stall_binding || c.nudged;
            }
        }
        for (claim, c) in &self.observed.claims {
            if !c.bound {
                self.binding.push(claim.clone());
            }
        }
        // The operator's attach to a standby opens after a while.
        for (pod, left) in std::mem::take(&mut self.opening_streams) {
            if let Some(mover) = self.observed.movers.get_mut(&pod) {
                mover.go_stream_opening = left > 0;
            }
            if left > 0 {
                self.opening_streams.insert(pod, left - 1);
            }
        }
        // A standby's readiness probe passes once its catch-up pass has ended.
        for (pod, left) in std::mem::take(&mut self.catching_up) {
            if left > 0 {
                self.catching_up.insert(pod, left - 1);
            } else if let Some(mover) = self.observed.movers.get_mut(&pod) {
                mover.armed = true;
            }
        }
        for (pod, (left, phase)) in std::mem::take(&mut self.finishing) {
            if left > 0 {
                self.finishing.insert(pod, (left - 1, phase));
            } else if let Some(mover) = self.observed.movers.get_mut(&pod) {
                mover.phase = phase;
            }
        }
        // A Terminating replica keeps writing to its volume until its grace period is over.
        for (pod, left) in std::mem::take(&mut self.terminating) {
            let claim = format!("data-{pod}");
            let volume = self
                .observed
                .claims
                .get(&claim)
                .and_then(|c| c.volume_name.clone());
            if let Some(data) = volume.and_then(|v| self.data.get_mut(&v)) {
                data.push('+');
            }
            if left == 0 {
                self.observed.pods.remove(&pod);
            } else {
                self.terminating.insert(pod, left - 1);
            }
        }
        if self.observed.stateful_set.is_some() {
            self.absent_ticks = 0;
        } else if let Some(after) = self.gitops_after {
            self.absent_ticks += 1;
            if self.absent_ticks > after {
                self.absent_ticks = 0;
                self.observed.stateful_set = Some(StatefulSetView {
                    foreign: true,
                    ..old_stateful_set()
                });
            }
        }
        if self.observed.stateful_set.is_some() {
            for replica in 0..REPLICAS {
                let name = format!("db-{replica}");
                if !self.observed.pods.contains_key(&name) {
                    // A missing claim is provisioned afresh, empty, before the pod: the replica
                    // would then serve nothing.
                    let claim = format!("data-db-{replica}");
                    if !self.observed.claims.contains_key(&claim) {
                        let volume = format!("pv-fresh-{claim}");
                        self.bind(&claim, &volume, "Delete");
                        self.data.insert(volume, String::new());
                    }
                    let uid = self.id();
                    let ready = self.never_ready.as_ref() != Some(&name);
                    self.observed.pods.insert(
                        name,
                        PodView {
                            uid,
                            ready,
                            deleting: false,
                        },
                    );
                }
            }
        }
        let ready = self.ready_pods();
        if let Some(sts) = self.observed.stateful_set.as_mut() {
            sts.ready_replicas = ready;
        }
        if let Some(min) = self.min_available {
            self.observed.disruptions_allowed = Some((ready - min).max(0));
        }
    }

    fn apply(&mut self, action: &ResizeAction) {
        if let ResizeAction::CreateTargetClaim { claim, node, .. } = action
            && !self.observed.claims.contains_key(claim)
        {
            self.target_nodes.push((claim.clone(), node.clone()));
        }
        match action {
            ResizeAction::BackupStatefulSet => self.observed.backup_exists = true,
            ResizeAction::StartServer { pod, .. } => {
                if !self.observed.movers.contains_key(pod) {
                    self.servers_started.push(pod.clone());
                    let uid = self.id();
                    let serving = MoverView {
                        phase: MoverPhase::Running,
                        uid,
                        serving: true,
                        pod_ip: Some("10.2.0.7".into()),
                        ..MoverView::default()
                    };
                    self.observed.movers.insert(pod.clone(), serving);
                }
            }
            ResizeAction::CreateTargetClaim {
                claim,
                attributes_class,
                clone_of: Some(source),
                ..
            } => {
                if self.observed.claims.contains_key(claim) {
                    return;
                }
                if self.refuses_clones {
                    // Pending for good: the provisioner cannot make it.
                    let uid = self.id();
                    let created = Some(Time(Timestamp::from_second(self.clock).unwrap()));
                    let pending = ClaimView {
                        uid,
                        created,
                        provisioning_failed: self.clone_failure.clone(),
                        ..ClaimView::default()
                    };
                    self.observed.claims.insert(claim.clone(), pending);
                    return;
                }
                let volume = format!("pv-{claim}");
                self.bind(claim, &volume, "Delete");
                let created = Some(Time(Timestamp::from_second(self.clock).unwrap()));
                if let Some(c) = self.observed.claims.get_mut(claim) {
                    c.attributes_class = attributes_class.clone();
                    c.created = created;
                }
                // The source's data as it is now: what the replica writes later is not in it.
                let source_volume = self
                    .observed
                    .claims
                    .get(source)
                    .and_then(|c| c.volume_name.clone());
                let data = source_volume
                    .and_then(|v| self.data.get(&v).cloned())
                    .unwrap_or_default();
                self.data.insert(volume, data);
                self.clones_made.push(claim.clone());
            }
            ResizeAction::CreateTargetClaim {
                claim,
                attributes_class,
                ..
            } => {
                if !self.observed.claims.contains_key(claim) {
                    // WaitForFirstConsumer in real life; bound at once here.
                    let volume = format!("pv-{claim}");
                    self.bind(claim, &volume, "Delete");
                    // Provisioned with the claim's attributes class.
                    if let Some(c) = self.observed.claims.get_mut(claim) {
                        c.attributes_class = attributes_class.clone();
                    }
                    if let Some(v) = self.observed.volumes.get_mut(&volume) {
                        v.attributes_class = attributes_class.clone();
                    }
                    self.data.insert(volume, String::new());
                }
            }
            ResizeAction::StartMover {
                pod,
                source,
                target,
                pass,
                capabilities,
                cloned_at,
                track_changes,
                from,
            } => {
                if !self.observed.movers.contains_key(pod) {
                    self.pulls.push((pod.clone(), from.clone()));
                }
                self.mover_capabilities.push(capabilities.clone());
                self.mover_cloned_at.push((pod.clone(), *cloned_at));
                if *pass == Pass::Final {
                    self.final_tracking.push((pod.clone(), *track_changes));
                }
                let copied = if *pass == Pass::Warm { 1000 } else { 10 };
                let mut seconds = 0.5;
                if *pass == Pass::Warm && !self.observed.movers.contains_key(pod) {
                    let started = self.warm_starts.entry(pod.clone()).or_default();
                    seconds = self.warm_seconds.get(*started).copied().unwrap_or(0.5);
                    *started += 1;
                }
                // A pass that used its change record read a few entries and has no digest.
                let walk = if *track_changes {
                    r#","digest":"","changeTracking":"used","entriesVisited":3"#
                } else {
                    r#","digest":"d1","entriesVisited":10"#
                };
                let result = Some(format!(
                    r#"{{"files":10,"bytes":1000,"bytesCopied":{copied},"seconds":{seconds}{walk}}}"#
                ));
                let created = Some(Time(Timestamp::from_second(self.clock).unwrap()));
                // A final mover no node can take waits forever, saying why.
                if *pass == Pass::Final && self.unschedulable_final && !self.observed.movers.contains_key(pod)
                {
                    let waiting = MoverView {
                        stuck: Some("Unschedulable: 0/4 nodes are available".into()),
                        created: created.clone(),
                        awaiting_go: true,
                        ..MoverView::default()
                    };
                    self.observed.movers.insert(pod.clone(), waiting);
                }
                // A mover of a claim that is not bound cannot start (its pod stays Pending).
                let unbound = self.observed.claims.get(target).is_some_and(|c| !c.bound);
                if unbound && !self.observed.movers.contains_key(pod) {
                    let uid = self.id();
                    let waiting = MoverView {
                        uid,
                        created: created.clone(),
                        awaiting_go: *pass == Pass::Final,
                        ..MoverView::default()
                    };
                    self.observed.movers.insert(pod.clone(), waiting);
                    self.mover_claims
                        .insert(pod.clone(), (source.clone(), target.clone()));
                }
                // A warm mover copies at once and runs until the next tick of the simulated
                // cluster; a final one waits for its go, and copies then.
                if !self.observed.movers.contains_key(pod) {
                    let uid = self.id();
                    let running = MoverView {
                        phase: MoverPhase::Running,
                        uid,
                        awaiting_go: *pass == Pass::Final,
                        // Without a readiness probe a pod is Ready once its container runs.
                        armed: !*track_changes,
                        result,
                        created,
                        ..MoverView::default()
                    };
                    if *track_changes {
                        self.catching_up.insert(pod.clone(), self.catch_up_ticks);
                    }
                    if *pass == Pass::Final && self.go_stream_ticks > 0 {
                        self.opening_streams.insert(pod.clone(), self.go_stream_ticks);
                    }
                    self.observed.movers.insert(pod.clone(), running);
                    self.mover_claims
                        .insert(pod.clone(), (source.clone(), target.clone()));
                    if *pass == Pass::Warm && !self.endless_warm {
                        self.copy_and_finish(pod, false);
                    }
                }
            }
            ResizeAction::MeasureUsage { pod, claim } => {
                let volume = self
                    .observed
                    .claims
                    .get(claim)
                    .and_then(|c| c.volume_name.clone());
                let used = volume
                    .and_then(|v| self.data.get(&v))
                    .map(|d| d.len() as u64 * self.bytes_per_char)
                    .unwrap_or(0);
                let result = (!self.usage_silent).then(|| match (self.usage_needs, self.usage_not_as_user) {
                    (_, Some(said)) => format!(r#"{{"bytes":{used},"inodes":3,"notAsUser":"{said}"}}"#),
                    (Some(needs), None) => format!(r#"{{"bytes":{used},"inodes":3,"needs":{needs}}}"#),
                    (None, None) => format!(r#"{{"bytes":{used},"inodes":3}}"#),
                });
                if self.unschedulable_usage && !self.observed.movers.contains_key(pod) {
                    let waiting = MoverView {
                        stuck: Some("Unschedulable: 0/4 nodes are available".into()),
                        created: Some(Time(Timestamp::from_second(self.clock).unwrap())),
                        ..MoverView::default()
                    };
                    self.observed.movers.insert(pod.clone(), waiting);
                }
                // Runs until the next tick, like a mover.
                if !self.observed.movers.contains_key(pod) {
                    self.finishing.insert(pod.clone(), (0, MoverPhase::Succeeded));
                    let running = MoverView {
                        phase: MoverPhase::Running,
                        result,
                        ..MoverView::default()
                    };
                    self.observed.movers.insert(pod.clone(), running);
                }
            }
            ResizeAction::DeleteMover { pod, exited } => {
                let same = |m: &MoverView| exited.as_ref().is_none_or(|uid| uid == &m.uid);
                if self.observed.movers.get(pod).is_some_and(same) {
                    self.observed.movers.remove(pod);
                    self.finishing.remove(pod);
                    self.catching_up.remove(pod);
                }
            }
            ResizeAction::StartFinalPass { pod, uid } => {
                let waiting = self
                    .observed
                    .movers
                    .get_mut(pod)
                    .filter(|m| &m.uid == uid && m.awaiting_go);
                if let Some(mover) = waiting {
                    mover.awaiting_go = false;
                    self.copy_and_finish(pod, true);
                }
            }
            ResizeAction::Volume(VolumeWrite::SetReclaimPolicy { volume, uid, policy }) => {
                if let Some(v) = self.observed.volumes.get_mut(volume)
                    && uid.as_ref().is_none_or(|uid| uid == &v.uid)
                {
                    v.reclaim_policy = policy.clone();
                }
            }
            ResizeAction::Volume(VolumeWrite::DeleteClaim { claim, uid }) => {
                let matches = self.observed.claims.get(claim).is_some_and(|c| &c.uid == uid);
                if matches {
                    let volume = self.observed.claims.remove(claim).and_then(|c| c.volume_name);
                    // A released volume with policy Delete is deleted by its provisioner, data and all.
                    if let Some(volume) = volume
                        && self
                            .observed
                            .volumes
                            .get(&volume)
                            .is_some_and(|v| v.reclaim_policy == "Delete")
                    {
                        self.observed.volumes.remove(&volume);
                        self.data.remove(&volume);
                    }
                }
            }
            ResizeAction::Volume(VolumeWrite::ReserveVolume { volume, uid, claim }) => {
                if let Some(v) = self.observed.volumes.get_mut(volume)
                    && uid.as_ref().is_none_or(|uid| uid == &v.uid)
                {
                    v.claim_name = Some(claim.clone());
                    v.claim_uid = None;
                    v.phase = "Released".into();
                }
            }
            ResizeAction::BindClaim {
                claim,
                volume,
                attributes_class,
                ..
            } => {
                // A claim created before the PV controller saw the reservation would not bind.
                let reserved = self.observed.volumes.get(volume).is_some_and(|v| {
                    v.claim_name.as_deref() == Some(claim.as_str())
                        && v.claim_uid.is_none()
                        && v.phase == "Available"
                });
                assert!(
                    reserved,
                    "{claim} created onto {volume} before the reservation was seen"
                );
                if reserved && !self.observed.claims.contains_key(claim) {
                    // Created Pending, naming its volume; bound two ticks later.
                    let uid = self.id();
                    self.observed.claims.insert(
                        claim.clone(),
                        ClaimView {
                            uid,
                            volume_name: Some(volume.clone()),
                            attributes_class: attributes_class.clone(),
                            bound: false,
                            created: Some(Time(Timestamp::from_second(self.clock).unwrap())),
                            ..ClaimView::default()
                        },
                    );
                }
            }
            ResizeAction::Volume(VolumeWrite::NudgeClaim { claim, uid }) => {
                if let Some(c) = self.observed.claims.get_mut(claim)
                    && &c.uid == uid
                {
                    c.nudged = true;
                }
            }
            ResizeAction::OrphanDeleteStatefulSet => {
                self.observed.stateful_set = None;
                if let Some(pod) = self.lost_at_take_off.take() {
                    self.observed.pods.remove(&pod);
                }
            }
            ResizeAction::RecreateStatefulSet => {
                if self.observed.stateful_set.is_none() {
                    self.observed.stateful_set = Some(StatefulSetView {
                        templates: [("data".to_string(), TemplateView::sized(2 << 30, Some("fast")))].into(),
                        ..old_stateful_set()
                    });
                }
            }
            ResizeAction::RestoreStatefulSet => {
                if self.observed.stateful_set.is_none() {
                    self.observed.stateful_set = Some(old_stateful_set());
                }
            }
            ResizeAction::PatchOwner { .. } => panic!("no StatefulSet of these worlds has an owner"),
            ResizeAction::EvictPod { pod, uid } => {
                // The eviction API: refused while the budget allows no disruption of a Ready pod.
                let ready = self
                    .observed
                    .pods
                    .get(pod)
                    .is_some_and(|p| p.ready && !p.deleting);
                let refused = self
                    .min_available
                    .is_some_and(|min| ready && self.ready_pods() <= min);
                if let Some(p) = self.observed.pods.get_mut(pod)
                    && &p.uid == uid
                    && !p.deleting
                    && !refused
                {
                    if self.grace_ticks == 0 {
                        self.observed.pods.remove(pod);
                    } else {
                        p.deleting = true;
                        p.ready = false;
                        self.terminating.insert(pod.clone(), self.grace_ticks);
                    }
                }
            }
            ResizeAction::ExpandClaim { .. } | ResizeAction::ModifyClaim { .. } => {}
        }
    }
}

fn planned() -> VolumeResizeStatus {
    VolumeResizeStatus {
        phase: Some(Phase::Planning),
        // Prechecked for the spec's generation: the route goes to the run.
        observed_generation: Some(1),
        plan: (0..REPLICAS)
            .map(|replica| VolumePlan {
                replica,
                volume: "data".into(),
                claim_name: format!("data-db-{replica}"),
                strategy: Some(ChosenStrategy::Copy),
                target_size: "2Gi".into(),
                target_storage_class: Some("fast".into()),
                ..VolumePlan::default()
            })
            .collect(),
        ..VolumeResizeStatus::default()
    }
}

/// A whole copy from the plan, which must end.
fn run_with(resize: &Resize, cluster: &mut Cluster, crash_at: Option<usize>) -> (VolumeResizeStatus, usize) {
    let (status, executed) = drive(resize, cluster, planned(), crash_at, 500, &mut |_, _| {});
    assert!(
        status.phase.is_some_and(Phase::is_terminal),
        "did not converge (crash at {crash_at:?}): {status:?}"
    );
    (status, executed)
}

fn run(cluster: &mut Cluster, crash_at: Option<usize>) -> (VolumeResizeStatus, usize) {
    run_with(&resize(), cluster, crash_at)
}

fn assert_copied(cluster: &Cluster, status: &VolumeResizeStatus) {
    assert_eq!(status.phase, Some(Phase::Succeeded), "{:?}", status.message);
    for replica in 0..REPLICAS {
        let claim = &cluster.observed.claims[&format!("data-db-{replica}")];
        let volume = claim.volume_name.clone().unwrap();
        assert_eq!(
            volume,
            format!("pv-data-db-{replica}-ferry-abcd1234"),
            "claim on its new volume"
        );
        let old = format!("pv-old-{replica}");
        assert!(
            cluster.data[&old].starts_with(&format!("payload-{replica}")),
            "old volume retained with its data"
        );
        // Everything the replica wrote, its shutdown included, is on the new volume.
        assert_eq!(cluster.data[&volume], cluster.data[&old], "data copied");
        assert_eq!(
            cluster.observed.volumes[&volume].reclaim_policy, "Delete",
            "policy restored"
        );
        assert_eq!(cluster.observed.volumes[&old].reclaim_policy, "Retain");
    }
    assert_eq!(
        cluster.observed.claims.len(),
        REPLICAS as usize,
        "no temporary claim leaked"
    );
    assert!(cluster.observed.movers.is_empty(), "no mover pod leaked");
    assert!(cluster.observed.stateful_set.is_some());
    assert_eq!(status.created_objects.retained_volumes.len(), REPLICAS as usize);
    for row in &status.plan {
        // Each pass counted once (warm 1000, final 10), whatever crashed in between (a crash
        // between the warm mover's removal and the final mover's start makes a second warm pass).
        let warm_passes = row.warm_pass_milliseconds.as_ref().map_or(0, Vec::len) as u64;
        assert_eq!(
            row.bytes_copied,
            Some(1000 * warm_passes + 10),
            "{}: bytes copied, {warm_passes} warm passes",
            row.claim_name,
        );
        assert_eq!(row.final_bytes_copied, Some(10), "{}", row.claim_name);
    }
    assert!(status.created_objects.temporary_claims.is_empty());
}

/// Replica `replica` is whole after `case`: its old volume still holds its data, the claim serves
/// everything written before the swap (after it, only the new volume gets writes), and no
/// temporary claim is left. Returns the volume the claim is on.
fn assert_replica_whole(cluster: &Cluster, replica: i32, case: &str) -> String {
    let claim = format!("data-db-{replica}");
    let volume = cluster.observed.claims[&claim].volume_name.clone().unwrap();
    let old = format!("pv-old-{replica}");
    assert!(
        cluster.data[&old].starts_with(&format!("payload-{replica}")),
        "{case}: {old}"
    );
    assert!(
        cluster.data[&volume].starts_with(&cluster.data[&old]),
        "{case}: {claim} serves its data: {} vs old {}",
        cluster.data[&volume],
        cluster.data[&old]
    );
    assert!(
        !cluster
            .observed
            .claims
            .contains_key(&format!("{claim}-ferry-abcd1234")),
        "{case}: temporary claim of {claim} removed"
    );
    volume
}

#[test]
fn a_clean_run_copies_every_replica_once() {
    let mut cluster = Cluster::new();
    let original_pods: Vec<String> = (0..REPLICAS)
        .map(|r| cluster.observed.pods[&format!("db-{r}")].uid.clone())
        .collect();
    let (status, _) = run(&mut cluster, None);
    assert_copied(&cluster, &status);
    for row in &status.plan {
        assert_eq!(
            row.restarted_pod.as_ref(),
            Some(&original_pods[row.replica as usize]),
            "stopped once"
        );
        assert_eq!(row.step, Some(RowStep::Copied));
        assert_eq!(row.bytes_done, Some(1000));
        assert_eq!(row.bytes_copied, Some(1010), "warm pass and the changes");
        // Downtime: from the stop to the reconcile that saw the new pod Ready.
        let stopped = row.stopped_at.as_ref().expect("stop recorded").0;
        let finished = row.finished_at.as_ref().expect("finish recorded").0;
        let millis = finished.as_millisecond() - stopped.as_millisecond();
        assert!(millis > 0);
        assert_eq!(row.downtime_milliseconds, Some(millis));
        assert_eq!(row.downtime_seconds, Some((millis + 500) / 1000));
    }
}

#[test]
fn killed_after_any_action_the_copy_still_completes_with_data_intact() {
    let (_, total) = run(&mut Cluster::new(), None);
    assert!(total > 30, "a copy of 3 replicas takes many actions ({total})");
    for crash_at in 0..total {
        let mut cluster = Cluster::new();
        let (status, _) = run(&mut cluster, Some(crash_at));
        assert_copied(&cluster, &status);
    }
}

/// Both volumes of a replica are `Retain` by the time it is taken down (their own policies
/// recorded before), so the swap after its final pass begins with its deletes: no policy is set to
/// `Retain` for a replica that is down.
#[test]
fn both_volumes_are_retained_before_a_replica_stops_and_none_after() {
    let mut cluster = Cluster::new();
    let mut stopped = std::collections::BTreeSet::new();
    let mut inspect = |decision: &Decision, cluster: &Cluster| {
        for action in &decision.actions {
            match action {
                ResizeAction::EvictPod { pod, .. } => {
                    let row = (decision.status.plan.iter())
                        .find(|row| format!("db-{}", row.replica) == *pod)
                        .unwrap();
                    assert_eq!(row.original_reclaim_policy.as_deref(), Some("Delete"));
                    assert_eq!(row.target_reclaim_policy.as_deref(), Some("Delete"));
                    for volume in [&row.source_volume, &row.target_volume] {
                        let volume = volume.as_ref().unwrap();
                        let policy = &cluster.observed.volumes[volume].reclaim_policy;
                        assert_eq!(policy, "Retain", "{pod} stopped with {volume} {policy}");
                        stopped.insert(volume.clone());
                    }
                }
                ResizeAction::Volume(VolumeWrite::SetReclaimPolicy { volume, policy, .. })
                    if policy == "Retain" =>
                {
                    assert!(
                        !stopped.contains(volume),
                        "{volume} retained only after its replica stopped"
                    );
                }
                _ => {}
            }
        }
    };
    let (status, _) = drive(&resize(), &mut cluster, planned(), None, 500, &mut inspect);
    assert_copied(&cluster, &status);
    assert_eq!(
        stopped.len(),
        2 * REPLICAS as usize,
        "every replica stopped: {stopped:?}"
    );
}

/// The swap's claims are Terminating before its mover pod goes: the PVC protection controller
/// then lets both go in one pass, instead of a pass (and a live pod list) for each.
#[test]
fn a_swap_deletes_its_claims_before_its_mover_pod() {
    let mut cluster = Cluster::new();
    let mut swaps = 0;
    let mut inspect = |decision: &Decision, _: &Cluster| {
        let kinds: Vec<&str> = (decision.actions.iter())
            .filter_map(|action| match action {
                ResizeAction::Volume(VolumeWrite::DeleteClaim { .. }) => Some("claim"),
                ResizeAction::DeleteMover { .. } => Some("mover"),
                _ => None,
            })
            .collect();
        if kinds.contains(&"claim") && kinds.contains(&"mover") {
            swaps += 1;
            assert_eq!(kinds, ["claim", "claim", "mover"], "{:?}", decision.actions);
        }
    };
    let (status, _) = drive(&resize(), &mut cluster, planned(), None, 500, &mut inspect);
    assert_copied(&cluster, &status);
    assert_eq!(
        swaps, REPLICAS,
        "every replica's swap deletes a mover with its claims"
    );
}

#[test]
fn a_failed_final_sync_rolls_the_replica_back() {
    let mut cluster = Cluster::new();
    cluster.fail_final_of = Some("data-db-1".into());
    let (status, _) = run(&mut cluster, None);
    assert_eq!(status.phase, Some(Phase::Failed));
    let message = status.message.clone().unwrap();
    assert!(
        message.starts_with("rolled back")
            && message.contains("data-db-1")
            && message.contains("exit code 3"),
        "{message}"
    );
    // Replica 0 finished before the failure and stays on its new volume; replica 1 is back on its old one.
    assert_eq!(
        cluster.observed.claims["data-db-0"].volume_name.as_deref(),
        Some("pv-data-db-0-ferry-abcd1234")
    );
    assert_eq!(
        cluster.observed.claims["data-db-1"].volume_name.as_deref(),
        Some("pv-old-1")
    );
    assert!(cluster.data["pv-old-1"].starts_with("payload-1"));
    // Retained before its stop, the old volume has its own policy back.
    assert_eq!(cluster.observed.volumes["pv-old-1"].reclaim_policy, "Delete");
    assert!(
        !cluster.observed.claims.contains_key("data-db-1-ferry-abcd1234"),
        "temporary claim removed"
    );
    assert!(cluster.observed.movers.is_empty());
    assert!(cluster.observed.stateful_set.is_some(), "StatefulSet restored");
    assert!(cluster.observed.pods.contains_key("db-1"), "replica 1 runs again");
}

#[test]
fn without_warm_copy_no_warm_mover_runs() {
    let mut cluster = Cluster::new();
    let resize = resize().with(|spec| spec.warm_copy = false);
    let no_warm = &mut |decision: &Decision, _: &Cluster| {
        let warm = decision
            .actions
            .iter()
            .any(|a| matches!(a, ResizeAction::StartMover { pass: Pass::Warm, .. }));
        assert!(!warm, "warm copy disabled");
    };
    let (status, _) = drive(&resize, &mut cluster, planned(), None, 200, no_warm);
    assert_copied(&cluster, &status);
    assert!(status.plan.iter().all(|row| row.bytes_copied == Some(10)));
}

/// Deleting the VolumeResize after any number of actions stops at a safe point: each replica is
/// either fully on its new volume or fully back on its old one, with its data, and the StatefulSet
/// exists.
#[test]
fn deleted_after_any_action_it_stops_at_a_safe_point() {
    let (_, total) = run(&mut Cluster::new(), None);
    for deleted_after in 0..total {
        let mut cluster = Cluster::new();
        let now = Time(Timestamp::from_second(1).unwrap());
        let mut status = planned();
        let mut executed = 0;
        let mut converged = false;
        let mut resize = resize();
        for _ in 0..500 {
            resize.deleting = executed >= deleted_after;
            // Deleted before the run began: the route lets it go at once, nothing touched.
            let Some(decision) = resize.step(&status, &cluster.observed, &now) else {
                converged = true;
                break;
            };
            status = decision.status;
            if status.phase.is_some_and(Phase::is_terminal) {
                converged = true;
                break;
            }
            for action in &decision.actions {
                cluster.apply(action);
                executed += 1;
            }
            cluster.settle();
        }
        assert!(converged, "deleted after {deleted_after}: did not stop");
        assert!(
            cluster.observed.stateful_set.is_some(),
            "deleted after {deleted_after}: StatefulSet exists"
        );
        assert!(
            cluster.observed.movers.is_empty(),
            "deleted after {deleted_after}: movers removed"
        );
        for replica in 0..REPLICAS {
            // Whichever volume it ends on holds everything the replica wrote.
            assert_replica_whole(&cluster, replica, &format!("deleted after {deleted_after}"));
        }
    }
}

#[test]
fn mover_pods_get_only_the_capabilities_their_measured_data_needs() {
    // Files of other owners, nothing else: owners are kept, nothing more is allowed.
    let mut cluster = Cluster::new();
    cluster.usage_needs = Some(r#"{"otherOwners":true}"#);
    let (status, _) = run(&mut cluster, None);
    assert_eq!(status.phase, Some(Phase::Succeeded), "{:?}", status.message);
    assert_eq!(
        cluster.mover_capabilities.len(),
        2 * REPLICAS as usize,
        "a warm and a final pass each"
    );
    assert!(
        cluster
            .mover_capabilities
            .iter()
            .all(|capabilities| *capabilities == ["CHOWN", "FOWNER", "DAC_OVERRIDE"]),
        "{:?}",
        cluster.mover_capabilities
    );
    assert!(status.plan.iter().all(|row| row.mover_capabilities.is_some()));

    // A measuring mover that does not say (an older image): every capability, as before.
    let mut older = Cluster::new();
    let (status, _) = run(&mut older, None);
    assert_eq!(status.phase, Some(Phase::Succeeded), "{:?}", status.message);
    assert!(
        older
            .mover_capabilities
            .iter()
            .all(|capabilities| *capabilities == capabilities::EVERY_COPY_CAPABILITY),
        "{:?}",
        older.mover_capabilities
    );
}

#[test]
fn a_target_smaller_than_the_data_fails_before_anything_is_touched() {
    let mut cluster = Cluster::new();
    // "payload-N" is 9 characters: 9 GiB of data each, more than the 2Gi target.
    cluster.bytes_per_char = 1 << 30;
    let before_claims = cluster.observed.claims.clone();
    let (status, _) = run(&mut cluster, None);
    assert_eq!(status.phase, Some(Phase::Failed));
    let message = status.message.clone().unwrap();
    assert!(
        message.contains("data-db-0 holds 9.0 GiB of data; 2Gi leaves no room"),
        "{message}"
    );
    assert!(
        !cluster.observed.backup_exists,
        "nothing touched, not even the backup"
    );
    assert_eq!(cluster.observed.claims, before_claims, "claims untouched");
    assert!(cluster.observed.movers.is_empty(), "measuring pods removed");
    assert!(status.plan.iter().all(|row| row.used_bytes == Some(9 << 30)));
}

/// A plan whose rows all have `targetSize` "lots" and no `targetBytes`.
fn planned_without_a_size() -> VolumeResizeStatus {
    let mut status = planned();
    for row in &mut status.plan {
        row.target_size = "lots".into();
    }
    status
}

/// Every target claim the planner asks for, with its size.
fn target_claims(decision: &Decision) -> Vec<u64> {
    decision
        .actions
        .iter()
        .filter_map(|a| match a {
            ResizeAction::CreateTargetClaim { bytes, .. } | ResizeAction::BindClaim { bytes, .. } => {
                Some(*bytes)
            }
            _ => None,
        })
        .collect()
}

#[test]
fn a_target_that_is_not_a_size_fails_before_anything_is_touched() {
    let mut cluster = Cluster::new();
    let before_claims = cluster.observed.claims.clone();
    let mut claims = Vec::new();
    let (status, _) = drive(
        &resize(),
        &mut cluster,
        planned_without_a_size(),
        None,
        100,
        &mut |decision, _| claims.extend(target_claims(decision)),
    );
    assert_eq!(status.phase, Some(Phase::Failed));
    let message = status.message.clone().unwrap_or_default();
    assert!(
        message.contains(r#"target size "lots" of data-db-0 is not a size"#),
        "{message}"
    );
    assert_eq!(claims, Vec::<u64>::new(), "no claim of any size");
    assert!(
        !cluster.observed.backup_exists,
        "nothing touched, not even the backup"
    );
    assert_eq!(cluster.observed.claims, before_claims, "claims untouched");
}

/// Past the measurement (the backup taken), a row without a target size rolls back instead of
/// creating a claim of 0 bytes.
#[test]
fn a_target_that_is_not_a_size_after_the_backup_rolls_back_without_a_claim() {
    let mut cluster = Cluster::new();
    cluster.observed.backup_exists = true;
    let before_claims = cluster.observed.claims.clone();
    let mut status = planned_without_a_size();
    for row in &mut status.plan {
        row.used_bytes = Some(1);
    }
    let mut claims = Vec::new();
    let (status, _) = drive(&resize(), &mut cluster, status, None, 100, &mut |decision, _| {
        claims.extend(target_claims(decision))
    });
    assert_eq!(status.phase, Some(Phase::Failed), "{:?}", status.message);
    let message = status.message.clone().unwrap_or_default();
    assert!(
        message.contains(r#"target size "lots" of data-db-0 is not a size"#),
        "{message}"
    );
    assert_eq!(claims, Vec::<u64>::new(), "no claim of any size");
    assert_eq!(cluster.observed.claims, before_claims, "claims untouched");
}

/// Rollback on request (the annotation) after a clean copy, with the operator killed after action
/// `crash_at`; until the route leaves the rollback. Returns the status and the actions carried out.
fn revert(
    cluster: &mut Cluster,
    copied: VolumeResizeStatus,
    crash_at: Option<usize>,
) -> (VolumeResizeStatus, usize) {
    let now = Time(Timestamp::from_second(2).unwrap());
    let resize = Resize {
        rollback_requested: true,
        ..resize()
    };
    let mut status = copied;
    let mut executed = 0;
    for _ in 0..500 {
        let Some(decision) = resize.step(&status, &cluster.observed, &now) else {
            return (status, executed);
        };
        // Ended, and nothing left that could still be put back.
        if decision.status.phase.is_some_and(Phase::is_terminal) && decision.actions.is_empty() {
            return (decision.status, executed);
        }
        status = decision.status;
        for action in &decision.actions {
            if crash_at == Some(executed) {
                executed += 1;
                break;
            }
            cluster.apply(action);
            executed += 1;
        }
        cluster.settle();
    }
    panic!("rollback did not converge: {status:?}");
}

fn assert_reverted(cluster: &Cluster, status: &VolumeResizeStatus) {
    assert_eq!(status.phase, Some(Phase::Failed));
    assert!(
        status
            .message
            .as_deref()
            .unwrap()
            .starts_with("rolled back on request"),
        "{:?}",
        status.message
    );
    for replica in 0..REPLICAS {
        let claim = &cluster.observed.claims[&format!("data-db-{replica}")];
        let old = format!("pv-old-{replica}");
        assert_eq!(
            claim.volume_name.as_deref(),
            Some(old.as_str()),
            "replica {replica} back on its old volume"
        );
        assert!(cluster.data[&old].starts_with(&format!("payload-{replica}")));
        assert_eq!(
            cluster.observed.volumes[&old].reclaim_policy, "Delete",
            "old policy back"
        );
        let new = format!("pv-data-db-{replica}-ferry-abcd1234");
        assert_eq!(
            cluster.observed.volumes[&new].reclaim_policy, "Retain",
            "new volume kept"
        );
        assert!(cluster.data[&new].starts_with(&format!("payload-{replica}")));
    }
    let mut retained = status.created_objects.retained_volumes.clone();
    retained.sort();
    let expected: Vec<String> = (0..REPLICAS)
        .map(|r| format!("pv-data-db-{r}-ferry-abcd1234"))
        .collect();
    assert_eq!(retained, expected, "the new volumes are the retained ones now");
    assert!(cluster.observed.stateful_set.is_some());
    assert_eq!(cluster.observed.claims.len(), REPLICAS as usize);
}

#[test]
fn rollback_on_request_puts_every_replica_back_on_its_old_volume() {
    let mut cluster = Cluster::new();
    let (copied, _) = run(&mut cluster, None);
    let (status, _) = revert(&mut cluster, copied, None);
    assert_reverted(&cluster, &status);
}

/// The new volumes are made with the claims' attributes class, and a rollback binds each claim to
/// its old volume again (the PV controller binds only a claim of the volume's attributes class).
#[test]
fn a_copy_keeps_the_attributes_class_and_a_rollback_binds_the_old_volumes_again() {
    let mut cluster = Cluster::new().with_attributes("gold");
    let mut status = planned();
    for row in &mut status.plan {
        row.current_attributes_class = Some("gold".into());
        row.target_attributes_class = Some("gold".into());
    }
    let (copied, _) = drive(&resize(), &mut cluster, status, None, 500, &mut |_, _| {});
    assert_copied(&cluster, &copied);
    for replica in 0..REPLICAS {
        let claim = &cluster.observed.claims[&format!("data-db-{replica}")];
        assert_eq!(claim.attributes_class.as_deref(), Some("gold"));
        let volume = &cluster.observed.volumes[claim.volume_name.as_ref().unwrap()];
        assert_eq!(volume.attributes_class.as_deref(), Some("gold"));
    }
    let (status, _) = revert(&mut cluster, copied, None);
    assert_reverted(&cluster, &status);
}

/// `planned()` with every row's new volume made as a clone.
fn planned_clones() -> VolumeResizeStatus {
    let mut status = planned();
    for row in &mut status.plan {
        row.cloned = Some(true);
    }
    status
}

/// Warm movers started in a decision.
fn warm_movers(decision: &Decision) -> usize {
    decision
        .actions
        .iter()
        .filter(|action| matches!(action, ResizeAction::StartMover { pass: Pass::Warm, .. }))
        .count()
}

/// A clone stands for the warm copy: no warm mover runs, the final pass copies what the replica
/// wrote since, and the copy completes with the operator killed after any action.
#[test]
fn a_clone_stands_for_the_warm_copy_with_the_operator_killed_after_any_action() {
    let mut warm = 0;
    let mut cluster = Cluster::new();
    let (status, total) = drive(
        &resize(),
        &mut cluster,
        planned_clones(),
        None,
        500,
        &mut |decision, _| warm += warm_movers(decision),
    );
    assert_copied(&cluster, &status);
    assert_eq!(warm, 0, "no warm mover");
    assert_eq!(cluster.clones_made.len(), REPLICAS as usize);
    // Each final pass is told when its clone's claim was made (the simulated clock then).
    assert_eq!(cluster.mover_cloned_at.len(), REPLICAS as usize);
    for (pod, cloned_at) in &cluster.mover_cloned_at {
        assert!(pod.ends_with("-final"), "{pod}");
        assert!(cloned_at.is_some(), "{pod} not told when its clone was made");
    }
    for row in &status.plan {
        assert_eq!(row.cloned, Some(true));
        assert_eq!(row.bytes_copied, Some(10), "only the final pass");
    }
    for crash_at in 0..total {
        let mut cluster = Cluster::new();
        let (status, _) = drive(
            &resize(),
            &mut cluster,
            planned_clones(),
            Some(crash_at),
            500,
            &mut |_, _| {},
        );
        assert!(
            status.phase.is_some_and(Phase::is_terminal),
            "crash at {crash_at}: {status:?}"
        );
        assert_copied(&cluster, &status);
    }
}

/// A driver that makes no clone leaves the claim Pending: after [`clone::CLONE_BIND_SECONDS`] the
/// clone is given up before the replica is stopped (its mover could never start), and the mover's
/// warm copy and final pass copy instead.
#[test]
fn a_clone_the_driver_never_makes_is_given_up_for_the_mover_before_any_stop() {
    let mut cluster = Cluster::new();
    cluster.refuses_clones = true;
    let mut warm = 0;
    let mut stopped_while_clone_pending = false;
    let (status, _) = drive(
        &resize(),
        &mut cluster,
        planned_clones(),
        None,
        2000,
        &mut |decision, cluster| {
            warm += warm_movers(decision);
            let pending_clone = cluster
                .observed
                .claims
                .iter()
                .any(|(name, claim)| name.ends_with("-ferry-abcd1234") && !claim.bound);
            let stops = decision
                .actions
                .iter()
                .any(|action| matches!(action, ResizeAction::EvictPod { .. }));
            stopped_while_clone_pending |= stops && pending_clone;
        },
    );
    assert_copied(&cluster, &status);
    assert!(
        !stopped_while_clone_pending,
        "no replica stopped while its clone was pending"
    );
    assert_eq!(warm, REPLICAS as usize, "the mover copied warm instead");
    assert!(cluster.clones_made.is_empty());
    // Each row's standby was started for its clone, then given up with it; the final pass that
    // ran after the mover's warm copy is told of no clone.
    let last_finals: BTreeMap<&String, Option<i64>> = cluster
        .mover_cloned_at
        .iter()
        .filter(|(pod, _)| pod.ends_with("-final"))
        .map(|(pod, at)| (pod, *at))
        .collect();
    assert_eq!(last_finals.len(), REPLICAS as usize);
    assert!(
        last_finals.values().all(Option::is_none),
        "a mover's copy is no clone: {:?}",
        cluster.mover_cloned_at
    );
    for row in &status.plan {
        assert_eq!(row.cloned, Some(false));
        assert!(
            row.clone_refused
                .as_deref()
                .is_some_and(|why| why.contains("was not provisioned within 120 s")),
            "{row:?}"
        );
    }
}

/// A clone the provisioner reports it failed to make (`ProvisioningFailed`: the driver cannot clone
/// that source at that size) is given up at once, with the driver's words, not after
/// [`clone::CLONE_BIND_SECONDS`], and the mover copies.
#[test]
fn a_clone_the_provisioner_reports_failed_is_given_up_at_once() {
    let mut cluster = Cluster::new();
    cluster.refuses_clones = true;
    cluster.clone_failure = Some("rpc error: code = OutOfRange desc = ext4 cannot grow".to_string());
    let started = cluster.clock;
    let mut given_up_at = None;
    let (status, _) = drive(
        &resize(),
        &mut cluster,
        planned_clones(),
        None,
        2000,
        &mut |decision, cluster| {
            let refused = decision.status.plan.iter().any(|row| row.cloned == Some(false));
            if refused && given_up_at.is_none() {
                given_up_at = Some(cluster.clock);
            }
        },
    );
    assert_copied(&cluster, &status);
    let waited = given_up_at.expect("the clone was given up") - started;
    assert!(waited < clone::CLONE_BIND_SECONDS, "given up after {waited} s");
    for row in &status.plan {
        assert_eq!(row.cloned, Some(false));
        let why = row.clone_refused.as_deref().unwrap_or_default();
        assert!(
            why.contains("did not make the clone") && why.contains("ext4 cannot grow"),
            "{row:?}"
        );
    }
}

#[test]
fn rollback_on_request_survives_the_operator_killed_after_any_action() {
    let mut probe = Cluster::new();
    let (copied, _) = run(&mut probe, None);
    let (_, total) = revert(&mut probe.clone(), copied.clone(), None);
    assert!(total > 15, "{total} actions");
    for crash_at in 0..total {
        let mut cluster = probe.clone();
        let (status, _) = revert(&mut cluster, copied.clone(), Some(crash_at));
        assert_reverted(&cluster, &status);
    }
}

#[test]
fn a_pod_disruption_budget_holds_the_replica_stop_until_it_allows_one() {
    let mut cluster = Cluster::new();
    cluster.observed.disruptions_allowed = Some(0);
    let nothing_down = &mut nothing_taken_down("while the budget allows no disruption");
    let (held, _) = drive(&resize(), &mut cluster, planned(), None, 50, nothing_down);
    assert!(
        held.message.as_deref().unwrap().contains("PodDisruptionBudget"),
        "{:?}",
        held.message
    );
    assert!(cluster.observed.pods.len() == REPLICAS as usize && cluster.observed.stateful_set.is_some());
    cluster.observed.disruptions_allowed = Some(1);
    let (done, _) = drive(&resize(), &mut cluster, held, None, 500, &mut |_, _| {});
    assert_copied(&cluster, &done);
}

/// Offline, two movers at a time.
fn offline() -> Resize {
    offline_with_movers(2)
}

fn offline_with_movers(concurrency: i32) -> Resize {
    resize().with(|spec| {
        spec.mode = Mode::Offline;
        spec.mover = Some(MoverSettings {
            concurrency: Some(concurrency),
            ..MoverSettings::default()
        });
    })
}

#[test]
fn offline_stops_every_replica_at_once_and_limits_movers() {
    let mut cluster = Cluster::new();
    let (mut most_down, mut most_movers) = (0, 0);
    let sample = &mut |_: &Decision, cluster: &Cluster| {
        let running = cluster
            .observed
            .movers
            .values()
            .filter(|m| m.phase == MoverPhase::Running)
            .count();
        most_movers = most_movers.max(running);
        most_down = most_down.max(REPLICAS as usize - cluster.observed.pods.len());
    };
    let (status, _) = drive(&offline(), &mut cluster, planned(), None, 500, sample);
    assert_copied(&cluster, &status);
    assert_eq!(
        most_down, REPLICAS as usize,
        "offline: all replicas down together"
    );
    assert_eq!(most_movers, 2, "never more movers than the concurrency limit");
    assert!(status.plan.iter().all(|row| row.restarted_pod.is_some()));
}

#[test]
fn offline_killed_after_any_action_still_completes() {
    let (_, total) = run_with(&offline(), &mut Cluster::new(), None);
    for crash_at in 0..total {
        let mut cluster = Cluster::new();
        let (status, _) = run_with(&offline(), &mut cluster, Some(crash_at));
        assert_copied(&cluster, &status);
    }
}

#[test]
fn a_running_mover_shows_its_live_progress_in_the_row() {
    let mut cluster = Cluster::new();
    let now = Time(Timestamp::from_second(1).unwrap());
    let resize = resize();
    let mut status = planned();
    let warm = mover_name(&status.plan[0], SUFFIX, Pass::Warm);
    for _ in 0..50 {
        if cluster.observed.movers.contains_key(&warm) {
            break;
        }
        let decision = resize.step(&status, &cluster.observed, &now).unwrap();
        status = decision.status;
        for action in &decision.actions {
            cluster.apply(action);
        }
        if !cluster.observed.movers.contains_key(&warm) {
            cluster.settle();
        }
    }
    let mover = cluster.observed.movers.get_mut(&warm).unwrap();
    assert_eq!(mover.phase, MoverPhase::Running);
    mover.progress = Some(
        r#"{"phase":"copy","filesDone":40,"filesTotal":87,"bytesDone":1048576,"bytesTotal":4194304,"bytesPerSecond":524288,"elapsedSeconds":2.0}"#
            .into(),
    );
    let decision = resize.step(&status, &cluster.observed, &now).unwrap();
    let row = &decision.status.plan[0];
    assert_eq!(row.step, Some(RowStep::WarmCopy));
    assert_eq!(
        (
            row.bytes_done,
            row.bytes_total,
            row.files_done,
            row.files_total,
            row.bytes_per_second
        ),
        (Some(1 << 20), Some(4 << 20), Some(40), Some(87), Some(512 << 10))
    );
    // A line that is not progress (or no line yet) leaves the row as it was.
    cluster.observed.movers.get_mut(&warm).unwrap().progress = Some("not json".into());
    let unchanged = resize.step(&decision.status, &cluster.observed, &now).unwrap();
    assert_eq!(unchanged.status.plan[0].bytes_done, Some(1 << 20));
}

/// Runs a whole copy; returns the claims it nudged.
fn nudged_claims(cluster: &mut Cluster) -> Vec<String> {
    let mut nudges = Vec::new();
    let mut count = |decision: &Decision, _: &Cluster| {
        for action in &decision.actions {
            if let ResizeAction::Volume(VolumeWrite::NudgeClaim { claim, .. }) = action {
                nudges.push(claim.clone());
            }
        }
    };
    let (status, _) = drive(&resize(), cluster, planned(), None, 500, &mut count);
    assert_copied(cluster, &status);
    nudges.sort();
    nudges
}

#[test]
fn a_stalled_claim_binding_is_nudged_once_and_the_copy_completes() {
    let mut normal = Cluster::new();
    let nudges = nudged_claims(&mut normal);
    assert!(
        nudges.is_empty(),
        "a binding that completes is left alone: {nudges:?}"
    );

    let mut stalled = Cluster::new();
    stalled.stall_binding = true;
    assert_eq!(
        nudged_claims(&mut stalled),
        ["data-db-0", "data-db-1", "data-db-2"],
        "one nudge per stalled claim"
    );
}

#[test]
fn a_claim_deleted_by_someone_else_stops_the_copy_without_swapping() {
    let mut cluster = Cluster::new();
    let resize = resize();
    let mut status = planned();
    // Reconcile until replica 0 is in its warm copy, then someone else deletes its claim.
    for _ in 0..50 {
        (status, _) = drive(&resize, &mut cluster, status, None, 1, &mut |_, _| {});
        if status.plan[0].step == Some(RowStep::WarmCopy) {
            break;
        }
    }
    assert_eq!(status.plan[0].step, Some(RowStep::WarmCopy));
    if let Some(claim) = cluster.observed.claims.get_mut("data-db-0") {
        claim.deleting = true;
    }
    let (status, _) = drive(&resize, &mut cluster, status, None, 200, &mut |_, _| {});
    assert_eq!(status.phase, Some(Phase::Failed), "{:?}", status.message);
    let message = status.message.clone().unwrap_or_default();
    assert!(
        message.contains("data-db-0") && message.contains("deleted by someone else"),
        "{message}"
    );
    // Never swapped: the claim still names its old volume, the copy is not reserved for it.
    assert_eq!(
        cluster.observed.claims["data-db-0"].volume_name.as_deref(),
        Some("pv-old-0")
    );
    assert!(
        cluster
            .observed
            .volumes
            .values()
            .all(|v| v.claim_name.as_deref() != Some("data-db-0") || v.claim_uid.is_some()),
        "no volume reserved for the deleted claim"
    );
    assert!(
        !cluster.observed.claims.contains_key("data-db-0-ferry-abcd1234"),
        "temporary claim removed"
    );
    assert!(cluster.observed.movers.is_empty());
    assert!(cluster.observed.stateful_set.is_some(), "StatefulSet restored");
}

/// Offline, one mover at a time: replicas 0 and 1 are already swapping (or swapped) when replica 2's
/// final sync fails, however long it takes to fail, and whenever the operator is killed. Each row
/// ends exactly on one side: the swapped ones on their new volume (old one retained and listed), the
/// others back on their old one; no claim is ever provisioned afresh, no retained volume unlisted.
#[test]
fn a_failure_after_part_of_a_batch_swapped_ends_every_row_exactly_on_one_side() {
    let resize = offline_with_movers(1);
    let mut forwarded = 0;
    for delay in 0..10 {
        let failing = || {
            let mut cluster = Cluster::new();
            cluster.fail_final_of = Some("data-db-2".into());
            cluster.fail_final_delay = delay;
            cluster
        };
        let (_, total) = run_with(&resize, &mut failing(), None);
        for crash_at in std::iter::once(None).chain((0..total).map(Some)) {
            let mut cluster = failing();
            let (status, _) = run_with(&resize, &mut cluster, crash_at);
            let case = format!("delay {delay}, crash at {crash_at:?}");
            assert_eq!(status.phase, Some(Phase::Failed), "{case}");
            let message = status.message.clone().unwrap_or_default();
            assert!(
                message.contains("data-db-2") && message.contains("exit code 3"),
                "{case}: {message}"
            );
            assert!(
                cluster.observed.stateful_set.is_some(),
                "{case}: StatefulSet back"
            );
            assert!(cluster.observed.movers.is_empty(), "{case}: movers removed");
            for replica in 0..REPLICAS {
                let claim = format!("data-db-{replica}");
                let row = status.plan.iter().find(|r| r.claim_name == claim).unwrap();
                let volume = assert_replica_whole(&cluster, replica, &case);
                let old = format!("pv-old-{replica}");
                let new = format!("pv-{claim}-ferry-abcd1234");
                let retained = &status.created_objects.retained_volumes;
                if volume == new {
                    forwarded += 1;
                    assert_eq!(row.step, Some(RowStep::Copied), "{case}: {claim}");
                    assert!(retained.contains(&old), "{case}: old volume of {claim} listed");
                    assert_eq!(cluster.observed.volumes[&new].reclaim_policy, "Delete", "{case}");
                } else {
                    assert_eq!(volume, old, "{case}: {claim} back on its old volume");
                    assert_eq!(row.step, Some(RowStep::RolledBack), "{case}: {claim}");
                }
            }
            assert_eq!(
                cluster.observed.volumes["pv-old-2"].claim_name.as_deref(),
                Some("data-db-2"),
                "{case}"
            );
            assert_no_volume_leaked(&cluster, &status, &case);
        }
    }
    assert!(forwarded > 0, "some runs had rows swapped before the failure");
}

/// A GitOps tool re-creates the StatefulSet from Git (old templates) whenever it has been missing
/// for `after` ticks, and the operator may be killed after any action. Whatever the timing: no
/// replica ever serves an empty or stale claim, every row ends exactly on one side, and Succeeded
/// only with Ferry's own StatefulSet carrying the new templates.
#[test]
fn a_stateful_set_re_created_by_someone_else_never_serves_an_empty_claim() {
    let mut outcomes: BTreeMap<String, u32> = BTreeMap::new();
    for offline in [false, true] {
        let resize = resize().with(|spec| {
            if offline {
                spec.mode = Mode::Offline;
            }
        });
        for after in 1..8 {
            let gitops = || {
                let mut cluster = Cluster::new();
                cluster.gitops_after = Some(after);
                cluster
            };
            let (_, total) = run_with(&resize, &mut gitops(), None);
            for crash_at in std::iter::once(None).chain((0..total).map(Some)) {
                let mut cluster = gitops();
                let (status, _) = run_with(&resize, &mut cluster, crash_at);
                let case = format!("offline {offline}, after {after}, crash at {crash_at:?}");
                let sts = cluster
                    .observed
                    .stateful_set
                    .clone()
                    .expect("a StatefulSet exists");
                *outcomes.entry(format!("{:?}", status.phase)).or_insert(0) += 1;
                match status.phase {
                    Some(Phase::Succeeded) => {
                        assert!(!sts.foreign, "{case}: Succeeded with someone else's StatefulSet");
                        assert_eq!(sts.template_bytes("data"), Some(2 << 30), "{case}: new template");
                    }
                    Some(Phase::Failed) => {
                        let message = status.message.clone().unwrap_or_default();
                        assert!(
                            message.contains("re-created by someone else"),
                            "{case}: {message}"
                        );
                    }
                    other => panic!("{case}: ended {other:?}"),
                }
                assert!(cluster.observed.movers.is_empty(), "{case}: movers removed");
                assert_no_volume_leaked(&cluster, &status, &case);
                for replica in 0..REPLICAS {
                    let claim = format!("data-db-{replica}");
                    let volume = assert_replica_whole(&cluster, replica, &case);
                    let old = format!("pv-old-{replica}");
                    let row = status.plan.iter().find(|r| r.claim_name == claim).unwrap();
                    // On its old volume: rolled back, or never started.
                    let expected: &[Option<RowStep>] = if volume == old {
                        &[Some(RowStep::RolledBack), None]
                    } else {
                        &[Some(RowStep::Copied)]
                    };
                    assert!(
                        expected.contains(&row.step),
                        "{case}: {claim} on {volume}: {:?}",
                        row.step
                    );
                }
            }
        }
    }
    // Both ends are reached: a late re-create is replaced, an early one stops the resize.
    assert!(outcomes.contains_key("Some(Succeeded)"), "{outcomes:?}");
    assert!(outcomes.contains_key("Some(Failed)"), "{outcomes:?}");
}

/// Every volume left is bound to a claim or listed as retained: a volume Ferry set to Retain and
/// then let go of would keep its disk with nobody knowing.
fn assert_no_volume_leaked(cluster: &Cluster, status: &VolumeResizeStatus, case: &str) {
    for (name, volume) in &cluster.observed.volumes {
        let held = volume
            .claim_name
            .as_ref()
            .and_then(|claim| cluster.observed.claims.get(claim))
            .is_some_and(|c| Some(&c.uid) == volume.claim_uid.as_ref());
        assert!(
            held || status.created_objects.retained_volumes.contains(name),
            "{case}: volume {name} ({}) is neither bound nor listed as retained",
            volume.reclaim_policy
        );
    }
}

/// After the copy, an old volume is deleted and a PV of the same name but another UID appears (an
/// admin re-creating a static PV). Rollback on request never binds the claim to that stranger, nor
/// changes its reclaim policy: its row counts as having no old volume left and stays on the new one.
#[test]
fn a_volume_replaced_under_the_same_name_is_never_acted_on() {
    let mut cluster = Cluster::new();
    let (copied, _) = run(&mut cluster, None);
    assert!(
        copied.plan.iter().all(|row| row.source_volume_uid.is_some()),
        "UIDs recorded"
    );
    let stranger = cluster.observed.volumes.get_mut("pv-old-1").unwrap();
    stranger.uid = "someone-elses".into();
    stranger.claim_name = Some("other-claim".into());
    stranger.claim_uid = Some("other-uid".into());
    cluster.data.insert("pv-old-1".into(), "not ours".into());
    let before = cluster.observed.volumes["pv-old-1"].clone();
    let (status, _) = revert(&mut cluster, copied, None);
    assert_eq!(
        cluster.observed.volumes["pv-old-1"], before,
        "the stranger's volume is untouched"
    );
    assert_eq!(
        cluster.observed.claims["data-db-1"].volume_name.as_deref(),
        Some("pv-data-db-1-ferry-abcd1234"),
        "replica 1 stays on its new volume"
    );
    for replica in [0, 2] {
        assert_eq!(
            cluster.observed.claims[&format!("data-db-{replica}")].volume_name,
            Some(format!("pv-old-{replica}")),
            "replica {replica} back on its old volume"
        );
    }
    assert_eq!(status.phase, Some(Phase::Failed));
}

/// A final mover that no node will take (a node selector nothing matches, a zone the target class
/// excludes) leaves the replica down only as long as movers may be stuck: then the replica is
/// rolled back onto its old volume with the scheduler's reason, instead of waiting forever.
#[test]
fn an_unschedulable_final_mover_rolls_the_replica_back_instead_of_waiting_forever() {
    let mut cluster = Cluster::new();
    cluster.unschedulable_final = true;
    let resize = resize();
    let (status, _) = drive(&resize, &mut cluster, planned(), None, 400, &mut |_, _| {});
    assert_eq!(status.phase, Some(Phase::Failed), "{:?}", status.message);
    let message = status.message.clone().unwrap_or_default();
    assert!(
        message.contains("cannot run (Unschedulable") && message.contains("data-db-0"),
        "{message}"
    );
    assert_replica_0_rolled_back(&cluster);
}

/// Replica 0 is back on its old volume and runs again, with no mover, no temporary claim, and the
/// StatefulSet present.
fn assert_replica_0_rolled_back(cluster: &Cluster) {
    assert_eq!(
        cluster.observed.claims["data-db-0"].volume_name.as_deref(),
        Some("pv-old-0")
    );
    assert!(cluster.observed.pods.contains_key("db-0"), "replica 0 runs again");
    assert!(cluster.observed.movers.is_empty() && cluster.observed.stateful_set.is_some());
    assert!(!cluster.observed.claims.contains_key("data-db-0-ferry-abcd1234"));
}

/// `timeoutSeconds`: a step before the swap that outlasts it (here a warm copy that never ends)
/// rolls the replica back and says which step took too long.
#[test]
fn a_step_longer_than_timeout_seconds_rolls_the_replica_back() {
    let mut cluster = Cluster::new();
    cluster.endless_warm = true;
    let resize = resize().with(|spec| spec.timeout_seconds = Some(15));
    let (status, _) = drive(&resize, &mut cluster, planned(), None, 200, &mut |_, _| {});
    assert_eq!(status.phase, Some(Phase::Failed), "{:?}", status.message);
    let message = status.message.clone().unwrap_or_default();
    assert!(
        message.contains("step WarmCopy of data-db-0 took") && message.contains("timeoutSeconds (15 s)"),
        "{message}"
    );
    assert_replica_0_rolled_back(&cluster);
}

/// Without `timeoutSeconds` the operator's default bounds every wait but not a mover's pass: a warm
/// copy of terabytes takes hours while the replica serves, and is still running past the default.
#[test]
fn the_default_timeout_leaves_a_long_warm_copy_running() {
    let mut cluster = Cluster::new();
    cluster.endless_warm = true;
    let resize = resize();
    assert_eq!(resize.spec.timeout_seconds, None);
    let (status, _) = drive(&resize, &mut cluster, planned(), None, 30, &mut |_, _| {});
    assert_eq!(
        status.plan[0].step,
        Some(RowStep::WarmCopy),
        "{:?}",
        status.message
    );
    cluster.clock += 2 * ferry_api::DEFAULT_TIMEOUT_SECONDS;
    let (status, _) = drive(&resize, &mut cluster, status, None, 5, &mut |_, _| {});
    assert_eq!(status.phase, Some(Phase::Running), "{:?}", status.message);
    assert_eq!(status.plan[0].step, Some(RowStep::WarmCopy));
}

/// Rolling: a replica is never taken down while another one is not Ready (quorum), whatever a
/// PodDisruptionBudget would allow; once it is Ready again the copy goes on. (Here db-2 goes down
/// once replica 0's copy has begun; one down before any began would be copied first.)
#[test]
fn no_replica_is_stopped_while_another_is_not_ready() {
    let mut cluster = Cluster::new();
    let mut begun = planned();
    for _ in 0..30 {
        if begun.plan[0].step.is_some() {
            break;
        }
        begun = drive(&resize(), &mut cluster, begun, None, 1, &mut |_, _| {}).0;
    }
    assert!(begun.plan[0].step.is_some(), "replica 0 begun");
    cluster.observed.pods.get_mut("db-2").unwrap().ready = false;
    let nothing_down = &mut nothing_taken_down("while db-2 is not Ready");
    let (held, _) = drive(&resize(), &mut cluster, begun, None, 40, nothing_down);
    assert!(
        held.message
            .as_deref()
            .unwrap()
            .contains("waiting for replica(s) 2 to be Ready"),
        "{:?}",
        held.message
    );
    cluster.observed.pods.get_mut("db-2").unwrap().ready = true;
    let (done, _) = drive(&resize(), &mut cluster, held, None, 500, &mut |_, _| {});
    assert_copied(&cluster, &done);
}

/// Measuring pods that cannot run fail the resize once, for good: the pods are removed, the claims
/// are not measured again, and nothing else was touched.
#[test]
fn unschedulable_measuring_pods_fail_the_resize_once_and_touch_nothing() {
    let mut cluster = Cluster::new();
    cluster.unschedulable_usage = true;
    let before = cluster.observed.claims.clone();
    let resize = resize();
    let mut measured = 0;
    let count = &mut |decision: &Decision, _: &Cluster| {
        measured += decision
            .actions
            .iter()
            .filter(|a| matches!(a, ResizeAction::MeasureUsage { .. }))
            .count();
    };
    let (status, _) = drive(&resize, &mut cluster, planned(), None, 400, count);
    assert_eq!(status.phase, Some(Phase::Failed), "{:?}", status.message);
    let message = status.message.clone().unwrap_or_default();
    assert!(
        message.contains("could not measure the data in use on data-db-0: mover cannot run (Unschedulable"),
        "{message}"
    );
    assert_eq!(
        measured, REPLICAS as usize,
        "each claim's measuring pod is created once"
    );
    assert!(cluster.observed.movers.is_empty(), "measuring pods removed");
    assert_eq!(cluster.observed.claims, before, "nothing touched");
    assert!(!cluster.observed.backup_exists);
}

/// A measuring pod that ended well but said nothing (found as user 999 that could not write its
/// termination message): the resize fails saying so instead of measuring for ever.
#[test]
fn a_measuring_pod_ending_without_a_result_fails_the_resize_and_touches_nothing() {
    let mut cluster = Cluster::new();
    cluster.usage_silent = true;
    let before = cluster.observed.claims.clone();
    let (status, _) = drive(&resize(), &mut cluster, planned(), None, 400, &mut |_, _| {});
    assert_eq!(status.phase, Some(Phase::Failed), "{:?}", status.message);
    let message = status.message.clone().unwrap_or_default();
    assert!(message.contains("ended without a result"), "{message}");
    assert_eq!(cluster.observed.claims, before, "nothing touched");
}

/// Measured as the StatefulSet's own user (Pod Security `restricted`), data that user could not
/// recreate exactly (a file of another owner) fails the resize before anything is touched.
#[test]
fn data_the_stateful_sets_user_could_not_recreate_fails_the_resize_and_touches_nothing() {
    let mut cluster = Cluster::new();
    cluster.usage_not_as_user = Some("conf/x: owner 0:0");
    let before = cluster.observed.claims.clone();
    let resize = resize();
    let (status, _) = drive(&resize, &mut cluster, planned(), None, 400, &mut |_, _| {});
    assert_eq!(status.phase, Some(Phase::Failed), "{:?}", status.message);
    let message = status.message.clone().unwrap_or_default();
    assert!(
        message.contains("a copy of data-db-0 runs as the StatefulSet's own user here")
            && message.contains("could not recreate exactly: conf/x: owner 0:0"),
        "{message}"
    );
    assert!(cluster.observed.movers.is_empty(), "measuring pods removed");
    assert_eq!(cluster.observed.claims, before, "nothing touched");
    assert!(!cluster.observed.backup_exists);
}

/// Old volumes that were `Retain` (a static or Retain class) and a target class that deletes: the
/// new volume gets its own class's policy back after the swap, not the old volume's.
#[test]
fn the_new_volume_gets_its_own_class_policy_back() {
    let mut cluster = Cluster::new();
    for volume in cluster.observed.volumes.values_mut() {
        volume.reclaim_policy = "Retain".into();
    }
    let (status, _) = run(&mut cluster, None);
    assert_eq!(status.phase, Some(Phase::Succeeded), "{:?}", status.message);
    for replica in 0..REPLICAS {
        let new = format!("pv-data-db-{replica}-ferry-abcd1234");
        assert_eq!(cluster.observed.volumes[&new].reclaim_policy, "Delete", "{new}");
        assert_eq!(
            cluster.observed.volumes[&format!("pv-old-{replica}")].reclaim_policy,
            "Retain"
        );
        let row = &status.plan[replica as usize];
        assert_eq!(
            (
                row.original_reclaim_policy.as_deref(),
                row.target_reclaim_policy.as_deref()
            ),
            (Some("Retain"), Some("Delete"))
        );
    }
}

/// Asserts after every decision that no replica is taken down (no orphan delete, no eviction).
fn nothing_taken_down(why: &'static str) -> impl FnMut(&Decision, &Cluster) {
    move |decision: &Decision, _: &Cluster| {
        let down = decision.actions.iter().any(|a| {
            matches!(
                a,
                ResizeAction::OrphanDeleteStatefulSet | ResizeAction::EvictPod { .. }
            )
        });
        assert!(!down, "{}: nothing is taken down {why}", decision.summary);
    }
}

/// Never two down: after every action of a run, at most one replica lacks a Ready pod.
fn at_most_one_down() -> impl FnMut(&Decision, &Cluster) {
    |decision: &Decision, cluster: &Cluster| {
        let down = cluster.replicas_down();
        assert!(
            down.len() <= 1,
            "{}: replicas {down:?} down at once",
            decision.summary
        );
    }
}

/// A rolling update of the StatefulSet (its controller replacing pods on its own, whatever a budget
/// says) holds the stop until it is through; the copy then completes.
#[test]
fn a_rolling_update_under_way_holds_the_replica_stop() {
    let mut cluster = Cluster::new();
    cluster.observed.stateful_set.as_mut().unwrap().rolling_out = true;
    let nothing_down = &mut nothing_taken_down("during a rolling update");
    let (held, _) = drive(&resize(), &mut cluster, planned(), None, 40, nothing_down);
    let message = held.message.clone().unwrap_or_default();
    assert!(
        message.contains("rolling update to finish before stopping replica 0"),
        "{message}"
    );
    cluster.observed.stateful_set.as_mut().unwrap().rolling_out = false;
    let (done, _) = drive(&resize(), &mut cluster, held, None, 500, &mut at_most_one_down());
    assert_copied(&cluster, &done);
}

/// The race seen on the real node: a budget (minAvailable 2 of 3) relaxes while the StatefulSet
/// controller replaces a pod; Ferry takes the StatefulSet off just as that pod is deleted. Nothing
/// would re-create it, and the budget would refuse the stop of replica 0 for good. Ferry brings the
/// StatefulSet back first, and the copy completes with never two replicas down.
#[test]
fn a_replica_lost_after_the_take_off_brings_the_stateful_set_back_first() {
    let mut cluster = Cluster::new();
    cluster.min_available = Some(2);
    cluster.lost_at_take_off = Some("db-1".into());
    cluster.settle();
    let mut recreated = 0;
    let mut inspect = at_most_one_down();
    let watch = &mut |decision: &Decision, cluster: &Cluster| {
        if decision
            .summary
            .contains("went down before replica 0 was stopped")
        {
            recreated += 1;
        }
        inspect(decision, cluster);
    };
    let (done, _) = drive(&resize(), &mut cluster, planned(), None, 500, watch);
    assert_copied(&cluster, &done);
    assert_eq!(recreated, 1, "the StatefulSet was brought back once");
}

/// `force` (an autoscaler rescue: one replica crash-looping on a full disk) starts the copy
/// although not all replicas are Ready, copies the replica that is down first, and never takes a
/// second one down.
#[test]
fn force_copies_the_replica_already_down_first_and_never_takes_a_second_down() {
    let mut cluster = Cluster::new();
    cluster.observed.pods.get_mut("db-2").unwrap().ready = false;
    cluster.settle();
    let resize = resize().with(|spec| spec.force = true);
    let mut first_stopped = None;
    let mut inspect = at_most_one_down();
    let watch = &mut |decision: &Decision, cluster: &Cluster| {
        for action in &decision.actions {
            if let ResizeAction::EvictPod { pod, .. } = action {
                first_stopped.get_or_insert_with(|| pod.clone());
            }
        }
        inspect(decision, cluster);
    };
    let (done, _) = drive(&resize, &mut cluster, planned(), None, 500, watch);
    assert_copied(&cluster, &done);
    assert_eq!(first_stopped.as_deref(), Some("db-2"));
}

/// Rolling: every replica is stopped only once its final mover runs on standby (its pod's start is
/// no downtime), and that mover gets its go only once the replica's pod is gone.
#[test]
fn the_final_mover_waits_on_standby_before_the_stop_and_starts_once_the_pod_is_gone() {
    let mut cluster = Cluster::new();
    let mut stops = 0;
    let mut check = |decision: &Decision, cluster: &Cluster| {
        for action in &decision.actions {
            match action {
                ResizeAction::EvictPod { pod, .. } => {
                    stops += 1;
                    let standby = cluster
                        .observed
                        .movers
                        .iter()
                        .find(|(name, _)| {
                            name.starts_with(&format!("data-{pod}-")) && name.ends_with("-final")
                        })
                        .map(|(_, mover)| mover.phase.clone());
                    assert_eq!(
                        standby,
                        Some(MoverPhase::Running),
                        "{}: {pod} stopped without its final mover on standby",
                        decision.summary
                    );
                }
                ResizeAction::StartFinalPass { pod, .. } => {
                    let replica = pod
                        .trim_start_matches("data-")
                        .split('-')
                        .take(2)
                        .collect::<Vec<_>>()
                        .join("-");
                    assert!(
                        !cluster.observed.pods.contains_key(&replica),
                        "{}: go for {pod} while {replica} exists",
                        decision.summary
                    );
                }
                _ => {}
            }
        }
    };
    let (status, _) = drive(&resize(), &mut cluster, planned(), None, 500, &mut check);
    assert_copied(&cluster, &status);
    assert_eq!(stops, REPLICAS, "each replica stopped once");
}

/// Offline, every replica's final mover starts only once the StatefulSet is down: standbys for all
/// of them at once could exceed the mover limit and hold each other up.
#[test]
fn offline_starts_final_movers_only_after_the_stop() {
    let mut cluster = Cluster::new();
    let mut check = |decision: &Decision, cluster: &Cluster| {
        for action in &decision.actions {
            if let ResizeAction::StartMover {
                source,
                pass: Pass::Final,
                track_changes,
                ..
            } = action
            {
                let pod = source.trim_start_matches("data-");
                assert!(
                    cluster.observed.pods.get(pod).is_none_or(|p| p.deleting),
                    "{}: final mover of {pod} started while it serves",
                    decision.summary
                );
                // Nothing writes to the source any more: one walk is the whole pass.
                assert!(
                    !track_changes,
                    "{}: {pod} tracks changes after its stop",
                    decision.summary
                );
            }
        }
    };
    let (status, _) = drive(
        &offline_with_movers(1),
        &mut cluster,
        planned(),
        None,
        500,
        &mut check,
    );
    assert_copied(&cluster, &status);
}

/// Warm passes repeat while each is long and clearly shorter than the one before (three at
/// most); each is counted once in the row, with the operator killed after any action.
#[test]
fn warm_passes_repeat_while_they_converge_with_the_operator_killed_after_any_action() {
    for (seconds, want) in [
        (vec![60.0, 20.0, 8.0], vec![60_000, 20_000, 8_000]),
        (vec![60.0, 58.0], vec![60_000, 58_000]),
        (vec![60.0, 5.0], vec![60_000, 5_000]),
        (vec![9.0], vec![9_000]),
    ] {
        let mut cluster = Cluster::new();
        cluster.warm_seconds = seconds.clone();
        let (status, total) = run(&mut cluster, None);
        assert_copied(&cluster, &status);
        for row in &status.plan {
            assert_eq!(row.warm_pass_milliseconds.as_ref(), Some(&want), "{seconds:?}");
        }
        for crash_at in 0..total {
            let mut cluster = Cluster::new();
            cluster.warm_seconds = seconds.clone();
            let (status, _) = run(&mut cluster, Some(crash_at));
            // A crash may cost a pass again, never a pass counted twice (assert_copied).
            assert_copied(&cluster, &status);
        }
    }
}

/// The final mover of `replica`, if it exists.
fn final_mover_of(cluster: &Cluster, replica: &str) -> Option<MoverView> {
    let name = format!("data-{replica}-ferry-{SUFFIX}-final");
    cluster.observed.movers.get(&name).cloned()
}

/// With change tracking (the default), a replica is stopped only once its standby final mover has
/// caught up and says so (its pod Ready), never while it still catches up; its final pass then
/// visits only what changed, and the row says so.
#[test]
fn a_replica_stops_only_once_its_tracking_standby_is_armed() {
    let mut cluster = Cluster::new();
    cluster.catch_up_ticks = 4;
    let (mut stops, mut held) = (0, 0);
    let mut check = |decision: &Decision, cluster: &Cluster| {
        for replica in (0..REPLICAS).map(|r| format!("db-{r}")) {
            let standby = final_mover_of(cluster, &replica);
            let catching_up = standby.as_ref().is_some_and(|m| m.awaiting_go && !m.armed);
            if catching_up && cluster.observed.pods.contains_key(&replica) {
                held += 1;
            }
        }
        for action in &decision.actions {
            if let ResizeAction::EvictPod { pod, .. } = action {
                stops += 1;
                let standby = final_mover_of(cluster, pod);
                assert!(
                    standby.is_some_and(|m| m.armed && m.phase == MoverPhase::Running),
                    "{}: {pod} stopped before its standby was armed",
                    decision.summary
                );
            }
        }
    };
    let (status, _) = drive(&resize(), &mut cluster, planned(), None, 500, &mut check);
    assert_copied(&cluster, &status);
    assert_eq!(stops, REPLICAS, "each replica stopped once");
    assert!(held > 0, "no standby was ever seen catching up");
    assert!(cluster.final_tracking.iter().all(|(_, tracks)| *tracks));
    for row in &status.plan {
        assert_eq!(
            row.final_change_tracking.as_deref(),
            Some("used"),
            "{}",
            row.claim_name
        );
        assert_eq!(row.final_entries_visited, Some(3), "{}", row.claim_name);
    }
}

/// A replica stops only once the stream its standby's go comes by is open: stopped before, the go
/// would wait for the kubelet to show the mover its annotation.
#[test]
fn a_replica_stops_only_once_the_stream_its_standbys_go_comes_by_is_open() {
    let mut cluster = Cluster::new();
    cluster.go_stream_ticks = 30;
    let (mut stops, mut held) = (0, 0);
    let mut check = |decision: &Decision, cluster: &Cluster| {
        for replica in (0..REPLICAS).map(|r| format!("db-{r}")) {
            let opening = final_mover_of(cluster, &replica).is_some_and(|m| m.go_stream_opening);
            if opening && cluster.observed.pods.contains_key(&replica) {
                held += 1;
            }
        }
        for action in &decision.actions {
            if let ResizeAction::EvictPod { pod, .. } = action {
                stops += 1;
                let standby = final_mover_of(cluster, pod);
                assert!(
                    standby.is_some_and(|m| !m.go_stream_opening),
                    "{}: {pod} stopped while its go stream still opened",
                    decision.summary
                );
            }
        }
    };
    let (status, _) = drive(&resize(), &mut cluster, planned(), None, 500, &mut check);
    assert_copied(&cluster, &status);
    assert_eq!(stops, REPLICAS, "each replica stopped once");
    assert!(held > 0, "no standby was ever seen opening its stream");
}

/// `trackChanges: false`: the standby is not asked to track, the replica stops once it runs, and
/// the row records a final pass that walked the whole tree.
#[test]
fn without_change_tracking_the_final_pass_walks_whole() {
    let mut cluster = Cluster::new();
    cluster.catch_up_ticks = 1000;
    let untracked = resize().with(|spec| {
        spec.mover = Some(MoverSettings {
            track_changes: Some(false),
            ..MoverSettings::default()
        });
    });
    let (status, _) = drive(&untracked, &mut cluster, planned(), None, 500, &mut |_, _| {});
    assert_copied(&cluster, &status);
    assert!(!cluster.final_tracking.is_empty());
    assert!(cluster.final_tracking.iter().all(|(_, tracks)| !tracks));
    for row in &status.plan {
        assert_eq!(row.final_change_tracking, None, "{}", row.claim_name);
        assert_eq!(row.final_entries_visited, Some(10), "{}", row.claim_name);
    }
}

/// A replica started on its new volume that never becomes Ready (a forced resize's replica, down
/// from the start and for another reason than its disk): the wait ends at `timeoutSeconds`, Failed,
/// saying so, with the StatefulSet whole, the replica kept on its verified copy (its old volume
/// retained for a rollback) and no other replica touched.
#[test]
fn a_replica_never_ready_after_its_swap_fails_the_resize_at_the_timeout() {
    let mut cluster = Cluster::new();
    cluster.never_ready = Some("db-0".into());
    let resize = resize().with(|spec| spec.timeout_seconds = Some(40));
    let (status, _) = drive(&resize, &mut cluster, planned(), None, 300, &mut |_, _| {});
    assert_eq!(status.phase, Some(Phase::Failed), "{:?}", status.message);
    let timed_out = status
        .conditions
        .iter()
        .find(|c| c.type_ == ferry_api::condition::TIMED_OUT)
        .unwrap_or_else(|| panic!("{:?}", status.conditions));
    assert_eq!(timed_out.reason, ferry_api::condition::REASON_REPLICA_NOT_READY);
    let message = status.message.clone().unwrap_or_default();
    assert!(
        message.starts_with("replica(s) 0 not Ready within timeoutSeconds (40 s)"),
        "{message}"
    );
    assert_eq!(status.plan[0].step, Some(RowStep::Copied));
    assert_eq!(
        status.created_objects.retained_volumes,
        vec!["pv-old-0".to_string()]
    );
    assert_replica_whole(&cluster, 0, "db-0");
    assert!(
        status.plan[1..].iter().all(|row| row.step.is_none()),
        "{:?}",
        status.plan
    );
    let sts = cluster
        .observed
        .stateful_set
        .as_ref()
        .expect("the StatefulSet is whole");
    assert!(!sts.deleting && !sts.foreign);
    assert_eq!(sts.template_bytes("data"), Some(2 << 30));
}
