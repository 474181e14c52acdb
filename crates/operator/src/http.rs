//! /healthz, /readyz and /metrics (plain HTTP; /metrics moves to the secure endpoint,
//! `secure_metrics`, with `--metrics-secure`: kubelet probes carry no token).

use crate::Error;
use crate::metrics::Metrics;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Clone)]
struct HttpState {
    metrics: Option<Arc<Metrics>>,
    ready: Arc<AtomicBool>,
}

/// Serves until the future is dropped. `ready` turns /readyz green once the controllers run.
/// `metrics` is `None` when /metrics is served by the secure endpoint instead.
pub async fn serve(
    addr: SocketAddr,
    metrics: Option<Arc<Metrics>>,
    ready: Arc<AtomicBool>,
) -> Result<(), Error> {
    let mut app = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz));
    let plain_metrics = metrics.is_some();
    if plain_metrics {
        app = app.route("/metrics", get(metrics_text));
    }
    let app = app.with_state(HttpState { metrics, ready });
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| Error::Http {
            addr: addr.to_string(),
            source,
        })?;
    if plain_metrics {
        tracing::info!(%addr, "serving /healthz, /readyz, /metrics");
    } else {
        tracing::info!(%addr, "serving /healthz, /readyz");
    }
    axum::serve(listener, app).await.map_err(|source| Error::Http {
        addr: addr.to_string(),
        source,
    })
}

async fn readyz(State(state): State<HttpState>) -> (StatusCode, &'static str) {
    if state.ready.load(Ordering::Relaxed) {
        (StatusCode::OK, "ok")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "controllers starting")
    }
}

async fn metrics_text(State(state): State<HttpState>) -> (StatusCode, String) {
    match state.metrics.as_ref().map(|metrics| metrics.encode()) {
        Some(Ok(text)) => (StatusCode::OK, text),
        _ => (StatusCode::INTERNAL_SERVER_ERROR, "cannot encode metrics".into()),
    }
}
