use super::*;
use crate::resize::observed::{ClaimView, PeerResize, StatefulSetView, StorageClassView, TemplateView};
use ferry_api::{ChosenStrategy, Mode, Strategy, Verify, VolumeChange};

mod placement;

const GI: u64 = 1 << 30;

fn spec(volumes: &[(&str, &str, Option<&str>)]) -> VolumeResizeSpec {
    VolumeResizeSpec {
        stateful_set_name: "db".into(),
        volumes: volumes
            .iter()
            .map(|(name, size, class)| VolumeChange {
                name: name.to_string(),
                size: size.to_string(),
                storage_class_name: class.map(str::to_string),
                volume_attributes_class_name: None,
            })
            .collect(),
        strategy: Strategy::Auto,
        mode: Mode::Rolling,
        warm_copy: true,
        warm_copy_method: ferry_api::WarmCopyMethod::Mover,
        verify: Verify::Checksum,
        retain_old_volumes: None,
        dry_run: false,
        force: false,
        mover: None,
        placement: None,
        timeout_seconds: None,
        owner_policy: ferry_api::OwnerPolicy::Through,
    }
}

/// A healthy 3-replica StatefulSet `db` with template `data` (10Gi on `standard`, expandable) and
/// `fixed` (not expandable) also present.
fn observed() -> Observed {
    let mut o = Observed {
        stateful_set: Some(StatefulSetView {
            name: "db".into(),
            replicas: 3,
            first_ordinal: 0,
            ready_replicas: 3,
            templates: [(
                "data".to_string(),
                TemplateView {
                    size_bytes: Some(10 * GI),
                    storage_class: None,
                    ..TemplateView::default()
                },
            )]
            .into(),
            ..StatefulSetView::default()
        }),
        queue_key: (100, "me".into()),
        ..Observed::default()
    };
    o.storage_classes.insert(
        "standard".into(),
        StorageClassView {
            allow_expansion: true,
            is_default: true,
            ..StorageClassView::default()
        },
    );
    o.storage_classes.insert(
        "fixed".into(),
        StorageClassView {
            allow_expansion: false,
            is_default: false,
            ..StorageClassView::default()
        },
    );
    for replica in 0..3 {
        o.claims.insert(
            format!("data-db-{replica}"),
            ClaimView {
                capacity_bytes: 10 * GI,
                storage_class: Some("standard".into()),
                ..ClaimView::default()
            },
        );
    }
    o
}

fn reason(check: &Precheck) -> &'static str {
    match &check.verdict {
        Verdict::Reject { reason, .. } | Verdict::Wait { reason, .. } => reason,
        Verdict::Passed => "Passed",
        Verdict::NothingToDo => "NothingToDo",
    }
}

#[test]
fn grow_on_expandable_class_is_in_place_for_every_replica() {
    let check = precheck(&spec(&[("data", "20Gi", None)]), &observed());
    assert_eq!(check.verdict, Verdict::Passed);
    assert_eq!(check.plan.len(), 3);
    for (replica, row) in check.plan.iter().enumerate() {
        assert_eq!(row.replica, replica as i32);
        assert_eq!(row.claim_name, format!("data-db-{replica}"));
        assert_eq!(row.strategy, Some(ChosenStrategy::InPlace));
        assert_eq!(row.current_size.as_deref(), Some("10Gi"));
        assert_eq!(row.target_size, "20Gi");
    }
}

#[test]
fn shrink_and_class_change_copy() {
    let check = precheck(&spec(&[("data", "5Gi", None)]), &observed());
    assert!(
        check
            .plan
            .iter()
            .all(|r| r.strategy == Some(ChosenStrategy::Copy))
    );
    let check = precheck(&spec(&[("data", "10Gi", Some("fixed"))]), &observed());
    assert_eq!(check.verdict, Verdict::Passed);
    assert!(
        check
            .plan
            .iter()
            .all(|r| r.strategy == Some(ChosenStrategy::Copy))
    );
    assert_eq!(check.plan[0].target_storage_class.as_deref(), Some("fixed"));
}

#[test]
fn missing_stateful_set_template_or_class_is_rejected() {
    let mut o = observed();
    o.stateful_set = None;
    assert_eq!(
        reason(&precheck(&spec(&[("data", "20Gi", None)]), &o)),
        REASON_STATEFUL_SET_NOT_FOUND
    );

    let check = precheck(&spec(&[("logs", "20Gi", None)]), &observed());
    assert_eq!(reason(&check), REASON_TEMPLATE_NOT_FOUND);
    assert!(matches!(&check.verdict, Verdict::Reject { message, .. } if message.contains("it has: data")));

    let check = precheck(&spec(&[("data", "20Gi", Some("gold"))]), &observed());
    assert_eq!(reason(&check), REASON_STORAGE_CLASS_NOT_FOUND);
    assert!(check.plan.is_empty());
}

#[test]
fn no_default_class_and_no_class_named_is_rejected() {
    let mut o = observed();
    o.storage_classes.get_mut("standard").unwrap().is_default = false;
    o.claims.clear();
    assert_eq!(
        reason(&precheck(&spec(&[("data", "20Gi", None)]), &o)),
        REASON_STORAGE_CLASS_NOT_FOUND
    );
}

#[test]
fn invalid_size_is_rejected() {
    for size in ["ten", "0", "-1Gi"] {
        assert_eq!(
            reason(&precheck(&spec(&[("data", size, None)]), &observed())),
            REASON_INVALID_SIZE,
            "{size}"
        );
    }
}

#[test]
fn in_place_on_fixed_class_is_rejected() {
    let mut o = observed();
    o.storage_classes.get_mut("standard").unwrap().allow_expansion = false;
    let mut s = spec(&[("data", "20Gi", None)]);
    s.strategy = Strategy::InPlace;
    assert_eq!(reason(&precheck(&s, &o)), REASON_NOT_EXPANDABLE);
    s.volumes[0].size = "5Gi".into();
    assert_eq!(reason(&precheck(&s, &o)), REASON_INVALID_SIZE);
}

#[test]
fn same_size_and_class_is_nothing_to_do() {
    assert_eq!(
        precheck(&spec(&[("data", "10Gi", None)]), &observed()).verdict,
        Verdict::NothingToDo
    );
}

/// `spec.mover.image`: only the operator's own image or one it lists; anything else is refused
/// before anything is touched, whoever wrote the VolumeResize.
#[test]
fn a_mover_image_the_operator_does_not_run_is_refused() {
    let mut o = observed();
    o.mover_images = crate::resize::observed::MoverImages {
        default: "ferry.local/ferry:dev".into(),
        allowed: vec!["registry.example/ferry:1.2".into()],
    };
    let with_image = |image: Option<&str>| {
        let mut s = spec(&[("data", "20Gi", None)]);
        s.mover = Some(ferry_api::MoverSettings {
            image: image.map(str::to_string),
            ..ferry_api::MoverSettings::default()
        });
        s
    };
    for fine in [
        None,
        Some("ferry.local/ferry:dev"),
        Some("registry.example/ferry:1.2"),
    ] {
        assert_eq!(reason(&precheck(&with_image(fine), &o)), "Passed", "{fine:?}");
    }
    let check = precheck(&with_image(Some("evil.example/miner:latest")), &o);
    assert_eq!(reason(&check), REASON_MOVER_IMAGE_NOT_ALLOWED);
    assert!(check.plan.is_empty());
    let Verdict::Reject { message, .. } = &check.verdict else {
        panic!("refused")
    };
    assert!(
        message.contains("\"evil.example/miner:latest\" is not an image this operator runs movers from (ferry.local/ferry:dev, registry.example/ferry:1.2)"),
        "{message}"
    );
}

#[test]
fn unready_stateful_set_waits_unless_forced() {
    let mut o = observed();
    o.stateful_set.as_mut().unwrap().ready_replicas = 2;
    let mut s = spec(&[("data", "20Gi", None)]);
    let check = precheck(&s, &o);
    assert_eq!(reason(&check), REASON_NOT_READY);
    assert!(matches!(&check.verdict, Verdict::Wait { message, .. } if message.contains("2/3")));
    s.force = true;
    assert_eq!(precheck(&s, &o).verdict, Verdict::Passed);
}

#[test]
fn queue_holder_or_older_peer_blocks_younger_does_not() {
    let s = spec(&[("data", "20Gi", None)]);
    let mut o = observed();
    o.peers = vec![PeerResize {
        name: "younger".into(),
        queue_key: (200, "y".into()),
        holds_stateful_set: false,
    }];
    assert_eq!(precheck(&s, &o).verdict, Verdict::Passed);

    o.peers.push(PeerResize {
        name: "older".into(),
        queue_key: (50, "o".into()),
        holds_stateful_set: false,
    });
    let check = precheck(&s, &o);
    assert!(matches!(&check.verdict, Verdict::Wait { message, .. } if message.contains("\"older\"")));

    o.peers = vec![PeerResize {
        name: "holder".into(),
        queue_key: (300, "h".into()),
        holds_stateful_set: true,
    }];
    assert!(
        matches!(&precheck(&s, &o).verdict, Verdict::Wait { message, .. } if message.contains("\"holder\""))
    );
}

#[test]
fn permanent_problems_are_reported_before_waiting_for_readiness() {
    let mut o = observed();
    o.stateful_set.as_mut().unwrap().ready_replicas = 0;
    assert_eq!(
        reason(&precheck(&spec(&[("data", "20Gi", Some("gold"))]), &o)),
        REASON_STORAGE_CLASS_NOT_FOUND
    );
}

#[test]
fn while_another_resize_holds_the_stateful_set_nothing_is_judged() {
    // The holder may have the StatefulSet orphan-deleted for a moment: that is no reason to fail.
    let mut o = observed();
    o.stateful_set = None;
    o.peers = vec![PeerResize {
        name: "holder".into(),
        queue_key: (1, "h".into()),
        holds_stateful_set: true,
    }];
    let check = precheck(&spec(&[("data", "20Gi", None)]), &o);
    assert_eq!(reason(&check), REASON_WAITING_FOR_OTHER);
    assert!(matches!(&check.verdict, Verdict::Wait { message, .. } if message.contains("\"holder\"")));
}

#[test]
fn dry_run_neither_queues_nor_waits_for_readiness() {
    let mut o = observed();
    o.stateful_set.as_mut().unwrap().ready_replicas = 0;
    o.peers = vec![PeerResize {
        name: "holder".into(),
        queue_key: (1, "h".into()),
        holds_stateful_set: true,
    }];
    let mut s = spec(&[("data", "20Gi", None)]);
    s.dry_run = true;
    assert_eq!(precheck(&s, &o).verdict, Verdict::Passed);
}

#[test]
fn raw_block_and_read_write_once_pod_volumes_are_refused_for_copy_but_expand_in_place() {
    for (block, rwop, words) in [
        (true, false, "volumeMode Block"),
        (false, true, "ReadWriteOncePod"),
    ] {
        let mut o = observed();
        if let Some(template) = o
            .stateful_set
            .as_mut()
            .and_then(|sts| sts.templates.get_mut("data"))
        {
            template.raw_block = block;
            template.read_write_once_pod = rwop;
        }
        // A shrink needs a copy: refused, saying why.
        let result = precheck(&spec(&[("data", "5Gi", None)]), &o);
        match result.verdict {
            Verdict::Reject { reason, message } => {
                assert_eq!(reason, REASON_UNSUPPORTED_VOLUME);
                assert!(
                    message.contains(words) && message.contains("\"data\""),
                    "{message}"
                );
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
        // A grow on an expandable class is done in place: fine.
        let result = precheck(&spec(&[("data", "20Gi", None)]), &o);
        assert_eq!(result.verdict, Verdict::Passed);
    }
}

#[test]
fn replicas_follow_ordinals_start() {
    let mut o = observed();
    o.stateful_set.as_mut().unwrap().first_ordinal = 5;
    o.claims.clear();
    for replica in 5..8 {
        o.claims.insert(
            format!("data-db-{replica}"),
            ClaimView {
                capacity_bytes: 10 * GI,
                storage_class: Some("standard".into()),
                ..ClaimView::default()
            },
        );
    }
    let check = precheck(&spec(&[("data", "20Gi", None)]), &o);
    assert_eq!(check.verdict, Verdict::Passed);
    let claims: Vec<&str> = check.plan.iter().map(|row| row.claim_name.as_str()).collect();
    assert_eq!(claims, ["data-db-5", "data-db-6", "data-db-7"]);
    assert_eq!(
        check.plan.iter().map(|r| r.replica).collect::<Vec<_>>(),
        [5, 6, 7]
    );
    assert!(check.plan.iter().all(|row| row.strategy.is_some()));
}

#[test]
fn claims_of_scaled_down_replicas_are_listed_not_silently_skipped() {
    let mut o = observed();
    // Scaled from 5 to 3: data-db-3 and data-db-4 are still there, unused.
    for replica in 3..5 {
        o.claims.insert(
            format!("data-db-{replica}"),
            ClaimView {
                capacity_bytes: 10 * GI,
                storage_class: Some("standard".into()),
                ..ClaimView::default()
            },
        );
    }
    o.claims.insert("data-other-0".into(), ClaimView::default());
    let check = precheck(&spec(&[("data", "20Gi", None)]), &o);
    assert_eq!(check.verdict, Verdict::Passed);
    let idle: Vec<&VolumePlan> = check.plan.iter().filter(|row| row.strategy.is_none()).collect();
    assert_eq!(
        idle.iter().map(|r| r.claim_name.as_str()).collect::<Vec<_>>(),
        ["data-db-3", "data-db-4"]
    );
    assert!(
        idle[0]
            .message
            .as_deref()
            .unwrap()
            .contains("ordinal 3 is not a running replica (replicas are 0..2)"),
        "{:?}",
        idle[0].message
    );
    assert_eq!(check.plan.iter().filter(|row| row.strategy.is_some()).count(), 3);

    // Nothing to do for the running ones: the answer names the claims left as they are.
    let mut done = o.clone();
    for replica in 0..3 {
        done.claims
            .get_mut(&format!("data-db-{replica}"))
            .unwrap()
            .capacity_bytes = 20 * GI;
    }
    let nothing = precheck(&spec(&[("data", "20Gi", None)]), &done);
    assert_eq!(nothing.verdict, Verdict::NothingToDo);
    let status = crate::resize::status::after_precheck(
        None,
        &nothing,
        false,
        Some(1),
        &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::from_second(1).unwrap(),
        ),
    );
    assert!(
        status
            .message
            .as_deref()
            .unwrap()
            .contains("left as they are: data-db-3, data-db-4"),
        "{:?}",
        status.message
    );
}

#[test]
fn zero_replicas_is_refused_with_the_reason_not_called_done() {
    let mut o = observed();
    o.stateful_set.as_mut().unwrap().replicas = 0;
    o.stateful_set.as_mut().unwrap().ready_replicas = 0;
    let check = precheck(&spec(&[("data", "20Gi", None)]), &o);
    assert_eq!(reason(&check), REASON_NO_REPLICAS);
    let Verdict::Reject { message, .. } = &check.verdict else {
        panic!("{check:?}")
    };
    assert!(
        message.contains("0 replicas") && message.contains("data-db-0, data-db-1, data-db-2 keep their size"),
        "{message}"
    );
}

#[test]
fn a_target_class_that_cannot_reach_the_replicas_node_is_refused_before_anything_stops() {
    use crate::resize::observed::NodeView;
    let mut o = observed();
    o.storage_classes.insert(
        "local-fast".into(),
        StorageClassView {
            provisioner: String::new(),
            allow_expansion: false,
            is_default: false,
            allowed_topologies: vec![vec![(
                "topology.kubernetes.io/zone".into(),
                vec!["zone-a".into(), "zone-b".into()],
            )]],
            waits_for_first_consumer: true,
        },
    );
    for (replica, zone) in [(0, "zone-a"), (1, "zone-c"), (2, "zone-b")] {
        o.replica_nodes.insert(
            replica,
            NodeView {
                name: format!("node-{replica}"),
                labels: [("topology.kubernetes.io/zone".to_string(), zone.to_string())].into(),
                ..NodeView::default()
            },
        );
    }
    let check = precheck(&spec(&[("data", "10Gi", Some("local-fast"))]), &o);
    assert_eq!(reason(&check), REASON_TOPOLOGY);
    let Verdict::Reject { message, .. } = &check.verdict else {
        panic!("{check:?}")
    };
    assert!(
        message.contains("topology.kubernetes.io/zone in [zone-a, zone-b]")
            && message.contains("replica 1 (data-db-1) runs on node \"node-1\""),
        "{message}"
    );
    // Where every replica's node is reachable, the copy is planned.
    o.replica_nodes.get_mut(&1).unwrap().labels =
        [("topology.kubernetes.io/zone".to_string(), "zone-b".to_string())].into();
    assert_eq!(
        precheck(&spec(&[("data", "10Gi", Some("local-fast"))]), &o).verdict,
        Verdict::Passed
    );
}

#[test]
fn a_dry_run_reports_the_kubelets_usage_and_refuses_a_shrink_with_no_room_for_it() {
    let mut o = observed();
    o.data_in_use = [
        ("data-db-0".to_string(), 3 * GI),
        ("data-db-1".to_string(), 5 * GI),
    ]
    .into();
    let mut s = spec(&[("data", "5Gi", None)]);
    s.dry_run = true;
    let check = precheck(&s, &o);
    assert_eq!(reason(&check), REASON_TOO_SMALL_FOR_DATA);
    let Verdict::Reject { message, .. } = &check.verdict else {
        panic!("{check:?}")
    };
    assert!(
        message.contains("data-db-1 holds 5") && message.contains("headroom"),
        "{message}"
    );
    assert!(!message.contains("data-db-0"), "3 GiB fits in 5 GiB: {message}");

    // With room: passed, each row carrying the kubelet's figure (none where it reported nothing).
    s.volumes[0].size = "8Gi".into();
    let check = precheck(&s, &o);
    assert_eq!(check.verdict, Verdict::Passed);
    let data: Vec<Option<u64>> = check.plan.iter().map(|row| row.bytes_total).collect();
    assert_eq!(data, [Some(3 * GI), Some(5 * GI), None]);

    // A run never judges by it: its own pods measure the data before anything is touched.
    s.volumes[0].size = "5Gi".into();
    s.dry_run = false;
    let check = precheck(&s, &o);
    assert_eq!(check.verdict, Verdict::Passed);
    assert!(check.plan.iter().all(|row| row.bytes_total.is_none()));
}

/// `spec` asking for the attributes class `class` on every volume.
fn with_attributes(mut spec: VolumeResizeSpec, class: &str) -> VolumeResizeSpec {
    for volume in &mut spec.volumes {
        volume.volume_attributes_class_name = Some(class.into());
    }
    spec
}

/// `observed()` whose classes provision with `csi.a` and `csi.b`, and attributes classes `gold`
/// (of `csi.a`) and `other` (of `csi.b`).
fn observed_with_drivers() -> Observed {
    let mut o = observed();
    o.storage_classes.get_mut("standard").unwrap().provisioner = "csi.a".into();
    o.storage_classes.get_mut("fixed").unwrap().provisioner = "csi.b".into();
    o.attributes_classes.insert("gold".into(), "csi.a".into());
    o.attributes_classes.insert("other".into(), "csi.b".into());
    o
}

#[test]
fn another_attributes_class_alone_is_planned_in_place_on_every_replica() {
    let o = observed_with_drivers();
    let result = precheck(&with_attributes(spec(&[("data", "10Gi", None)]), "gold"), &o);
    assert_eq!(result.verdict, Verdict::Passed);
    for row in &result.plan {
        assert_eq!(row.strategy, Some(ChosenStrategy::InPlace), "{row:?}");
        assert_eq!(row.current_attributes_class, None);
        assert_eq!(row.target_attributes_class.as_deref(), Some("gold"));
    }
    // Asked for the class the claims have: nothing to do.
    let mut same = o.clone();
    for claim in same.claims.values_mut() {
        claim.attributes_class = Some("gold".into());
    }
    let result = precheck(&with_attributes(spec(&[("data", "10Gi", None)]), "gold"), &same);
    assert_eq!(result.verdict, Verdict::NothingToDo);
}

#[test]
fn an_attributes_class_that_is_missing_or_of_another_driver_is_refused() {
    let o = observed_with_drivers();
    let missing = precheck(&with_attributes(spec(&[("data", "10Gi", None)]), "platinum"), &o);
    assert!(
        matches!(&missing.verdict, Verdict::Reject { reason, message }
            if *reason == REASON_ATTRIBUTES_CLASS_NOT_FOUND && message.contains("\"platinum\"")),
        "{missing:?}"
    );
    let other = precheck(&with_attributes(spec(&[("data", "10Gi", None)]), "other"), &o);
    assert!(
        matches!(&other.verdict, Verdict::Reject { reason, message }
            if *reason == REASON_ATTRIBUTES_CLASS_OTHER_DRIVER && message.contains("csi.b") && message.contains("csi.a")),
        "{other:?}"
    );
    // A move to another driver's class with the template's class of the old driver: refused
    // until a class of the new driver is named.
    let mut templated = o.clone();
    if let Some(sts) = templated.stateful_set.as_mut() {
        sts.templates.get_mut("data").unwrap().attributes_class = Some("gold".into());
    }
    let moved = precheck(&spec(&[("data", "10Gi", Some("fixed"))]), &templated);
    assert!(
        matches!(&moved.verdict, Verdict::Reject { reason, .. } if *reason == REASON_ATTRIBUTES_CLASS_OTHER_DRIVER),
        "{moved:?}"
    );
    let renamed = precheck(
        &with_attributes(spec(&[("data", "10Gi", Some("fixed"))]), "other"),
        &templated,
    );
    assert_eq!(renamed.verdict, Verdict::Passed, "{renamed:?}");
}

/// A scaled-down replica's claim is listed for another attributes class too (it keeps its own).
#[test]
fn claims_of_scaled_down_replicas_are_listed_for_another_attributes_class() {
    let mut o = observed_with_drivers();
    o.claims.insert(
        "data-db-3".into(),
        ClaimView {
            capacity_bytes: 10 * GI,
            storage_class: Some("standard".into()),
            ..ClaimView::default()
        },
    );
    let check = precheck(&with_attributes(spec(&[("data", "10Gi", None)]), "gold"), &o);
    let idle: Vec<&VolumePlan> = check.plan.iter().filter(|row| row.strategy.is_none()).collect();
    assert_eq!(idle.len(), 1, "{:?}", check.plan);
    assert_eq!(idle[0].claim_name, "data-db-3");
    assert_eq!(idle[0].target_attributes_class.as_deref(), Some("gold"));
}

/// With `warmCopyMethod: Clone`, copies within one installed CSI driver, to at least the old size,
/// of a warm Rolling resize start from a clone; the default method, a shrink, another driver, a
/// provisioner that is no CSI driver, Offline mode or no warm copy use the mover.
#[test]
fn copies_within_one_csi_driver_to_at_least_the_old_size_are_cloned() {
    let mut o = observed_with_drivers();
    o.storage_classes.insert(
        "standard-fixed".into(),
        StorageClassView {
            provisioner: "csi.a".into(),
            ..StorageClassView::default()
        },
    );
    o.csi_drivers = ["csi.a".to_string(), "csi.b".to_string()].into();
    let cloned = |spec: &VolumeResizeSpec, o: &Observed| -> Vec<Option<bool>> {
        precheck(spec, o)
            .plan
            .iter()
            .filter(|row| row.strategy.is_some())
            .map(|row| row.cloned)
            .collect()
    };
    let clone = |volumes: &[(&str, &str, Option<&str>)]| VolumeResizeSpec {
        warm_copy_method: ferry_api::WarmCopyMethod::Clone,
        ..spec(volumes)
    };
    let moved = clone(&[("data", "10Gi", Some("standard-fixed"))]);
    assert_eq!(cloned(&moved, &o), [Some(true); 3]);
    let grown = clone(&[("data", "20Gi", Some("standard-fixed"))]);
    assert_eq!(cloned(&grown, &o), [Some(true); 3]);
    for not_cloned in [
        spec(&[("data", "10Gi", Some("standard-fixed"))]),
        clone(&[("data", "5Gi", Some("standard-fixed"))]),
        clone(&[("data", "10Gi", Some("fixed"))]),
        VolumeResizeSpec {
            mode: Mode::Offline,
            ..moved.clone()
        },
        VolumeResizeSpec {
            warm_copy: false,
            ..moved.clone()
        },
    ] {
        assert_eq!(cloned(&not_cloned, &o), [None; 3], "{not_cloned:?}");
    }
    let mut no_csi = o.clone();
    no_csi.csi_drivers.clear();
    assert_eq!(cloned(&moved, &no_csi), [None; 3]);
}
