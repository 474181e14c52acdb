//! The API server loads a new webhook configuration a moment after it is stored, and the operator's
//! webhook server starts a moment after the operator: until both have happened, requests pass
//! unchecked (Ferry's webhooks fail open). A test of admission waits here until its namespace's
//! requests reach the operator's webhook, seen from outside: a dry-run create of an
//! ExtendedStatefulSet with a misspelt field is refused with Ferry's words.

use ferry_api::ExtendedStatefulSet;
use ferry_testenv::fixtures::stateful_set;
use ferry_testenv::{CLASS_EXPANDABLE, wait_until};
use kube::api::{ApiResource, DynamicObject, PostParams};
use kube::{Api, Client};
use serde_json::json;

/// The probe: a template the API server would refuse (`imagee`), which only Ferry's webhook checks.
fn misspelt_probe() -> DynamicObject {
    let template = serde_json::to_value(stateful_set("webhook-probe", 1, CLASS_EXPANDABLE, "1Gi"))
        .expect("a StatefulSet serializes");
    let mut spec = template["spec"].clone();
    spec["template"]["spec"]["containers"][0]["imagee"] = json!("busybox");
    serde_json::from_value(json!({
        "apiVersion": "ferry.dev/v1alpha1", "kind": "ExtendedStatefulSet",
        "metadata": {"name": "webhook-probe"},
        "spec": {"replicas": 1, "template": {"spec": spec}},
    }))
    .expect("the probe is an object")
}

/// Waits until Ferry's webhook answers the requests of `namespace`.
pub async fn wait_webhook_answers(client: &Client, namespace: &str) {
    let resource = ApiResource::erase::<ExtendedStatefulSet>(&());
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource);
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let probe = misspelt_probe();
    wait_until("the API server to call the operator's webhook", 60, || async {
        match api.create(&dry_run, &probe).await {
            Err(kube::Error::Api(status))
                if status.message.contains("would not make a valid StatefulSet") =>
            {
                Some(())
            }
            _ => None,
        }
    })
    .await
    .expect("the webhook answers");
}
