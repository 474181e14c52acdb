//! `kubectl ferry import --apply` of each replaced system's example (crates/cli/tests/fixtures/
//! import/) against the local control plane: the Ferry objects exist with the translated spec, the
//! quarks example passes Ferry's CRD and its rules, a vshn resize half done creates nothing, one
//! object the API server refuses leaves all unapplied, and the CRD keeps `updateOnEnvChange`.

use crate::support::{self, Env, ferry_with};

use ferry_api::{ExtendedStatefulSet, VolumeAutoscaler, VolumeResize};
use kube::Api;
use kube::api::{DynamicObject, PostParams};
use kube::core::ApiResource;
use serde_json::json;

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/import/{name}", env!("CARGO_MANIFEST_DIR"))
}

async fn import(env: &Env, name: &str) -> support::Run {
    let path = fixture(name);
    let run = env.ferry(&["import", "-f", &path, "--apply"]).await;
    assert_eq!(run.code, 0, "{run:?}");
    run
}

async fn resize(env: &Env, name: &str) -> serde_json::Value {
    serde_json::to_value(env.resizes().get(name).await.unwrap().spec).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_systems_example_is_applied_as_ferrys_objects() {
    let env = Env::start("cli-import").await;

    let run = import(&env, "volmig.yaml").await;
    assert_eq!(
        run.stdout,
        "volumeresize.ferry.dev/resize-my-app serverside-applied\n"
    );
    let spec = resize(&env, "resize-my-app").await;
    assert_eq!(spec["statefulSetName"], "my-app");
    assert_eq!(
        spec["volumes"],
        json!([{"name": "data", "size": "500Mi"}, {"name": "logs", "size": "100Mi", "storageClassName": "standard"}])
    );

    // The seed's quarks example passes Ferry's CRD, its CEL rules (replicas within scaling) included.
    let run = import(&env, "quarks.yaml").await;
    assert_eq!(
        run.stdout,
        "extendedstatefulset.ferry.dev/myextendedstatefulset serverside-applied\n"
    );
    let ests = env
        .ns
        .api::<ExtendedStatefulSet>()
        .get("myextendedstatefulset")
        .await
        .unwrap();
    assert_eq!(ests.spec.replicas, 3);
    assert!(ests.spec.update_on_config_change);
    let strategy = ests.spec.update_strategy.unwrap();
    assert_eq!(
        (strategy.canaries, strategy.retry_count, strategy.update_not_ready),
        (Some(1), Some(2), Some(true))
    );
    assert_eq!(ests.spec.template.spec.service_name.as_deref(), Some("app"));

    let run = import(&env, "pong.yaml").await;
    assert_eq!(
        run.stdout,
        "volumeautoscaler.ferry.dev/db-auto-scaled serverside-applied\nvolumeresize.ferry.dev/queue-import-pong serverside-applied\n"
    );
    let autoscaler = env
        .ns
        .api::<VolumeAutoscaler>()
        .get("db-auto-scaled")
        .await
        .unwrap();
    let volumes: Vec<(String, String)> = autoscaler
        .spec
        .volumes
        .iter()
        .map(|v| (v.name.clone(), v.max_size.clone()))
        .collect();
    assert_eq!(
        volumes,
        [
            ("data".to_string(), "10Gi".to_string()),
            ("wal".to_string(), "3000Mi".to_string())
        ]
    );
    assert_eq!(
        resize(&env, "queue-import-pong").await["volumes"],
        json!([{"name": "data", "size": "10Gi"}])
    );

    let run = import(&env, "vshn-idle.yaml").await;
    assert_eq!(
        run.stdout,
        "volumeresize.ferry.dev/web-import-vshn serverside-applied\n"
    );
    let spec = resize(&env, "web-import-vshn").await;
    assert_eq!(
        (&spec["volumes"], &spec["mode"]),
        (&json!([{"name": "www", "size": "4Gi"}]), &json!("Offline"))
    );
    assert!(
        run.stderr
            .contains("/web (apps/v1), vshn's statefulset-resize-controller: "),
        "{}",
        run.stderr
    );

    // Again: the same names and specs, so nothing changes (a VolumeResize's volumes are immutable).
    import(&env, "volmig.yaml").await;
    let mut names = env.resize_names().await;
    names.sort();
    assert_eq!(names, ["queue-import-pong", "resize-my-app", "web-import-vshn"]);
    env.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_is_applied_for_a_vshn_resize_under_way_or_when_one_object_is_refused() {
    let env = Env::start("cli-import-refused").await;
    // Its objects name their namespace (apps): no -n, which would contradict it.
    let run = ferry_with(
        &env.kubeconfig,
        &["import", "-f", &fixture("vshn-restore.yaml"), "--apply"],
    )
    .await;
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr.contains("restore step") && run.stderr.contains("no Ferry object to apply"),
        "{}",
        run.stderr
    );

    // scaling.min above max: refused by the CRD's rule, so the volmig resize beside it is not applied.
    let quarks = std::fs::read_to_string(fixture("quarks.yaml"))
        .unwrap()
        .replace("max: 13", "max: 1");
    let volmig = std::fs::read_to_string(fixture("volmig.yaml")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let both = dir.path().join("both.yaml");
    std::fs::write(&both, format!("{volmig}\n---\n{quarks}")).unwrap();
    let run = env
        .ferry(&["import", "-f", both.to_str().unwrap(), "--apply"])
        .await;
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr
            .contains("error: extendedstatefulset.ferry.dev/myextendedstatefulset:"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("nothing applied"), "{}", run.stderr);
    assert!(env.resize_names().await.is_empty());
    env.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_crd_keeps_update_on_env_change_and_refuses_both_names() {
    let env = Env::start("cli-import-alias").await;
    let resource = ApiResource::erase::<ExtendedStatefulSet>(&());
    let api: Api<DynamicObject> = Api::namespaced_with(env.client.clone(), &env.ns.name, &resource);
    let object = |name: &str, flags: serde_json::Value| -> DynamicObject {
        let mut spec = json!({"replicas": 1, "template": {"spec": {
            "selector": {"matchLabels": {"app": name}}, "serviceName": name,
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}]}}}}});
        spec.as_object_mut()
            .unwrap()
            .extend(flags.as_object().unwrap().clone());
        serde_json::from_value(
            json!({"apiVersion": "ferry.dev/v1alpha1", "kind": "ExtendedStatefulSet",
            "metadata": {"name": name}, "spec": spec}),
        )
        .unwrap()
    };
    let created = api
        .create(
            &PostParams::default(),
            &object("quarks", json!({"updateOnEnvChange": true})),
        )
        .await
        .unwrap();
    assert_eq!(
        created.data["spec"]["updateOnEnvChange"], true,
        "kept, not pruned"
    );
    assert!(
        created.data["spec"].get("updateOnConfigChange").is_none(),
        "no default stored beside it"
    );
    let typed = env.ns.api::<ExtendedStatefulSet>().get("quarks").await.unwrap();
    assert!(typed.spec.update_on_config_change);

    let both = object(
        "both",
        json!({"updateOnEnvChange": true, "updateOnConfigChange": true}),
    );
    let error = api.create(&PostParams::default(), &both).await.unwrap_err();
    assert!(
        error.to_string().contains("give one of them, not both"),
        "{error}"
    );
    env.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_sends_nothing_and_needs_no_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let nowhere = dir.path().join("kubeconfig");
    std::fs::write(
        &nowhere,
        "apiVersion: v1\nkind: Config\nclusters: [{name: x, cluster: {server: 'https://127.0.0.1:1'}}]\n\
         users: [{name: x, user: {}}]\ncontexts: [{name: x, context: {cluster: x, user: x}}]\ncurrent-context: x\n",
    )
    .unwrap();
    let run = ferry_with(&nowhere, &["import", "-f", &fixture("pong.yaml")]).await;
    assert_eq!(run.code, 0, "{run:?}");
    let objects: Vec<serde_json::Value> = run
        .stdout
        .split("\n---\n")
        .filter_map(|doc| yaml_serde::from_str::<serde_json::Value>(doc).ok())
        .filter(|doc| doc.is_object())
        .collect();
    let kinds: Vec<&str> = objects.iter().filter_map(|o| o["kind"].as_str()).collect();
    assert_eq!(kinds, ["VolumeAutoscaler", "VolumeResize"]);
    let _: VolumeResize = serde_json::from_value(objects[1].clone()).unwrap();
}
