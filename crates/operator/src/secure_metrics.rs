//! /metrics over HTTPS for readers the API server vouches for (`--metrics-secure`): a bearer token
//! is checked with a TokenReview and a SubjectAccessReview (`get` on `/metrics`), as kubebuilder
//! projects serve metrics; 401 without a token the API server knows, 403 for a user not allowed.
//! The serving certificate comes as the webhook's does (Ferry's own CA, or files cert-manager keeps).

use crate::Error;
use crate::metrics::Metrics;
use crate::metrics::access::{self, Verdict, VerdictCache};
use crate::metrics::reviews;
use crate::shared_secret::SecretRef;
use crate::webhook::{self, Certificates, tls};
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use kube::Client;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

/// Where and with which certificate the secure endpoint serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecureMetrics {
    /// Where the HTTPS server listens (/metrics is then not served on the plain HTTP address).
    pub listen: SocketAddr,
    pub certificates: Certificates,
    /// With `Certificates::SelfSigned`: the CA Secret the replicas share (the webhook's), so that
    /// Prometheus can verify every replica with its `ca.crt`. Without it each process makes its own.
    pub ca_secret: Option<SecretRef>,
    /// The names (DNS or IP) a certificate Ferry issues carries.
    pub hosts: Vec<String>,
}

/// The running server and its certificate keeper; both stop when this is dropped.
pub use crate::webhook::Running;

#[derive(Clone)]
struct SecureState {
    metrics: Arc<Metrics>,
    client: Client,
    verdicts: Arc<Mutex<VerdictCache>>,
}

/// Gets the certificate, binds and serves; the reviews are asked with `client` (the operator's
/// own identity: it needs `create` on tokenreviews and subjectaccessreviews).
pub async fn start(
    client: Client,
    settings: &SecureMetrics,
    metrics: Arc<Metrics>,
) -> Result<Running, Error> {
    let kept = webhook::keep_certificate(
        &client,
        &settings.certificates,
        settings.ca_secret.as_ref(),
        settings.hosts.clone(),
    )
    .await?;
    let bound = match tls::server_config(kept.current) {
        Ok(config) => tokio::net::TcpListener::bind(settings.listen)
            .await
            .map(|listener| (listener, config))
            .map_err(|source| Error::Http {
                addr: settings.listen.to_string(),
                source,
            }),
        Err(error) => Err(error),
    };
    let (listener, config) = match bound {
        Ok(bound) => bound,
        Err(error) => {
            kept.keeper.abort();
            return Err(error);
        }
    };
    let state = SecureState {
        metrics,
        client,
        verdicts: Arc::default(),
    };
    let app = Router::new()
        .route(access::METRICS_PATH, get(metrics_for_reader))
        .with_state(state);
    tracing::info!(listen = %settings.listen, "serving /metrics over HTTPS to authorized readers");
    Ok(Running::new(
        tokio::spawn(webhook::server::serve(listener, config, app)),
        kept.keeper,
    ))
}

async fn metrics_for_reader(State(state): State<SecureState>, headers: HeaderMap) -> Response {
    let header = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok());
    let verdict = match access::bearer_token(header) {
        None => Verdict::Unauthenticated,
        Some(token) => match verdict_of(&state, token).await {
            Ok(verdict) => verdict,
            Err(error) => {
                tracing::warn!(%error, "metrics: cannot review a reader's token");
                return (StatusCode::SERVICE_UNAVAILABLE, "cannot review the token now\n").into_response();
            }
        },
    };
    match verdict {
        Verdict::Allowed => match state.metrics.encode() {
            Ok(text) => (StatusCode::OK, text).into_response(),
            Err(_) => (StatusCode::INTERNAL_SERVER_ERROR, "cannot encode metrics\n").into_response(),
        },
        Verdict::Unauthenticated => (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "Unauthorized: a bearer token the API server knows is needed\n",
        )
            .into_response(),
        Verdict::Forbidden => (
            StatusCode::FORBIDDEN,
            "Forbidden: the token's user may not get the non-resource URL /metrics (bind it to the ClusterRole <release>-metrics-reader)\n",
        )
            .into_response(),
    }
}

/// The remembered verdict for `token`, or the reviews' (then remembered).
async fn verdict_of(state: &SecureState, token: &str) -> Result<Verdict, kube::Error> {
    let cache = || state.verdicts.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(verdict) = cache().get(token, Instant::now()) {
        return Ok(verdict);
    }
    let verdict = reviews::review(&state.client, token).await?;
    cache().put(token, verdict, Instant::now());
    Ok(verdict)
}
