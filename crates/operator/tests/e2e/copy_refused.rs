//! A shrink below the data in use fails before anything is touched: the data is measured by a
//! read-only pod running the real mover, and the message says how much room is needed.

use crate::support;

use ferry_api::Phase;
use ferry_testenv::fixtures::{claim_directory, stateful_set, wait_ready};
use ferry_testenv::{CLASS_FIXED, wait_until};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use kube::api::PostParams;
use kube::{Api, ResourceExt};
use serde_json::json;
use support::Harness;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shrinking_below_the_data_in_use_fails_and_changes_nothing() {
    let harness = Harness::start("copy-refused").await;
    harness
        .healthy_stateful_set(stateful_set("db", 2, CLASS_FIXED, "256Mi"))
        .await;
    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    let volumes: Api<PersistentVolume> = Api::all(harness.client.clone());
    // 40 MiB of real data on replica 1; the target is 32Mi.
    let dir = claim_directory(&claims, &volumes, "data-db-1").await.unwrap();
    let block: Vec<u8> = (0..(1 << 20)).map(|i| (i * 7 % 251) as u8).collect();
    for index in 0..40 {
        std::fs::write(dir.join(format!("blob-{index}")), &block).unwrap();
    }
    let before = harness.snapshot().await;

    harness
        .create_resize(
            "shrink",
            json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "32Mi"}]}),
        )
        .await;
    let resize = harness
        .wait_resize("shrink", "the shrink to be refused", |r| r.phase().is_terminal())
        .await;
    assert_eq!(resize.phase(), Phase::Failed);
    let status = resize.status.unwrap();
    let message = status.message.unwrap();
    assert!(
        message.contains("data-db-1 holds 40.") && message.contains("32Mi leaves no room"),
        "{message}"
    );
    assert!(
        !message.contains("data-db-0"),
        "replica 0 holds almost nothing: {message}"
    );
    let measured = status
        .plan
        .iter()
        .find(|row| row.claim_name == "data-db-1")
        .unwrap()
        .used_bytes
        .unwrap();
    assert!(
        (40 << 20..=41 << 20).contains(&measured),
        "measured {measured} bytes"
    );
    assert!(
        status.created_objects.backup_config_map.is_none(),
        "not even a backup was made"
    );

    // Only the measuring pods came and went.
    wait_until("the namespace to be as before", 30, || async {
        (harness.snapshot().await == before).then_some(())
    })
    .await
    .unwrap();
    harness.finish().await;
}

/// The API server refusing what Ferry asks (here a ResourceQuota with no room for one more pod
/// refuses the measuring pods) is shown in the status and as a Warning Event, not retried in
/// silence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_request_is_reported_in_status_and_events() {
    let harness = Harness::start("copy-forbidden").await;
    let sets: Api<StatefulSet> = harness.ns.api();
    sets.create(
        &PostParams::default(),
        &stateful_set("db", 1, CLASS_FIXED, "256Mi"),
    )
    .await
    .unwrap();
    wait_ready(&sets, "db", 1, 120).await.unwrap();
    harness
        .quota("no-room", json!({"pods": "1"}), ("pods", "1"))
        .await;
    harness
        .create_resize(
            "copy",
            json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "512Mi"}]}),
        )
        .await;
    let message = harness
        .wait_message("copy", "the refusal in the status", 60, "refused")
        .await
        .status
        .unwrap()
        .message
        .unwrap();
    assert!(
        message.contains("forbidden") && message.contains("exceeded quota"),
        "{message}"
    );
    let events = harness.wait_event("VolumeResize", "copy", "RequestRefused").await;
    assert!(
        events.iter().any(|(kind, reason, note)| kind == "Warning"
            && reason == "RequestRefused"
            && note.contains("forbidden")),
        "{events:?}"
    );
    harness.finish().await;
}

/// A mover pod no node can take (here a node selector nothing matches; in real life a zone the
/// target class excludes, a full cluster) does not leave the resize waiting forever: within
/// `timeoutSeconds` it fails with the scheduler's reason, before anything was touched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unschedulable_mover_fails_the_resize_with_the_schedulers_reason() {
    let harness = Harness::start("copy-stuck").await;
    harness
        .healthy_stateful_set(stateful_set("db", 2, CLASS_FIXED, "256Mi"))
        .await;
    let sets: Api<StatefulSet> = harness.ns.api();
    let before = sets.get("db").await.unwrap().uid();
    harness
        .create_resize(
            "copy",
            json!({
                "statefulSetName": "db",
                "volumes": [{"name": "data", "size": "512Mi"}],
                "timeoutSeconds": 8,
                "mover": {"nodeSelector": {"ferry.dev/no-such-node": "true"}},
            }),
        )
        .await;
    let api = harness.ns.api::<ferry_api::VolumeResize>();
    let done = wait_until("the resize to give up", 90, || async {
        let resize = api.get_opt("copy").await.ok().flatten()?;
        resize.phase().is_terminal().then_some(resize)
    })
    .await
    .unwrap();
    assert_eq!(done.phase(), Phase::Failed);
    let message = done.status.unwrap().message.unwrap_or_default();
    assert!(message.contains("cannot run (Unschedulable"), "{message}");
    assert_eq!(
        sets.get("db").await.unwrap().uid(),
        before,
        "StatefulSet untouched"
    );
    harness.assert_nothing_leaked(2).await;
    harness.finish().await;
}

/// A namespace whose ResourceQuota makes every pod declare its CPU request and memory limit: the
/// mover and measuring pods get defaults for what their settings leave unset (the API server
/// would refuse them otherwise) and the copy completes. On kwok's replicas, the movers real
/// processes beside them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_completes_where_a_quota_makes_every_pod_declare_its_resources() {
    let harness = Harness::start("copy-quota-pods").await;
    let mut sts = stateful_set("db", 1, CLASS_FIXED, "256Mi");
    let container = &mut sts
        .spec
        .as_mut()
        .unwrap()
        .template
        .spec
        .as_mut()
        .unwrap()
        .containers[0];
    container.resources = Some(
        serde_json::from_value(json!({"requests": {"cpu": "10m"}, "limits": {"memory": "64Mi"}})).unwrap(),
    );
    harness.healthy_stateful_set(sts).await;
    let hard = json!({"requests.cpu": "4", "limits.memory": "16Gi"});
    harness.quota("compute", hard, ("requests.cpu", "10m")).await;
    harness
        .create_resize(
            "copy",
            json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "512Mi"}]}),
        )
        .await;
    let resize = harness.wait_terminal("copy", "the copy to finish", 180).await;
    assert_eq!(
        resize.phase(),
        Phase::Succeeded,
        "{:?}",
        resize.status.as_ref().and_then(|s| s.message.clone())
    );
    harness.finish().await;
}
