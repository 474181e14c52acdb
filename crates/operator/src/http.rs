//! /healthz, /readyz and /metrics.

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
    metrics: Arc<Metrics>,
    ready: Arc<AtomicBool>,
}

/// Serves until the future is dropped. `ready` turns /readyz green once the controllers run.
pub async fn serve(addr: SocketAddr, metrics: Arc<Metrics>, ready: Arc<AtomicBool>) -> Result<(), Error> {
    let app = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics_text))
        .with_state(HttpState { metrics, ready });
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| Error::Http {
            addr: addr.to_string(),
            source,
        })?;
    tracing::info!(%addr, "serving /healthz, /readyz, /metrics");
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
    match state.metrics.encode() {
        Ok(text) => (StatusCode::OK, text),
        Err(_) => (StatusCode::INTERNAL_SERVER_ERROR, "cannot encode metrics".into()),
    }
}
