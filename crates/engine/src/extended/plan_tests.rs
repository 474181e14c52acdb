use super::*;
use crate::extended::handover::HandoverAction;
use crate::extended::observed::LiveSet;
use crate::volume_writes::VolumeWrite;
use ferry_api::listed::Listing;
use k8s_openapi::api::apps::v1::StatefulSet;
use serde_json::json;

fn ests(zones: &[&str], size: &str, pre_update: bool) -> ExtendedStatefulSet {
    let mut object = json!({
        "apiVersion": "ferry.dev/v1alpha1", "kind": "ExtendedStatefulSet",
        "metadata": {"name": "db", "namespace": "apps", "uid": "uid-1", "generation": 1},
        "spec": {
            "replicas": 2, "zones": zones,
            "template": {"spec": {
                "serviceName": "db",
                "selector": {"matchLabels": {"app": "db"}},
                "template": {
                    "metadata": {"labels": {"app": "db"}},
                    "spec": {"containers": [{"name": "db", "image": "db:1"}]},
                },
                "volumeClaimTemplates": [{"metadata": {"name": "data"},
                    "spec": {"resources": {"requests": {"storage": size}}}}],
            }},
        },
    });
    if pre_update {
        object["spec"]["preUpdate"] = json!({"spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "check", "image": "check:1"}]}}}});
    }
    serde_json::from_value(object).unwrap()
}

/// The StatefulSet `name` as running, owned by the ExtendedStatefulSet, every pod Ready.
fn live(name: &str, replicas: i32, size: &str) -> StatefulSet {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "apps", "uid": format!("uid-{name}"),
            "labels": {"ferry.dev/extended-stateful-set": "db"},
            "ownerReferences": [{"apiVersion": "ferry.dev/v1alpha1", "kind": "ExtendedStatefulSet",
                "name": "db", "uid": "uid-1", "controller": true}]},
        "spec": {"replicas": replicas, "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": []}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"},
                "spec": {"resources": {"requests": {"storage": size}}}}]},
        "status": {"replicas": replicas, "readyReplicas": replicas},
    }))
    .unwrap()
}

fn observation(sets: &[StatefulSet]) -> Observation {
    Observation {
        live: sets
            .iter()
            .map(|sts| {
                let set = LiveSet {
                    object: sts.clone(),
                    pods: vec![],
                };
                (sts.metadata.name.clone().unwrap(), set)
            })
            .collect(),
        labelled: sets.to_vec(),
        ..Observation::default()
    }
}

fn decide(
    ests: &ExtendedStatefulSet,
    previous: &Progress,
    observation: &Observation,
    hooks_off: Option<&str>,
) -> Decision {
    plan(
        Input {
            ests,
            previous,
            config_digest: None,
            hooks_off,
            service_off: None,
            problems: vec![],
            now: 1_000,
        },
        observation,
    )
}

/// The progress of a version already rolled out, with the digest of `ests` as it is.
fn rolled_out(ests: &ExtendedStatefulSet) -> Progress {
    Progress {
        version: 1,
        digest: Some(version_digest(ests, None)),
        step: Step::Done,
        step_started: Some(10),
        stale_at: None,
    }
}

pub(in crate::extended) fn kinds(decision: &Decision) -> Vec<String> {
    decision
        .actions
        .iter()
        .map(|action| match action {
            ExtendedAction::CreateVolumeResize { name, .. } => format!("resize {name}"),
            ExtendedAction::CreateHookJob { job } => format!("job {}", job.metadata.name.clone().unwrap()),
            ExtendedAction::ApplyStatefulSet { object } => {
                format!("apply {}", object.metadata.name.clone().unwrap())
            }
            ExtendedAction::DrainStatefulSet { name } => format!("drain {name}"),
            ExtendedAction::DeleteStatefulSet { name } => format!("delete {name}"),
            ExtendedAction::ShapeStatefulSet {
                name,
                start,
                replicas,
            } => {
                format!("shape {name} {start}+{replicas}")
            }
            ExtendedAction::Handover(action) => match action {
                HandoverAction::Volume(VolumeWrite::SetReclaimPolicy { volume, policy, .. }) => {
                    format!("policy {volume} {policy}")
                }
                HandoverAction::Volume(VolumeWrite::DeleteClaim { claim, .. }) => {
                    format!("delete claim {claim}")
                }
                HandoverAction::Volume(VolumeWrite::ReserveVolume { volume, claim, .. }) => {
                    format!("reserve {volume} for {claim}")
                }
                HandoverAction::CreateClaim { claim } => {
                    format!("create claim {}", claim.metadata.name.clone().unwrap())
                }
                HandoverAction::Volume(VolumeWrite::NudgeClaim { claim, .. }) => format!("nudge {claim}"),
            },
            ExtendedAction::SelectVersion { service, version } => format!("select {service} {version:?}"),
        })
        .collect()
}

#[test]
fn a_new_object_applies_one_stateful_set_per_zone_annotated_with_its_version() {
    let ests = ests(&["a", "b"], "1Gi", false);
    let new = Progress {
        version: 0,
        digest: None,
        step: Step::Done,
        step_started: None,
        stale_at: None,
    };
    let decision = decide(&ests, &new, &Observation::default(), None);
    assert_eq!(kinds(&decision), ["apply db-z0", "apply db-z1"]);
    for action in &decision.actions {
        let ExtendedAction::ApplyStatefulSet { object } = action else {
            unreachable!()
        };
        let annotations = object.metadata.annotations.clone().unwrap();
        assert_eq!(annotations.get(ANNOTATION_VERSION).map(String::as_str), Some("1"));
    }
    let status = decision.status(&ests, &[]);
    assert_eq!(status.version, 1);
    assert_eq!(status.update_step.as_deref(), Some("Done"));
}

#[test]
fn a_grown_claim_template_makes_a_resize_and_leaves_its_stateful_set_as_it_is() {
    let ests = ests(&[], "2Gi", false);
    let previous = rolled_out(&ests);
    let decision = decide(&ests, &previous, &observation(&[live("db", 2, "1Gi")]), None);
    let kinds = kinds(&decision);
    assert_eq!(kinds.len(), 1, "{kinds:?}");
    let ExtendedAction::CreateVolumeResize {
        stateful_set, spec, ..
    } = &decision.actions[0]
    else {
        panic!("{kinds:?}")
    };
    assert_eq!(stateful_set, "db");
    assert_eq!(spec.volumes[0].size, "2Gi");
    assert_eq!(decision.recheck, Recheck::Soon);
}

#[test]
fn the_applied_stateful_set_keeps_its_live_claim_templates() {
    let ests = ests(&[], "1Gi", false);
    let previous = rolled_out(&ests);
    let mut running = live("db", 2, "1Gi");
    // Grown in place by an earlier resize; the ExtendedStatefulSet's template says 1Gi still.
    running
        .spec
        .as_mut()
        .unwrap()
        .volume_claim_templates
        .as_mut()
        .unwrap()[0] = serde_json::from_value(json!({"metadata": {"name": "data"},
            "spec": {"resources": {"requests": {"storage": "1Gi"}}, "storageClassName": "kept"}}))
    .unwrap();
    let decision = decide(&ests, &previous, &observation(&[running.clone()]), None);
    let Some(ExtendedAction::ApplyStatefulSet { object }) = decision.actions.first() else {
        panic!("{:?}", kinds(&decision))
    };
    assert_eq!(
        object.spec.as_ref().unwrap().volume_claim_templates,
        running.spec.unwrap().volume_claim_templates
    );
    assert_eq!(decision.recheck, Recheck::Idle);
}

#[test]
fn a_stateful_set_a_resize_works_on_is_left_alone_and_named_in_the_status() {
    let ests = ests(&[], "1Gi", false);
    let previous = rolled_out(&ests);
    let mut observation = observation(&[live("db", 2, "1Gi")]);
    observation.resizes = Listing::from_objects([serde_json::from_value(json!({
        "apiVersion": "ferry.dev/v1alpha1", "kind": "VolumeResize",
        "metadata": {"name": "by-hand", "namespace": "apps"},
        "spec": {"statefulSetName": "db", "volumes": [{"name": "data", "size": "3Gi"}]},
        "status": {"phase": "Running"},
    }))
    .unwrap()]);
    let decision = decide(&ests, &previous, &observation, None);
    assert!(decision.actions.is_empty(), "{:?}", kinds(&decision));
    let status = decision.status(&ests, &[]);
    assert_eq!(
        status.volume_resizes.get("db").map(String::as_str),
        Some("by-hand")
    );
}

#[test]
fn a_dropped_zone_is_drained_then_deleted_and_a_stranger_is_never_touched() {
    let ests = ests(&["a"], "1Gi", false);
    let previous = rolled_out(&ests);
    let kept = live("db-z0", 2, "1Gi");
    let mut sets = vec![kept.clone(), live("db-z1", 1, "1Gi")];
    let decision = decide(&ests, &previous, &observation(&sets), None);
    assert_eq!(kinds(&decision), ["apply db-z0", "drain db-z1"]);
    // Scaled to 0 with a pod still stopping: nothing yet; with none left: deleted.
    sets[1] = live("db-z1", 0, "1Gi");
    sets[1].status.as_mut().unwrap().replicas = 1;
    assert_eq!(
        kinds(&decide(&ests, &previous, &observation(&sets), None)),
        ["apply db-z0"]
    );
    sets[1].status.as_mut().unwrap().replicas = 0;
    let decision = decide(&ests, &previous, &observation(&sets), None);
    assert_eq!(kinds(&decision), ["apply db-z0", "delete db-z1"]);
    // The same label on a StatefulSet another object owns: never ours to drain.
    sets[1] = live("db-z1", 1, "1Gi");
    sets[1].metadata.owner_references.as_mut().unwrap()[0].uid = "someone-else".into();
    assert_eq!(
        kinds(&decide(&ests, &previous, &observation(&sets), None)),
        ["apply db-z0"]
    );
}

#[test]
fn a_new_version_runs_its_pre_update_job_first_unless_hooks_are_switched_off() {
    let before = ests(&[], "1Gi", true);
    let previous = rolled_out(&before);
    let mut after = before.clone();
    after
        .spec
        .template
        .spec
        .template
        .spec
        .as_mut()
        .unwrap()
        .containers[0]
        .image = Some("db:2".into());
    let observation = observation(&[live("db", 2, "1Gi")]);
    let decision = decide(&after, &previous, &observation, None);
    assert_eq!(kinds(&decision), ["job db-pre-update-v2"]);
    let ExtendedAction::CreateHookJob { job } = &decision.actions[0] else {
        unreachable!()
    };
    assert_eq!(job.spec.as_ref().unwrap().backoff_limit, Some(0));
    assert_eq!(job.metadata.owner_references.as_ref().unwrap()[0].uid, "uid-1");
    let decision = decide(&after, &previous, &observation, Some("switched off"));
    assert!(decision.actions.is_empty(), "{:?}", kinds(&decision));
    let status = decision.status(&after, &["refused by the API".to_string()]);
    let invalid = status.conditions.iter().find(|c| c.type_ == "Invalid").unwrap();
    assert!(
        invalid
            .message
            .contains("db-pre-update-v2: not created: switched off")
            && invalid.message.contains("refused by the API"),
        "{}",
        invalid.message
    );
}

#[test]
fn a_resize_already_there_under_the_name_is_reported_readable_or_not() {
    let object = |name: &str, phase: &str, step: &str| {
        json!({
            "apiVersion": "ferry.dev/v1alpha1", "kind": "VolumeResize",
            "metadata": {"name": name, "namespace": "ns"},
            "spec": {"statefulSetName": "db", "volumes": [{"name": "data", "size": "2Gi"}]},
            "status": {"phase": phase, "plan": [{"replica": 0, "volume": "data",
                "claimName": "data-db-0", "targetSize": "2Gi", "step": step}]},
        })
    };
    // `Teleporting`: a row step only a newer Ferry knows.
    let listing = Listing::from_objects(
        [
            object("db-resize-failed", "Failed", "RolledBack"),
            object("db-resize-future", "Succeeded", "Teleporting"),
        ]
        .map(|value| serde_json::from_value(value).unwrap()),
    );
    assert_eq!(listing.unreadable.len(), 1);
    assert!(
        ended_under_name(&listing, "db-resize-failed", "db")
            .is_some_and(|problem| problem.contains("ended Failed"))
    );
    assert!(
        ended_under_name(&listing, "db-resize-future", "db")
            .is_some_and(|problem| problem.contains("cannot be read") && problem.contains("Teleporting"))
    );
    assert_eq!(ended_under_name(&listing, "db-resize-new", "db"), None);
}

/// A claim template change of a zoned ExtendedStatefulSet resizes one zone's StatefulSet at a
/// time, each once every member is Ready: resizes of every zone at once would each take a member
/// down together.
#[test]
fn a_zoned_claim_template_change_resizes_one_zone_at_a_time() {
    let zones = ["zone-a", "zone-b", "zone-c"];
    let ests = ests(&zones, "2Gi", false);
    let previous = rolled_out(&ests);
    let sets = [
        live("db-z0", 1, "1Gi"),
        live("db-z1", 1, "1Gi"),
        live("db-z2", 1, "1Gi"),
    ];
    let resizes = |decision: &Decision| {
        kinds(decision)
            .into_iter()
            .filter(|kind| kind.starts_with("resize "))
            .collect::<Vec<_>>()
    };
    let first = decide(&ests, &previous, &observation(&sets), None);
    assert_eq!(resizes(&first).len(), 1, "{:?}", kinds(&first));
    let ExtendedAction::CreateVolumeResize { stateful_set, .. } = first
        .actions
        .iter()
        .find(|a| matches!(a, ExtendedAction::CreateVolumeResize { .. }))
        .unwrap()
    else {
        unreachable!()
    };
    assert_eq!(stateful_set, "db-z0");
    assert_eq!(first.recheck, Recheck::Soon);

    // While it runs, no other zone's resize starts.
    let mut working = observation(&sets);
    working.resizes = Listing::from_objects([serde_json::from_value(json!({
        "apiVersion": "ferry.dev/v1alpha1", "kind": "VolumeResize",
        "metadata": {"name": "z0", "namespace": "apps"},
        "spec": {"statefulSetName": "db-z0", "volumes": [{"name": "data", "size": "2Gi"}]},
        "status": {"phase": "Running"},
    }))
    .unwrap()]);
    let during = decide(&ests, &previous, &working, None);
    assert!(resizes(&during).is_empty(), "{:?}", kinds(&during));

    // Done there, but a member of another zone down: the next waits for it.
    let mut down = sets.clone();
    down[0]
        .spec
        .as_mut()
        .unwrap()
        .volume_claim_templates
        .as_mut()
        .unwrap()[0] = serde_json::from_value(json!({"metadata": {"name": "data"},
            "spec": {"resources": {"requests": {"storage": "2Gi"}}}}))
    .unwrap();
    // (Two replicas over three zones: db-z2 has none.)
    down[0].status.as_mut().unwrap().ready_replicas = Some(0);
    let waiting = decide(&ests, &previous, &observation(&down), None);
    assert!(resizes(&waiting).is_empty(), "{:?}", kinds(&waiting));
    assert_eq!(waiting.recheck, Recheck::Soon);
    down[0].status.as_mut().unwrap().ready_replicas = Some(1);
    let next = decide(&ests, &previous, &observation(&down), None);
    assert_eq!(resizes(&next).len(), 1, "{:?}", kinds(&next));
    assert!(resizes(&next)[0].contains("db-z1"), "{:?}", kinds(&next));
}
