use super::*;
use serde_json::json;

const GI: u64 = 1 << 30;

fn autoscaler(max_size: &str) -> VolumeAutoscaler {
    serde_json::from_value(json!({
        "apiVersion": "ferry.dev/v1alpha1", "kind": "VolumeAutoscaler",
        "metadata": {"name": "db", "namespace": "apps", "uid": "vas-1", "generation": 1},
        "spec": {"statefulSetName": "db", "volumes": [{"name": "data", "maxSize": max_size}]},
    }))
    .unwrap()
}

fn stateful_set() -> StatefulSet {
    serde_json::from_value(json!({
        "metadata": {"name": "db", "namespace": "apps", "uid": "sts-1"},
        "spec": {"replicas": 2, "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": []}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"},
                "spec": {"resources": {"requests": {"storage": "1Gi"}}}}]},
    }))
    .unwrap()
}

/// db's two replicas, `used` bytes of 1 GiB each.
fn observed(used: u64) -> Observation {
    let readings = (0..2)
        .map(|replica| Reading {
            replica,
            used_bytes: used,
            capacity_bytes: GI,
            inodes: None,
        })
        .collect();
    let set = SetObservation {
        object: stateful_set(),
        replicas: Replicas {
            ordinals: vec![0, 1],
            pods: BTreeMap::new(),
        },
        volumes: [(
            "data".to_string(),
            VolumeObservation {
                largest_claim: GI,
                readings,
                usage_unreadable: None,
                measurements: Vec::new(),
                claims: Vec::new(),
            },
        )]
        .into(),
    };
    Observation {
        resizes: Listing::default(),
        stateful_sets: Ok(vec![set]),
        storage_classes: Vec::new(),
    }
}

fn decide_with(
    autoscaler: &VolumeAutoscaler,
    observation: &Observation,
    usage_not_read: Option<&str>,
) -> Decision {
    let input = Input {
        autoscaler,
        usage_not_read,
        now: 1_000_000,
    };
    plan(input, observation)
}

#[test]
fn a_full_volume_is_grown_by_one_resize_named_for_the_decision() {
    let autoscaler = autoscaler("10Gi");
    let decision = decide_with(&autoscaler, &observed(GI * 9 / 10), None);
    let [
        AutoscaleAction::CreateVolumeResize {
            stateful_set,
            name,
            spec,
            annotations,
        },
    ] = decision.actions.as_slice()
    else {
        panic!("{:?}", decision.actions)
    };
    assert_eq!(stateful_set, "db");
    assert_eq!(annotations["ferry.dev/autoscale-from"], "1Gi");
    assert_eq!(annotations["ferry.dev/autoscale-reason"], "threshold");
    assert_eq!(spec.volumes[0].name, "data");
    assert!(ferry_api::parse_bytes(&spec.volumes[0].size).unwrap() > GI);
    let [judged] = decision.judged.as_slice() else {
        panic!("{:?}", decision.judged)
    };
    assert!(matches!(&judged.outcome, Outcome::Resized { resize, .. } if resize == name));
    assert!(
        judged.fullest.is_some_and(|ratio| (ratio - 0.9).abs() < 1e-6),
        "{judged:?}"
    );
    assert_eq!(decision.volumes.len(), 1);
    assert_eq!(
        decision.volumes[0].capacity.as_deref(),
        Some(spec.volumes[0].size.as_str())
    );
    // The same observation planned again names the same resize: a second pass cannot make two.
    let again = decide_with(&autoscaler, &observed(GI * 9 / 10), None);
    assert_eq!(again.actions, decision.actions);
}

/// The VolumeResize `action` asks for, as the API server returns it: made at `made_at`.
fn made_resize(action: &AutoscaleAction, made_at: i64) -> ferry_api::VolumeResize {
    let AutoscaleAction::CreateVolumeResize {
        stateful_set,
        name,
        spec,
        annotations,
    } = action
    else {
        panic!("{action:?}")
    };
    let mut resize = ferry_api::VolumeResize::new(name, spec.as_ref().clone());
    resize.metadata.namespace = Some("apps".into());
    resize.metadata.annotations = Some(annotations.clone());
    resize.metadata.creation_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        k8s_openapi::jiff::Timestamp::from_second(made_at).unwrap(),
    ));
    resize.metadata.labels = Some(BTreeMap::from([
        ("ferry.dev/trigger".to_string(), "autoscale".to_string()),
        ("ferry.dev/stateful-set".to_string(), stateful_set.clone()),
        ("ferry.dev/autoscaler-uid".to_string(), "vas-1".to_string()),
    ]));
    resize
}

#[test]
fn a_grow_whose_status_was_never_written_is_recorded_from_its_resize() {
    let autoscaler = autoscaler("10Gi");
    let made = decide_with(&autoscaler, &observed(GI * 9 / 10), None);
    let [action] = made.actions.as_slice() else {
        panic!("{:?}", made.actions)
    };
    // The pass made the resize and stopped before its status write: the next one reads the
    // resize (running), and no status.
    let resize = made_resize(action, 1_000_000);
    let mut observation = observed(GI * 9 / 10);
    observation.resizes.readable.push(resize.clone());
    let next = decide_with(&autoscaler, &observation, None);
    assert!(
        next.actions
            .iter()
            .all(|a| !matches!(a, AutoscaleAction::CreateVolumeResize { .. }))
    );
    let last = next.volumes[0].last_resize.clone().expect("the grow recorded");
    assert_eq!(last.volume_resize, resize.metadata.name.clone().unwrap());
    assert_eq!((last.from.as_str(), last.reason.as_str()), ("1Gi", "threshold"));
    assert_eq!(last.to, resize.spec.volumes[0].size);
    assert_eq!(last.at, resize.metadata.creation_timestamp);
    // Status that recorded it keeps its own (the decision's time), not the resize's.
    let recorded = made.volumes[0].last_resize.clone().unwrap();
    let mut written = autoscaler.clone();
    written.status = Some(ferry_api::VolumeAutoscalerStatus {
        volumes: made.volumes.clone(),
        ..Default::default()
    });
    let later = decide_with(&written, &observation, None);
    assert_eq!(later.volumes[0].last_resize, Some(recorded));
}

#[test]
fn below_the_threshold_nothing_is_made_and_the_skip_is_counted() {
    let decision = decide_with(&autoscaler("10Gi"), &observed(GI / 10), None);
    assert!(decision.actions.is_empty());
    assert_eq!(decision.judged[0].outcome, Outcome::Skipped("below-threshold"));
}

/// The `ShrinkRecommended` condition the autoscaler's status gets from `decision`.
fn shrink_condition(decision: &Decision) -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
    let status = record::overall(
        None,
        decision.volumes.clone(),
        &decision.shrink_recommended,
        Some(1),
        1_000_000,
    );
    let found = status
        .conditions
        .iter()
        .find(|c| c.type_ == "ShrinkRecommended")
        .cloned();
    found.expect("the condition is always written")
}

#[test]
fn a_volume_that_could_be_a_quarter_smaller_is_recommended_in_a_condition_and_nothing_shrinks() {
    let condition = shrink_condition;
    // 100 MiB on 1 GiB: 125Mi would hold it at most 80 % full.
    let roomy = decide_with(&autoscaler("10Gi"), &observed(100 << 20), None);
    assert!(roomy.actions.is_empty(), "{:?}", roomy.actions);
    let said = condition(&roomy);
    assert_eq!(
        (said.status.as_str(), said.reason.as_str()),
        ("True", "CouldShrink")
    );
    assert_eq!(
        said.message,
        "data of db could be 125Mi instead of 1Gi (its fullest replica at most 80 % full)"
    );
    // 700 MiB: 875Mi would do, 15 % smaller: not worth saying.
    let snug = condition(&decide_with(&autoscaler("10Gi"), &observed(700 << 20), None));
    assert_eq!(
        (snug.status.as_str(), snug.reason.as_str()),
        ("False", "RightSized")
    );
}

#[test]
fn without_usage_or_with_a_bad_policy_nothing_is_decided_and_the_status_says_why() {
    let decision = decide_with(
        &autoscaler("10Gi"),
        &observed(GI),
        Some("kubelet stats switched off"),
    );
    assert!(decision.actions.is_empty() && decision.judged.is_empty());
    assert!(format!("{:?}", decision.volumes[0]).contains("kubelet stats switched off"));
    let decision = decide_with(&autoscaler("ten gigs"), &observed(GI), None);
    assert!(decision.actions.is_empty() && decision.judged.is_empty());
    assert!(format!("{:?}", decision.volumes[0]).contains("ten gigs"));
}

/// db's full volume whose claim data-db-1 carries pvc-autoresizer's limit, of class `topolvm`
/// annotated `enabled` as given.
fn shared_with_autoresizer(enabled: &str) -> Observation {
    let mut observation = observed(GI * 95 / 100);
    let claim = |name: &str, limit: Option<&str>| -> PersistentVolumeClaim {
        let annotations = limit.map_or(json!({}), |limit| json!({autoresizer::STORAGE_LIMIT: limit}));
        serde_json::from_value(json!({
            "metadata": {"name": name, "annotations": annotations},
            "spec": {"storageClassName": "topolvm"},
            "status": {"phase": "Bound"},
        }))
        .unwrap()
    };
    let Ok(sets) = &mut observation.stateful_sets else {
        unreachable!()
    };
    if let Some(read) = sets[0].volumes.get_mut("data") {
        read.claims = vec![claim("data-db-0", None), claim("data-db-1", Some("10Gi"))];
    }
    observation.storage_classes = vec![
        serde_json::from_value(json!({
            "metadata": {"name": "topolvm", "annotations": {autoresizer::ENABLED: enabled}},
            "provisioner": "topolvm.io",
        }))
        .unwrap(),
    ];
    observation
}

#[test]
fn a_volume_whose_claims_pvc_autoresizer_manages_is_not_grown_and_says_how_to_switch() {
    let mut autoscaler = autoscaler("10Gi");
    let decision = decide_with(&autoscaler, &shared_with_autoresizer("true"), None);
    assert!(decision.actions.is_empty(), "{:?}", decision.actions);
    let status = &decision.volumes[0];
    assert_eq!(status.state.as_deref(), Some("ManagedByPvcAutoresizer"));
    let message = status.message.as_deref().unwrap_or_default();
    assert!(message.contains("claim(s) data-db-1 "), "{message}");
    assert!(message.contains("kubectl ferry import"), "{message}");
    assert_eq!(
        decision.judged[0].outcome,
        Outcome::Skipped("managed-by-pvc-autoresizer")
    );
    let [(notice, Some(sts))] = decision.notices.as_slice() else {
        panic!("{:?}", decision.notices)
    };
    assert!(notice.warning && notice.reason == "ManagedByPvcAutoresizer" && sts == "db");
    // The whole autoscaler is Stalled: someone must choose.
    let overall = record::overall(
        None,
        decision.volumes.clone(),
        &decision.shrink_recommended,
        Some(1),
        1_000_000,
    );
    let stalled = overall.conditions.iter().find(|c| c.type_ == "Stalled").unwrap();
    assert_eq!(stalled.status, "True");
    assert!(stalled.message.contains("pvc-autoresizer"), "{}", stalled.message);
    // Told once: the next poll keeps the status and sends no second Event.
    autoscaler.status = Some(overall);
    let again = decide_with(&autoscaler, &shared_with_autoresizer("true"), None);
    assert!(again.notices.is_empty(), "{:?}", again.notices);
    assert_eq!(again.volumes[0].state.as_deref(), Some("ManagedByPvcAutoresizer"));
}

#[test]
fn a_class_not_enabled_for_pvc_autoresizer_leaves_the_volume_to_ferry() {
    let decision = decide_with(&autoscaler("10Gi"), &shared_with_autoresizer("false"), None);
    assert_eq!(decision.actions.len(), 1, "{:?}", decision.volumes);
    assert_eq!(decision.volumes[0].state.as_deref(), Some("Growing"));
}

#[test]
fn a_stateful_set_ferry_is_re_creating_is_not_called_missing() {
    let mut observation = observed(GI);
    observation.stateful_sets = Err("StatefulSet \"db\" does not exist in this namespace".to_string());
    let missing = decide_with(&autoscaler("10Gi"), &observation, None);
    assert!(format!("{:?}", missing.volumes[0]).contains("does not exist"));
    observation.resizes = Listing::from_objects([serde_json::from_value(json!({
        "apiVersion": "ferry.dev/v1alpha1", "kind": "VolumeResize",
        "metadata": {"name": "shrink", "namespace": "apps"},
        "spec": {"statefulSetName": "db", "volumes": [{"name": "data", "size": "512Mi"}]},
        "status": {"phase": "Running"},
    }))
    .unwrap()]);
    let recreating = decide_with(&autoscaler("10Gi"), &observation, None);
    assert!(
        format!("{:?}", recreating.volumes[0]).contains("VolumeResize shrink is re-creating the StatefulSet")
    );
    assert!(recreating.actions.is_empty());
}

#[test]
fn an_autoscaler_by_owner_or_selector_knows_its_own_resize_re_creating_the_stateful_set() {
    let mut by_owner = autoscaler("10Gi");
    by_owner.spec.stateful_set_name = None;
    by_owner.spec.owner = Some(ferry_api::OwnerTarget {
        kind: "Prometheus".into(),
        name: "k8s".into(),
    });
    let mut observation = observed(GI);
    observation.stateful_sets =
        Err("no StatefulSet in this namespace is controlled by Prometheus \"k8s\"".to_string());
    let missing = decide_with(&by_owner, &observation, None);
    assert!(format!("{:?}", missing.volumes[0]).contains("is controlled by"));
    let grow = |labels: serde_json::Value, phase: &str| {
        serde_json::from_value(json!({
            "apiVersion": "ferry.dev/v1alpha1", "kind": "VolumeResize",
            "metadata": {"name": "grow", "namespace": "apps", "labels": labels},
            "spec": {"statefulSetName": "prometheus-k8s", "volumes": [{"name": "data", "size": "2Gi"}]},
            "status": {"phase": phase},
        }))
        .unwrap()
    };
    // Another's resize, or its own that has ended, says nothing about this absence.
    observation.resizes = Listing::from_objects([
        grow(
            json!({ferry_api::names::LABEL_AUTOSCALER_UID: "vas-2"}),
            "Running",
        ),
        grow(
            json!({ferry_api::names::LABEL_AUTOSCALER_UID: "vas-1"}),
            "Succeeded",
        ),
    ]);
    let still_missing = decide_with(&by_owner, &observation, None);
    assert!(format!("{:?}", still_missing.volumes[0]).contains("is controlled by"));
    observation.resizes = Listing::from_objects([grow(
        json!({ferry_api::names::LABEL_AUTOSCALER_UID: "vas-1"}),
        "Running",
    )]);
    let recreating = decide_with(&by_owner, &observation, None);
    let said = format!("{:?}", recreating.volumes[0]);
    assert!(
        said.contains("VolumeResize grow is re-creating the StatefulSet") && said.contains("prometheus-k8s"),
        "{said}"
    );
    assert!(recreating.actions.is_empty());
}

/// db's replica 1 crash-loops saying its disk is full on node-b, and nothing reports its volume
/// (replica 0 reads `used` of 1 GiB as before).
fn crashing_unmeasured(used: u64) -> Observation {
    let mut observation = observed(used);
    let Ok(sets) = &mut observation.stateful_sets else {
        unreachable!()
    };
    let crashed: k8s_openapi::api::core::v1::Pod = serde_json::from_value(json!({
        "metadata": {"name": "db-1"},
        "spec": {"nodeName": "node-b", "containers": []},
        "status": {"conditions": [{"type": "Ready", "status": "False"}], "containerStatuses": [{
            "name": "db", "image": "db", "imageID": "", "ready": false, "restartCount": 3,
            "state": {"waiting": {"reason": "CrashLoopBackOff"}},
            "lastState": {"terminated": {"exitCode": 1, "message": "write: No space left on device"}},
        }]},
    }))
    .unwrap();
    sets[0].replicas.pods.insert(1, crashed);
    let read = sets[0].volumes.get_mut("data").unwrap();
    read.readings.retain(|r| r.replica != 1);
    observation
}

/// The words alone grow nothing: the volume is measured first (a usage pod on the replica's
/// node); a measurement that finds it full rescues it, and its pod goes with the grow.
#[test]
fn full_disk_words_without_a_reading_are_measured_before_a_rescue() {
    let autoscaler = autoscaler("10Gi");
    let mut observation = crashing_unmeasured(GI / 10);
    let decision = decide_with(&autoscaler, &observation, None);
    let pod = super::measure::pod_name("data-db-1", "vas-1");
    assert_eq!(
        decision.actions,
        vec![AutoscaleAction::MeasureVolume {
            pod: pod.clone(),
            claim: "data-db-1".into(),
            node: "node-b".into(),
            tolerations: Vec::new(),
            run_as: None,
        }],
        "measured, not grown"
    );
    let Ok(sets) = &mut observation.stateful_sets else {
        unreachable!()
    };
    let full = Reading {
        replica: 1,
        used_bytes: GI,
        capacity_bytes: GI,
        inodes: None,
    };
    sets[0].volumes.get_mut("data").unwrap().measurements = vec![super::measure::Measurement {
        replica: 1,
        pod: pod.clone(),
        state: super::measure::Measured::Done {
            reading: full,
            at: 1_000_000 - 5,
        },
    }];
    let decision = decide_with(&autoscaler, &observation, None);
    assert!(
        matches!(
            decision.actions.as_slice(),
            [AutoscaleAction::CreateVolumeResize { spec, .. }, AutoscaleAction::DeleteMeasurement { pod: gone }]
                if spec.force && *gone == pod
        ),
        "{:?}",
        decision.actions
    );
}

/// An autoscaler with a shrink policy whose streak must last `for`.
fn shrinking_autoscaler(lasting: &str) -> VolumeAutoscaler {
    let mut autoscaler = autoscaler("10Gi");
    autoscaler.spec.volumes[0].shrink = Some(ferry_api::ShrinkPolicy {
        lasting: Some(lasting.to_string()),
        min_size: Some("100Mi".to_string()),
        ..Default::default()
    });
    autoscaler
}

/// The autoscaler with `decision`'s statuses written, as the next pass reads it.
fn with_status(autoscaler: &VolumeAutoscaler, decision: &Decision) -> VolumeAutoscaler {
    let mut written = autoscaler.clone();
    written.status = Some(ferry_api::VolumeAutoscalerStatus {
        volumes: decision.volumes.clone(),
        ..Default::default()
    });
    written
}

#[test]
fn a_nearly_empty_volume_shrinks_by_copy_once_its_streak_has_lasted_and_the_shrink_is_recorded() {
    let first_pass = |autoscaler: &VolumeAutoscaler, now| {
        plan(
            Input {
                autoscaler,
                usage_not_read: None,
                now,
            },
            &observed(60 << 20),
        )
    };
    let autoscaler = shrinking_autoscaler("1h");
    // The streak starts: nothing is made, status says when and to what.
    let started = first_pass(&autoscaler, 1_000_000);
    assert!(started.actions.is_empty(), "{:?}", started.actions);
    assert_eq!(started.volumes[0].state.as_deref(), Some("ShrinkPending"));
    assert!(
        (started.volumes[0].message.clone().unwrap()).contains("shrinks to 100Mi"),
        "{:?}",
        started.volumes[0].message
    );
    // Half an hour on, still waiting; an hour on, the shrink.
    let written = with_status(&autoscaler, &started);
    assert!(first_pass(&written, 1_001_800).actions.is_empty());
    let shrunk = first_pass(&written, 1_003_600);
    let [
        action @ AutoscaleAction::CreateVolumeResize {
            spec, annotations, ..
        },
    ] = shrunk.actions.as_slice()
    else {
        panic!("{:?}", shrunk.actions)
    };
    assert_eq!(spec.volumes[0].size, "100Mi", "60 MiB at 60 %");
    assert_eq!(spec.strategy, ferry_api::Strategy::Copy);
    assert_eq!(annotations["ferry.dev/autoscale-reason"], "shrink");
    let volume = &shrunk.volumes[0];
    assert_eq!(volume.state.as_deref(), Some("Shrinking"));
    assert!(volume.history.is_empty(), "a shrink is no grow");
    assert!(volume.last_shrink_at.is_some() && volume.below_shrink_since.is_none());
    // A pass whose status write was lost reads the shrink from its resize: no second one.
    let mut observation = observed(60 << 20);
    let mut resize = made_resize(action, 1_003_600);
    resize.status = Some(ferry_api::VolumeResizeStatus {
        phase: Some(ferry_api::Phase::Succeeded),
        ..Default::default()
    });
    observation.resizes.readable.push(resize);
    let after = plan(
        Input {
            autoscaler: &written,
            usage_not_read: None,
            now: 1_010_000,
        },
        &observation,
    );
    assert!(after.actions.is_empty(), "{:?}", after.actions);
    assert_eq!(after.volumes[0].state.as_deref(), Some("ShrinkPending"));
    assert_eq!(
        after.volumes[0]
            .last_shrink_at
            .as_ref()
            .map(|at| at.0.as_second()),
        Some(1_003_600)
    );
}

#[test]
fn the_shrink_recommendation_is_unknown_until_usage_is_read() {
    let decision = decide_with(
        &autoscaler("10Gi"),
        &observed(GI / 10),
        Some("kubelet stats are off"),
    );
    let condition = shrink_condition(&decision);
    assert_eq!(
        (condition.status.as_str(), condition.reason.as_str()),
        ("Unknown", "UsageUnknown")
    );
}
