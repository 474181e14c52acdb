//! Coexistence with topolvm's pvc-autoresizer on the real node: a volume past its threshold whose
//! claim pvc-autoresizer manages (its class annotated `resize.topolvm.io/enabled: "true"`, the
//! claim a storage limit) is left alone, said in status, a condition and an Event; once the
//! class's annotation is removed, Ferry grows it.

use crate::autoscale::{
    SEED_KIB, autoscale_resizes, claim_size, create_autoscaler, event_counts, state_of, the_grow, wait_status,
};
use crate::real_node::writer_shaped;
use crate::support::Harness;
use ferry_api::Phase;
use ferry_engine::autoscale::autoresizer::{ENABLED, STORAGE_LIMIT};
use ferry_testenv::CLASS_BLOCK;
use k8s_openapi::api::storage::v1::StorageClass;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;
use std::collections::BTreeMap;
use std::time::Duration;

/// A copy of the real node's growing class, annotated for pvc-autoresizer, named after the test's
/// namespace (cluster-scoped: no other test sees it).
async fn autoresizer_class(harness: &Harness) -> String {
    ferry_testenv::fixtures::annotated_class_copy(
        &harness.client,
        CLASS_BLOCK,
        &format!("{}-autoresizer", harness.ns.name),
        BTreeMap::from([(ENABLED.to_string(), "true".to_string())]),
    )
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_volume_pvc_autoresizer_manages_is_not_grown_until_its_class_lets_go() {
    let harness = Harness::start_with_webhook("vas-autoresizer").await;
    let class = autoresizer_class(&harness).await;
    // As pvc-autoresizer's README has it: the limit on the claims, here through the template.
    writer_shaped(&harness, 1, &class, "320Mi", SEED_KIB, 0, |set| {
        let templates = set
            .spec
            .as_mut()
            .unwrap()
            .volume_claim_templates
            .as_mut()
            .unwrap();
        templates[0].metadata.annotations =
            Some(BTreeMap::from([(STORAGE_LIMIT.to_string(), "2Gi".to_string())]));
    })
    .await;
    // Past its 60% threshold: Ferry would grow it at the first poll.
    create_autoscaler(
        &harness,
        "db",
        json!({"statefulSetName": "db", "volumes": [
            {"name": "data", "threshold": 60, "maxSize": "2Gi", "cooldown": "1h"},
        ]}),
    )
    .await;

    let status = wait_status(&harness, "db", "the volume left to pvc-autoresizer", 120, |s| {
        state_of(s) == Some("ManagedByPvcAutoresizer")
    })
    .await;
    let message = status.volumes[0].message.clone().unwrap_or_default();
    assert!(message.contains("claim(s) data-db-0 "), "{message}");
    assert!(
        message.contains(&format!("StorageClass {class} has")),
        "{message}"
    );
    assert!(message.contains("kubectl ferry import"), "{message}");
    let stalled = status.conditions.iter().find(|c| c.type_ == "Stalled").unwrap();
    assert_eq!(stalled.status, "True", "{stalled:?}");
    assert!(stalled.message.contains("pvc-autoresizer"), "{stalled:?}");
    // Several polls (every 2 s) later: no resize, the claim as it was, one Event.
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert!(autoscale_resizes(&harness).await.is_empty());
    assert_eq!(claim_size(&harness, "data-db-0").await, "320Mi");
    assert_eq!(event_counts(&harness, "db", "ManagedByPvcAutoresizer").await, [1]);

    // The switch: the class no longer lets pvc-autoresizer act, and Ferry grows the volume.
    let classes = Api::<StorageClass>::all(harness.client.clone());
    let unannotate = json!({"metadata": {"annotations": {ENABLED: null}}});
    classes
        .patch(&class, &PatchParams::default(), &Patch::Merge(&unannotate))
        .await
        .unwrap();
    let grow = the_grow(&harness).await;
    let phase = grow.status.as_ref().and_then(|s| s.phase);
    assert_eq!(phase, Some(Phase::Succeeded), "{:?}", grow.status);
    assert_eq!(claim_size(&harness, "data-db-0").await, "384Mi");

    harness.finish().await;
    classes.delete(&class, &Default::default()).await.unwrap();
}
