//! Prechecks on the real control plane: each failure becomes a status condition and an Event and
//! changes nothing in the cluster; a passing request is planned per replica and volume.

use crate::support;

use ferry_api::condition::*;
use ferry_api::{ChosenStrategy, Phase};
use ferry_testenv::fixtures::{stateful_set, wait_ready};
use ferry_testenv::{CLASS_EXPANDABLE, CLASS_FIXED};
use k8s_openapi::api::apps::v1::StatefulSet;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use support::{Harness, condition};

/// Creates the VolumeResize, waits for it to fail, and checks the reason, the message, the Events on
/// the VolumeResize (and StatefulSet when it exists) and that nothing else changed.
pub(crate) async fn assert_rejected(
    harness: &Harness,
    name: &str,
    spec: serde_json::Value,
    reason: &str,
    message_part: &str,
) {
    let before = harness.snapshot().await;
    harness.create_resize(name, spec.clone()).await;
    let resize = harness
        .wait_resize(name, "the VolumeResize to fail", |r| r.phase() == Phase::Failed)
        .await;
    let prechecked = condition(&resize, PRECHECKED).expect("Prechecked condition");
    assert_eq!(
        (prechecked.status.as_str(), prechecked.reason.as_str()),
        ("False", reason)
    );
    assert!(
        prechecked.message.contains(message_part),
        "message {:?} lacks {message_part:?}",
        prechecked.message
    );
    assert_eq!(
        resize.status.as_ref().unwrap().message.as_deref(),
        Some(prechecked.message.as_str())
    );
    // kstatus: failed for good (Stalled), not Ready, no longer Reconciling.
    let summary = |type_: &str| condition(&resize, type_).map(|c| (c.status.clone(), c.reason.clone()));
    assert_eq!(summary("Stalled"), Some(("True".into(), "Failed".into())));
    assert_eq!(summary("Ready"), Some(("False".into(), "Failed".into())));
    assert_eq!(summary("Reconciling"), None);

    let events = ferry_testenv::wait_until("a Warning Event on the VolumeResize", 30, || async {
        let events = harness.events_for("VolumeResize", name).await;
        events
            .iter()
            .any(|(type_, r, _)| type_ == "Warning" && r == reason)
            .then_some(events)
    })
    .await
    .unwrap();
    assert!(
        events.iter().any(|(_, _, note)| note.contains(message_part)),
        "{events:?}"
    );
    let sts_name = spec["statefulSetName"].as_str().unwrap();
    let sts_exists = harness
        .ns
        .api::<StatefulSet>()
        .get_opt(sts_name)
        .await
        .unwrap()
        .is_some();
    if sts_exists {
        let sts_events = harness.wait_event("StatefulSet", sts_name, reason).await;
        assert!(
            sts_events
                .iter()
                .any(|(_, r, note)| r == reason && note.contains(name)),
            "{sts_events:?}"
        );
    }
    assert_eq!(
        harness.snapshot().await,
        before,
        "a failed precheck must change nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_stateful_set_fails_and_changes_nothing() {
    let harness = Harness::start("pre-nosts").await;
    let spec = json!({"statefulSetName": "ghost", "volumes": [{"name": "data", "size": "2Gi"}]});
    assert_rejected(
        &harness,
        "grow-ghost",
        spec,
        REASON_STATEFUL_SET_NOT_FOUND,
        "\"ghost\" does not exist",
    )
    .await;
    harness.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_template_fails_and_names_the_existing_ones() {
    let harness = Harness::start("pre-notpl").await;
    harness
        .healthy_stateful_set(stateful_set("db", 2, CLASS_FIXED, "1Gi"))
        .await;
    let spec = json!({"statefulSetName": "db", "volumes": [{"name": "logs", "size": "2Gi"}]});
    assert_rejected(
        &harness,
        "grow-logs",
        spec,
        REASON_TEMPLATE_NOT_FOUND,
        "no volume claim template \"logs\" (it has: data)",
    )
    .await;
    harness.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_storage_class_fails() {
    let harness = Harness::start("pre-nosc").await;
    harness
        .healthy_stateful_set(stateful_set("db", 1, CLASS_FIXED, "1Gi"))
        .await;
    let spec = json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "2Gi", "storageClassName": "gold"}]});
    assert_rejected(
        &harness,
        "to-gold",
        spec,
        REASON_STORAGE_CLASS_NOT_FOUND,
        "StorageClass \"gold\"",
    )
    .await;
    harness.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_place_on_a_class_that_cannot_expand_fails() {
    let harness = Harness::start("pre-noexp").await;
    harness
        .healthy_stateful_set(stateful_set("db", 1, CLASS_FIXED, "1Gi"))
        .await;
    let spec =
        json!({"statefulSetName": "db", "strategy": "InPlace", "volumes": [{"name": "data", "size": "2Gi"}]});
    assert_rejected(
        &harness,
        "inplace",
        spec,
        REASON_NOT_EXPANDABLE,
        "does not allow volume expansion",
    )
    .await;
    harness.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passing_prechecks_plan_every_replica() {
    let harness = Harness::start("pre-pass").await;
    harness
        .healthy_stateful_set(stateful_set("db", 3, CLASS_EXPANDABLE, "1Gi"))
        .await;
    let before = harness.snapshot().await;

    // A dry run of a shrink plans a copy per replica, succeeds, and changes nothing.
    let dry =
        json!({"statefulSetName": "db", "dryRun": true, "volumes": [{"name": "data", "size": "512Mi"}]});
    harness.create_resize("dry", dry).await;
    let resize = harness
        .wait_resize("dry", "the dry run to finish", |r| r.phase() == Phase::Succeeded)
        .await;
    let prechecked = condition(&resize, PRECHECKED).unwrap();
    assert_eq!(
        (prechecked.status.as_str(), prechecked.reason.as_str()),
        ("True", REASON_PASSED)
    );
    let status = resize.status.unwrap();
    assert_eq!(status.observed_generation, resize.metadata.generation);
    assert!(
        status.message.as_deref().unwrap().starts_with("dry run"),
        "{:?}",
        status.message
    );
    let claims: Vec<_> = status.plan.iter().map(|row| row.claim_name.as_str()).collect();
    assert_eq!(claims, ["data-db-0", "data-db-1", "data-db-2"]);
    for row in &status.plan {
        assert_eq!(
            row.strategy,
            Some(ChosenStrategy::Copy),
            "shrinking means copying"
        );
        assert_eq!(
            (row.current_size.as_deref(), row.target_size.as_str()),
            (Some("1Gi"), "512Mi")
        );
        assert_eq!(row.current_storage_class.as_deref(), Some(CLASS_EXPANDABLE));
    }

    // Growing on an expandable class is planned in place for every replica.
    let grow = json!({"statefulSetName": "db", "dryRun": true, "volumes": [{"name": "data", "size": "2Gi"}]});
    harness.create_resize("dry-grow", grow).await;
    let resize = harness
        .wait_resize("dry-grow", "the dry run to finish", |r| {
            r.phase() == Phase::Succeeded
        })
        .await;
    let status = resize.status.unwrap();
    assert_eq!(status.progress.as_deref(), Some("0/3"));
    assert!(
        status
            .plan
            .iter()
            .all(|row| row.strategy == Some(ChosenStrategy::InPlace))
    );
    assert_eq!(harness.snapshot().await, before, "dry runs change nothing");

    // On a class that cannot expand, growing means copying.
    let sets: Api<StatefulSet> = harness.ns.api();
    sets.create(
        &PostParams::default(),
        &stateful_set("fixed", 1, CLASS_FIXED, "1Gi"),
    )
    .await
    .unwrap();
    wait_ready(&sets, "fixed", 1, 120).await.unwrap();
    let grow_fixed =
        json!({"statefulSetName": "fixed", "dryRun": true, "volumes": [{"name": "data", "size": "2Gi"}]});
    harness.create_resize("grow-fixed", grow_fixed).await;
    let resize = harness
        .wait_resize("grow-fixed", "the dry run to finish", |r| {
            r.phase() == Phase::Succeeded
        })
        .await;
    assert!(
        resize
            .status
            .unwrap()
            .plan
            .iter()
            .all(|row| row.strategy == Some(ChosenStrategy::Copy))
    );
    harness.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn second_resize_on_the_same_stateful_set_waits_its_turn() {
    let harness = Harness::start("pre-queue").await;
    // A copy of three replicas holds the StatefulSet for several seconds.
    harness
        .healthy_stateful_set(stateful_set("db", 3, CLASS_FIXED, "1Gi"))
        .await;
    harness
        .create_resize(
            "first",
            json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "2Gi"}]}),
        )
        .await;
    harness
        .wait_resize("first", "the first resize to start", |r| {
            r.phase() == Phase::Running
        })
        .await;

    harness
        .create_resize(
            "second",
            json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "3Gi"}]}),
        )
        .await;
    let second = harness
        .wait_resize("second", "the second resize to queue", |r| {
            condition(r, QUEUED).is_some_and(|c| c.status == "True")
        })
        .await;
    assert_eq!(second.phase(), Phase::Pending);
    let prechecked = condition(&second, PRECHECKED).unwrap();
    assert_eq!(
        (prechecked.status.as_str(), prechecked.reason.as_str()),
        ("False", REASON_WAITING_FOR_OTHER)
    );
    assert!(prechecked.message.contains("\"first\""), "{}", prechecked.message);
    let events = harness
        .wait_event("VolumeResize", "second", REASON_WAITING_FOR_OTHER)
        .await;
    assert!(
        events
            .iter()
            .any(|(_, reason, _)| reason == REASON_WAITING_FOR_OTHER),
        "{events:?}"
    );

    // The first holds the StatefulSet through the API server, not only in the operator's cache.
    let leases = harness.ns.api::<k8s_openapi::api::coordination::v1::Lease>();
    let hold = ferry_engine::names::hold(&harness.ns.name, "db");
    let held = leases.get(&hold).await.unwrap();
    assert_eq!(held.spec.unwrap().holder_identity.as_deref(), Some("first"));

    // When the first is done, the second takes its turn and finishes too.
    let api = harness.ns.api::<ferry_api::VolumeResize>();
    for name in ["first", "second"] {
        let done = harness
            .wait_terminal(name, &format!("{name} to finish"), 240)
            .await;
        assert_eq!(
            done.phase(),
            Phase::Succeeded,
            "{name}: {:?}",
            done.status.and_then(|s| s.message)
        );
    }
    let first = api
        .get("first")
        .await
        .unwrap()
        .status
        .unwrap()
        .finished_at
        .unwrap();
    let second = api
        .get("second")
        .await
        .unwrap()
        .status
        .unwrap()
        .started_at
        .unwrap();
    assert!(
        second.0 >= first.0,
        "the second started only after the first finished"
    );
    // Released by the reconcile after the one that wrote Succeeded (under load, a moment later).
    ferry_testenv::wait_until("the hold to be released when done", 30, || async {
        leases.get_opt(&hold).await.ok()?.is_none().then_some(())
    })
    .await
    .unwrap();
    harness.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unhealthy_stateful_set_waits_then_proceeds_when_ready() {
    let harness = Harness::start("pre-unready").await;
    let sets: Api<StatefulSet> = harness.ns.api();
    // Pods that no node accepts stay Pending, so the StatefulSet is not Ready.
    let pods: Api<k8s_openapi::api::core::v1::Pod> = harness.ns.api();
    ferry_testenv::fixtures::create_unschedulable(
        &sets,
        &pods,
        stateful_set("db", 1, CLASS_EXPANDABLE, "1Gi"),
    )
    .await
    .unwrap();
    wait_ready(&sets, "db", 0, 30).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;

    let before = harness.snapshot().await;
    harness
        .create_resize(
            "grow",
            json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "2Gi"}]}),
        )
        .await;
    let resize = harness
        .wait_resize("grow", "the not-ready verdict", |r| {
            condition(r, PRECHECKED).is_some_and(|c| c.reason == REASON_NOT_READY)
        })
        .await;
    assert_eq!(resize.phase(), Phase::Pending);
    assert!(
        condition(&resize, PRECHECKED)
            .unwrap()
            .message
            .contains("0/1 replicas Ready")
    );
    let events = harness.wait_event("StatefulSet", "db", REASON_NOT_READY).await;
    assert!(
        events
            .iter()
            .any(|(t, reason, _)| t == "Warning" && reason == REASON_NOT_READY),
        "{events:?}"
    );
    assert_eq!(harness.snapshot().await, before, "waiting changes nothing");

    // A waiting resize is looked at again every 10 s; with nothing changed, nothing is written.
    let version = resize.metadata.resource_version.clone();
    tokio::time::sleep(std::time::Duration::from_secs(12)).await;
    let again = harness
        .ns
        .api::<ferry_api::VolumeResize>()
        .get("grow")
        .await
        .unwrap();
    assert_eq!(
        again.metadata.resource_version, version,
        "a no-op reconcile must not write"
    );

    // Once the replica can run and is Ready, the same VolumeResize proceeds by itself.
    let patch = json!({"spec": {"template": {"spec": {"nodeSelector": null}}}});
    sets.patch("db", &PatchParams::default(), &Patch::Merge(patch))
        .await
        .unwrap();
    let _ = pods.delete("db-0", &Default::default()).await;
    wait_ready(&sets, "db", 1, 120).await.unwrap();
    harness
        .wait_resize("grow", "the resize to go ahead once Ready", |r| {
            r.phase() != Phase::Pending
        })
        .await;
    harness.finish().await;
}

/// A Context of Ferry's own, outside the running operator, to call its building blocks directly.
fn direct_context(harness: &Harness) -> ferry_operator::context::Context {
    let (store, _writer) = kube::runtime::reflector::store::<ferry_operator::resize_cache::GuardedResize>();
    ferry_operator::context::Context::new(
        harness.client.clone(),
        std::sync::Arc::new(ferry_operator::metrics::Metrics::default()),
        ferry_operator::resize_cache::Resizes::new(vec![store]),
        "unused".into(),
        None,
    )
}

/// Two VolumeResizes prechecked at the same moment, each from a cache that does not show the other
/// yet: the API server lets exactly one take the StatefulSet's hold. The other gets it only once the
/// first lets go, or once the first no longer exists.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exactly_one_of_two_racing_resizes_takes_the_hold() {
    use ferry_operator::resize::hold::{Hold, acquire, release};
    use k8s_openapi::api::coordination::v1::Lease;

    let harness = Harness::start("pre-hold").await;
    // The holds live in the operator's own namespace, not beside the StatefulSet.
    let home = ferry_testenv::TestNamespace::create(&harness.client, "pre-hold-home")
        .await
        .unwrap();
    let ctx = direct_context(&harness).with_hold_namespace(Some(home.name.clone()));
    let ns = harness.ns.name.clone();
    // On a StatefulSet that never gets Ready: the operator keeps both waiting (Pending, not
    // finished) and never takes the hold itself.
    let mut sts = stateful_set("absent", 1, CLASS_EXPANDABLE, "1Gi");
    sts.spec
        .as_mut()
        .unwrap()
        .template
        .spec
        .as_mut()
        .unwrap()
        .node_selector = Some([("ferry.dev/no-such-node".to_string(), "true".to_string())].into());
    harness
        .ns
        .api::<StatefulSet>()
        .create(&PostParams::default(), &sts)
        .await
        .unwrap();
    let spec = json!({"statefulSetName": "absent", "volumes": [{"name": "data", "size": "2Gi"}]});
    harness.create_resize("a", spec.clone()).await;
    harness.create_resize("b", spec).await;
    // Once the operator has said why they wait, it writes nothing more to them.
    let waiting = |r: &ferry_api::VolumeResize| {
        r.phase() == Phase::Pending && condition(r, PRECHECKED).is_some_and(|c| c.status == "False")
    };
    let a = harness.wait_resize("a", "a to wait", waiting).await;
    let b = harness.wait_resize("b", "b to wait", waiting).await;
    let (first, second) = tokio::join!(acquire(&ctx, &a, &ns), acquire(&ctx, &b, &ns));
    let (first, second) = (first.unwrap(), second.unwrap());
    let (winner, loser) = match (&first, &second) {
        (Hold::Ours, Hold::Theirs(holder)) => {
            assert_eq!(holder, "a");
            (&a, &b)
        }
        (Hold::Theirs(holder), Hold::Ours) => {
            assert_eq!(holder, "b");
            (&b, &a)
        }
        other => panic!("exactly one must hold: {other:?}"),
    };
    assert_eq!(
        acquire(&ctx, winner, &ns).await.unwrap(),
        Hold::Ours,
        "idempotent"
    );
    release(&ctx, loser, &ns).await.unwrap();
    let hold = ferry_engine::names::hold(&ns, "absent");
    let held = home.api::<Lease>().get_opt(&hold).await.unwrap();
    assert!(held.is_some(), "only the holder lets go");
    assert!(
        held.unwrap().metadata.owner_references.is_none(),
        "no owner reference across namespaces"
    );
    // (The chart's leader Lease is there: this namespace is also the test's release namespace.)
    let beside: Vec<String> = harness
        .ns
        .api::<Lease>()
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|lease| lease.name_any())
        .filter(|name| name.starts_with("ferry-hold"))
        .collect();
    assert!(beside.is_empty(), "holds beside the StatefulSet: {beside:?}");
    release(&ctx, winner, &ns).await.unwrap();
    assert_eq!(acquire(&ctx, loser, &ns).await.unwrap(), Hold::Ours);
    // A holder that has ended (its status says so; Ferry crashed before letting go) leaves its
    // hold to the next one: taken back, then taken.
    let ended = harness
        .ns
        .api::<ferry_api::VolumeResize>()
        .get(&loser.name_any())
        .await
        .unwrap();
    let failed = ferry_api::VolumeResizeStatus {
        phase: Some(Phase::Failed),
        ..ended.status.clone().unwrap_or_default()
    };
    ferry_operator::resize::status_write::write_status(&ctx, &ended, &ns, &failed)
        .await
        .unwrap();
    assert!(
        matches!(acquire(&ctx, winner, &ns).await.unwrap(), Hold::Theirs(holder) if holder.contains("released")),
        "taken back first"
    );
    assert_eq!(acquire(&ctx, winner, &ns).await.unwrap(), Hold::Ours);
    home.cleanup().await.unwrap();
    harness.finish().await;
}

/// A status written from a stale copy of the VolumeResize (a lagging cache) is refused instead of
/// overwriting what a newer reconcile recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_write_from_a_stale_copy_is_refused() {
    use ferry_operator::resize::status_write::write_status;

    let harness = Harness::start("pre-stale").await;
    let ctx = direct_context(&harness);
    let ns = harness.ns.name.clone();
    let spec = json!({"statefulSetName": "absent", "volumes": [{"name": "data", "size": "2Gi"}]});
    harness.create_resize("r", spec).await;
    let api = harness.ns.api::<ferry_api::VolumeResize>();
    // Once the operator has written its verdict, take a copy, then let a newer write land.
    let stale = harness
        .wait_resize("r", "the prechecks", |r| r.phase() == Phase::Failed)
        .await;
    let newer = ferry_api::VolumeResizeStatus {
        message: Some("newer intent".into()),
        ..stale.status.clone().unwrap()
    };
    write_status(&ctx, &stale, &ns, &newer).await.unwrap();
    let older = ferry_api::VolumeResizeStatus {
        message: Some("from the stale copy".into()),
        ..stale.status.clone().unwrap()
    };
    let refused = write_status(&ctx, &stale, &ns, &older).await.unwrap_err();
    assert!(refused.is_stale_read(), "{refused}");
    let now = api.get("r").await.unwrap();
    assert_eq!(now.status.unwrap().message.as_deref(), Some("newer intent"));
    harness.finish().await;
}

/// A copy onto a class whose allowedTopologies exclude the replicas' nodes (the real node's disks,
/// for replicas on kwok nodes) is refused by the prechecks, before anything is stopped or made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_class_out_of_the_replicas_reach_is_refused() {
    let harness = Harness::start("pre-topo").await;
    harness
        .healthy_stateful_set(stateful_set("db", 2, CLASS_FIXED, "1Gi"))
        .await;
    let spec = json!({"statefulSetName": "db", "volumes": [
        {"name": "data", "size": "2Gi", "storageClassName": ferry_testenv::CLASS_BLOCK_FIXED}
    ]});
    assert_rejected(
        &harness,
        "move-far",
        spec,
        REASON_TOPOLOGY,
        &format!(
            "provisions only where topology.kubernetes.io/zone in [{}]; replica 0 (data-db-0) runs on node",
            ferry_testenv::REAL_ZONES.join(", ")
        ),
    )
    .await;
    harness.finish().await;
}

/// A copy whose new claims a ResourceQuota could not hold beside the old ones, and one whose size
/// is past a LimitRange's maximum for claims: both refused before anything is touched (the API
/// server would refuse those claim writes half-way through, and the resize would retry them for
/// ever). API-level: the claims of kwok's replicas are counted as any others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_past_the_namespaces_quota_or_limit_range_fails_and_changes_nothing() {
    let harness = Harness::start("pre-quota").await;
    harness
        .healthy_stateful_set(stateful_set("db", 2, CLASS_FIXED, "1Gi"))
        .await;
    // The quota controller counts the two 1Gi claims.
    harness
        .quota(
            "team",
            json!({"requests.storage": "3Gi"}),
            ("requests.storage", "2Gi"),
        )
        .await;
    // To 2Gi by copy, one replica at a time: the first grown (+1Gi), the second's new 2Gi claim
    // beside its old one: 3Gi more where 1Gi is left.
    let spec = json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "2Gi"}]});
    assert_rejected(
        &harness,
        "past-quota",
        spec.clone(),
        REASON_QUOTA_EXCEEDED,
        "ResourceQuota \"team\" allows requests.storage up to 3Gi in this namespace and 2Gi is in use; this resize needs 3Gi more at its peak",
    )
    .await;

    let limits = serde_json::from_value(json!({
        "metadata": {"name": "claims"},
        "spec": {"limits": [{"type": "PersistentVolumeClaim", "max": {"storage": "1536Mi"}}]},
    }))
    .unwrap();
    harness
        .ns
        .api::<k8s_openapi::api::core::v1::LimitRange>()
        .create(&PostParams::default(), &limits)
        .await
        .unwrap();
    assert_rejected(
        &harness,
        "past-limit",
        spec,
        REASON_CLAIM_SIZE_LIMIT,
        "LimitRange \"claims\" allows claims of at most 1536Mi in this namespace",
    )
    .await;
    harness.finish().await;
}

/// A copy in a namespace enforcing Pod Security `restricted`, which admits no mover that keeps
/// files' owners: refused before anything is touched, instead of its measuring pods being refused
/// over and over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_in_a_restricted_namespace_fails_and_changes_nothing() {
    let harness = Harness::start("pre-restricted").await;
    harness
        .healthy_stateful_set(stateful_set("db", 1, CLASS_FIXED, "1Gi"))
        .await;
    let restricted = json!({"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "restricted"}}});
    Api::<k8s_openapi::api::core::v1::Namespace>::all(harness.client.clone())
        .patch(
            &harness.ns.name,
            &PatchParams::default(),
            &Patch::Merge(restricted),
        )
        .await
        .unwrap();
    let spec = json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "2Gi"}]});
    assert_rejected(
        &harness,
        "restricted",
        spec,
        REASON_POD_SECURITY,
        "this namespace enforces Pod Security \"restricted\"",
    )
    .await;
    harness.finish().await;
}
