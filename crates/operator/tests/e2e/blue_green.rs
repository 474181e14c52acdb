//! Blue/green ExtendedStatefulSets on the real node: each version its own StatefulSet, the
//! replicas moved to it one at a time with their volumes (PV re-binding), a failed canary moved
//! back, with writers whose every acknowledged record must be on the volume the replica ends on.

use crate::support::Harness;
use ferry_api::{ExtendedStatefulSet, ExtendedStatefulSetStatus};
use ferry_testenv::fixtures::{bound_volume, claim_directory, wait_ready};
use ferry_testenv::wait_until;
use ferry_testenv::workload::{acknowledged, lost_records, writer_stateful_set};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Service};
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

const REPLICAS: i32 = 2;

async fn status(harness: &Harness) -> ExtendedStatefulSetStatus {
    let ests = harness.ns.api::<ExtendedStatefulSet>().get("db").await.unwrap();
    ests.status.unwrap_or_default()
}

/// Waits for the status to say `done`, restarting the operator the first time each move is
/// recorded and again once the moving replica's pod is gone (the two points where a move's intent
/// and its writes meet).
async fn wait_killing_mid_move(
    harness: &mut Harness,
    what: &str,
    seconds: u64,
    done: impl Fn(&ExtendedStatefulSetStatus) -> bool,
) -> (ExtendedStatefulSetStatus, usize) {
    let pods = harness.ns.api::<k8s_openapi::api::core::v1::Pod>();
    let mut killed = BTreeSet::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
    loop {
        let now = status(harness).await;
        if done(&now) {
            return (now, killed.len());
        }
        if let Some(handover) = &now.handover {
            let pod = format!("{}-{}", handover.from, handover.ordinal);
            let gone = pods.get_opt(&pod).await.unwrap().is_none();
            for point in [format!("{pod} recorded"), format!("{pod} gone")] {
                if (point.ends_with("recorded") || gone) && killed.insert(point) {
                    harness.restart_operator();
                }
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: not within {seconds}s: {now:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// The writer's template with the pods' startup probe replaced (and an env var marking it): a
/// version whose probe never passes is never Ready.
fn template(harness: &Harness, probe: &[&str], mark: &str) -> Value {
    let writer = writer_stateful_set(
        "db",
        REPLICAS,
        &[("data", ferry_testenv::CLASS_BLOCK, "320Mi")],
        &harness.ns.name,
        4 << 10,
        0,
    )
    .unwrap();
    let mut spec = serde_json::to_value(&writer.spec).unwrap();
    let container = &mut spec["template"]["spec"]["containers"][0];
    container["startupProbe"]["exec"]["command"] = json!(probe);
    container["env"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "MARK", "value": mark}));
    spec
}

/// Every record any pod of ordinal `ordinal` acknowledged is on the volume of `claim`.
async fn nothing_lost(harness: &Harness, claim: &str, ordinal: i32, sets: &[&str]) {
    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    let volumes: Api<PersistentVolume> = Api::all(harness.client.clone());
    let dir = claim_directory(&claims, &volumes, claim).await.unwrap();
    for set in sets {
        let pod = format!("{set}-{ordinal}");
        if acknowledged(&harness.ns.name, &pod).is_err() {
            continue;
        }
        assert_eq!(
            lost_records(&harness.ns.name, &pod, &dir).unwrap(),
            Vec::<u64>::new(),
            "{claim}: records {pod} acknowledged are missing"
        );
    }
}

async fn volume_of(harness: &Harness, claim: &str) -> String {
    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    let volumes: Api<PersistentVolume> = Api::all(harness.client.clone());
    bound_volume(&claims, &volumes, claim).await.unwrap().name_any()
}

async fn service_version(harness: &Harness) -> Option<String> {
    let service = harness.ns.api::<Service>().get("db").await.unwrap();
    service
        .spec
        .unwrap()
        .selector
        .unwrap()
        .get("ferry.dev/version")
        .cloned()
}

/// Waits until the namespace's StatefulSets are exactly `names` (the older versions' gone).
async fn only_stateful_sets(harness: &Harness, names: &[&str]) {
    let sets = harness.ns.api::<StatefulSet>();
    let wanted: BTreeSet<String> = names.iter().map(|n| n.to_string()).collect();
    wait_until("the older versions' StatefulSets to go", 60, || async {
        let listed = sets.list(&Default::default()).await.ok()?.items;
        let have: BTreeSet<String> = listed.iter().map(|s| s.name_any()).collect();
        (have == wanted).then_some(())
    })
    .await
    .unwrap();
}

/// A replica writes on (its acknowledgements grow) as pod `pod`.
async fn writes_on(harness: &Harness, pod: &str) {
    let before = acknowledged(&harness.ns.name, pod).map_or(0, |a| a.len());
    wait_until(&format!("{pod} to write"), 90, || async {
        (acknowledged(&harness.ns.name, pod).ok()?.len() > before + 10).then_some(())
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_canary_moves_back_and_a_good_version_takes_every_volume_losing_no_write() {
    let mut harness = Harness::start("ests-blue-green").await;
    harness
        .ns
        .api::<Service>()
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "db"},
                "spec": {"clusterIP": "None", "selector": {"app": "db"}},
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    let ests: ExtendedStatefulSet = serde_json::from_value(json!({
        "apiVersion": "ferry.dev/v1alpha1", "kind": "ExtendedStatefulSet",
        "metadata": {"name": "db"},
        "spec": {
            "replicas": REPLICAS,
            "updateStrategy": {"type": "BlueGreen", "canaries": 1, "canaryWatchTime": "25s",
                "updateWatchTime": "3m", "service": "db"},
            "template": {"spec": template(&harness, &["test", "-s", "/data/records"], "1")},
        },
    }))
    .unwrap();
    harness
        .ns
        .api::<ExtendedStatefulSet>()
        .create(&PostParams::default(), &ests)
        .await
        .unwrap();
    let sets = harness.ns.api::<StatefulSet>();
    wait_ready(&sets, "db-v1", REPLICAS, 180).await.unwrap();
    let volumes: BTreeMap<i32, String> = {
        let mut volumes = BTreeMap::new();
        for ordinal in 0..REPLICAS {
            volumes.insert(
                ordinal,
                volume_of(&harness, &format!("data-db-v1-{ordinal}")).await,
            );
        }
        volumes
    };
    wait_until("the Service to select version 1", 30, || async {
        (service_version(&harness).await.as_deref() == Some("1")).then_some(())
    })
    .await
    .unwrap();

    // Version 2 never becomes Ready: its canary (ordinal 1) runs and writes on its volume, then
    // goes back to version 1 with it.
    let api = harness.ns.api::<ExtendedStatefulSet>();
    let bad = json!({"spec": {"template": {"spec": template(&harness, &["false"], "2")}}});
    api.patch("db", &PatchParams::default(), &Patch::Merge(&bad))
        .await
        .unwrap();
    let (stale, _) = wait_killing_mid_move(&mut harness, "version 2 stale and moved back", 240, |s| {
        s.version == 2
            && s.update_step.as_deref() == Some("Stale")
            && s.handover.is_none()
            && s.ready_replicas == REPLICAS
    })
    .await;
    assert!(stale.stale_at.unwrap().starts_with("Canaries"));
    assert!(
        acknowledged(&harness.ns.name, "db-v2-1").is_ok(),
        "the canary ran and wrote"
    );
    let v1 = sets.get("db-v1").await.unwrap();
    assert_eq!(v1.spec.unwrap().replicas, Some(REPLICAS));
    for ordinal in 0..REPLICAS {
        let claim = format!("data-db-v1-{ordinal}");
        assert_eq!(
            volume_of(&harness, &claim).await,
            volumes[&ordinal],
            "{claim}: its own volume"
        );
    }
    writes_on(&harness, "db-v1-1").await;
    nothing_lost(&harness, "data-db-v1-1", 1, &["db-v1", "db-v2"]).await;
    assert_eq!(service_version(&harness).await.as_deref(), Some("1"));

    // Version 3 is good: the canary, then the other replica, each with its own volume; the
    // operator is killed as each move is recorded and again once the replica's pod is gone.
    // A longer canary watch for the good version (a loaded CI machine moves slower); not part of
    // the version.
    let good = json!({"spec": {
        "updateStrategy": {"canaryWatchTime": "2m"},
        "template": {"spec": template(&harness, &["test", "-s", "/data/records"], "3")},
    }});
    api.patch("db", &PatchParams::default(), &Patch::Merge(&good))
        .await
        .unwrap();
    let (done, killed) = wait_killing_mid_move(&mut harness, "version 3 everywhere", 300, |s| {
        s.version == 3 && s.update_step.as_deref() == Some("Done") && s.handover.is_none()
    })
    .await;
    assert!(killed >= 2 * REPLICAS as usize, "killed {killed} times");
    assert_eq!(done.versions.get("3"), Some(&true), "{:?}", done.versions);
    only_stateful_sets(&harness, &["db-v3"]).await;
    for ordinal in 0..REPLICAS {
        let claim = format!("data-db-v3-{ordinal}");
        assert_eq!(
            volume_of(&harness, &claim).await,
            volumes[&ordinal],
            "{claim}: its own volume"
        );
        let pv = Api::<PersistentVolume>::all(harness.client.clone())
            .get(&volumes[&ordinal])
            .await
            .unwrap();
        assert_eq!(
            pv.spec.unwrap().persistent_volume_reclaim_policy.as_deref(),
            Some("Delete"),
            "the volume's own policy is back"
        );
        writes_on(&harness, &format!("db-v3-{ordinal}")).await;
        nothing_lost(&harness, &claim, ordinal, &["db-v1", "db-v2", "db-v3"]).await;
    }
    assert_eq!(service_version(&harness).await.as_deref(), Some("3"));
    harness.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blue_green_rules_are_enforced_by_the_api_server() {
    let harness = Harness::start("ests-blue-green-rules").await;
    let api = harness.ns.api::<ExtendedStatefulSet>();
    let object = |name: &str, strategy: Value| -> ExtendedStatefulSet {
        serde_json::from_value(json!({
            "apiVersion": "ferry.dev/v1alpha1", "kind": "ExtendedStatefulSet",
            "metadata": {"name": name},
            "spec": {"replicas": 1, "updateStrategy": strategy, "template": {"spec": {
                "selector": {"matchLabels": {"app": "x"}},
                "template": {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "x", "image": "x"}]}},
            }}},
        }))
        .unwrap()
    };
    let refused = |result: Result<ExtendedStatefulSet, kube::Error>| match result {
        Err(kube::Error::Api(status)) => status.message,
        other => panic!("accepted: {other:?}"),
    };
    let message = refused(
        api.create(&PostParams::default(), &object("svc", json!({"service": "db"})))
            .await,
    );
    assert!(
        message.contains("needs updateStrategy.type BlueGreen"),
        "{message}"
    );
    let long = "a".repeat(41);
    let message = refused(
        api.create(
            &PostParams::default(),
            &object(&long, json!({"type": "BlueGreen"})),
        )
        .await,
    );
    assert!(message.contains("at most 40 characters"), "{message}");
    api.create(
        &PostParams::default(),
        &object("bg", json!({"type": "BlueGreen"})),
    )
    .await
    .unwrap();
    let back = json!({"spec": {"updateStrategy": {"type": "RollingUpdate"}}});
    let message = refused(
        api.patch("bg", &PatchParams::default(), &Patch::Merge(&back))
            .await,
    );
    assert!(message.contains("cannot change from BlueGreen"), "{message}");
    let message = refused(
        api.patch(
            "bg",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"updateStrategy": {"type": "Green"}}})),
        )
        .await,
    );
    assert!(message.contains("Unsupported value"), "{message}");
    harness.finish().await;
}

/// Zones on the kwok nodes (the real StatefulSet and PV controllers, fake pods): each zone's
/// replicas move to that zone's StatefulSet of the new version, each onto its own volume (a marker
/// file written on it before), and the old StatefulSets go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zones_move_each_replica_to_its_zones_new_stateful_set_with_its_volume() {
    let harness = Harness::start("ests-blue-green-zones").await;
    let fixture = ferry_testenv::fixtures::stateful_set("db", 4, ferry_testenv::CLASS_EXPANDABLE, "1Gi");
    let mut spec = serde_json::to_value(&fixture.spec).unwrap();
    let ests: ExtendedStatefulSet = serde_json::from_value(json!({
        "apiVersion": "ferry.dev/v1alpha1", "kind": "ExtendedStatefulSet",
        "metadata": {"name": "db"},
        "spec": {
            "replicas": 4, "zones": ["zone-a", "zone-b"],
            // The canary watch counts the canary's move too (as BOSH's does its update): on a
            // loaded machine that move alone once took the default minute (version 2 went stale).
            "updateStrategy": {"type": "BlueGreen", "canaries": 1, "canaryWatchTime": "3m"},
            "template": {"spec": spec.clone()},
        },
    }))
    .unwrap();
    let api = harness.ns.api::<ExtendedStatefulSet>();
    api.create(&PostParams::default(), &ests).await.unwrap();
    let sets = harness.ns.api::<StatefulSet>();
    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    let volumes: Api<PersistentVolume> = Api::all(harness.client.clone());
    let mut markers = BTreeMap::new();
    for zone in ["db-z0", "db-z1"] {
        wait_ready(&sets, &format!("{zone}-v1"), 2, 90).await.unwrap();
        for ordinal in 0..2 {
            let claim = format!("data-{zone}-v1-{ordinal}");
            let dir = claim_directory(&claims, &volumes, &claim).await.unwrap();
            std::fs::write(dir.join("marker"), &claim).unwrap();
            markers.insert(
                (zone, ordinal),
                (claim.clone(), volume_of(&harness, &claim).await),
            );
        }
    }
    spec["template"]["spec"]["containers"][0]["image"] = "registry.k8s.io/pause:3.10-blue-green".into();
    api.patch(
        "db",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"template": {"spec": spec}}})),
    )
    .await
    .unwrap();
    let done = harness
        .wait_object("db", "version 2 in both zones", 360, |e: &ExtendedStatefulSet| {
            e.status.as_ref().is_some_and(|s| {
                s.version == 2 && s.update_step.as_deref() == Some("Done") && s.handover.is_none()
            })
        })
        .await;
    let zones: Vec<String> = done
        .status
        .unwrap()
        .zones
        .iter()
        .map(|z| z.stateful_set.clone())
        .collect();
    assert_eq!(zones, ["db-z0-v2", "db-z1-v2"]);
    only_stateful_sets(&harness, &["db-z0-v2", "db-z1-v2"]).await;
    for ((zone, ordinal), (old_claim, volume)) in &markers {
        let claim = format!("data-{zone}-v2-{ordinal}");
        assert_eq!(&volume_of(&harness, &claim).await, volume, "{claim}");
        let dir = claim_directory(&claims, &volumes, &claim).await.unwrap();
        assert_eq!(&std::fs::read_to_string(dir.join("marker")).unwrap(), old_claim);
        let pod = harness
            .ns
            .api::<k8s_openapi::api::core::v1::Pod>()
            .get(&format!("{zone}-v2-{ordinal}"))
            .await
            .unwrap();
        let zone_label = if *zone == "db-z0" { "zone-a" } else { "zone-b" };
        assert_eq!(pod.labels()["ferry.dev/zone"], zone_label);
        assert_eq!(pod.labels()["ferry.dev/version"], "2");
    }
    harness.finish().await;
}
