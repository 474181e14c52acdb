//! The HTTPS server the API server calls: one task per connection, every step bounded in time
//! and size, so a slow, garbled or huge request costs that connection only.

use super::config_delete;
use super::review::{self, BadReview};
use crate::context::Context;
use crate::resize::observe;
use crate::resize_cache::GuardedResize;
use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use ferry_api::condition::{
    REASON_ATTRIBUTES_CLASS_NOT_FOUND, REASON_ATTRIBUTES_CLASS_OTHER_DRIVER, REASON_INVALID_SIZE,
    REASON_MOVER_IMAGE_NOT_ALLOWED, REASON_STATEFUL_SET_NOT_FOUND, REASON_STORAGE_CLASS_NOT_FOUND,
    REASON_TEMPLATE_NOT_FOUND,
};
use ferry_api::{ExtendedStatefulSet, VolumeResize};
use ferry_engine::resize::{Verdict, precheck};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use kube::Api;
use kube::api::ListParams;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;

/// Paths the webhook configurations point at.
pub const MUTATE_STATEFUL_SETS: &str = "/mutate/statefulsets";
pub const VALIDATE_VOLUME_RESIZES: &str = "/validate/volumeresizes";
pub const VALIDATE_STATEFUL_SET_CREATES: &str = "/validate/statefulsets";
pub const VALIDATE_CONFIG_DELETES: &str = "/validate/config-deletes";
pub const VALIDATE_EXTENDED_STATEFUL_SETS: &str = "/validate/extendedstatefulsets";

/// Largest request body read: an AdmissionReview carries the object twice, and etcd stores
/// objects of at most ~1.5 MiB.
pub const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;
/// Time allowed for a TLS handshake, the request headers, and the body.
const STEP_TIMEOUT: Duration = Duration::from_secs(10);

pub fn router(ctx: Arc<Context>) -> Router {
    Router::new()
        .route(MUTATE_STATEFUL_SETS, post(mutate_stateful_set))
        .route(VALIDATE_VOLUME_RESIZES, post(validate_volume_resize))
        .route(VALIDATE_STATEFUL_SET_CREATES, post(validate_stateful_set_create))
        .route(VALIDATE_CONFIG_DELETES, post(validate_config_delete))
        .route(
            VALIDATE_EXTENDED_STATEFUL_SETS,
            post(validate_extended_stateful_set),
        )
        .with_state(ctx)
}

/// Accepts connections until the future is dropped; dropping it also closes every open connection
/// (they live in its JoinSet), so a stopped operator stops answering even on kept-alive ones.
pub async fn serve(listener: TcpListener, tls: Arc<ServerConfig>, app: Router) {
    let acceptor = TlsAcceptor::from(tls);
    let mut connections = tokio::task::JoinSet::new();
    loop {
        while connections.try_join_next().is_some() {}
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of file descriptors and the like: pause instead of spinning.
                tracing::warn!(%error, "webhook: cannot accept a connection");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        connections.spawn(connection(acceptor.clone(), stream, peer, app.clone()));
    }
}

async fn connection(
    acceptor: TlsAcceptor,
    stream: tokio::net::TcpStream,
    peer: std::net::SocketAddr,
    app: Router,
) {
    let tls = match tokio::time::timeout(STEP_TIMEOUT, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => tls,
        Ok(Err(error)) => {
            tracing::debug!(%peer, %error, "webhook: TLS handshake failed");
            return;
        }
        Err(_) => {
            tracing::debug!(%peer, "webhook: TLS handshake timed out");
            return;
        }
    };
    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(STEP_TIMEOUT);
    builder.http2().timer(TokioTimer::new());
    if let Err(error) = builder
        .serve_connection(TokioIo::new(tls), TowerToHyperService::new(app))
        .await
    {
        tracing::debug!(%peer, %error, "webhook: connection ended with an error");
    }
}

fn refuse(status: StatusCode, message: String) -> Response {
    tracing::info!(%status, %message, "webhook: refused a request");
    (status, message).into_response()
}

/// The admission request in a POST: JSON, at most `MAX_BODY_BYTES`, read within `STEP_TIMEOUT`,
/// an AdmissionReview with a request; anything else is the 4xx answer to send.
async fn read_review(request: Request) -> Result<AdmissionRequest<DynamicObject>, Response> {
    let (parts, body) = request.into_parts();
    let bytes = body_of(&parts.headers, body).await?;
    review::parse(&bytes).map_err(|BadReview(message)| refuse(StatusCode::BAD_REQUEST, message))
}

async fn body_of(headers: &HeaderMap, body: Body) -> Result<axum::body::Bytes, Response> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("");
    if !content_type.starts_with("application/json") {
        return Err(refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("expected Content-Type application/json, got {content_type:?}"),
        ));
    }
    // Announced too big: answered before a byte of it is read (a client that waits for
    // `100 Continue` then sends nothing).
    let announced = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    if announced.is_some_and(|length| length > MAX_BODY_BYTES as u64) {
        return Err(refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "the body is {} bytes; at most {MAX_BODY_BYTES} are read",
                announced.unwrap_or_default()
            ),
        ));
    }
    match tokio::time::timeout(STEP_TIMEOUT, axum::body::to_bytes(body, MAX_BODY_BYTES)).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(error)) => Err(refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("cannot read the body (at most {MAX_BODY_BYTES} bytes): {error}"),
        )),
        Err(_) => Err(refuse(
            StatusCode::REQUEST_TIMEOUT,
            format!("the body did not arrive within {}s", STEP_TIMEOUT.as_secs()),
        )),
    }
}

fn answer(result: Result<AdmissionResponse, BadReview>) -> Response {
    match result {
        Ok(response) => (StatusCode::OK, axum::Json(response.into_review())).into_response(),
        Err(BadReview(message)) => refuse(StatusCode::BAD_REQUEST, message),
    }
}

async fn mutate_stateful_set(State(ctx): State<Arc<Context>>, request: Request) -> Response {
    let request = match read_review(request).await {
        Ok(request) => request,
        Err(response) => return response,
    };
    let namespace = request.namespace.clone().unwrap_or_default();
    let labels = request
        .old_object
        .as_ref()
        .and_then(|old| old.metadata.labels.clone())
        .unwrap_or_default();
    let owners = request
        .old_object
        .as_ref()
        .and_then(|old| old.metadata.owner_references.clone())
        .unwrap_or_default();
    let governed =
        crate::autoscale::governed_templates_of(&ctx.client, &namespace, &request.name, &labels, &owners)
            .await;
    let response = match with_resizes(&ctx, &namespace, |resizes| {
        review::review_stateful_set(&request, resizes, &governed, ctx.trigger.template_edits)
    })
    .await
    {
        Ok(response) => response,
        // Unsure which resizes run: an edit of the templates waits; any other update is Ferry's
        // business in no way and passes.
        Err(why) => match review::edits_templates(&request) {
            Ok(true) => Ok(AdmissionResponse::from(&request).deny(unsure(&why))),
            Ok(false) => Ok(AdmissionResponse::from(&request)),
            Err(bad) => Err(bad),
        },
    };
    if let Ok(response) = &response
        && let Some(warnings) = &response.warnings
    {
        tracing::info!(name = %request.name, namespace = ?request.namespace, ?warnings, "StatefulSet template edit kept aside");
    }
    answer(response)
}

/// An ExtendedStatefulSet's template, dry-run as a StatefulSet (`template_check`).
async fn validate_extended_stateful_set(State(ctx): State<Arc<Context>>, request: Request) -> Response {
    match read_review(request).await {
        Ok(request) => answer(Ok(super::template_check::review(&ctx.client, &request).await)),
        Err(response) => response,
    }
}

async fn validate_stateful_set_create(State(ctx): State<Arc<Context>>, request: Request) -> Response {
    let request = match read_review(request).await {
        Ok(request) => request,
        Err(response) => return response,
    };
    let namespace = request.namespace.clone().unwrap_or_default();
    answer(
        match with_resizes(&ctx, &namespace, |resizes| {
            review::review_stateful_set_create(&request, resizes)
        })
        .await
        {
            Ok(response) => response,
            // Unsure whether a resize is replacing this StatefulSet: the create waits (a GitOps
            // tool retries), never allowed on a guess.
            Err(why) => Ok(AdmissionResponse::from(&request).deny(unsure(&why))),
        },
    )
}

/// A delete of a ConfigMap or Secret an ExtendedStatefulSet references: refused while one that
/// exists references it. When its users cannot be read in time the delete passes (a protection
/// must never hold a delete on a guess; the webhook's failure policy says the same).
async fn validate_config_delete(State(ctx): State<Arc<Context>>, request: Request) -> Response {
    let request = match read_review(request).await {
        Ok(request) => request,
        Err(response) => return response,
    };
    let delete = match config_delete::marked_delete(&request) {
        Ok(Some(delete)) => delete,
        Ok(None) => return answer(Ok(AdmissionResponse::from(&request))),
        Err(bad) => return answer(Err(bad)),
    };
    let namespace = request.namespace.clone().unwrap_or_default();
    let api = Api::<ExtendedStatefulSet>::namespaced(ctx.client.clone(), &namespace);
    let live = async {
        let mut live = BTreeSet::new();
        for user in &delete.users {
            if let Some(found) = api.get_opt(user).await?
                && found.metadata.deletion_timestamp.is_none()
            {
                live.insert(user.clone());
            }
        }
        Ok::<_, kube::Error>(live)
    };
    match tokio::time::timeout(LIST_TIMEOUT, live).await {
        Ok(Ok(live)) => answer(Ok(config_delete::answer(&request, &delete, &live))),
        Ok(Err(error)) => {
            tracing::warn!(%error, object = delete.object, "webhook: cannot read the users of a referenced object; its delete passes");
            answer(Ok(AdmissionResponse::from(&request)))
        }
        Err(_) => {
            tracing::warn!(
                object = delete.object,
                "webhook: users of a referenced object not read in time; its delete passes"
            );
            answer(Ok(AdmissionResponse::from(&request)))
        }
    }
}

/// How long a review waits for a VolumeResize list when the cache has not synced.
const LIST_TIMEOUT: Duration = Duration::from_secs(2);

/// `f` of the readable VolumeResizes of `namespace`: from the cache once it has synced; before
/// that (a replica just started) listed from the API server. Err (why) when neither can tell.
async fn with_resizes<T>(
    ctx: &Context,
    namespace: &str,
    f: impl FnOnce(&[&VolumeResize]) -> T,
) -> Result<T, String> {
    if ctx.resizes.synced() {
        return Ok(ctx.resizes.with_readable(f));
    }
    let api = Api::<GuardedResize>::namespaced(ctx.client.clone(), namespace);
    match tokio::time::timeout(LIST_TIMEOUT, api.list(&ListParams::default())).await {
        Ok(Ok(list)) => {
            let readable: Vec<&VolumeResize> = list
                .items
                .iter()
                .filter_map(|guard| guard.0.as_ref().ok())
                .collect();
            Ok(f(&readable))
        }
        Ok(Err(error)) => Err(format!("cannot list VolumeResizes: {error}")),
        Err(_) => Err(format!(
            "VolumeResizes not listed within {} s",
            LIST_TIMEOUT.as_secs()
        )),
    }
}

/// The answer of a review that cannot tell which VolumeResizes run.
fn unsure(why: &str) -> String {
    tracing::warn!(
        why,
        "webhook: VolumeResizes unknown; the change is refused for now"
    );
    format!(
        "Ferry cannot tell yet whether a VolumeResize is changing this StatefulSet's volumes ({why}); try again in a few seconds"
    )
}

/// Reasons the prechecks give for a request that can never be carried out as written; these are
/// refused at admission with the prechecks' own words.
const REFUSED_AT_ADMISSION: [&str; 7] = [
    REASON_STATEFUL_SET_NOT_FOUND,
    REASON_TEMPLATE_NOT_FOUND,
    REASON_STORAGE_CLASS_NOT_FOUND,
    REASON_INVALID_SIZE,
    REASON_MOVER_IMAGE_NOT_ALLOWED,
    REASON_ATTRIBUTES_CLASS_NOT_FOUND,
    REASON_ATTRIBUTES_CLASS_OTHER_DRIVER,
];

async fn validate_volume_resize(State(ctx): State<Arc<Context>>, request: Request) -> Response {
    let request = match read_review(request).await {
        Ok(request) => request,
        Err(response) => return response,
    };
    let resize = match review::volume_resize_to_validate(&request) {
        Ok(Some(resize)) => resize,
        Ok(None) => return answer(Ok(AdmissionResponse::from(&request))),
        Err(bad) => return answer(Err(bad)),
    };
    let response = AdmissionResponse::from(&request);
    let namespace = resize.metadata.namespace.clone().unwrap_or_default();
    let resizing = crate::resize::Resizing::from(ctx.clone());
    let observation = match observe(
        &resizing,
        &resize,
        &namespace,
        ferry_engine::resize::Scope::Request,
    )
    .await
    {
        Ok(observation) => observation,
        Err(error) => {
            // The engine prechecks again anyway; an unreadable cluster must not block creates.
            tracing::warn!(%error, "webhook: cannot read the cluster to validate a VolumeResize; allowing it");
            return answer(Ok(response));
        }
    };
    let verdict = precheck(&resize.spec, &observation.observed).verdict;
    answer(Ok(match verdict {
        Verdict::Reject { reason, message } if REFUSED_AT_ADMISSION.contains(&reason) => {
            response.deny(format!("{reason}: {message}"))
        }
        _ => response,
    }))
}
