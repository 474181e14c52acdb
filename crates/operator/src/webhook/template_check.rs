//! The validating webhook on ExtendedStatefulSet creates and spec changes: its StatefulSet template
//! dry-run by the API server with strict field validation (`ferry_engine::extended::admission`),
//! so a misspelt field fails `kubectl apply` and a GitOps sync instead of the reconcile.

use ferry_engine::extended::admission::{self, TemplateCheck};
use kube::api::PostParams;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse};
use std::time::Duration;

/// How long the dry run may take: the webhook's own timeout is 5 s.
const DRY_RUN_TIMEOUT: Duration = Duration::from_secs(3);

/// The answer to an ExtendedStatefulSet's create or update (the server reads and writes the
/// review).
pub async fn review(client: &kube::Client, request: &AdmissionRequest<DynamicObject>) -> AdmissionResponse {
    let namespace = request.namespace.clone().unwrap_or_default();
    let trial = request
        .object
        .as_ref()
        .and_then(|object| serde_json::to_value(object).ok())
        .and_then(|object| admission::trial_stateful_set(&object, &namespace));
    let response = AdmissionResponse::from(request);
    let Some(trial) = trial else {
        return response;
    };
    let answered = match tokio::time::timeout(DRY_RUN_TIMEOUT, dry_run(client, &namespace, &trial)).await {
        Ok(answered) => answered,
        Err(_) => Err((0, format!("no answer within {} s", DRY_RUN_TIMEOUT.as_secs()))),
    };
    match admission::template_check(answered) {
        TemplateCheck::Valid => response,
        TemplateCheck::Invalid(message) => {
            tracing::info!(name = %request.name, %namespace, %message, "ExtendedStatefulSet refused at admission");
            response.deny(message)
        }
        TemplateCheck::Unchecked(warning) => {
            tracing::warn!(name = %request.name, %namespace, %warning, "ExtendedStatefulSet template not checked");
            let mut response = response;
            response.warnings = Some(vec![warning]);
            response
        }
    }
}

/// A server-side dry run (nothing kept) of creating `trial` with strict field validation, which
/// kube's `PostParams` cannot ask for; `Err((status code, message))` when refused (code 0: no
/// answer from the API server).
async fn dry_run(
    client: &kube::Client,
    namespace: &str,
    trial: &serde_json::Value,
) -> Result<(), (u16, String)> {
    let unanswered = |error: &dyn std::fmt::Display| (0, error.to_string());
    let body = serde_json::to_vec(trial).map_err(|error| unanswered(&error))?;
    let params = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let mut http = kube::core::Request::new(format!("/apis/apps/v1/namespaces/{namespace}/statefulsets"))
        .create(&params, body)
        .map_err(|error| unanswered(&error))?;
    let uri = format!("{}&fieldValidation=Strict", http.uri());
    *http.uri_mut() = uri.parse().map_err(|error| unanswered(&error))?;
    match client.request::<serde_json::Value>(http).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) => Err((status.code, status.message)),
        Err(error) => Err(unanswered(&error)),
    }
}
