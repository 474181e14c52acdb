//! `ferry smoke-test`: what `helm test` runs in a pod of the release
//! (`templates/tests/smoke-test.yaml`). Three checks, each a line on success, the first that fails
//! ending it: Ferry's CRDs are served; every ready endpoint of the operator's Service answers
//! `/readyz` with 200 (asked at the pod's address, as the kubelet's probe asks: no Service routing
//! or DNS needed); and a server-side dry run of a VolumeResize for a StatefulSet that does not
//! exist passes the CRD's schema and CEL rules and, when the release has webhooks, is refused by
//! Ferry's validating webhook naming the missing StatefulSet. The webhook fails open
//! (`failurePolicy: Ignore`), so only a webhook the API server really reaches refuses it: an
//! accepted dry run there means no API server call reaches the operator.

use crate::Error;
use ferry_api::VolumeResize;
use ferry_engine::webhook_probe::{self, ProbeAnswer, Reach};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, ListParams};
use kube::{Client, Resource};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Where the release is.
#[derive(Debug, Clone)]
pub struct SmokeTest {
    /// The release's namespace: its Service is there, and the dry-run VolumeResize is made there.
    pub namespace: String,
    /// The operator's Service.
    pub service: String,
    /// The port its pods serve `/readyz` on (the chart's `metrics.port`).
    pub port: u16,
    /// The release serves the admission webhooks (the chart's `webhook.enabled`).
    pub webhooks: bool,
}

/// Runs the checks; the lines to print, or the first failure.
pub async fn smoke_test(client: Client, test: &SmokeTest) -> Result<Vec<String>, Error> {
    let mut said = vec![crds_served(&client).await?];
    said.push(endpoints_ready(&client, test).await?);
    said.push(dry_run(&client, test).await?);
    Ok(said)
}

fn failed(what: String) -> Error {
    Error::SmokeTest(what)
}

async fn crds_served(client: &Client) -> Result<String, Error> {
    let group_version = format!("{}/{}", ferry_api::names::GROUP, VolumeResize::version(&()));
    let listed = client.list_api_group_resources(&group_version).await?;
    let served: Vec<&str> = listed.resources.iter().map(|r| r.name.as_str()).collect();
    let wanted = ["volumeresizes", "volumeautoscalers", "extendedstatefulsets"];
    match wanted.iter().find(|name| !served.contains(name)) {
        Some(missing) => Err(failed(format!(
            "{group_version} does not serve {missing} (it serves {served:?})"
        ))),
        None => Ok(format!("CRDs served: {group_version} {}", wanted.join(", "))),
    }
}

async fn endpoints_ready(client: &Client, test: &SmokeTest) -> Result<String, Error> {
    let slices: Api<EndpointSlice> = Api::namespaced(client.clone(), &test.namespace);
    let selector = format!("kubernetes.io/service-name={}", test.service);
    let listed = slices.list(&ListParams::default().labels(&selector)).await?;
    let addresses = ready_addresses(&listed.items);
    if addresses.is_empty() {
        return Err(failed(format!(
            "Service {}/{} has no ready endpoint: no operator pod passes its readiness probe",
            test.namespace, test.service
        )));
    }
    for address in &addresses {
        let answer = get_status(address, test.port, "/readyz").await;
        if answer != Some(200) {
            return Err(failed(format!(
                "{address}:{} answered /readyz with {}",
                test.port,
                answer.map_or("nothing".to_string(), |status| status.to_string())
            )));
        }
    }
    Ok(format!(
        "/readyz answered 200 by {} ready operator pod(s): {}",
        addresses.len(),
        addresses.join(", ")
    ))
}

/// The addresses of the endpoints the slices say are ready (a missing `ready` counts as ready, as
/// the API documents it).
fn ready_addresses(slices: &[EndpointSlice]) -> Vec<String> {
    slices
        .iter()
        .flat_map(|slice| &slice.endpoints)
        .filter(|endpoint| {
            endpoint
                .conditions
                .as_ref()
                .and_then(|conditions| conditions.ready)
                .unwrap_or(true)
        })
        .flat_map(|endpoint| endpoint.addresses.iter().cloned())
        .collect()
}

/// The HTTP status `GET path` gets from `address:port` within 5 s (HTTP/1.0: one request).
async fn get_status(address: &str, port: u16, path: &str) -> Option<u16> {
    let host = if address.contains(':') {
        format!("[{address}]")
    } else {
        address.to_string()
    };
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(format!("{host}:{port}"))
            .await
            .ok()?;
        let request = format!("GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n");
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.ok()?;
        status_of(&answer)
    };
    tokio::time::timeout(Duration::from_secs(5), exchange)
        .await
        .ok()
        .flatten()
}

fn status_of(answer: &[u8]) -> Option<u16> {
    let line = answer.split(|byte| *byte == b'\n').next()?;
    String::from_utf8_lossy(line)
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// The StatefulSet the dry run names: none of that name exists (nor may: the test's Role may patch
/// it, which the author policy asks, and nothing else).
const MISSING: &str = "ferry-smoke-test";

async fn dry_run(client: &Client, test: &SmokeTest) -> Result<String, Error> {
    let answer = crate::webhook::probe::send(client, &test.namespace, MISSING).await;
    dry_run_verdict(&answer, test.webhooks, &test.namespace)
}

/// What the dry run's answer says of the release.
fn dry_run_verdict(answer: &ProbeAnswer, webhooks: bool, namespace: &str) -> Result<String, Error> {
    match (webhook_probe::reach(answer, MISSING), webhooks) {
        (Reach::NotCalled, false) => Ok(format!(
            "a VolumeResize passes the API server's checks in namespace {namespace} (server-side dry run: nothing kept; the webhooks, off or not covering this namespace, were not checked)"
        )),
        (Reach::NotCalled, true) => Err(failed(format!(
            "the API server accepted a VolumeResize for the missing StatefulSet {MISSING:?}: Ferry's validating webhook was not called or did not answer (it fails open). Can the API server reach the operator's pods on the webhook port?"
        ))),
        (Reach::Answered(message), true) => Ok(format!(
            "the validating webhook answers: a VolumeResize for a missing StatefulSet is refused ({message})"
        )),
        (Reach::Answered(message) | Reach::Unknown(message), _) => Err(failed(format!(
            "a dry-run VolumeResize in namespace {namespace}: {message}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_ready_endpoints_are_asked_and_a_status_line_is_read() {
        let slices: Vec<EndpointSlice> = serde_json::from_value(serde_json::json!([{
            "addressType": "IPv4", "metadata": {"name": "ferry-abc"},
            "endpoints": [
                {"addresses": ["10.0.0.1"], "conditions": {"ready": true}},
                {"addresses": ["10.0.0.2"], "conditions": {"ready": false}},
                {"addresses": ["10.0.0.3"]}
            ]
        }]))
        .unwrap();
        assert_eq!(ready_addresses(&slices), ["10.0.0.1", "10.0.0.3"]);
        assert_eq!(status_of(b"HTTP/1.0 200 OK\r\n\r\nok"), Some(200));
        assert_eq!(status_of(b"HTTP/1.1 503 Service Unavailable\r\n"), Some(503));
        assert_eq!(status_of(b""), None);
    }

    #[test]
    fn with_webhooks_only_their_refusal_of_the_missing_stateful_set_passes() {
        let refused = |message: &str| ProbeAnswer::Refused(message.to_string());
        let by_webhook = "admission webhook \"volumeresizes.ferry.dev\" denied the request: StatefulSetNotFound: StatefulSet \"ferry-smoke-test\" not found";
        assert!(dry_run_verdict(&refused(by_webhook), true, "ns").is_ok());
        assert!(
            dry_run_verdict(&ProbeAnswer::Accepted, true, "ns")
                .unwrap_err()
                .to_string()
                .contains("fails open")
        );
        assert!(dry_run_verdict(&ProbeAnswer::Accepted, false, "ns").is_ok());
        assert!(dry_run_verdict(&refused("Ferry: x may not patch StatefulSet"), true, "ns").is_err());
        assert!(dry_run_verdict(&refused(by_webhook), false, "ns").is_err());
    }
}
