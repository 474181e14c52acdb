//! The resize controller's I/O layer against a mocked API server (as kube-rs's controller-rs
//! tests its reconciler): the order of its writes is the safety story. The status (the intent)
//! goes first, then the finalizer, patched over the resourceVersion the status write returned,
//! then the actions, then the Events; a status write refused as stale writes nothing else.

use super::*;
use crate::metrics::Metrics;
use crate::resize_cache::Resizes;
use ferry_api::names::FINALIZER;
use ferry_api::{RowStep, VolumePlan, VolumeResizeStatus};
use ferry_engine::resize::action::ResizeAction;
use http::{Request, Response};
use kube::client::Body;
use serde_json::json;
use tower_test::mock::{self, Handle};

/// One request the operator sent: method, path and body.
type Sent = (String, String, serde_json::Value);

fn resize(resource_version: &str) -> serde_json::Value {
    json!({
        "apiVersion": "ferry.dev/v1alpha1", "kind": "VolumeResize",
        "metadata": {"name": "grow", "namespace": "ns", "uid": "vr-1", "resourceVersion": resource_version},
        "spec": {"statefulSetName": "db", "volumes": [{"name": "data", "size": "2Gi"}]},
        "status": {"phase": "Running", "plan": [row(None)]},
    })
}

/// db's one row, at `step` (none yet: not started).
fn row(step: Option<RowStep>) -> VolumePlan {
    serde_json::from_value(json!({
        "replica": 0, "volume": "data", "claimName": "data-db-0", "targetSize": "2Gi",
        "strategy": "InPlace", "step": step.map(RowStep::as_str),
    }))
    .unwrap()
}

/// Answers every request as the API server would for this test: the VolumeResize at a new
/// resourceVersion for each write to it (a 409 for the status when `refuse_status`), the claim
/// for its patch, an Event echoed. Returns what was sent, in order, once the client is dropped.
async fn serve(mut handle: Handle<Request<Body>, Response<Body>>, refuse_status: bool) -> Vec<Sent> {
    let mut sent = Vec::new();
    let mut version = 1;
    while let Some((request, respond)) = handle.next_request().await {
        let method = request.method().to_string();
        let path = request.uri().path().to_string();
        let bytes = request.into_body().collect_bytes().await.unwrap();
        let body: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
        let (code, answer) = if path.ends_with("/volumeresizes/grow/status") && refuse_status {
            let conflict = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                "reason": "Conflict", "code": 409, "message": "the object has been modified"});
            (409, conflict)
        } else if path.contains("/volumeresizes/grow") {
            version += 1;
            (200, resize(&version.to_string()))
        } else if path.contains("/persistentvolumeclaims/") {
            let claim = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": "data-db-0", "namespace": "ns"}});
            (200, claim)
        } else {
            (200, body.clone())
        };
        sent.push((method, path, body));
        let answer = Body::from(serde_json::to_vec(&answer).unwrap());
        respond.send_response(Response::builder().status(code).body(answer).unwrap());
    }
    sent
}

/// The resize controller's context over a mocked API server.
fn mocked() -> (Resizing, Handle<Request<Body>, Response<Body>>) {
    let (service, handle) = mock::pair::<Request<Body>, Response<Body>>();
    let client = kube::Client::new(service, "ns");
    let context = Context::new(
        client,
        Arc::new(Metrics::default()),
        Resizes::new(Vec::new()),
        "ferry:test".to_string(),
        Some("test".to_string()),
    );
    (Resizing::from(Arc::new(context)), handle)
}

/// A step that expands the claim: the row moves to Expanding, one action.
fn expanding() -> RunDecision {
    let mut status: VolumeResizeStatus = serde_json::from_value(resize("1")["status"].clone()).unwrap();
    status.plan[0] = row(Some(RowStep::Expanding));
    RunDecision {
        status,
        actions: vec![ResizeAction::ExpandClaim {
            claim: "data-db-0".to_string(),
            bytes: 2 << 30,
        }],
        summary: "expanding data-db-0".to_string(),
    }
}

async fn run_step(refuse_status: bool) -> (Result<Action, Error>, Vec<Sent>) {
    let (ctx, handle) = mocked();
    let server = tokio::spawn(serve(handle, refuse_status));
    let object: VolumeResize = serde_json::from_value(resize("1")).unwrap();
    let result = on_run(&ctx, &object, "ns", expanding(), Vec::new(), None).await;
    // Every client (the recorder's too) goes with the context: the server's loop ends.
    drop(ctx);
    (result, server.await.unwrap())
}

#[tokio::test]
async fn status_then_finalizer_then_the_action_then_events() {
    let (result, sent) = run_step(false).await;
    assert!(result.is_ok(), "{result:?}");
    let writes: Vec<(&str, &str)> = sent.iter().map(|(m, p, _)| (m.as_str(), p.as_str())).collect();
    let base = "/apis/ferry.dev/v1alpha1/namespaces/ns/volumeresizes/grow";
    assert_eq!(
        writes[..3],
        [
            ("PATCH", format!("{base}/status").as_str()),
            ("PATCH", base),
            ("PATCH", "/api/v1/namespaces/ns/persistentvolumeclaims/data-db-0"),
        ],
        "{writes:#?}"
    );
    // The status carries the intent and is a compare-and-swap on what was read.
    let status = &sent[0].2;
    assert_eq!(status["metadata"]["resourceVersion"], "1");
    assert_eq!(status["status"]["plan"][0]["step"], "Expanding");
    // The finalizer is a compare-and-swap on what the status write returned, not on what was
    // read (that would be refused on every first action).
    let finalizer = &sent[1].2;
    assert_eq!(finalizer["metadata"]["resourceVersion"], "2");
    assert_eq!(finalizer["metadata"]["finalizers"], json!([FINALIZER]));
    // Then only Events.
    assert!(
        writes[3..]
            .iter()
            .all(|(method, path)| *method == "POST" && path.starts_with("/apis/events.k8s.io/v1/")),
        "{writes:#?}"
    );
    assert!(writes.len() > 3, "no Event: {writes:#?}");
}

#[tokio::test]
async fn a_status_write_refused_as_stale_writes_nothing_else() {
    let (result, sent) = run_step(true).await;
    assert!(result.as_ref().is_err_and(Error::is_stale_read), "{result:?}");
    let writes: Vec<&str> = sent.iter().map(|(_, path, _)| path.as_str()).collect();
    assert_eq!(
        writes,
        ["/apis/ferry.dev/v1alpha1/namespaces/ns/volumeresizes/grow/status"]
    );
}
