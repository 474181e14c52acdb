//! The real prometheus-operator on the test bed (#58): its CRDs applied, the operator run as a
//! process watching one namespace, and a `Prometheus` with storage on a real node becoming a
//! StatefulSet the operator owns, whose pod is Ready on a bound claim.

use ferry_testenv::prometheus_operator::{
    PROMETHEUS_IMAGE, install_crds, prometheus_resource, prometheus_version, prometheuses,
};
use ferry_testenv::{CLASS_BLOCK, TestNamespace, client};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::api::PostParams;
use kube::runtime::wait::await_condition;
use kube::{Api, ResourceExt};
use std::time::Duration;

/// Waits on a watch for `condition` on object `name`, at most `seconds`.
async fn watch_until<K>(
    api: Api<K>,
    name: &str,
    seconds: u64,
    what: &str,
    condition: impl kube::runtime::wait::Condition<K>,
) -> K
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
    K::DynamicType: Default,
{
    let waited = tokio::time::timeout(
        Duration::from_secs(seconds),
        await_condition(api, name, condition),
    )
    .await;
    match waited {
        Ok(Ok(Some(object))) => object,
        Ok(Ok(None)) => panic!("{what}: {name} is gone"),
        Ok(Err(error)) => panic!("{what}: {error}"),
        Err(_) => panic!("{what}: not within {seconds}s"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prometheus_with_storage_becomes_an_owned_stateful_set_with_a_ready_pod() {
    let client = client().await.unwrap();
    install_crds(&client).await.unwrap();
    let ns = TestNamespace::create(&client, "prom-op").await.unwrap();
    let operator = ferry_testenv::prometheus_operator::start(&ns.name).await.unwrap();
    let log = operator.log().display().to_string();

    let version = prometheus_version().await.unwrap();
    let prometheus =
        serde_json::from_value(prometheus_resource("metrics", &version, CLASS_BLOCK, "320Mi")).unwrap();
    let created = prometheuses(&client, &ns.name)
        .create(&PostParams::default(), &prometheus)
        .await
        .unwrap();

    // The operator makes the StatefulSet and owns it (controller reference to the Prometheus).
    let stateful_set = watch_until(
        ns.api::<StatefulSet>(),
        "prometheus-metrics",
        60,
        &format!("the operator to make the StatefulSet (its log: {log})"),
        |set: Option<&StatefulSet>| set.is_some(),
    )
    .await;
    let owner = stateful_set
        .owner_references()
        .iter()
        .find(|owner| owner.controller == Some(true))
        .cloned()
        .unwrap_or_else(|| panic!("no controller owner: {:?}", stateful_set.metadata));
    assert_eq!(
        (owner.kind.as_str(), Some(owner.uid.as_str())),
        ("Prometheus", created.metadata.uid.as_deref())
    );

    // Its pod runs Prometheus and the reloader from our image, Ready on a bound claim.
    let pod = watch_until(
        ns.api::<Pod>(),
        "prometheus-metrics-0",
        240,
        &format!("the Prometheus pod to be Ready (operator log: {log})"),
        |pod: Option<&Pod>| {
            pod.and_then(|pod| pod.status.as_ref()?.conditions.as_ref())
                .is_some_and(|conditions| {
                    conditions
                        .iter()
                        .any(|c| c.type_ == "Ready" && c.status == "True")
                })
        },
    )
    .await;
    let images: Vec<_> = pod
        .spec
        .iter()
        .flat_map(|spec| &spec.containers)
        .map(|container| container.image.clone().unwrap_or_default())
        .collect();
    assert!(
        !images.is_empty() && images.iter().all(|image| image == PROMETHEUS_IMAGE),
        "{images:?}"
    );
    let claim = watch_until(
        ns.api::<PersistentVolumeClaim>(),
        "prometheus-metrics-db-prometheus-metrics-0",
        60,
        "the Prometheus claim to be Bound",
        |claim: Option<&PersistentVolumeClaim>| {
            claim.and_then(|claim| claim.status.as_ref()?.phase.as_deref()) == Some("Bound")
        },
    )
    .await;
    assert_eq!(
        claim.spec.and_then(|spec| spec.storage_class_name).as_deref(),
        Some(CLASS_BLOCK)
    );

    // Killed and started again, as tests of #58 will do mid-resize: it comes back ready.
    operator.kill().await.unwrap();
    operator.start_again().await.unwrap();
    drop(operator);
    ns.cleanup().await.unwrap();
}
