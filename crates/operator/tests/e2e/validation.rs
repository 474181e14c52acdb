//! The API server itself rejects malformed VolumeResizes, with a message a person can act on.

use crate::support;

use serde_json::json;
use support::install_crd;

async fn rejection(spec: serde_json::Value) -> String {
    rejection_of(json!({"generateName": "invalid-"}), spec).await
}

async fn rejection_of(metadata: serde_json::Value, spec: serde_json::Value) -> String {
    let client = ferry_testenv::client().await.unwrap();
    install_crd(&client).await;
    let api: kube::Api<ferry_api::VolumeResize> = kube::Api::namespaced(client, "default");
    let object = json!({
        "apiVersion": "ferry.dev/v1alpha1", "kind": "VolumeResize",
        "metadata": metadata, "spec": spec,
    });
    let data = serde_json::to_vec(&object).unwrap();
    let request = api.resource_url().to_string();
    // Raw request: the typed client would refuse to even serialize some of these.
    let request = http::Request::post(request)
        .header("content-type", "application/json")
        .body(data)
        .unwrap();
    match ferry_testenv::client()
        .await
        .unwrap()
        .request::<serde_json::Value>(request)
        .await
    {
        Ok(created) => panic!("the API server accepted an invalid VolumeResize: {created}"),
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 422, "{status:?}");
            status.message
        }
        Err(other) => panic!("unexpected error: {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn size_that_is_not_a_quantity_is_rejected() {
    let message =
        rejection(json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "ten gigs"}]})).await;
    assert!(
        message.contains("spec.volumes[0].size") && message.contains("positive Kubernetes quantity"),
        "{message}"
    );
    let message =
        rejection(json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "0"}]})).await;
    assert!(message.contains("positive Kubernetes quantity"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_volume_list_is_rejected() {
    let message = rejection(json!({"statefulSetName": "db", "volumes": []})).await;
    assert!(
        message.contains("spec.volumes") && message.contains("at least 1"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_volume_names_are_rejected() {
    let message = rejection(json!({"statefulSetName": "db", "volumes": [
        {"name": "data", "size": "1Gi"}, {"name": "data", "size": "2Gi"}]}))
    .await;
    assert!(
        message.contains("Duplicate value") && message.contains("data"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_enum_values_are_rejected() {
    for (field, value) in [("mode", "Sideways"), ("strategy", "Magic"), ("verify", "Vibes")] {
        let mut spec = json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "1Gi"}]});
        spec[field] = json!(value);
        let message = rejection(spec).await;
        assert!(
            message.contains(&format!("spec.{field}")) && message.contains("Unsupported value"),
            "{message}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_or_empty_fields_and_bad_durations_are_rejected() {
    let message = rejection(json!({"volumes": [{"name": "data", "size": "1Gi"}]})).await;
    assert!(
        message.contains("statefulSetName") && message.contains("Required"),
        "{message}"
    );
    let message =
        rejection(json!({"statefulSetName": "", "volumes": [{"name": "data", "size": "1Gi"}]})).await;
    assert!(message.contains("statefulSetName must not be empty"), "{message}");
    let message =
        rejection(json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "1Gi"}], "retainOldVolumes": "a while"}))
            .await;
    assert!(
        message.contains("retainOldVolumes must be a duration"),
        "{message}"
    );
    let message = rejection(json!({"statefulSetName": "db",
        "volumes": [{"name": "data", "size": "1Gi", "volumeAttributesClassName": ""}]}))
    .await;
    assert!(
        message.contains("volumeAttributesClassName must not be empty"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_too_long_for_a_label_are_rejected() {
    let spec = json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "1Gi"}]});
    let message = rejection_of(json!({"name": "r".repeat(64)}), spec).await;
    assert!(message.contains("at most 63 characters"), "{message}");
}

/// Whole sizes of any magnitude are accepted (the quantity parser keeps 100Ti and 1Pi as decimals,
/// for which CEL's `isInteger` alone says false), fractions of a byte are not. Server-side dry run:
/// nothing is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_whole_sizes_are_accepted_and_fractions_of_a_byte_are_not() {
    let client = ferry_testenv::client().await.unwrap();
    install_crd(&client).await;
    let api: kube::Api<ferry_api::VolumeResize> = kube::Api::namespaced(client, "default");
    let dry_run = kube::api::PostParams {
        dry_run: true,
        ..Default::default()
    };
    for size in ["100Ti", "1Pi", "8000Ti", "1.5Ki", "10Gi"] {
        let resize: ferry_api::VolumeResize = serde_json::from_value(json!({
            "apiVersion": "ferry.dev/v1alpha1", "kind": "VolumeResize",
            "metadata": {"generateName": "large-"},
            "spec": {"statefulSetName": "db", "volumes": [{"name": "data", "size": size}]},
        }))
        .unwrap();
        if let Err(error) = api.create(&dry_run, &resize).await {
            panic!("{size} refused: {error}");
        }
    }
    for size in ["1.5", "1500m", "1.0001Ki"] {
        let message =
            rejection(json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": size}]})).await;
        assert!(message.contains("whole number of bytes"), "{size}: {message}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fractional_sizes_zero_retention_and_unbounded_counts_are_rejected() {
    let message =
        rejection(json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "1500m"}]})).await;
    assert!(message.contains("whole number of bytes"), "{message}");
    let message = rejection(json!({
        "statefulSetName": "db", "retainOldVolumes": "0s",
        "volumes": [{"name": "data", "size": "1Gi"}],
    }))
    .await;
    assert!(message.contains("longer than zero"), "{message}");
    for (field, value) in [("concurrency", 65), ("threads", 257), ("concurrency", 0)] {
        let message = rejection(json!({
            "statefulSetName": "db", "mover": {field: value},
            "volumes": [{"name": "data", "size": "1Gi"}],
        }))
        .await;
        assert!(
            message.contains(&format!("spec.mover.{field}")),
            "{field}={value}: {message}"
        );
    }
}
