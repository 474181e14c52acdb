//! An admission webhook whose server is down, for the objects of one test namespace: the API server
//! answers every request it covers with 500 "failed calling webhook" (failurePolicy Fail), as when
//! a policy engine's pods restart. It is how a test brings a transient 5xx, and how it holds Ferry
//! at one action for as long as it needs.

use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use kube::api::PostParams;
use kube::{Api, Client};
use serde_json::json;

pub struct DownWebhook {
    api: Api<ValidatingWebhookConfiguration>,
    name: String,
}

impl DownWebhook {
    /// Covers CREATE of `resource` (a core resource, e.g. `pods`) in `namespace`, for the objects
    /// `object_selector` selects.
    pub async fn install(
        client: &Client,
        namespace: &str,
        resource: &str,
        object_selector: serde_json::Value,
    ) -> DownWebhook {
        let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
        let name = format!("ferry-e2e-down-{namespace}");
        let webhook: ValidatingWebhookConfiguration = serde_json::from_value(json!({
            "metadata": {"name": name},
            "webhooks": [{
                "name": "down.e2e.ferry.dev",
                // Port 9 on loopback: refused at once, as a Service with no endpoint.
                "clientConfig": {"url": "https://127.0.0.1:9/validate"},
                "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                           "resources": [resource]}],
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                "objectSelector": object_selector,
                "failurePolicy": "Fail",
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "timeoutSeconds": 2,
            }],
        }))
        .unwrap();
        api.create(&PostParams::default(), &webhook).await.unwrap();
        DownWebhook { api, name }
    }

    pub async fn remove(self) {
        self.api.delete(&self.name, &Default::default()).await.unwrap();
    }
}
