//! What the plugin says when no Ferry operator runs anywhere in the cluster. Other tests run
//! operators (the chart's tests install one labelled as the chart labels it), so these run alone,
//! after every other test (`scripts/lib/run_tests.py`).

// `drain` cordons a real node: no other test's pod may need it meanwhile.
mod drain;

use crate::support::Env;
use ferry_testenv::wait_until;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::ListParams;

/// `version` says that none runs, and `resize` creates its VolumeResize but warns that nothing
/// will act on it; with an operator pod present neither says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_operator_version_says_none_runs_and_resize_warns() {
    let env = Env::start("cli-alone").await;
    let pods: Api<Pod> = Api::all(env.client.clone());
    let leases: Api<Lease> = Api::all(env.client.clone());
    // Earlier tests' namespaces may still be going away, and their operators' Leases expiring.
    wait_until(
        "no pod and no Lease held labelled app.kubernetes.io/name=ferry in the cluster",
        180,
        || async {
            let selector = ListParams::default().labels("app.kubernetes.io/name=ferry");
            let listed = pods.list(&selector).await.ok()?;
            let held = leases.list(&selector).await.ok()?.items.into_iter().any(|lease| {
                let spec = lease.spec.unwrap_or_default();
                let fresh = spec
                    .renew_time
                    .is_some_and(|renewed| jiff::Timestamp::now().duration_since(renewed.0).as_secs() <= 30);
                spec.holder_identity.is_some_and(|holder| !holder.is_empty()) && fresh
            });
            (listed.items.is_empty() && !held).then_some(())
        },
    )
    .await
    .unwrap();

    let run = env.ferry(&["version"]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("Operator: none running"), "{run:?}");
    let data = env.ferry(&["version", "-o", "json"]).await;
    let report: serde_json::Value = serde_json::from_str(&data.stdout).unwrap();
    assert_eq!(report["operators"], serde_json::json!([]), "{data:?}");

    env.unready_stateful_set("db").await;
    let resize = env
        .ferry(&[
            "resize", "db", "--volume", "data", "--size", "2Gi", "--name", "grow",
        ])
        .await;
    assert_eq!(resize.code, 0, "{resize:?}");
    assert!(
        resize
            .stderr
            .contains("warning: no Ferry operator runs in this cluster")
            && resize.stderr.contains("VolumeResize grow waits until one does"),
        "{resize:?}"
    );
    assert!(
        env.resizes().get_opt("grow").await.unwrap().is_some(),
        "created all the same"
    );
    // A client-side dry run sends nothing, so it has nothing to warn about.
    let dry = env
        .ferry(&[
            "resize",
            "db",
            "--volume",
            "data",
            "--size",
            "3Gi",
            "--dry-run=client",
        ])
        .await;
    assert_eq!(dry.code, 0, "{dry:?}");
    assert!(!dry.stderr.contains("warning"), "{dry:?}");

    // An operator pod, as the chart labels it: the warning is gone.
    let operator: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "ferry-test-operator", "labels": {"app.kubernetes.io/name": "ferry"}},
        "spec": {"schedulingGates": [{"name": "ferry.dev/never"}],
            "containers": [{"name": "ferry", "image": "ferry.local/ferry:dev"}]},
    }))
    .unwrap();
    env.ns
        .api::<Pod>()
        .create(&Default::default(), &operator)
        .await
        .unwrap();
    let watched = env
        .ferry(&[
            "resize",
            "db",
            "--volume",
            "data",
            "--size",
            "4Gi",
            "--name",
            "grow-more",
        ])
        .await;
    assert!(!watched.stderr.contains("no Ferry operator"), "{watched:?}");
    env.finish().await;
}
