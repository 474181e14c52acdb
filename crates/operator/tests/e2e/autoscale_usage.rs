//! Volume usage as the autoscaler reads it: the real kubelet's stats summary through the API
//! server's node proxy, for a real-capacity volume on the real node holding real data.

use crate::support::{Harness, condition};
use ferry_api::Phase;
use ferry_api::condition::{PRECHECKED, REASON_TOO_SMALL_FOR_DATA};
use ferry_engine::autoscale::usage::readings;
use ferry_operator::autoscale::node_summary;
use ferry_testenv::fixtures::wait_ready;
use ferry_testenv::workload::writer_stateful_set;
use ferry_testenv::{CLASS_BLOCK, wait_until};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Pod;
use kube::api::PostParams;
use serde_json::json;
use std::collections::BTreeMap;

const MI: u64 = 1 << 20;

/// A dry run of `db`'s `data` at `size` (VolumeResize `too-small`), refused by the prechecks
/// because the data in use does not fit: its Prechecked condition.
pub(crate) async fn dry_run_refused_as_too_small(
    harness: &Harness,
    size: &str,
) -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
    let dry = json!({"statefulSetName": "db", "dryRun": true, "volumes": [{"name": "data", "size": size}]});
    harness.create_resize("too-small", dry).await;
    let refused = harness
        .wait_resize("too-small", "the dry run to be refused", |r| {
            r.phase() == Phase::Failed
        })
        .await;
    let prechecked = condition(&refused, PRECHECKED).unwrap();
    assert_eq!(prechecked.reason, REASON_TOO_SMALL_FOR_DATA, "{prechecked:?}");
    prechecked.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_of_a_real_volume_comes_from_the_kubelet_through_the_node_proxy() {
    let harness = Harness::start("vas-usage").await;
    let sets = harness.ns.api::<StatefulSet>();
    // 48 MiB of seed data on a 256Mi XFS volume.
    let set = writer_stateful_set(
        "db",
        1,
        &[("data", CLASS_BLOCK, "256Mi")],
        &harness.ns.name,
        48 << 10,
        0,
    )
    .unwrap();
    sets.create(&PostParams::default(), &set).await.unwrap();
    wait_ready(&sets, "db", 1, 180).await.unwrap();
    // Reading usage never disturbs the replica.
    harness.watch_disruption("db", 1).await;
    harness.allow_disruption(ferry_testenv::disruption::Allowed { at_once: 0, each: 0 });

    let claims = BTreeMap::from([("data-db-0".to_string(), 0)]);
    let reading = wait_until("the kubelet to report the volume's usage", 60, || async {
        let pod = harness.ns.api::<Pod>().get("db-0").await.ok()?;
        let node = pod.spec?.node_name?;
        let summary = node_summary(&harness.client, &node).await.ok()?;
        readings(&summary, &harness.ns.name, &claims)
            .into_iter()
            .find(|r| r.used_bytes >= 48 * MI)
    })
    .await
    .unwrap();
    assert_eq!(reading.replica, 0);
    assert!(
        (200 * MI..=256 * MI).contains(&reading.capacity_bytes),
        "the file system's own size: {}",
        reading.capacity_bytes
    );
    assert!(reading.used_bytes < reading.capacity_bytes);
    let (used, total) = reading.inodes.expect("XFS reports inodes");
    assert!(used > 0 && used < total, "{used}/{total}");

    // A dry run (`kubectl ferry plan`) answers "does this shrink fit?" from the same figure: 40Mi
    // cannot hold 48 MiB and is refused, 128Mi is planned with the data in use on the row.
    let dry = |size: &str| json!({"statefulSetName": "db", "dryRun": true, "volumes": [{"name": "data", "size": size}]});
    let prechecked = dry_run_refused_as_too_small(&harness, "40Mi").await;
    assert!(
        prechecked.message.contains("data-db-0 holds") && prechecked.message.contains("40Mi leaves no room"),
        "{}",
        prechecked.message
    );
    harness.create_resize("fits", dry("128Mi")).await;
    let planned = harness
        .wait_resize("fits", "the dry run to be planned", |r| {
            r.phase() == Phase::Succeeded
        })
        .await;
    let row = &planned.status.unwrap().plan[0];
    assert!(
        row.bytes_total
            .is_some_and(|bytes| (48 * MI..128 * MI).contains(&bytes)),
        "{row:?}"
    );
    harness.finish().await;
}
