//! Features switched off in the chart run with their permissions gone (docs/security.md): the
//! operator's ServiceAccount is refused what only they need, and Ferry says what it does not do
//! instead of failing on a 403.

use crate::support::Harness;
use ferry_api::names::SEED_ANNOTATION_AUTO_SCALED;
use ferry_api::{ExtendedStatefulSet, VolumeAutoscaler};
use ferry_operator::features::Feature;
use ferry_testenv::fixtures::{stateful_set, wait_ready};
use ferry_testenv::{CLASS_EXPANDABLE, wait_until};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Secret};
use kube::api::{ListParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

/// The API server's answer to a request the operator should never be allowed to make.
fn assert_forbidden<T: std::fmt::Debug>(what: &str, result: Result<T, kube::Error>) {
    match result {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 403, "{what}: {status:?}"),
        other => panic!("{what}: expected 403 Forbidden, got {other:?}"),
    }
}

/// The rules of secret-references and update-hooks are not granted: the operator's identity may
/// neither list Secrets nor read Jobs in `ns`.
async fn assert_secrets_and_jobs_withheld(operator: &kube::Client, ns: &str) {
    assert_forbidden(
        "list Secrets",
        Api::<Secret>::namespaced(operator.clone(), ns)
            .list(&ListParams::default())
            .await,
    );
    assert_forbidden(
        "get a Job",
        Api::<Job>::namespaced(operator.clone(), ns).get("any").await,
    );
}

/// An ExtendedStatefulSet `name` of kwok pods with one `data` template, plus `extra` in its spec.
fn extended(name: &str, extra: Value) -> Value {
    let template = serde_json::to_value(stateful_set(name, 1, CLASS_EXPANDABLE, "1Gi")).unwrap();
    let mut spec = json!({"replicas": 1, "template": {"spec": template["spec"]}});
    spec.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    json!({
        "apiVersion": "ferry.dev/v1alpha1", "kind": "ExtendedStatefulSet",
        "metadata": {"name": name}, "spec": spec,
    })
}

/// The refusal of creating `object` (an ExtendedStatefulSet) as a dry run, once the API server has
/// loaded the freshly applied policy (the only wait).
async fn refused_at_admission(
    harness: &Harness,
    object: serde_json::Value,
    what: &str,
) -> kube::core::Status {
    let object: ExtendedStatefulSet = serde_json::from_value(object).unwrap();
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let api = harness.ns.api::<ExtendedStatefulSet>();
    wait_until(what, 30, || async {
        match api.create(&dry_run, &object).await {
            Err(kube::Error::Api(status)) => Some(*status),
            _ => None,
        }
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switched_off_features_run_without_their_permissions() {
    let features = [
        Feature::SecretReferences,
        Feature::KubeletStats,
        Feature::UpdateHooks,
    ];
    let harness = Harness::start_without("features-off", &features).await;
    let ns = &harness.ns.name;

    // The permissions are gone: the operator's own identity is refused them.
    let operator = &harness.operator_client;
    assert_secrets_and_jobs_withheld(operator, ns).await;
    let node = Api::<Node>::all(harness.client.clone())
        .list(&ListParams::default())
        .await
        .unwrap()
        .items[0]
        .name_any();
    match ferry_operator::autoscale::node_summary(operator, &node).await {
        Err(ferry_operator::Error::Kube(kube::Error::Api(status))) => {
            assert_eq!(status.code, 403, "{status:?}")
        }
        other => panic!("the kubelet's stats through nodes/proxy: expected 403, got {other:?}"),
    }

    // Secret references: the ConfigMap is followed and marked, the Secret neither read nor marked,
    // and the ExtendedStatefulSet says so while its StatefulSet runs.
    let maps = harness.ns.api::<ConfigMap>();
    let secrets = harness.ns.api::<Secret>();
    maps.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "app-config"}, "data": {"a": "1"}})).unwrap(),
    )
    .await
    .unwrap();
    secrets
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "app-secret"}, "stringData": {"b": "2"}}))
                .unwrap(),
        )
        .await
        .unwrap();
    let mut db = extended("db", json!({"updateOnConfigChange": true}));
    db["spec"]["template"]["spec"]["template"]["spec"]["containers"][0]["envFrom"] = json!([
        {"configMapRef": {"name": "app-config"}},
        {"secretRef": {"name": "app-secret"}},
    ]);
    harness
        .ns
        .api::<ExtendedStatefulSet>()
        .create(&PostParams::default(), &serde_json::from_value(db).unwrap())
        .await
        .unwrap();
    wait_ready(&harness.ns.api::<StatefulSet>(), "db", 1, 60)
        .await
        .unwrap();
    let said = harness
        .wait_object(
            "db",
            "the Secret reported as not followed",
            60,
            |ests: &ExtendedStatefulSet| {
                ests.status.as_ref().is_some_and(|status| {
                    status.conditions.iter().any(|c| {
                        c.type_ == "Invalid" && c.status == "True" && c.message.contains("Secret app-secret")
                    })
                })
            },
        )
        .await;
    let invalid = said
        .status
        .unwrap()
        .conditions
        .into_iter()
        .find(|c| c.type_ == "Invalid")
        .unwrap();
    assert!(
        invalid.message.contains("secret-references switched off"),
        "{}",
        invalid.message
    );
    let marked = wait_until("app-config marked as referenced", 60, || async {
        let map = maps.get("app-config").await.ok()?;
        map.labels().contains_key("ferry.dev/referenced").then_some(map)
    })
    .await
    .unwrap();
    assert_eq!(marked.annotations()["ferry.dev/used-by"], "db");
    let secret = secrets.get("app-secret").await.unwrap();
    assert!(
        !secret.labels().contains_key("ferry.dev/referenced"),
        "{:?}",
        secret.labels()
    );

    // Update hooks: an ExtendedStatefulSet with one is refused at admission (the chart's policy).
    let hooked = extended(
        "hooked",
        json!({"preUpdate": {"spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "hook", "image": "busybox"}],
        }}}}}),
    );
    let refusal = refused_at_admission(&harness, hooked, "the hook refused by the chart's policy").await;
    let extended_api = harness.ns.api::<ExtendedStatefulSet>();
    assert!(
        refusal.message.contains("update-hooks switched off") && refusal.message.contains("preUpdate"),
        "{refusal:?}"
    );
    assert!(extended_api.get_opt("hooked").await.unwrap().is_none());

    // Kubelet stats: an autoscaler reads no usage and says why.
    let autoscaler: VolumeAutoscaler = serde_json::from_value(json!({
        "apiVersion": "ferry.dev/v1alpha1", "kind": "VolumeAutoscaler", "metadata": {"name": "db"},
        "spec": {"statefulSetName": "db", "volumes": [{"name": "data", "threshold": 80, "maxSize": "4Gi"}]},
    }))
    .unwrap();
    harness
        .ns
        .api::<VolumeAutoscaler>()
        .create(&PostParams::default(), &autoscaler)
        .await
        .unwrap();
    let found = harness
        .wait_object(
            "db",
            "the autoscaler to say it reads no usage",
            60,
            |vas: &VolumeAutoscaler| {
                vas.status
                    .as_ref()
                    .is_some_and(|status| !status.volumes.is_empty())
            },
        )
        .await;
    let volume = &found.status.unwrap().volumes[0];
    assert_eq!(volume.state.as_deref(), Some("UsageUnknown"), "{volume:?}");
    assert!(
        volume
            .message
            .as_deref()
            .is_some_and(|m| m.contains("kubelet-stats switched off")),
        "{volume:?}"
    );
    harness.finish().await;
}

/// `features.autoscale` and `features.extendedStatefulSets` off: those controllers never start, so
/// their permissions (and those of the features that only serve them) can go, and the operator
/// still resizes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switched_off_controllers_run_without_their_permissions_and_resizes_go_on() {
    let controllers = [Feature::Autoscale, Feature::ExtendedStatefulSets];
    let harness = Harness::start_without("controllers-off", &controllers).await;
    let ns = &harness.ns.name;
    let operator = &harness.operator_client;
    assert_forbidden(
        "list VolumeAutoscalers",
        Api::<VolumeAutoscaler>::namespaced(operator.clone(), ns)
            .list(&ListParams::default())
            .await,
    );
    assert_forbidden(
        "list ExtendedStatefulSets",
        Api::<ExtendedStatefulSet>::namespaced(operator.clone(), ns)
            .list(&ListParams::default())
            .await,
    );
    // The features that only serve them went with them.
    assert_secrets_and_jobs_withheld(operator, ns).await;

    // The seed's `auto-scaled` opt-in would make a VolumeAutoscaler, which this operator may not
    // even read: the trigger beside it must still become a resize that succeeds, and no autoscaler
    // may appear.
    let mut sts = stateful_set("db", 1, CLASS_EXPANDABLE, "1Gi");
    sts.metadata.annotations = Some(
        [
            (SEED_ANNOTATION_AUTO_SCALED.to_string(), "true".to_string()),
            ("ferry.dev/resize.data".to_string(), "2Gi".to_string()),
        ]
        .into(),
    );
    harness.healthy_stateful_set(sts).await;
    let resizes = harness.ns.api::<ferry_api::VolumeResize>();
    let grown = wait_until("the annotation's resize to succeed", 90, || async {
        let list = resizes.list(&ListParams::default()).await.ok()?;
        list.items
            .into_iter()
            .find(|r| r.status.as_ref().and_then(|s| s.phase) == Some(ferry_api::Phase::Succeeded))
    })
    .await;
    if let Err(error) = grown {
        panic!("{error:?}\n{}", harness.explain().await);
    }
    let autoscalers = harness
        .ns
        .api::<VolumeAutoscaler>()
        .list(&ListParams::default())
        .await
        .unwrap();
    assert!(autoscalers.items.is_empty(), "{:?}", autoscalers.items);
    harness.finish().await;
}

/// `features.triggers` off: a resize annotation becomes no VolumeResize, and the StatefulSet is
/// told why instead of waiting for one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switched_off_triggers_say_so_and_resize_nothing() {
    let harness = Harness::start_without("triggers-off", &[Feature::Triggers]).await;
    let mut sts = stateful_set("db", 1, CLASS_EXPANDABLE, "1Gi");
    sts.metadata.annotations = Some([("ferry.dev/resize.data".to_string(), "2Gi".to_string())].into());
    harness.healthy_stateful_set(sts).await;
    let events = harness
        .wait_event("StatefulSet", "db", "TriggersSwitchedOff")
        .await;
    assert!(
        events
            .iter()
            .any(|(_, _, note)| note.contains("features.triggers: false")),
        "{events:?}"
    );
    // The notice is published where a trigger would have made its resize: none was made.
    let resizes = harness
        .ns
        .api::<ferry_api::VolumeResize>()
        .list(&ListParams::default())
        .await
        .unwrap();
    assert!(resizes.items.is_empty(), "{:?}", resizes.items);
    harness.finish().await;
}

/// configMapReferences and blueGreenService, off by default: the operator may neither list
/// ConfigMaps nor read or patch Services, and may change no ConfigMap but its own backups (the
/// chart's policy); a referenced ConfigMap is neither followed nor marked and the
/// ExtendedStatefulSet says so, and one naming a Service is refused at admission.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_map_references_and_the_service_switch_off_are_withheld_and_said() {
    let features = [Feature::ConfigMapReferences, Feature::BlueGreenService];
    let harness = Harness::start_without("refs-off", &features).await;
    let ns = &harness.ns.name;
    let operator = &harness.operator_client;
    assert_forbidden(
        "list ConfigMaps",
        Api::<ConfigMap>::namespaced(operator.clone(), ns)
            .list(&ListParams::default())
            .await,
    );
    assert_forbidden(
        "get a Service",
        Api::<k8s_openapi::api::core::v1::Service>::namespaced(operator.clone(), ns)
            .get("any")
            .await,
    );
    let maps = harness.ns.api::<ConfigMap>();
    maps.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "app-config"}, "data": {"a": "1"}})).unwrap(),
    )
    .await
    .unwrap();
    // Patch is granted for the backups; the policy refuses it on anyone else's ConfigMap. Tried as
    // a dry run until the API server has loaded the policy (a real patch before that would land),
    // then for real.
    let patch = kube::api::Patch::Merge(json!({"data": {"a": "2"}}));
    let maps_as_operator = Api::<ConfigMap>::namespaced(operator.clone(), ns);
    wait_until("the chart's ConfigMap policy to be loaded", 30, || async {
        let dry_run = kube::api::PatchParams::default().dry_run();
        maps_as_operator.patch("app-config", &dry_run, &patch).await.err()
    })
    .await
    .unwrap();
    let foreign = wait_until(
        "a foreign ConfigMap's patch refused by the chart's policy",
        5,
        || async {
            match maps_as_operator
                .patch("app-config", &kube::api::PatchParams::default(), &patch)
                .await
            {
                Err(kube::Error::Api(status)) => Some(status),
                _ => None,
            }
        },
    )
    .await
    .unwrap();
    assert!(
        foreign.message.contains("only its own StatefulSet backups"),
        "{foreign:?}"
    );
    assert_eq!(maps.get("app-config").await.unwrap().data.unwrap()["a"], "1");

    let mut db = extended("db", json!({"updateOnConfigChange": true}));
    db["spec"]["template"]["spec"]["template"]["spec"]["containers"][0]["envFrom"] =
        json!([{"configMapRef": {"name": "app-config"}}]);
    harness
        .ns
        .api::<ExtendedStatefulSet>()
        .create(&PostParams::default(), &serde_json::from_value(db).unwrap())
        .await
        .unwrap();
    wait_ready(&harness.ns.api::<StatefulSet>(), "db", 1, 60)
        .await
        .unwrap();
    harness
        .wait_object(
            "db",
            "the ConfigMap reported as not followed",
            60,
            |ests: &ExtendedStatefulSet| {
                ests.status.as_ref().is_some_and(|status| {
                    status.conditions.iter().any(|c| {
                        c.type_ == "Invalid"
                            && c.status == "True"
                            && c.message.contains("ConfigMap app-config")
                            && c.message.contains("config-map-references switched off")
                    })
                })
            },
        )
        .await;
    let map = maps.get("app-config").await.unwrap();
    assert!(
        !map.labels().contains_key("ferry.dev/referenced"),
        "{:?}",
        map.labels()
    );

    let blue_green = extended(
        "switched",
        json!({"updateStrategy": {"type": "BlueGreen", "service": "db"}}),
    );
    let refusal =
        refused_at_admission(&harness, blue_green, "the Service refused by the chart's policy").await;
    assert!(
        refusal.message.contains("blue-green-service switched off")
            && refusal.message.contains("updateStrategy.service"),
        "{refusal:?}"
    );
    harness.finish().await;
}
