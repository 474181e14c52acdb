//! The API server lost to the operator at a random moment of a rolling copy and of an in-place
//! growth, on the real node with a real writer: the resize waits (its pods and volumes go on
//! without it), then finishes, and every acknowledged record is there. Two faults, neither of which
//! disturbs the tests beside it on the shared control plane:
//! - an outage of 30 s: a cut of the operator's own path to the API server
//!   (`ferry_testenv::api_path`);
//! - a restart: the operator talks to a second API server on the same etcd
//!   (`ferry_testenv::api_server`), which is SIGKILLed and started again.

use crate::real_node::{assert_nothing_lost, wait_phase, writer};
use crate::support::Harness;
use ferry_api::Phase;
use ferry_testenv::api_path::{ApiPath, random_delay};
use ferry_testenv::api_server::ApiServerReplica;
use ferry_testenv::{CLASS_BLOCK, CLASS_BLOCK_FIXED};
use serde_json::json;
use std::time::{Duration, Instant};

const OUTAGE: Duration = Duration::from_secs(30);

/// A way to lose the API server, and to get it back.
trait Fault {
    async fn begin(&self);
    async fn end(&self);
}

/// Cut for [`OUTAGE`].
impl Fault for ApiPath {
    async fn begin(&self) {
        self.cut();
        eprintln!("API server out of the operator's reach for {OUTAGE:?}");
        tokio::time::sleep(OUTAGE).await;
    }
    async fn end(&self) {
        self.restore();
    }
}

/// Killed, then started again at once (as its supervisor would), ready when `end` returns.
impl Fault for ApiServerReplica {
    async fn begin(&self) {
        self.kill().await.unwrap();
        eprintln!("the operator's API server killed");
    }
    async fn end(&self) {
        let restart = Instant::now();
        self.start_again().await.unwrap();
        eprintln!(
            "the operator's API server ready again after {:?}",
            restart.elapsed()
        );
    }
}

/// Starts the resize `name`, brings `fault` at a random moment within `window`, and waits for the
/// resize to succeed; returns how long it took in all.
async fn resize_through(
    harness: &Harness,
    fault: &impl Fault,
    name: &str,
    spec: serde_json::Value,
    window: Duration,
) -> Duration {
    let started = Instant::now();
    harness.create_resize(name, spec).await;
    let delay = random_delay(window);
    tokio::time::sleep(delay).await;
    eprintln!("{name}: the fault {delay:?} after the start");
    fault.begin().await;
    fault.end().await;
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
    resize_through(&harness, &path, "copy", spec, Duration::from_secs(10)).await;
    assert_nothing_lost(&harness, 2, &seeds).await;
    harness.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_server_outage_during_an_in_place_growth_delays_it_and_loses_nothing() {
    let path = ApiPath::start().await.unwrap();
    let harness = Harness::start_behind("real-outage-grow", &path).await;
    let seeds = writer(&harness, 2, CLASS_BLOCK, "320Mi").await;
    let spec = json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "384Mi"}]});
    resize_through(&harness, &path, "grow", spec, Duration::from_secs(5)).await;
    assert_nothing_lost(&harness, 2, &seeds).await;
    harness.finish().await;
}

/// Both resizes on one StatefulSet, the operator's own API server restarted at a random moment of
/// each: first an in-place growth, then a rolling copy onto a class that cannot grow.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_server_restart_during_a_growth_and_a_rolling_copy_delays_them_and_loses_nothing() {
    let server = ApiServerReplica::start().await.unwrap();
    let harness = Harness::start_via("real-restart", &server.url()).await;
    let seeds = writer(&harness, 2, CLASS_BLOCK, "320Mi").await;
    let grow = json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "384Mi"}]});
    resize_through(&harness, &server, "grow", grow, Duration::from_secs(5)).await;
    let copy = json!({"statefulSetName": "db", "volumes": [
        {"name": "data", "size": "448Mi", "storageClassName": CLASS_BLOCK_FIXED}
    ]});
    resize_through(&harness, &server, "copy", copy, Duration::from_secs(10)).await;
    assert_nothing_lost(&harness, 2, &seeds).await;
    harness.finish().await;
}
