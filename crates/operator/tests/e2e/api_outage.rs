//! The API server lost to the operator at a random moment of a rolling copy and of an in-place
//! growth, on the real node with a real writer: the resize waits (its pods and volumes go on
//! without it), then finishes, and every acknowledged record is there. The operator talks to a
//! second API server on the same etcd (`ferry_testenv::api_server`) through a path of its own
//! (`ferry_testenv::api_path`), so neither fault disturbs the tests beside it on the shared
//! control plane:
//! - an outage of 15 s: the path cut (connections reset, new ones refused);
//! - a restart: the second API server SIGKILLed and started again.

use crate::real_node::{assert_nothing_lost, wait_phase, writer};
use crate::support::Harness;
use ferry_api::Phase;
use ferry_testenv::api_path::{ApiPath, random_delay};
use ferry_testenv::api_server::ApiServerReplica;
use ferry_testenv::{CLASS_BLOCK, CLASS_BLOCK_FIXED};
use serde_json::json;
use std::time::{Duration, Instant};

const OUTAGE: Duration = Duration::from_secs(15);

/// A way to lose the API server for a while.
enum Fault<'a> {
    /// The operator's path cut for [`OUTAGE`].
    Outage(&'a ApiPath),
    /// The API server SIGKILLed, then started again at once (as its supervisor would); ready when
    /// this returns.
    Restart(&'a ApiServerReplica),
}

impl Fault<'_> {
    async fn bring(&self) {
        match self {
            Fault::Outage(path) => {
                path.cut();
                eprintln!("API server out of the operator's reach for {OUTAGE:?}");
                tokio::time::sleep(OUTAGE).await;
                path.restore();
            }
            Fault::Restart(server) => {
                server.kill().await.unwrap();
                let restart = Instant::now();
                server.start_again().await.unwrap();
                eprintln!(
                    "the operator's API server killed, ready again after {:?}",
                    restart.elapsed()
                );
            }
        }
    }
}

/// The operator's way to the API server: a path it can be cut from, in front of a second API
/// server that can be restarted.
struct Faults {
    server: ApiServerReplica,
    path: ApiPath,
}

impl Faults {
    async fn start() -> Faults {
        let server = ApiServerReplica::start().await.unwrap();
        let path = ApiPath::start_to(server.address()).await.unwrap();
        Faults { server, path }
    }
}

/// Brings `fault` at a random moment within `window` (printed, so a failure can be replayed).
async fn at_random(name: &str, fault: Fault<'_>, window: Duration) {
    let delay = random_delay(window);
    tokio::time::sleep(delay).await;
    eprintln!("{name}: the fault {delay:?} later");
    fault.bring().await;
}

/// Waits for the resize `name` to succeed; prints how long it took since `started`.
async fn succeeded(harness: &Harness, name: &str, started: Instant) {
    let ended = wait_phase(harness, name, 300).await;
    let status = ended.status.unwrap();
    assert_eq!(status.phase, Some(Phase::Succeeded), "{:?}", status.message);
    eprintln!("{name}: succeeded {:?} after the start", started.elapsed());
}

/// One StatefulSet through four faults: two in-place growths, the first through an outage, the
/// second through a restart (each at a random moment of it), then a rolling copy onto another
/// class through an outage at a random moment of it and a restart at a random moment after the API
/// server is back (while the copy goes on). One test, so one second API server at a time runs
/// beside the control plane (each costs a core's worth of CPU to start and then keeps a copy of
/// every object).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_server_outage_and_restart_during_growths_and_a_rolling_copy_delay_them_and_lose_nothing() {
    let faults = Faults::start().await;
    let harness = Harness::start_behind("real-outage", &faults.path).await;
    let seeds = writer(&harness, 2, CLASS_BLOCK, "320Mi").await;
    for (name, size, fault) in [
        ("grow", "384Mi", Fault::Outage(&faults.path)),
        ("grow-again", "448Mi", Fault::Restart(&faults.server)),
    ] {
        let started = Instant::now();
        harness
            .create_resize(
                name,
                json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": size}]}),
            )
            .await;
        at_random(name, fault, Duration::from_secs(5)).await;
        succeeded(&harness, name, started).await;
    }
    let started = Instant::now();
    harness
        .create_resize(
            "copy",
            json!({"statefulSetName": "db", "volumes": [
                {"name": "data", "size": "512Mi", "storageClassName": CLASS_BLOCK_FIXED}
            ]}),
        )
        .await;
    at_random("copy", Fault::Outage(&faults.path), Duration::from_secs(10)).await;
    at_random("copy", Fault::Restart(&faults.server), Duration::from_secs(10)).await;
    succeeded(&harness, "copy", started).await;
    assert_nothing_lost(&harness, 2, &seeds).await;
    harness.finish().await;
}
