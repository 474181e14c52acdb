//! In-place expansion end to end on the real control plane, data checked by checksum.

use crate::support;

use ferry_api::quantity::quantity_bytes;
use ferry_api::{ChosenStrategy, Phase};
use ferry_testenv::fixtures::stateful_set;
use ferry_testenv::{CLASS_EXPANDABLE, CLASS_OFFLINE_EXPAND};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::api::ListParams;
use kube::{Api, ResourceExt};
use serde_json::json;
use std::collections::BTreeMap;
use support::Harness;
use support::disruption::DisruptionOracle;

const GI: u64 = 1 << 30;

async fn pod_uids(pods: &Api<Pod>) -> BTreeMap<String, String> {
    pods.list(&ListParams::default().labels("app=db"))
        .await
        .unwrap()
        .items
        .iter()
        .map(|pod| (pod.name_any(), pod.uid().unwrap()))
        .collect()
}

async fn assert_grown(harness: &Harness, size: u64) {
    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    for replica in 0..3 {
        let claim = claims.get(&format!("data-db-{replica}")).await.unwrap();
        assert_eq!(
            quantity_bytes(claim.status.unwrap().capacity.unwrap().get("storage").unwrap()),
            Some(size)
        );
    }
    let sts: StatefulSet = harness.ns.api::<StatefulSet>().get("db").await.unwrap();
    let template = &sts.spec.unwrap().volume_claim_templates.unwrap()[0];
    let requested = template
        .spec
        .as_ref()
        .unwrap()
        .resources
        .as_ref()
        .unwrap()
        .requests
        .as_ref()
        .unwrap();
    assert_eq!(
        quantity_bytes(requested.get("storage").unwrap()),
        Some(size),
        "the StatefulSet template has the new size"
    );
    assert!(
        harness.mover_pods().await.unwrap().is_empty(),
        "in-place expansion copies nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grow_in_place_online_restarts_nothing_and_keeps_data() {
    let harness = Harness::start("inplace-online").await;
    let seeded = harness
        .seeded(stateful_set("db", 3, CLASS_EXPANDABLE, "1Gi"), &["data"], 60)
        .await;
    let pods: Api<Pod> = harness.ns.api();
    let uids = pod_uids(&pods).await;

    harness
        .create_resize(
            "grow",
            json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "2Gi"}]}),
        )
        .await;
    let resize = harness
        .wait_resize("grow", "the resize to succeed", |r| r.phase().is_terminal())
        .await;
    let status = resize.status.clone().unwrap();
    assert_eq!(resize.phase(), Phase::Succeeded, "{:?}", status.message);
    assert_eq!(status.progress.as_deref(), Some("3/3"));
    assert!(
        status
            .plan
            .iter()
            .all(|row| row.strategy == Some(ChosenStrategy::InPlace) && row.finished_at.is_some())
    );

    assert_grown(&harness, 2 * GI).await;
    assert_eq!(pod_uids(&pods).await, uids, "no pod was restarted");
    harness.assert_data_intact(&seeded).await;
    let backup = status.created_objects.backup_config_map.unwrap();
    assert!(
        harness
            .ns
            .api::<k8s_openapi::api::core::v1::ConfigMap>()
            .get_opt(&backup)
            .await
            .unwrap()
            .is_some()
    );
    harness.wait_event("VolumeResize", "grow", "Succeeded").await;
    // GitOps tools and scripts wait on it the kstatus way.
    let (code, out, err) = ferry_testenv::kubectl(&[
        "-n",
        &harness.ns.name,
        "wait",
        "--for=condition=Ready",
        "volumeresize/grow",
        "--timeout=10s",
    ])
    .await
    .unwrap();
    assert_eq!(code, 0, "kubectl wait: {out}{err}");
    harness.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grow_in_place_offline_only_restarts_pods_one_at_a_time() {
    let harness = Harness::start("inplace-offline").await;
    let seeded = harness
        .seeded(stateful_set("db", 3, CLASS_OFFLINE_EXPAND, "1Gi"), &["data"], 60)
        .await;
    let pods: Api<Pod> = harness.ns.api();
    let uids = pod_uids(&pods).await;
    let oracle = DisruptionOracle::start(pods.clone(), "db", 3).await;

    harness
        .create_resize(
            "grow",
            json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "3Gi"}]}),
        )
        .await;
    let resize = harness
        .wait_resize("grow", "the resize to succeed", |r| r.phase().is_terminal())
        .await;
    // At most one replica down at a time.
    oracle.assert_at_most(1).await;
    assert_eq!(
        resize.phase(),
        Phase::Succeeded,
        "{:?}",
        resize.status.as_ref().unwrap().message
    );

    assert_grown(&harness, 3 * GI).await;
    let after = pod_uids(&pods).await;
    for (pod, uid) in &uids {
        assert_ne!(
            after.get(pod),
            Some(uid),
            "{pod} was restarted to finish its file-system resize"
        );
    }
    // Ferry restarted each original pod exactly once (a second restart would record the new UID).
    for row in &resize.status.as_ref().unwrap().plan {
        let pod = format!("db-{}", row.replica);
        assert_eq!(
            row.restarted_pod.as_ref(),
            uids.get(&pod),
            "{pod} restarted once, from its original"
        );
    }
    harness.assert_data_intact(&seeded).await;
    harness.finish().await;
}
