//! An ExtendedStatefulSet's StatefulSet template is checked at admission: a server-side dry run of
//! the StatefulSet it describes, as written, with strict field validation. A misspelt field or an
//! invalid value fails the create or the edit (as `kubectl apply` and a GitOps sync would see it),
//! instead of the reconcile; a valid one passes, and nothing is made by the check.

use crate::extended::extended;
use crate::support::Harness;
use ferry_api::ExtendedStatefulSet;
use k8s_openapi::api::apps::v1::StatefulSet;
use kube::Api;
use kube::api::{ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::json;

fn raw_api(harness: &Harness) -> Api<DynamicObject> {
    let resource = ApiResource::erase::<ExtendedStatefulSet>(&());
    Api::namespaced_with(harness.client.clone(), &harness.ns.name, &resource)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_template_the_api_server_would_refuse_fails_the_create_and_the_edit() {
    let harness = Harness::start_with_webhook("ests-admit").await;
    let raw = raw_api(&harness);
    let mut misspelt = serde_json::to_value(extended("typo", 1, json!({}))).unwrap();
    misspelt["spec"]["template"]["spec"]["template"]["spec"]["containers"][0]["imagee"] = json!("busybox");
    let object: DynamicObject = serde_json::from_value(misspelt).unwrap();
    let refused = raw
        .create(&PostParams::default(), &object)
        .await
        .expect_err("a misspelt field in the template is refused")
        .to_string();
    assert!(
        refused.contains("spec.template would not make a valid StatefulSet") && refused.contains("imagee"),
        "{refused}"
    );

    let valid = serde_json::to_value(extended("db", 1, json!({}))).unwrap();
    raw.create(&PostParams::default(), &serde_json::from_value(valid).unwrap())
        .await
        .expect("a valid template passes");
    // An edit that empties a container's image is refused with the API server's words.
    let edit = json!({"spec": {"template": {"spec": {"template": {"spec": {
        "containers": [{"name": "writer", "image": ""}]}}}}}});
    let refused = raw
        .patch("db", &PatchParams::default(), &Patch::Merge(&edit))
        .await
        .expect_err("an invalid edit is refused")
        .to_string();
    assert!(refused.contains("image"), "{refused}");
    // The checks made nothing: the only StatefulSet is the one Ferry makes for `db`.
    let made = harness
        .ns
        .api::<StatefulSet>()
        .list(&Default::default())
        .await
        .unwrap()
        .items;
    assert!(
        made.iter().all(|sts| !sts
            .metadata
            .name
            .as_deref()
            .unwrap_or_default()
            .starts_with(ferry_engine::extended::admission::TRIAL_PREFIX)),
        "{made:?}"
    );
    harness.finish().await;
}
