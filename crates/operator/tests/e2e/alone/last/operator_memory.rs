//! The operator's memory at scale, checked on every CI run (issue 56, item 14): `ferry run` (the
//! debug build the tests run; a process of its own, so its memory is its own) started over 2,000
//! StatefulSets with a pod and a claim each must not peak past the measured peak + 20 %. Started
//! after the objects exist, it lists them all at once: the worst case (`scripts/bench-operator`'s
//! restart). It watches only this test's namespace, so the other tests' objects do not count and it
//! acts on nothing of theirs. Pods wait on a scheduling gate and match no StatefulSet's selector;
//! claims name a volume that does not exist: only the objects' number and size count. Alone: the
//! controller-manager's work on 2,000 new StatefulSets (at its 20 requests a second) held other
//! tests' StatefulSets back by minutes.

use crate::support::{Harness, free_port};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::Api;
use kube::api::PostParams;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const STATEFUL_SETS: usize = 2_000;
/// The peak (VmHWM) of the debug `ferry run` over [`STATEFUL_SETS`] StatefulSets, pods and claims,
/// measured by this test on 2026-11-30 (Kubernetes v1.37.2, 2 cores; four runs 55.9-57.2): MiB.
const MEASURED_PEAK_MIB: f64 = 57.2;
const ALLOWED_GROWTH: f64 = 1.2;
/// Creates in flight at once.
const CREATES_AT_ONCE: usize = 24;

fn stateful_set(i: usize) -> Value {
    json!({
        "metadata": {"name": format!("db-{i}"), "labels": {"app": format!("db-{i}")}},
        "spec": {
            "replicas": 0, "serviceName": format!("db-{i}"),
            "selector": {"matchLabels": {"app": format!("db-{i}")}},
            "template": {"metadata": {"labels": {"app": format!("db-{i}")}},
                "spec": {"containers": [{"name": "db", "image": "postgres:17",
                    "volumeMounts": [{"name": "data", "mountPath": "/var/lib/postgresql/data"}]}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}],
        },
    })
}

fn pod(i: usize) -> Value {
    json!({
        "metadata": {"name": format!("db-{i}-0"), "labels": {"app": format!("db-{i}-bench")}},
        "spec": {
            "schedulingGates": [{"name": "ferry.dev/bench"}],
            "containers": [{"name": "db", "image": "postgres:17",
                "volumeMounts": [{"name": "data", "mountPath": "/var/lib/postgresql/data"}]}],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": format!("data-db-{i}-0")}}],
        },
    })
}

fn claim(i: usize) -> Value {
    json!({
        "metadata": {"name": format!("data-db-{i}-0"), "labels": {"app": format!("db-{i}")}},
        "spec": {
            "accessModes": ["ReadWriteOnce"], "storageClassName": "",
            "volumeName": format!("ferry-memory-absent-{i}"),
            "resources": {"requests": {"storage": "1Gi"}},
        },
    })
}

async fn create_all<K>(api: Api<K>, make: fn(usize) -> Value)
where
    K: kube::Resource + Clone + DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    futures::stream::iter(0..STATEFUL_SETS)
        .map(|i| {
            let api = api.clone();
            async move {
                let object: K = serde_json::from_value(make(i)).unwrap();
                api.create(&PostParams::default(), &object).await.map(|_| ())
            }
        })
        .buffer_unordered(CREATES_AT_ONCE)
        .try_collect::<Vec<()>>()
        .await
        .unwrap();
}

/// Takes the claims' protection finalizers off, so that the namespace's deletion (in the
/// background, by the API server's deletes) leaves the controller-manager nothing to do: it would
/// take minutes over 2,000 of them, at its 20 requests a second, and every later test would wait
/// behind it.
async fn unprotect_claims(harness: &Harness) {
    let claims = harness.ns.api::<PersistentVolumeClaim>();
    let listed = claims
        .list_metadata(&kube::api::ListParams::default())
        .await
        .unwrap()
        .items;
    let unprotect = kube::api::Patch::Merge(json!({"metadata": {"finalizers": null}}));
    futures::stream::iter(listed)
        .map(|claim| {
            let (claims, unprotect) = (claims.clone(), &unprotect);
            async move {
                let name = kube::ResourceExt::name_any(&claim);
                claims
                    .patch(&name, &kube::api::PatchParams::default(), unprotect)
                    .await
                    .map(|_| ())
            }
        })
        .buffer_unordered(CREATES_AT_ONCE)
        .try_collect::<Vec<()>>()
        .await
        .unwrap();
}

/// `ferry run`, killed when dropped.
struct Operator(Child);

impl Drop for Operator {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Operator {
    fn start(namespace: &str, port: u16) -> Operator {
        let kubeconfig = std::env::var_os("KUBECONFIG").unwrap_or_else(|| {
            ferry_testenv::paths::state_dir()
                .join("kubeconfig")
                .into_os_string()
        });
        let child = Command::new(env!("CARGO_BIN_EXE_ferry"))
            .args([
                "run",
                "--namespace",
                namespace,
                "--http-addr",
                &format!("127.0.0.1:{port}"),
            ])
            .env("KUBECONFIG", kubeconfig)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Operator(child)
    }

    /// VmHWM (peak resident set) in MiB.
    fn peak_mib(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.0.id())).unwrap();
        let kib: f64 = status
            .lines()
            .find_map(|line| line.strip_prefix("VmHWM:"))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|number| number.parse().ok())
            .unwrap();
        kib / 1024.0
    }
}

/// The operator's list requests so far (its `ferry_api_requests_total{verb="list"}`).
async fn lists(port: u16) -> Option<f64> {
    let output = tokio::process::Command::new("curl")
        .args(["-sf", &format!("http://127.0.0.1:{port}/metrics")])
        .output()
        .await
        .ok()?;
    output.status.success().then_some(())?;
    Some(
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter(|line| line.starts_with("ferry_api_requests_total") && line.contains("verb=\"list\""))
            .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
            .sum(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operators_peak_over_two_thousand_stateful_sets_stays_within_its_measure() {
    let harness = Harness::start_bare("operator-memory").await;
    let started = Instant::now();
    tokio::join!(
        create_all(harness.ns.api::<StatefulSet>(), stateful_set),
        create_all(harness.ns.api::<Pod>(), pod),
        create_all(harness.ns.api::<PersistentVolumeClaim>(), claim),
    );
    let created = started.elapsed();
    let port = free_port();
    let operator = Operator::start(&harness.ns.name, port);
    // Its initial lists are done once its list requests stop growing (paged: 500 objects each).
    let mut last = (f64::NAN, Instant::now());
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let now = lists(port).await;
        if let Some(count) = now
            && count > 0.0
            && count == last.0
            && last.1.elapsed() > Duration::from_secs(5)
        {
            break;
        }
        if now != Some(last.0) {
            last = (now.unwrap_or(f64::NAN), Instant::now());
        }
        assert!(Instant::now() < deadline, "the operator's lists never settled");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let peak = operator.peak_mib();
    let listed = started.elapsed();
    drop(operator);
    unprotect_claims(&harness).await;
    eprintln!(
        "operator peak over {STATEFUL_SETS} StatefulSets, pods and claims: {peak:.1} MiB (measured {MEASURED_PEAK_MIB} MiB); created at {:.0} s, listed at {:.0} s, unprotected at {:.0} s",
        created.as_secs_f64(),
        listed.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        peak <= MEASURED_PEAK_MIB * ALLOWED_GROWTH,
        "the operator peaked at {peak:.1} MiB over {STATEFUL_SETS} StatefulSets, pods and claims: past {MEASURED_PEAK_MIB} MiB (measured) + 20 %"
    );
    harness.finish().await;
}
