//! The API server out of the operator's reach for 30 s at a random moment of a rolling copy and of
//! an in-place growth, on the real node with a real writer: the resize waits (its pods and volumes
//! go on without it), then finishes, and every acknowledged record is there. The outage is a cut
//! of the operator's own path to the API server (`ferry_testenv::api_path`), so the tests beside it
//! on the shared control plane are not disturbed.

use crate::real_node::{assert_nothing_lost, wait_phase, writer};
use crate::support::Harness;
use ferry_api::Phase;
use ferry_testenv::api_path::{ApiPath, random_delay};
use ferry_testenv::{CLASS_BLOCK, CLASS_BLOCK_FIXED};
use serde_json::json;
use std::time::{Duration, Instant};

const OUTAGE: Duration = Duration::from_secs(30);

/// Starts the resize `name`, cuts the operator's path at a random moment within `window` for
/// [`OUTAGE`], and waits for the resize to succeed; returns how long it took in all.
async fn resize_through_an_outage(
    harness: &Harness,
    path: &ApiPath,
    name: &str,
    spec: serde_json::Value,
    window: Duration,
) -> Duration {
    let started = Instant::now();
    harness.create_resize(name, spec).await;
    let delay = random_delay(window);
    tokio::time::sleep(delay).await;
    path.cut();
    eprintln!("{name}: API server out of the operator's reach {delay:?} after the start, for {OUTAGE:?}");
    tokio::time::sleep(OUTAGE).await;
    path.restore();
    let ended = wait_phase(harness, name, 300).await;
    let status = ended.status.unwrap();
    assert_eq!(status.phase, Some(Phase::Succeeded), "{:?}", status.message);
    let took = started.elapsed();
    eprintln!("{name}: succeeded {took:?} after the start");
    took
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_server_outage_during_a_rolling_copy_delays_it_and_loses_nothing() {
    let path = ApiPath::start().await.unwrap();
    let harness = Harness::start_behind("real-outage-copy", &path).await;
    let seeds = writer(&harness, 2, CLASS_BLOCK, "320Mi").await;
    let spec = json!({"statefulSetName": "db", "volumes": [
        {"name": "data", "size": "384Mi", "storageClassName": CLASS_BLOCK_FIXED}
    ]});
    resize_through_an_outage(&harness, &path, "copy", spec, Duration::from_secs(10)).await;
    assert_nothing_lost(&harness, 2, &seeds).await;
    harness.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_server_outage_during_an_in_place_growth_delays_it_and_loses_nothing() {
    let path = ApiPath::start().await.unwrap();
    let harness = Harness::start_behind("real-outage-grow", &path).await;
    let seeds = writer(&harness, 2, CLASS_BLOCK, "320Mi").await;
    let spec = json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "384Mi"}]});
    resize_through_an_outage(&harness, &path, "grow", spec, Duration::from_secs(5)).await;
    assert_nothing_lost(&harness, 2, &seeds).await;
    harness.finish().await;
}
