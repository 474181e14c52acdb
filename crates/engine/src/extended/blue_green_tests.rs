//! The blue/green plan driven pass after pass against a small model of the cluster: the
//! StatefulSet controller (pods for the ordinals in range, claims made for them when missing), the
//! PV controller (a released volume is deleted unless retained, a reserved one becomes Available,
//! a claim naming a volume binds) and Ferry's own writes. Every volume is tagged with the replica
//! whose data it holds, so a replica that comes up on someone else's data, or on an empty volume,
//! is seen.

use super::*;
use crate::extended::decision::Input;
use crate::extended::desired::ANNOTATION_STALE;
use crate::extended::handover::{Cluster, HandoverAction};
use crate::extended::plan::tests::kinds;
use crate::extended::plan::{plan as plan_any, progress};
use crate::extended::versions::LABEL_VERSION;
use crate::volume_writes::VolumeWrite;
use ferry_api::ExtendedStatefulSetStatus;
use k8s_openapi::api::apps::v1::StatefulSetOrdinals;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use serde_json::json;

const BAD: &str = "db:broken";

fn ests(image: &str, canaries: i32, replicas: i32) -> ExtendedStatefulSet {
    zoned(image, canaries, replicas, &[])
}

fn zoned(image: &str, canaries: i32, replicas: i32, zones: &[&str]) -> ExtendedStatefulSet {
    serde_json::from_value(json!({
        "apiVersion": "ferry.dev/v1alpha1", "kind": "ExtendedStatefulSet",
        "metadata": {"name": "db", "namespace": "apps", "uid": "uid-ests", "generation": 1},
        "spec": {
            "replicas": replicas, "zones": zones,
            "updateStrategy": {"type": "BlueGreen", "canaries": canaries, "service": "db"},
            "template": {"spec": {
                "serviceName": "db",
                "selector": {"matchLabels": {"app": "db"}},
                "template": {
                    "metadata": {"labels": {"app": "db"}},
                    "spec": {"containers": [{"name": "db", "image": image}]},
                },
                "volumeClaimTemplates": [{"metadata": {"name": "data"},
                    "spec": {"resources": {"requests": {"storage": "1Gi"}}}}],
            }},
        },
    }))
    .unwrap()
}

#[derive(Default)]
struct Model {
    sets: BTreeMap<String, StatefulSet>,
    cluster: Cluster,
    /// Volume → the replica (ordinal) whose data it holds.
    data_of: BTreeMap<String, i32>,
    /// Volume → the StatefulSet it was first made for.
    made_for: BTreeMap<String, String>,
    /// Volumes deleted with their claim.
    lost: Vec<String>,
    service_version: Option<String>,
    /// Why the Service may not be switched (`blueGreenService` off), if so.
    service_off: Option<&'static str>,
    /// Hook Jobs made, and how each ends (`Complete` or `Failed`).
    jobs: Vec<String>,
    job_ends: &'static str,
    next_volume: u32,
    log: Vec<String>,
    now: i64,
    /// Passes a new pod takes to become Ready (a database's start), 0: at once.
    ready_after: i64,
    /// Pod → the pass it (this incarnation of it) appeared in.
    born: BTreeMap<String, i64>,
}

fn image_of(sts: &StatefulSet) -> String {
    sts.spec
        .as_ref()
        .unwrap()
        .template
        .spec
        .as_ref()
        .unwrap()
        .containers[0]
        .image
        .clone()
        .unwrap()
}

impl Model {
    fn observation(&self) -> Observation {
        let live = self
            .sets
            .iter()
            .map(|(name, sts)| {
                let pods = self
                    .cluster
                    .pods
                    .iter()
                    .filter(|pod| crate::names::ordinal_after(pod, name).is_some())
                    .map(|pod| self.pod(sts, pod))
                    .collect();
                (
                    name.clone(),
                    LiveSet {
                        object: sts.clone(),
                        pods,
                    },
                )
            })
            .collect();
        let service = serde_json::from_value(json!({
            "metadata": {"name": "db"},
            "spec": {"selector": match &self.service_version {
                Some(v) => json!({"app": "db", "ferry.dev/version": v}),
                None => json!({"app": "db"}),
            }},
        }))
        .unwrap();
        let job = self.jobs.last().map(|name| {
            serde_json::from_value(json!({
                "metadata": {"name": name},
                "status": {"conditions": [{"type": self.job_ends, "status": "True"}]},
            }))
            .unwrap()
        });
        Observation {
            live,
            labelled: self.sets.values().cloned().collect(),
            cluster: self.cluster.clone(),
            service: Some(service),
            job,
            // What the operator reads while no version is recorded (the plan looks only then).
            existing: Some(self.cluster.clone()),
            ..Observation::default()
        }
    }

    /// A pod of a good image is Ready once it has run `ready_after` passes; one of `BAD` never is.
    fn ready(&self, sts: &StatefulSet, pod: &str) -> bool {
        let age = self.born.get(pod).map_or(0, |born| self.now - born);
        image_of(sts) != BAD && age >= self.ready_after
    }

    fn pod(&self, sts: &StatefulSet, name: &str) -> Pod {
        let ready = self.ready(sts, name);
        serde_json::from_value(json!({
            "metadata": {"name": name,
                "labels": {"controller-revision-hash": format!("rev-{}", sts.metadata.name.clone().unwrap())},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "x",
                    "uid": sts.metadata.uid.clone().unwrap(), "controller": true}]},
            "status": {"conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]},
        }))
        .unwrap()
    }

    /// One reconcile: plan, carry out, status written.
    fn pass(&mut self, ests: &mut ExtendedStatefulSet) -> Decision {
        let previous = progress(ests).unwrap();
        let observation = self.observation();
        let decision = plan_any(
            Input {
                ests,
                previous: &previous,
                config_digest: None,
                hooks_off: None,
                service_off: self.service_off,
                problems: vec![],
                now: self.now,
            },
            &observation,
        );
        for action in &decision.actions {
            self.carry_out(action);
        }
        self.log.extend(kinds(&decision));
        ests.status = Some(decision.status(ests, &[]));
        self.controllers();
        self.now += 1;
        decision
    }

    fn carry_out(&mut self, action: &ExtendedAction) {
        match action {
            ExtendedAction::ApplyStatefulSet { object } => {
                let name = object.metadata.name.clone().unwrap();
                let mut object = object.as_ref().clone();
                object.metadata.uid = Some(format!("uid-{name}"));
                if let Some(live) = self.sets.get(&name) {
                    let selector = live.spec.as_ref().unwrap().selector.clone();
                    assert_eq!(
                        object.spec.as_ref().unwrap().selector,
                        selector,
                        "selectors are immutable"
                    );
                }
                self.sets.insert(name, object);
            }
            ExtendedAction::ShapeStatefulSet {
                name,
                start,
                replicas,
            } => {
                let spec = self.sets.get_mut(name).unwrap().spec.as_mut().unwrap();
                spec.replicas = Some(*replicas);
                spec.ordinals = Some(StatefulSetOrdinals { start: Some(*start) });
            }
            ExtendedAction::DeleteStatefulSet { name } => {
                self.sets.remove(name);
            }
            ExtendedAction::SelectVersion { version, .. } => self.service_version = version.clone(),
            ExtendedAction::Handover(action) => self.handover(action),
            // Not run by the model (the resize wing's).
            ExtendedAction::CreateVolumeResize { .. } => {}
            ExtendedAction::CreateHookJob { job } => self.jobs.push(job.metadata.name.clone().unwrap()),
            other => panic!("unexpected {other:?}"),
        }
    }

    fn handover(&mut self, action: &HandoverAction) {
        let cluster = &mut self.cluster;
        match action {
            HandoverAction::Volume(VolumeWrite::SetReclaimPolicy { volume, policy, .. }) => {
                cluster
                    .volumes
                    .get_mut(volume)
                    .unwrap()
                    .spec
                    .as_mut()
                    .unwrap()
                    .persistent_volume_reclaim_policy = Some(policy.clone());
            }
            HandoverAction::Volume(VolumeWrite::DeleteClaim { claim, .. }) => {
                let removed = cluster.claims.remove(claim).unwrap();
                let volume = removed.spec.unwrap().volume_name.unwrap();
                let pv = cluster.volumes.get_mut(&volume).unwrap();
                if pv
                    .spec
                    .as_ref()
                    .unwrap()
                    .persistent_volume_reclaim_policy
                    .as_deref()
                    == Some("Retain")
                {
                    pv.status.as_mut().unwrap().phase = Some("Released".into());
                } else {
                    cluster.volumes.remove(&volume);
                    self.lost.push(volume);
                }
            }
            HandoverAction::Volume(VolumeWrite::ReserveVolume { volume, claim, .. }) => {
                let pv = cluster.volumes.get_mut(volume).unwrap();
                let claim_ref = pv.spec.as_mut().unwrap().claim_ref.as_mut().unwrap();
                claim_ref.name = Some(claim.clone());
                claim_ref.uid = None;
                pv.status.as_mut().unwrap().phase = Some("Available".into());
            }
            HandoverAction::CreateClaim { claim } => {
                let name = claim.metadata.name.clone().unwrap();
                let volume = claim.spec.as_ref().unwrap().volume_name.clone().unwrap();
                let pv = cluster.volumes.get_mut(&volume).unwrap();
                pv.spec.as_mut().unwrap().claim_ref.as_mut().unwrap().uid = Some(format!("uid-{name}"));
                pv.status.as_mut().unwrap().phase = Some("Bound".into());
                cluster.claims.insert(name.clone(), bound_claim(&name, &volume));
            }
            HandoverAction::Volume(VolumeWrite::NudgeClaim { .. }) => {}
        }
    }

    /// The StatefulSet controller: the pods of each range, each with its claim (made empty when
    /// missing).
    fn controllers(&mut self) {
        let mut pods = BTreeSet::new();
        for (name, sts) in &mut self.sets {
            let range = Range::of(sts);
            for ordinal in range.start..range.end {
                let claim = crate::names::claim("data", name, ordinal);
                if !self.cluster.claims.contains_key(&claim) {
                    self.next_volume += 1;
                    let volume = format!("pv-{}", self.next_volume);
                    self.cluster
                        .claims
                        .insert(claim.clone(), bound_claim(&claim, &volume));
                    self.cluster
                        .volumes
                        .insert(volume.clone(), bound_volume(&volume, &claim));
                    self.data_of.insert(volume.clone(), -1);
                    self.made_for.insert(volume, name.clone());
                }
                pods.insert(crate::names::pod(name, ordinal));
            }
            let ready = (range.start..range.end)
                .filter(|&ordinal| {
                    let pod = crate::names::pod(name, ordinal);
                    image_of(sts) != BAD
                        && self.born.get(&pod).map_or(0, |born| self.now - born) >= self.ready_after
                })
                .count() as i32;
            sts.metadata.generation = Some(1);
            sts.status = Some(
                serde_json::from_value(json!({
                    "replicas": range.replicas(), "readyReplicas": ready, "observedGeneration": 1,
                    "updateRevision": format!("rev-{name}"),
                }))
                .unwrap(),
            );
        }
        // A pod that appeared in this pass starts its way to Ready now; a gone one is forgotten.
        self.born.retain(|pod, _| pods.contains(pod));
        for pod in &pods {
            self.born.entry(pod.clone()).or_insert(self.now);
        }
        self.cluster.pods = pods;
    }

    /// Each running replica and the replica whose data its volume holds.
    fn data(&self) -> Vec<(String, i32)> {
        self.cluster
            .pods
            .iter()
            .map(|pod| {
                let (set, ordinal) = pod.rsplit_once('-').unwrap();
                let claim = crate::names::claim("data", set, ordinal.parse().unwrap());
                let volume = self.cluster.claims[&claim]
                    .spec
                    .as_ref()
                    .unwrap()
                    .volume_name
                    .clone()
                    .unwrap();
                (pod.clone(), self.data_of[&volume])
            })
            .collect()
    }
}

fn bound_claim(name: &str, volume: &str) -> PersistentVolumeClaim {
    serde_json::from_value(json!({
        "metadata": {"name": name, "uid": format!("uid-{name}")},
        "spec": {"volumeName": volume},
        "status": {"phase": "Bound"},
    }))
    .unwrap()
}

fn bound_volume(name: &str, claim: &str) -> PersistentVolume {
    serde_json::from_value(json!({
        "metadata": {"name": name, "uid": format!("uid-{name}")},
        "spec": {"persistentVolumeReclaimPolicy": "Delete", "capacity": {"storage": "1Gi"},
            "claimRef": {"name": claim, "uid": format!("uid-{claim}")}},
        "status": {"phase": "Bound"},
    }))
    .unwrap()
}

/// Version 1 running on `db-v1` with 3 replicas, each volume holding its replica's data.
fn running(canaries: i32) -> (Model, ExtendedStatefulSet) {
    let (model, object) = running_as(ests("db:1", canaries, 3));
    assert_eq!(model.sets.keys().collect::<Vec<_>>(), ["db-v1"]);
    (model, object)
}

fn running_as(mut object: ExtendedStatefulSet) -> (Model, ExtendedStatefulSet) {
    let mut model = Model {
        now: 1_000,
        ..Model::default()
    };
    for _ in 0..3 {
        model.pass(&mut object);
    }
    for (volume, data) in model.data_of.iter_mut() {
        let claim = model.cluster.volumes[volume]
            .spec
            .as_ref()
            .unwrap()
            .claim_ref
            .as_ref()
            .unwrap()
            .name
            .clone()
            .unwrap();
        *data = claim.rsplit('-').next().unwrap().parse().unwrap();
    }
    let status = object.status.clone().unwrap();
    assert_eq!((status.version, status.update_step.as_deref()), (1, Some("Done")));
    (model, object)
}

fn condition(
    object: &ExtendedStatefulSet,
    kind: &str,
) -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
    let status = object.status.as_ref().unwrap();
    status
        .conditions
        .iter()
        .find(|c| c.type_ == kind)
        .unwrap()
        .clone()
}

/// A few more passes, then every replica runs on `set` with its own data.
fn settled_on(model: &mut Model, object: &mut ExtendedStatefulSet, set: &str) {
    for _ in 0..5 {
        model.pass(object);
    }
    let expected: Vec<(String, i32)> = (0..3).map(|i| (format!("{set}-{i}"), i)).collect();
    assert_eq!(model.data(), expected);
}

fn set_image(object: &mut ExtendedStatefulSet, image: &str) {
    object
        .spec
        .template
        .spec
        .template
        .spec
        .as_mut()
        .unwrap()
        .containers[0]
        .image = Some(image.into());
}

fn until(
    model: &mut Model,
    object: &mut ExtendedStatefulSet,
    what: &str,
    done: impl Fn(&ExtendedStatefulSetStatus) -> bool,
) {
    for _ in 0..200 {
        model.pass(object);
        if done(object.status.as_ref().unwrap()) {
            return;
        }
    }
    panic!("{what}: never; status {:?}\nlog {:#?}", object.status, model.log);
}

#[test]
fn the_first_version_gets_a_stateful_set_of_its_own_with_a_version_selector() {
    let (model, object) = running(1);
    let spec = model.sets["db-v1"].spec.as_ref().unwrap();
    assert_eq!(spec.selector.match_labels.as_ref().unwrap()[LABEL_VERSION], "1");
    assert_eq!(
        (spec.replicas, spec.ordinals.as_ref().unwrap().start),
        (Some(3), Some(0))
    );
    assert_eq!(model.service_version.as_deref(), Some("1"));
    assert_eq!(
        object.status.unwrap().versions,
        BTreeMap::from([("1".to_string(), true)])
    );
}

/// `blueGreenService` switched off (the operator may not patch Services): a new version moves no
/// replica away from the version the Service selects, leaves the Service alone and says why.
#[test]
fn with_the_service_switch_off_no_replica_moves_to_a_new_version_and_the_status_says_why() {
    let (mut model, mut object) = running(1);
    model.service_off = Some("blue-green-service switched off");
    set_image(&mut object, "db:2");
    for _ in 0..50 {
        model.pass(&mut object);
    }
    assert_eq!(
        model.data(),
        [
            ("db-v1-0".into(), 0),
            ("db-v1-1".into(), 1),
            ("db-v1-2".into(), 2)
        ],
        "every replica still on version 1: {:#?}",
        model.log
    );
    assert_eq!(model.service_version.as_deref(), Some("1"));
    let status = object.status.unwrap();
    let invalid = status.conditions.iter().find(|c| c.type_ == "Invalid").unwrap();
    assert!(
        invalid.message.contains(
            "no replica moves to a new version: Service db (updateStrategy.service) is not switched: \
             blue-green-service switched off"
        ),
        "{}",
        invalid.message
    );
}

#[test]
fn a_new_version_moves_every_replica_with_its_own_data_canary_first_and_the_old_one_goes() {
    let (mut model, mut object) = running(1);
    set_image(&mut object, "db:2");
    until(&mut model, &mut object, "canary running", |s| {
        s.update_step.as_deref() == Some("Rest")
    });
    // The canary is the highest ordinal, on version 2, with its own data; the rest still on 1.
    assert_eq!(
        model.data(),
        [
            ("db-v1-0".into(), 0),
            ("db-v1-1".into(), 1),
            ("db-v2-2".into(), 2)
        ]
    );
    assert_eq!(
        model.service_version.as_deref(),
        Some("2"),
        "traffic follows once the canary passed"
    );
    until(&mut model, &mut object, "done", |s| {
        s.update_step.as_deref() == Some("Done") && s.handover.is_none()
    });
    for _ in 0..3 {
        model.pass(&mut object);
    }
    assert_eq!(
        model.sets.keys().collect::<Vec<_>>(),
        ["db-v2"],
        "the old version goes once it runs no pod"
    );
    assert_eq!(
        model.data(),
        [
            ("db-v2-0".into(), 0),
            ("db-v2-1".into(), 1),
            ("db-v2-2".into(), 2)
        ]
    );
    assert!(model.lost.is_empty(), "{:?}", model.lost);
    let status = object.status.clone().unwrap();
    assert_eq!(status.version, 2);
    assert_eq!(status.versions.get("2"), Some(&true));
    // Every move retained its volume before its claim went, and the policy came back.
    for volume in model.cluster.volumes.values() {
        assert_eq!(
            volume
                .spec
                .as_ref()
                .unwrap()
                .persistent_volume_reclaim_policy
                .as_deref(),
            Some("Delete")
        );
    }
    let first_delete = model
        .log
        .iter()
        .position(|l| l.starts_with("delete claim"))
        .unwrap();
    let first_retain = model.log.iter().position(|l| l.ends_with("Retain")).unwrap();
    assert!(first_retain < first_delete, "{:#?}", model.log);
}

#[test]
fn a_canary_that_never_becomes_ready_goes_back_to_the_old_version_with_its_data() {
    let (mut model, mut object) = running(1);
    set_image(&mut object, BAD);
    until(&mut model, &mut object, "canary moved", |s| {
        s.update_step.as_deref() == Some("Canaries")
            && s.handover.is_none()
            && s.zones[0].updated_replicas == 1
    });
    assert_eq!(model.data()[2], ("db-v2-2".into(), 2));
    model.now += 120;
    until(&mut model, &mut object, "stale and moved back", |s| {
        s.update_step.as_deref() == Some("Stale") && s.handover.is_none() && s.zones[0].updated_replicas == 0
    });
    // Settled: every replica on version 1 with its own data; version 2 kept, empty, marked stale.
    settled_on(&mut model, &mut object, "db-v1");
    assert!(model.lost.is_empty());
    assert_eq!(model.service_version.as_deref(), Some("1"));
    let v2 = &model.sets["db-v2"];
    assert_eq!(Range::of(v2).replicas(), 0);
    assert_eq!(v2.metadata.annotations.as_ref().unwrap()[ANNOTATION_STALE], "2");
    // A fixed template: version 3 moves the replicas from version 1; version 2 goes.
    set_image(&mut object, "db:3");
    until(&mut model, &mut object, "version 3 done", |s| {
        s.version == 3 && s.update_step.as_deref() == Some("Done") && s.handover.is_none()
    });
    settled_on(&mut model, &mut object, "db-v3");
    assert_eq!(model.sets.keys().collect::<Vec<_>>(), ["db-v3"]);
    assert!(model.lost.is_empty());
}

#[test]
fn a_second_template_change_waits_while_replicas_run_on_two_versions() {
    let (mut model, mut object) = running(1);
    set_image(&mut object, "db:2");
    until(&mut model, &mut object, "canary moving", |s| s.handover.is_some());
    set_image(&mut object, "db:3");
    let decision = model.pass(&mut object);
    assert_eq!(object.status.as_ref().unwrap().version, 2);
    assert!(
        decision
            .actions
            .iter()
            .all(|a| !matches!(a, ExtendedAction::ApplyStatefulSet { .. }))
    );
    let progressing = condition(&object, "Progressing");
    assert!(
        progressing.message.contains("waits until version 2"),
        "{progressing:?}"
    );
    until(&mut model, &mut object, "version 3 done", |s| {
        s.version == 3 && s.update_step.as_deref() == Some("Done") && s.handover.is_none()
    });
    settled_on(&mut model, &mut object, "db-v3");
    assert!(model.lost.is_empty());
}

#[test]
fn a_volume_template_change_during_an_update_is_refused_and_resizes_once_it_is_over() {
    let (mut model, mut object) = running(1);
    set_image(&mut object, "db:2");
    until(&mut model, &mut object, "canary running", |s| {
        s.update_step.as_deref() == Some("Rest") && s.handover.is_none()
    });
    let templates = object.spec.template.spec.volume_claim_templates.as_mut().unwrap();
    templates[0]
        .spec
        .as_mut()
        .unwrap()
        .resources
        .as_mut()
        .unwrap()
        .requests
        .as_mut()
        .unwrap()
        .insert(
            "storage".into(),
            k8s_openapi::apimachinery::pkg::api::resource::Quantity("2Gi".into()),
        );
    let decision = model.pass(&mut object);
    let invalid = condition(&object, "Invalid");
    assert_eq!(invalid.status, "True");
    assert!(
        invalid
            .message
            .contains("waits until every replica runs one version"),
        "{invalid:?}"
    );
    assert!(
        decision
            .actions
            .iter()
            .all(|a| !matches!(a, ExtendedAction::CreateVolumeResize { .. }))
    );
    // Once every replica runs version 2: a VolumeResize of db-v2, which the model does not run.
    for _ in 0..60 {
        let decision = model.pass(&mut object);
        if let Some(ExtendedAction::CreateVolumeResize { stateful_set, .. }) = decision
            .actions
            .iter()
            .find(|a| matches!(a, ExtendedAction::CreateVolumeResize { .. }))
        {
            assert_eq!(stateful_set, "db-v2");
            assert!(
                model.data().iter().all(|(pod, _)| pod.starts_with("db-v2-")),
                "{:?}",
                model.data()
            );
            return;
        }
    }
    panic!("no resize: {:#?}", model.log);
}

#[test]
fn scaling_during_a_version_adds_replicas_to_the_new_one_and_removes_from_the_top() {
    let (mut model, mut object) = running(1);
    set_image(&mut object, "db:2");
    until(&mut model, &mut object, "canary running", |s| {
        s.update_step.as_deref() == Some("Rest")
    });
    object.spec.replicas = 5;
    until(&mut model, &mut object, "done", |s| {
        s.update_step.as_deref() == Some("Done") && s.handover.is_none() && s.ready_replicas == 5
    });
    let data: Vec<i32> = model.data().into_iter().map(|(_, d)| d).collect();
    assert_eq!(
        data,
        [0, 1, 2, -1, -1],
        "the new replicas start empty, the old keep theirs"
    );
    object.spec.replicas = 2;
    for _ in 0..5 {
        model.pass(&mut object);
    }
    assert_eq!(model.data(), [("db-v2-0".into(), 0), ("db-v2-1".into(), 1)]);
}

#[test]
fn with_zones_each_zone_moves_its_own_replicas_to_its_own_version_stateful_set() {
    let (mut model, mut object) = running_as(zoned("db:1", 1, 4, &["a", "b"]));
    assert_eq!(model.sets.keys().collect::<Vec<_>>(), ["db-z0-v1", "db-z1-v1"]);
    set_image(&mut object, "db:2");
    until(&mut model, &mut object, "done", |s| {
        s.version == 2 && s.update_step.as_deref() == Some("Done") && s.handover.is_none()
    });
    for _ in 0..3 {
        model.pass(&mut object);
    }
    assert_eq!(model.sets.keys().collect::<Vec<_>>(), ["db-z0-v2", "db-z1-v2"]);
    for (pod, data) in model.data() {
        let (set, ordinal) = pod.rsplit_once('-').unwrap();
        assert_eq!(data.to_string(), ordinal, "{pod}");
        let claim = crate::names::claim("data", set, data);
        let volume = model.cluster.claims[&claim]
            .spec
            .as_ref()
            .unwrap()
            .volume_name
            .clone()
            .unwrap();
        let zone = set.trim_end_matches("-v2");
        assert_eq!(
            model.made_for[&volume],
            format!("{zone}-v1"),
            "{pod} runs on its own zone's volume"
        );
    }
    assert!(model.lost.is_empty());
    let status = object.status.unwrap();
    let names: Vec<&str> = status.zones.iter().map(|z| z.stateful_set.as_str()).collect();
    assert_eq!(names, ["db-z0-v2", "db-z1-v2"]);
}

#[test]
fn a_rolling_update_stateful_set_becomes_the_old_version_at_the_next_change() {
    let mut rolling = ests("db:1", 1, 2);
    rolling.spec.update_strategy.as_mut().unwrap().type_ = None;
    rolling.spec.update_strategy.as_mut().unwrap().service = None;
    let (mut model, mut object) = running_as(rolling);
    assert_eq!(model.sets.keys().collect::<Vec<_>>(), ["db"]);
    object.spec.update_strategy.as_mut().unwrap().type_ = Some(ferry_api::UpdateType::BlueGreen);
    for _ in 0..5 {
        let decision = model.pass(&mut object);
        assert!(
            decision
                .actions
                .iter()
                .all(|a| !matches!(a, ExtendedAction::Handover(_))),
            "no version change, no move: {:?}",
            decision.actions
        );
    }
    assert_eq!(model.sets.keys().collect::<Vec<_>>(), ["db"]);
    set_image(&mut object, "db:2");
    until(&mut model, &mut object, "done", |s| {
        s.version == 2 && s.update_step.as_deref() == Some("Done") && s.handover.is_none()
    });
    for _ in 0..3 {
        model.pass(&mut object);
    }
    assert_eq!(model.sets.keys().collect::<Vec<_>>(), ["db-v2"]);
    assert_eq!(model.data(), [("db-v2-0".into(), 0), ("db-v2-1".into(), 1)]);
    assert!(model.lost.is_empty());
}

#[test]
fn a_failed_pre_update_job_moves_nothing_and_a_failed_post_update_job_keeps_the_new_version() {
    let (mut model, mut object) = running(1);
    object.spec.pre_update = Some(
        serde_json::from_value(json!({"spec": {"template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "check", "image": "check:1"}]}}}}))
        .unwrap(),
    );
    model.job_ends = "Failed";
    set_image(&mut object, "db:2");
    until(&mut model, &mut object, "stale", |s| {
        s.update_step.as_deref() == Some("Stale")
    });
    for _ in 0..5 {
        model.pass(&mut object);
    }
    assert_eq!(model.jobs, ["db-pre-update-v2"]);
    assert!(
        !model.sets.contains_key("db-v2"),
        "the new version's StatefulSet was never made"
    );
    assert!(
        model.log.iter().all(|l| !l.starts_with("policy")),
        "{:?}",
        model.log
    );
    assert_eq!(
        model.data(),
        [
            ("db-v1-0".into(), 0),
            ("db-v1-1".into(), 1),
            ("db-v1-2".into(), 2)
        ]
    );

    object.spec.pre_update = None;
    object.spec.post_update = Some(
        serde_json::from_value(json!({"spec": {"template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "check", "image": "check:1"}]}}}}))
        .unwrap(),
    );
    set_image(&mut object, "db:3");
    until(&mut model, &mut object, "post-update stale", |s| {
        s.version == 3 && s.update_step.as_deref() == Some("Stale")
    });
    for _ in 0..5 {
        model.pass(&mut object);
    }
    assert!(
        object
            .status
            .as_ref()
            .unwrap()
            .stale_at
            .as_deref()
            .unwrap()
            .starts_with("PostUpdate")
    );
    assert_eq!(
        model.data(),
        [
            ("db-v3-0".into(), 0),
            ("db-v3-1".into(), 1),
            ("db-v3-2".into(), 2)
        ]
    );
    assert_eq!(
        model.sets.keys().collect::<Vec<_>>(),
        ["db-v3"],
        "{:?}",
        model.log
    );
    assert!(model.lost.is_empty());
}

/// Pods that take passes to become Ready (a database replaying its log): each replica moves only
/// once the one before is Ready on the new version, so never two are down, and each keeps its data.
#[test]
fn a_version_whose_pods_take_time_to_become_ready_moves_one_replica_at_a_time() {
    let (mut model, mut object) = running(1);
    model.ready_after = 4;
    set_image(&mut object, "db:2");
    let mut worst = 0;
    for _ in 0..200 {
        model.pass(&mut object);
        let serving = model
            .sets
            .iter()
            .flat_map(|(name, sts)| {
                let range = Range::of(sts);
                (range.start..range.end).map(move |ordinal| (sts, crate::names::pod(name, ordinal)))
            })
            .filter(|(sts, pod)| model.cluster.pods.contains(pod) && model.ready(sts, pod))
            .count();
        worst = worst.max(3 - serving.min(3));
        let status = object.status.as_ref().unwrap();
        if status.version == 2 && status.update_step.as_deref() == Some("Done") && status.handover.is_none() {
            break;
        }
    }
    assert_eq!(worst, 1, "{:#?}", model.log);
    let status = object.status.clone().unwrap();
    assert_eq!((status.version, status.update_step.as_deref()), (2, Some("Done")));
    settled_on(&mut model, &mut object, "db-v2");
    assert!(model.lost.is_empty(), "{:?}", model.lost);
}

#[test]
fn a_version_whose_pods_never_become_ready_takes_one_replica_down_not_all() {
    let (mut model, mut object) = running(0);
    set_image(&mut object, BAD);
    let mut worst = 0;
    for _ in 0..40 {
        model.pass(&mut object);
        // Replicas not serving: no pod, or a pod of the broken version.
        let serving = model
            .data()
            .iter()
            .filter(|(pod, _)| pod.starts_with("db-v1-"))
            .count();
        worst = worst.max(3 - serving);
    }
    assert_eq!(worst, 1, "{:#?}", model.log);
    let progressing = condition(&object, "Progressing");
    assert!(
        progressing.message.contains("once every pod is Ready"),
        "{progressing:?}"
    );
    model.now += 400;
    until(&mut model, &mut object, "stale and moved back", |s| {
        s.update_step.as_deref() == Some("Stale") && s.handover.is_none() && s.ready_replicas == 3
    });
    assert_eq!(
        model.data(),
        [
            ("db-v1-0".into(), 0),
            ("db-v1-1".into(), 1),
            ("db-v1-2".into(), 2)
        ]
    );
    assert!(model.lost.is_empty());
}

/// The ExtendedStatefulSet deleted (its StatefulSets and pods go with it; the claims stay) and
/// applied again as `object`, without status.
fn deleted_and_applied_again(model: &mut Model, mut object: ExtendedStatefulSet) -> ExtendedStatefulSet {
    model.sets.clear();
    model.cluster.pods.clear();
    model.service_version = None;
    object.metadata.uid = Some("uid-ests-again".into());
    object.status = None;
    object
}

#[test]
fn applied_again_without_status_it_starts_at_the_version_its_claims_are_in() {
    let (mut model, mut object) = running(0);
    set_image(&mut object, "db:2");
    until(&mut model, &mut object, "version 2 done", |s| {
        s.version == 2 && s.update_step.as_deref() == Some("Done") && s.handover.is_none()
    });
    settled_on(&mut model, &mut object, "db-v2");
    let mut again = deleted_and_applied_again(&mut model, object);
    let first = model.pass(&mut again);
    assert!(
        first
            .notices
            .iter()
            .any(|(_, reason, _)| *reason == "ClaimsFound"),
        "{:?}",
        first.notices
    );
    settled_on(&mut model, &mut again, "db-v2");
    assert_eq!(model.sets.keys().collect::<Vec<_>>(), ["db-v2"]);
    let status = again.status.as_ref().unwrap();
    assert_eq!((status.version, status.update_step.as_deref()), (2, Some("Done")));
    assert_eq!(model.service_version.as_deref(), Some("2"));
    assert!(model.lost.is_empty(), "{:?}", model.lost);
}

#[test]
fn applied_again_over_claims_of_two_versions_it_refuses_naming_them_until_one_is_left() {
    let (mut model, mut object) = running(0);
    set_image(&mut object, "db:2");
    until(&mut model, &mut object, "version 2 done", |s| {
        s.version == 2 && s.update_step.as_deref() == Some("Done") && s.handover.is_none()
    });
    // A claim an earlier version left (a scale-down, an update cut short).
    model
        .cluster
        .claims
        .insert("data-db-v1-4".into(), bound_claim("data-db-v1-4", "pv-left"));
    let mut again = deleted_and_applied_again(&mut model, object);
    for _ in 0..3 {
        let decision = model.pass(&mut again);
        assert!(decision.actions.is_empty(), "{:?}", decision.actions);
        assert_eq!(decision.recheck, Recheck::Refused);
    }
    assert!(model.sets.is_empty());
    let invalid = condition(&again, "Invalid");
    assert_eq!(invalid.status, "True");
    assert!(
        invalid.message.contains("version 1: data-db-v1-4")
            && invalid
                .message
                .contains("version 2: data-db-v2-0, data-db-v2-1, data-db-v2-2"),
        "{}",
        invalid.message
    );
    model.cluster.claims.remove("data-db-v1-4");
    settled_on(&mut model, &mut again, "db-v2");
    assert_eq!(condition(&again, "Invalid").status, "False");
}
