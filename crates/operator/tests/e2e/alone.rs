//! Tests that disturb everything else on the shared control plane and real node, so they run last
//! and one at a time (`scripts/lib/run_tests.py` runs the module `alone` after every other test).

// Cuts the pod network between two real nodes: no other test's movers may cross it meanwhile.
mod network_cut;
// After every other test that runs alone (of every test binary): what they leave the
// controller-manager to clean up would slow whichever test came next.
mod last;

use crate::faults::{copy_at, mover_pod, slow_copy};
use crate::installed::on_the_real_node;
use crate::real_node::{assert_nothing_lost, wait_phase, writer_with};
use crate::support::Harness;
use ferry_api::{ExtendedStatefulSet, Phase, RowStep};
use ferry_testenv::chart::{chart_dir, helm};
use ferry_testenv::fixtures::wait_ready;
use ferry_testenv::processes::{kill_supervised, kubelet_process, running_in_pod};
use ferry_testenv::{CLASS_BLOCK, kubectl, wait_until};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::rbac::v1::RoleBinding;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::ResourceExt;
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;

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

/// Every Ferry CRD's name: the list the operator installs and waits for, so a new kind is never
/// left out of the uninstall check or of the chart's adoption.
fn crd_names() -> Vec<String> {
    ferry_operator::crd::all()
        .iter()
        .map(|crd| crd.name_any())
        .collect()
}

/// The UIDs of Ferry's CRDs, the ExtendedStatefulSet `db` and its StatefulSet: the same after an
/// uninstall means nothing was deleted (and made again).
async fn kept_objects(harness: &Harness) -> Vec<String> {
    let crds: Api<CustomResourceDefinition> = Api::all(harness.client.clone());
    let mut uids = Vec::new();
    for crd in crd_names() {
        uids.push(
            crds.get(&crd)
                .await
                .map(|c| c.uid().unwrap_or_default())
                .unwrap_or_default(),
        );
    }
    let ests = harness
        .ns
        .api::<ExtendedStatefulSet>()
        .get_opt("db")
        .await
        .ok()
        .flatten();
    uids.push(ests.and_then(|e| e.uid()).unwrap_or_default());
    let sts = harness.ns.api::<StatefulSet>().get_opt("db").await.ok().flatten();
    uids.push(sts.and_then(|s| s.uid()).unwrap_or_default());
    uids
}

async fn kubectl_ok(args: &[&str]) {
    let (code, out, err) = kubectl(args).await.unwrap();
    assert_eq!(code, 0, "kubectl {args:?}: {err}\n{out}");
}

/// Uninstalling Ferry, as docs/install.md says, with the plain manifests (`kubectl delete -f
/// deploy/manifests/ferry.yaml`) and with helm (the chart installing the CRDs), keeps the CRDs, an
/// ExtendedStatefulSet and the StatefulSet it owns: deleting the CRDs would delete every such object
/// and, through owner references, its StatefulSets and pods. Runs alone: both installs serve
/// cluster-wide webhooks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uninstalling_with_the_plain_manifests_or_helm_keeps_the_crds_and_what_they_own() {
    let harness = Harness::start("alone-uninstall").await;
    let template = ferry_testenv::fixtures::stateful_set("db", 1, ferry_testenv::CLASS_EXPANDABLE, "1Gi");
    let ests: ExtendedStatefulSet = serde_json::from_value(json!({
        "apiVersion": "ferry.dev/v1alpha1", "kind": "ExtendedStatefulSet",
        "metadata": {"name": "db"},
        "spec": {"replicas": 1, "template": {"spec": template.spec}},
    }))
    .unwrap();
    harness
        .ns
        .api::<ExtendedStatefulSet>()
        .create(&PostParams::default(), &ests)
        .await
        .unwrap();
    wait_ready(&harness.ns.api::<StatefulSet>(), "db", 1, 90)
        .await
        .unwrap();
    let before = kept_objects(&harness).await;
    assert!(before.iter().all(|uid| !uid.is_empty()), "{before:?}");

    // Plain manifests, as installed and uninstalled by docs/install.md.
    let root = ferry_testenv::paths::repo_root();
    let crds = root.join("deploy/manifests/crds.yaml").display().to_string();
    let manifests = root.join("deploy/manifests/ferry.yaml").display().to_string();
    kubectl_ok(&[
        "apply",
        "--server-side",
        "--force-conflicts",
        "-f",
        &crds,
        "-f",
        &manifests,
    ])
    .await;
    kubectl_ok(&["delete", "-f", &manifests, "--wait=true", "--timeout=120s"]).await;
    assert_eq!(
        kept_objects(&harness).await,
        before,
        "after kubectl delete -f ferry.yaml"
    );

    // Helm, the chart installing the CRDs (it adopts those the suite made), in a namespace of its
    // own (the harness's operator has its objects in the workload's).
    let home = Harness::start_bare("alone-uninstall-helm").await;
    let release = home.ns.name.as_str();
    for crd in crd_names() {
        let name = format!("crd/{crd}");
        kubectl_ok(&["label", "--overwrite", &name, "app.kubernetes.io/managed-by=Helm"]).await;
        let release_name = format!("meta.helm.sh/release-name={release}");
        let release_namespace = format!("meta.helm.sh/release-namespace={release}");
        kubectl_ok(&[
            "annotate",
            "--overwrite",
            &name,
            &release_name,
            &release_namespace,
        ])
        .await;
    }
    let chart = chart_dir().display().to_string();
    let (code, out, err) = helm(&[
        "install",
        release,
        &chart,
        "--namespace",
        release,
        "--set",
        "replicaCount=1",
    ])
    .await
    .unwrap();
    assert_eq!(code, 0, "helm install: {err}\n{out}");
    let (code, out, err) = helm(&["uninstall", release, "--namespace", release, "--wait"])
        .await
        .unwrap();
    assert_eq!(code, 0, "helm uninstall: {err}\n{out}");
    assert_eq!(kept_objects(&harness).await, before, "after helm uninstall");
    home.finish().await;
    harness.finish().await;
}
