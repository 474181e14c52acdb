//! Tests that disturb everything else on the shared control plane and real node, so they run last
//! and one at a time (`scripts/lib/run_tests.py` runs the module `alone` after every other test).

use crate::faults::{copy_at, mover_pod, slow_copy};
use crate::installed::on_the_real_node;
use crate::real_node::{assert_nothing_lost, wait_phase, writer_with};
use crate::support::Harness;
use ferry_api::{Phase, RowStep};
use ferry_testenv::chart::{chart_dir, helm};
use ferry_testenv::processes::{kill_supervised, kubelet_process, running_in_pod};
use ferry_testenv::{CLASS_BLOCK, wait_until};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::api::{Api, ListParams};

/// Ferry installed with the chart's defaults (one replica, for time): no `watchNamespaces`, so one
/// operator for every namespace through its ClusterRole. It copies a replica in a namespace it was
/// never told of, and the real node's kubelet is SIGKILLed while the final mover copies (the
/// replica stopped) and started again a second later by its supervisor, as systemd restarts a
/// node's kubelet: the mover's container runs on under containerd, the kubelet finds it again, and
/// the copy finishes losing nothing. Then it uninstalls. (`crds.install=false` only because the
/// suite installed the CRDs every test shares; the chart's CRD install is covered by `installed::`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_install_copies_in_any_namespace_through_a_kubelet_restart_in_the_final_sync() {
    let home = Harness::start_bare("alone-default").await;
    let work = Harness::start_bare("alone-workload").await;
    install_with_defaults(&home).await;
    // Nothing was granted in the workload's namespace: Ferry acts there through its ClusterRole.
    let bindings: Api<RoleBinding> = work.ns.api();
    assert!(
        bindings
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );

    // 16 MiB written at shutdown: the final pass has them to copy, at 2 MiB/s about 8 s.
    let seeds = writer_with(&work, 1, CLASS_BLOCK, "320Mi", 4 << 10, 16 << 10).await;
    slow_copy(&work).await;
    copy_at(&work, RowStep::FinalSync).await;
    let (mover, running) = wait_until("the final mover to run", 60, || async {
        let mover = mover_pod(&work, "data-db-0", "final").await?;
        let running = running_in_pod(&mover, "ferry-mover").ok()?;
        (!running.is_empty()).then_some((mover, running))
    })
    .await
    .unwrap();
    // The kubelet of the node the mover runs on.
    let pods: Api<Pod> = work.ns.api();
    let node = pods.get(&mover).await.unwrap().spec.unwrap().node_name.unwrap();
    let killed = kill_supervised(&kubelet_process(&node).unwrap()).unwrap();
    assert_eq!(killed.len(), 1, "one kubelet: {killed:?}");
    eprintln!("kubelet {killed:?} of {node} killed while {mover} copies");
    // The kubelet is gone, its mover is not.
    assert_eq!(running_in_pod(&mover, "ferry-mover").unwrap(), running);
    let healthz = format!("/api/v1/nodes/{node}/proxy/healthz");
    wait_until("the kubelet to serve again", 60, || async {
        let (code, out, _) = ferry_testenv::cluster::kubectl(&["get", "--raw", &healthz])
            .await
            .ok()?;
        (code == 0 && out.trim() == "ok").then_some(())
    })
    .await
    .unwrap();

    let ended = wait_phase(&work, "copy", 300).await;
    let status = ended.status.unwrap();
    assert_eq!(status.phase, Some(Phase::Succeeded), "{:?}", status.message);
    assert_nothing_lost(&work, 1, &seeds).await;

    let release = home.ns.name.as_str();
    let (code, out, err) = helm(&["uninstall", release, "--namespace", release, "--wait"])
        .await
        .unwrap();
    assert_eq!(code, 0, "helm uninstall: {err}\n{out}");
    work.finish().await;
    home.finish().await;
}

/// `helm install` of the chart into `home`'s namespace with its defaults, but for the local image on
/// the real node, one replica and the CRDs left to the suite.
async fn install_with_defaults(home: &Harness) {
    let release = home.ns.name.as_str();
    let chart = chart_dir().to_string_lossy().into_owned();
    let values = on_the_real_node(release, &["--set", "replicaCount=1"]);
    let install: Vec<&str> = ["install", release, chart.as_str()]
        .into_iter()
        .chain(values.iter().map(String::as_str))
        .collect();
    let (code, out, err) = helm(&install).await.unwrap();
    assert_eq!(code, 0, "helm install: {err}\n{out}");
}
