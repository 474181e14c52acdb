//! The VolumeAutoscaler CRD's own validation, by the real API server: bad policies are refused
//! with a message that names the field, a good one is stored.

use ferry_api::VolumeAutoscaler;
use ferry_testenv::{TestNamespace, client};
use kube::api::PostParams;
use kube::{Api, CustomResourceExt};
use serde_json::json;

fn autoscaler(name: &str, spec: serde_json::Value) -> serde_json::Value {
    json!({
        "apiVersion": "ferry.dev/v1alpha1", "kind": "VolumeAutoscaler",
        "metadata": {"name": name}, "spec": spec,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_policies_are_refused_by_the_api_server_with_the_field_named() {
    let client = client().await.unwrap();
    ferry_testenv::cluster::install_crd(&client, &VolumeAutoscaler::crd())
        .await
        .unwrap();
    let ns = TestNamespace::create(&client, "vas-validation").await.unwrap();
    let resource = kube::core::ApiResource::erase::<VolumeAutoscaler>(&());
    let api: Api<kube::core::DynamicObject> = Api::namespaced_with(client.clone(), &ns.name, &resource);
    let volume = |extra: serde_json::Value| {
        let mut volume = json!({"name": "data", "maxSize": "10Gi"});
        for (key, value) in extra.as_object().unwrap() {
            volume[key] = value.clone();
        }
        json!({"statefulSetName": "web", "volumes": [volume]})
    };
    for (name, spec, says) in [
        (
            "no-target",
            json!({"volumes": [{"name": "data", "maxSize": "10Gi"}]}),
            "give one of spec.statefulSetName, spec.selector or spec.owner",
        ),
        (
            "both-targets",
            json!({"statefulSetName": "web", "selector": {"matchLabels": {"a": "b"}}, "volumes": [{"name": "data", "maxSize": "10Gi"}]}),
            "give one of spec.statefulSetName, spec.selector or spec.owner",
        ),
        (
            "owner-and-name",
            json!({"statefulSetName": "web", "owner": {"kind": "Prometheus", "name": "k8s"}, "volumes": [{"name": "data", "maxSize": "10Gi"}]}),
            "give one of spec.statefulSetName, spec.selector or spec.owner",
        ),
        (
            "no-max",
            json!({"statefulSetName": "web", "volumes": [{"name": "data"}]}),
            "maxSize",
        ),
        (
            "bad-max",
            volume(json!({"maxSize": "lots"})),
            "maxSize must be a positive quantity",
        ),
        ("bad-threshold", volume(json!({"threshold": 100})), "threshold"),
        (
            "bad-increase",
            volume(json!({"increase": "0%"})),
            "increase must be a percent",
        ),
        (
            "bad-cooldown",
            volume(json!({"cooldown": "soon"})),
            "cooldown must be a duration",
        ),
        ("bad-provider", volume(json!({"provider": "floppy"})), "provider"),
        (
            "min-over-max",
            volume(json!({"minIncrease": "5Gi", "maxIncrease": "1Gi"})),
            "minIncrease must not be larger than maxIncrease",
        ),
        (
            "bad-grow-after",
            volume(json!({"growAfter": "a while"})),
            "growAfter must be a duration",
        ),
        (
            "shrink-below-over-target",
            volume(json!({"shrink": {"below": 70, "target": 60}})),
            "shrink.below must be less than shrink.target",
        ),
        (
            "shrink-target-over-threshold",
            volume(json!({"threshold": 50, "shrink": {}})),
            "shrink.target must be less than threshold",
        ),
        (
            "bad-shrink-every",
            volume(json!({"shrink": {"every": "weekly"}})),
            "shrink.every must be a duration",
        ),
        (
            "bad-shrink-floor",
            volume(json!({"shrink": {"minSize": "0"}})),
            "shrink.minSize must be a positive quantity",
        ),
        (
            "bad-window-start",
            json!({"statefulSetName": "web", "volumes": [{"name": "data", "maxSize": "10Gi"}],
                "maintenanceWindows": [{"start": "25:00", "duration": "4h"}]}),
            "start must be a time such as 02:30",
        ),
        (
            "no-volumes",
            json!({"statefulSetName": "web", "volumes": []}),
            "volumes",
        ),
    ] {
        let object: kube::core::DynamicObject = serde_json::from_value(autoscaler(name, spec)).unwrap();
        let error = api
            .create(&PostParams::default(), &object)
            .await
            .expect_err(name)
            .to_string();
        assert!(error.contains(says), "{name}: {error} lacks {says:?}");
    }
    let good: kube::core::DynamicObject = serde_json::from_value(autoscaler(
        "good",
        volume(json!({"threshold": 75, "increase": "25%", "minIncrease": "1Gi", "cooldown": "6h", "provider": "aws-ebs",
            "growAfter": "10m", "shrink": {"below": 20, "for": "24h", "target": 50, "minSize": "5Gi", "every": "7d"}})),
    ))
    .unwrap();
    api.create(&PostParams::default(), &good).await.unwrap();
    let stored = ns.api::<VolumeAutoscaler>().get("good").await.unwrap();
    assert_eq!(stored.spec.volumes[0].threshold, Some(75));
    let shrink = stored.spec.volumes[0].shrink.clone().unwrap();
    assert_eq!(
        (shrink.lasting.as_deref(), shrink.target),
        (Some("24h"), Some(50))
    );
    ns.cleanup().await.unwrap();
}

/// The webhook's guard against a GitOps re-apply shrinking an autoscaled volume asks the real API
/// server which templates autoscalers govern. An identity that may not list VolumeAutoscalers gets
/// "unknown" (every shrink kept aside), never "none" (which let the shrink through).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreadable_autoscalers_make_the_guard_fail_closed() {
    use ferry_engine::trigger::template_edit::Governed;
    let client = client().await.unwrap();
    ferry_testenv::cluster::install_crd(&client, &VolumeAutoscaler::crd())
        .await
        .unwrap();
    let ns = TestNamespace::create(&client, "vas-guard").await.unwrap();
    let good: VolumeAutoscaler = serde_json::from_value(autoscaler(
        "db",
        json!({"statefulSetName": "db", "volumes": [{"name": "data", "maxSize": "10Gi"}]}),
    ))
    .unwrap();
    ns.api::<VolumeAutoscaler>()
        .create(&PostParams::default(), &good)
        .await
        .unwrap();
    let labels = Default::default();
    let known = ferry_operator::autoscale::governed_templates_of(&client, &ns.name, "db", &labels, &[]).await;
    assert_eq!(
        known,
        Governed::Known([("data".to_string(), "db".to_string())].into())
    );
    // One that targets an owner governs the StatefulSets it controls, and no other.
    let through_owner: VolumeAutoscaler = serde_json::from_value(autoscaler(
        "metrics",
        json!({"owner": {"kind": "Prometheus", "name": "k8s"}, "volumes": [{"name": "prometheus-k8s-db", "maxSize": "10Gi"}]}),
    ))
    .unwrap();
    ns.api::<VolumeAutoscaler>()
        .create(&PostParams::default(), &through_owner)
        .await
        .unwrap();
    let controller =
        |kind: &str, name: &str| k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
            api_version: "monitoring.coreos.com/v1".into(),
            kind: kind.into(),
            name: name.into(),
            uid: "u".into(),
            controller: Some(true),
            block_owner_deletion: None,
        };
    let owned = ferry_operator::autoscale::governed_templates_of(
        &client,
        &ns.name,
        "prometheus-k8s",
        &labels,
        &[controller("Prometheus", "k8s")],
    )
    .await;
    assert_eq!(
        owned,
        Governed::Known([("prometheus-k8s-db".to_string(), "metrics".to_string())].into())
    );
    let other = ferry_operator::autoscale::governed_templates_of(
        &client,
        &ns.name,
        "prometheus-x",
        &labels,
        &[controller("Prometheus", "x")],
    )
    .await;
    assert_eq!(other, Governed::Known(Default::default()));
    let nobody = ferry_testenv::chart::client_as("system:serviceaccount:default:nobody")
        .await
        .unwrap();
    let unknown =
        ferry_operator::autoscale::governed_templates_of(&nobody, &ns.name, "db", &labels, &[]).await;
    match unknown {
        Governed::Unknown(why) => assert!(why.contains("forbidden"), "{why}"),
        known => panic!("an unreadable list must not count as known: {known:?}"),
    }
    ns.cleanup().await.unwrap();
}
