//! Starting the operator: wait for the CRD, start the controllers and the HTTP endpoints.

use crate::autoscale;
use crate::context::Context;
use crate::features::{Feature, Features};
use crate::leader::{self, LeaderElection};
use crate::metrics::Metrics;
use crate::resize_cache::{GuardedResize, Resizes};
use crate::shared_secret::SecretRef;
use crate::watch_backoff::backing_off;
use crate::watches::scoped;
use crate::webhook::{self, WebhookSettings};
use crate::{Error, http, resize, trigger};
use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::runtime::reflector::{self, Store, reflector};
use kube::runtime::wait::{await_condition, conditions};
use kube::runtime::watcher;
use kube::{Api, Client, ResourceExt};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How the operator runs; read once at start, never inside a reconcile.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// Watch only these namespaces (all when empty).
    pub namespaces: Vec<String>,
    /// Where /healthz, /readyz and /metrics are served (none when `None`).
    pub http_addr: Option<SocketAddr>,
    /// Serve /metrics over HTTPS to authorized readers only, not on `http_addr`
    /// (`--metrics-secure`).
    pub secure_metrics: Option<crate::secure_metrics::SecureMetrics>,
    /// Image for mover pods (default: this operator's own image, tagged with its version).
    pub mover_image: Option<String>,
    /// Resources of mover pods unless a VolumeResize sets its own.
    pub mover_resources: Option<k8s_openapi::api::core::v1::ResourceRequirements>,
    /// Images other than `mover_image` a VolumeResize may name in `spec.mover.image`.
    pub allowed_mover_images: Vec<String>,
    /// Secrets, in the namespace of each mover pod, that mover and usage pods pull their image with.
    pub mover_image_pull_secrets: Vec<String>,
    /// Serve and register the admission webhooks (none when `None`).
    pub webhook: Option<WebhookSettings>,
    /// How often autoscalers read volume usage and decide (default
    /// [`autoscale::DEFAULT_INTERVAL`]); also the least time between two stats requests to a node.
    pub autoscale_interval: Option<Duration>,
    /// Read volume usage from this Prometheus instead of the kubelets (`nodes/proxy` then unused).
    pub usage_prometheus: Option<crate::usage::prometheus::PrometheusSettings>,
    /// Act only while holding this Lease; every replica serves the webhooks either way.
    pub leader_election: Option<LeaderElection>,
    /// This replica's name: the Lease holder and the Events' reporting instance (default:
    /// `$POD_NAME`, else `$HOSTNAME`).
    pub identity: Option<String>,
    /// The Secret that keeps the configuration digest's key, shared by every replica (made by the
    /// first). Without it the key is random per process: ExtendedStatefulSets with
    /// `updateOnConfigChange` then roll once after every restart.
    pub config_digest_key: Option<SecretRef>,
    /// Features switched off (with the chart's permissions they need); all on by default.
    pub features: Features,
    /// Where the client counts its requests, exposed as `ferry_api_requests_total` (none when
    /// the client was built without [`crate::api_requests::client`]).
    pub api_requests: Option<crate::api_requests::ApiRequests>,
    /// The namespace of the per-StatefulSet hold Leases (the operator's own); `None`: beside each
    /// StatefulSet, which needs Lease rights in every watched namespace.
    pub hold_namespace: Option<String>,
    /// `timeoutSeconds` of a VolumeResize that sets none (default
    /// [`ferry_api::DEFAULT_TIMEOUT_SECONDS`]).
    pub default_timeout_seconds: Option<i64>,
    /// The ConfigMap (namespace, name) where admins add owners of StatefulSets Ferry should know
    /// (`owners.yaml`); `None`: the built-in owners only.
    pub owners_config_map: Option<(String, String)>,
}

/// The operator's own image; the mover is a second entry point of the same image.
pub const DEFAULT_IMAGE: &str = concat!("ghcr.io/ferry-dev/ferry:", env!("CARGO_PKG_VERSION"));

/// Runs the controllers until the watch streams end (or the future is dropped). With leader
/// election it serves the webhooks at once and runs the controllers only while it leads; losing
/// the Lease ends it with [`Error::LeadershipLost`] (the process exits and is restarted).
pub async fn run(client: Client, settings: Settings) -> Result<(), Error> {
    let metrics = Arc::new(Metrics::default().with_api_requests(settings.api_requests.clone()));
    let ready = Arc::new(AtomicBool::new(false));
    // Dropped (and so stopped) with this future, whether it returns or is cancelled.
    let plain_metrics = settings.secure_metrics.is_none().then(|| metrics.clone());
    let _server = settings
        .http_addr
        .map(|addr| AbortOnDrop(tokio::spawn(http::serve(addr, plain_metrics, ready.clone()))));
    let _secure_metrics = match &settings.secure_metrics {
        Some(secure) => Some(crate::secure_metrics::start(client.clone(), secure, metrics.clone()).await?),
        None => None,
    };

    report_cluster_support(&client).await;
    wait_for_crd(&client).await?;
    let identity = settings.identity.clone().unwrap_or_else(default_identity);
    let mover_image = settings
        .mover_image
        .clone()
        .unwrap_or_else(|| DEFAULT_IMAGE.to_string());
    let scopes = scopes(&settings.namespaces);
    // Made before anything runs: a CA file it cannot read stops the start with the reason.
    let interval = settings.autoscale_interval.unwrap_or(autoscale::DEFAULT_INTERVAL);
    let usage_prometheus = usage_prometheus(&settings, interval)?;
    let config_digest_key = match &settings.config_digest_key {
        Some(secret) => crate::digest_key::load_or_create(&client, secret).await?,
        None => {
            tracing::warn!(
                "no --config-digest-key-secret: configuration digests use a key of this process alone, so ExtendedStatefulSets with updateOnConfigChange roll once after every restart"
            );
            crate::digest_key::random()
        }
    };
    // Every replica serves the webhooks, from a VolumeResize cache of its own (a follower runs no
    // controller whose cache it could share).
    let _webhook = match &settings.webhook {
        Some(webhook) => {
            Some(serve_webhooks(&client, &settings, webhook, &metrics, &mover_image, &identity).await?)
        }
        None => None,
    };
    ready.store(true, Ordering::Relaxed);
    let mut leadership = match &settings.leader_election {
        Some(election) => {
            tracing::info!(lease = %election.name, identity, "waiting to lead");
            Some(leader::acquire(client.clone(), election, &identity).await?)
        }
        None => None,
    };
    metrics.leader.set(1);
    let _probe = probe_webhook(&client, &settings, &metrics, &identity);
    let shared = Shared {
        mover_image,
        identity,
        config_digest_key,
        usage_prometheus,
        migrations: migrations_served(&client).await,
    };
    let controllers = futures::future::join_all(scopes.iter().map(|scope| {
        run_scope(
            client.clone(),
            scope.clone(),
            &settings,
            metrics.clone(),
            shared.clone(),
        )
    }));
    match &mut leadership {
        Some(leadership) => tokio::select! {
            _ = controllers => Ok(()),
            reason = &mut leadership.lost => Err(Error::LeadershipLost(
                reason.unwrap_or_else(|_| "the renewal stopped".to_string()),
            )),
        },
        None => {
            controllers.await;
            Ok(())
        }
    }
}

/// The leader's probe of the webhook path, when the webhooks run and it is not switched off (the
/// leader alone: one probe, one Event).
fn probe_webhook(
    client: &Client,
    settings: &Settings,
    metrics: &Arc<Metrics>,
    identity: &str,
) -> Option<AbortOnDrop<()>> {
    let webhook = settings.webhook.as_ref()?;
    let probe = webhook.probe.clone()?;
    let configuration = webhook
        .configuration
        .clone()
        .unwrap_or_else(|| webhook::register::configuration_name(&settings.namespaces));
    Some(AbortOnDrop(tokio::spawn(webhook::probe::keep_probing(
        client.clone(),
        probe,
        configuration,
        metrics.clone(),
        identity.to_string(),
    ))))
}

/// Starts serving the admission webhooks from a VolumeResize cache of their own, once it is synced;
/// returns what keeps them running.
async fn serve_webhooks(
    client: &Client,
    settings: &Settings,
    webhook_settings: &WebhookSettings,
    metrics: &Arc<Metrics>,
    mover_image: &str,
    identity: &str,
) -> Result<(webhook::Running, Vec<AbortOnDrop<()>>), Error> {
    let (stores, caches): (Vec<_>, Vec<_>) = scopes(&settings.namespaces)
        .iter()
        .map(|scope| resize_cache(client, scope.as_deref()))
        .unzip();
    let resizes = Resizes::new(stores);
    let ctx = Arc::new(
        Context::new(
            client.clone(),
            metrics.clone(),
            resizes.clone(),
            mover_image.to_string(),
            Some(identity.to_string()),
        )
        .with_allowed_mover_images(settings.allowed_mover_images.clone())
        .with_features(settings.features)
        .with_template_edits(webhook_settings.template_edits),
    );
    let running = webhook::start(ctx, webhook_settings, &settings.namespaces).await?;
    // Ready once the reviews answer from a synced cache (until then they list, or refuse).
    resizes.wait_synced().await;
    Ok((running, caches))
}

/// Says at start what the cluster's Kubernetes version lacks of what Ferry needs (nothing for a
/// supported one); never refuses to start on it.
async fn report_cluster_support(client: &Client) {
    match client.apiserver_version().await {
        Ok(version) => {
            let findings = ferry_engine::cluster_support::check(&version.major, &version.minor);
            tracing::info!(version = %version.git_version, problems = findings.len(), "Kubernetes version");
            for finding in findings {
                tracing::warn!("{finding}");
            }
        }
        Err(error) => tracing::warn!(%error, "cannot read the Kubernetes version"),
    }
}

/// The namespaces to watch, each on its own; `None` is all of them.
fn scopes(namespaces: &[String]) -> Vec<Option<String>> {
    if namespaces.is_empty() {
        vec![None]
    } else {
        namespaces.iter().cloned().map(Some).collect()
    }
}

/// `--mover-resources`: a ResourceRequirements as JSON, e.g.
/// `{"requests":{"cpu":"100m","memory":"64Mi"},"limits":{"memory":"256Mi"}}`.
pub fn parse_mover_resources(text: &str) -> Result<k8s_openapi::api::core::v1::ResourceRequirements, String> {
    serde_json::from_str(text).map_err(|error| {
        format!("{text:?} is not a ResourceRequirements in JSON, such as {{\"requests\":{{\"cpu\":\"100m\"}}}}: {error}")
    })
}

/// `$POD_NAME`, else `$HOSTNAME`, else a name from the process ID.
pub fn default_identity() -> String {
    std::env::var("POD_NAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| format!("ferry-{}", std::process::id()))
}

/// A VolumeResize cache kept current by a watch of its own, and the task that feeds it. Guarded,
/// as the controller's: one VolumeResize it cannot read must not stall the watch.
fn resize_cache(client: &Client, scope: Option<&str>) -> (Store<GuardedResize>, AbortOnDrop<()>) {
    let (store, writer) = reflector::store();
    let stream = reflector(
        writer,
        backing_off(watcher(
            scoped::<GuardedResize>(client, scope),
            watcher::Config::default().any_semantic(),
        )),
    )
    .for_each(|_| futures::future::ready(()));
    (store, AbortOnDrop(tokio::spawn(stream)))
}

/// What the controllers of every scope share, made once at start.
#[derive(Clone)]
struct Shared {
    mover_image: String,
    identity: String,
    config_digest_key: ferry_engine::extended::config::DigestKey,
    usage_prometheus: Option<Arc<crate::usage::prometheus::PrometheusUsage>>,
    /// Whether VolumeMigrations are served and readable ([`crate::crd::OPTIONAL`]).
    migrations: bool,
}

/// The Prometheus client usage is read from, when one is configured (or why it cannot be made).
fn usage_prometheus(
    settings: &Settings,
    interval: Duration,
) -> Result<Option<Arc<crate::usage::prometheus::PrometheusUsage>>, Error> {
    let Some(prometheus) = &settings.usage_prometheus else {
        return Ok(None);
    };
    tracing::info!(url = %prometheus.url, "volume usage is read from Prometheus");
    let usage = crate::usage::prometheus::PrometheusUsage::new(prometheus.clone(), interval)?;
    Ok(Some(Arc::new(usage)))
}

/// Every controller for one namespace (or all): VolumeResizes, requests, autoscalers and
/// ExtendedStatefulSets.
async fn run_scope(
    client: Client,
    scope: Option<String>,
    settings: &Settings,
    metrics: Arc<Metrics>,
    shared: Shared,
) {
    let scope = scope.as_deref();
    // Guarded: a VolumeResize this Ferry cannot read reaches the reconcile as an error (reported
    // there) instead of stalling the watch of all of them.
    let resizes = scoped::<GuardedResize>(&client, scope);
    let controller = crate::watches::controller(resizes, watcher::Config::default().any_semantic());
    let cache = Resizes::new(vec![controller.store()]);
    let (results, results_in) = crate::resize::result_watch::ResultWatch::new();
    let ctx = Arc::new(
        Context::new(
            client.clone(),
            metrics,
            cache.clone(),
            shared.mover_image,
            Some(shared.identity),
        )
        .with_mover_resources(settings.mover_resources.clone())
        .with_allowed_mover_images(settings.allowed_mover_images.clone())
        .with_mover_image_pull_secrets(settings.mover_image_pull_secrets.clone())
        .with_config_digest_key(shared.config_digest_key)
        .with_features(settings.features)
        .with_usage_prometheus(shared.usage_prometheus)
        .with_hold_namespace(settings.hold_namespace.clone())
        .with_owners_config_map(settings.owners_config_map.clone())
        .with_default_timeout_seconds(settings.default_timeout_seconds),
    );
    // The controllers' cache is what the in-flight and copy-progress gauges count (a webhook's
    // cache, which every replica keeps, leader or not, never is): counted once, here.
    ctx.metrics.count_resizes(cache.clone());
    let trigger_controller = trigger::controller::run(&client, scope, ctx.clone());
    let interval = settings.autoscale_interval.unwrap_or(autoscale::DEFAULT_INTERVAL);
    // A controller switched off is never started: its watches would need the permissions the
    // chart then withholds.
    let autoscale_on = ctx.features.enabled(Feature::Autoscale);
    let autoscale_controller = {
        let (client, ctx) = (client.clone(), ctx.clone());
        async move {
            if autoscale_on {
                autoscale::controller::run(&client, scope, interval, ctx).await
            }
        }
    };
    let extended_on = ctx.features.enabled(Feature::ExtendedStatefulSets);
    let extended_controller = {
        let (client, ctx) = (client.clone(), ctx.clone());
        async move {
            if extended_on {
                crate::extended::controller::run(&client, scope, ctx).await
            }
        }
    };
    let migration_controller = {
        let (client, ctx, on) = (client.clone(), ctx.clone(), shared.migrations);
        async move {
            if on {
                crate::migration::controller::run(&client, scope, ctx).await
            }
        }
    };
    tracing::info!(namespace = ?scope, "controllers started");
    let resizes_controller = resize::controller::run(controller, &client, scope, ctx, results_in, results);
    futures::join!(
        resizes_controller,
        trigger_controller,
        autoscale_controller,
        extended_controller,
        migration_controller
    );
}

/// A spawned task that stops when its handle is dropped.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn wait_for_crd(client: &Client) -> Result<(), Error> {
    for crd in crate::crd::all() {
        let name = crd.name_any();
        if name != crate::crd::OPTIONAL {
            wait_for_one_crd(client, &name, Duration::from_secs(30)).await?;
        }
    }
    Ok(())
}

/// Whether the VolumeMigration CRD is established and readable; if not, the operator runs without
/// its controller and says why (CRDs or RBAC older than this operator).
async fn migrations_served(client: &Client) -> bool {
    match wait_for_one_crd(client, crate::crd::OPTIONAL, Duration::from_secs(10)).await {
        Ok(()) => true,
        Err(error) => {
            tracing::warn!(
                %error,
                "VolumeMigrations are not served or not readable: the VolumeMigration controller does not run; apply this version's CRDs and the chart's RBAC (helm upgrade) to use them"
            );
            false
        }
    }
}

async fn wait_for_one_crd(client: &Client, name: &str, within: Duration) -> Result<(), Error> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let established = await_condition(crds, name, conditions::is_crd_established());
    match tokio::time::timeout(within, established).await {
        Ok(Ok(Some(_))) => Ok(()),
        Ok(Ok(None)) => Err(Error::CrdMissing {
            crd: name.into(),
            detail: "not found".into(),
        }),
        Ok(Err(error)) => Err(Error::CrdMissing {
            crd: name.into(),
            detail: error.to_string(),
        }),
        Err(_) => Err(Error::CrdMissing {
            crd: name.into(),
            detail: format!("not established after {}s", within.as_secs()),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mover_resources_are_read_as_json_and_nonsense_is_refused_with_an_example() {
        let resources =
            parse_mover_resources(r#"{"requests":{"cpu":"100m"},"limits":{"memory":"256Mi"}}"#).unwrap();
        assert_eq!(resources.requests.unwrap()["cpu"].0, "100m");
        assert_eq!(resources.limits.unwrap()["memory"].0, "256Mi");
        let error = parse_mover_resources("cpu=100m").unwrap_err();
        assert!(
            error.contains("ResourceRequirements") && error.contains("requests"),
            "{error}"
        );
        assert!(parse_mover_resources(r#"{"requests":"lots"}"#).is_err());
    }

    #[test]
    fn no_namespace_list_means_every_namespace() {
        assert_eq!(scopes(&[]), vec![None]);
        assert_eq!(
            scopes(&["a".into(), "b".into()]),
            vec![Some("a".to_string()), Some("b".to_string())]
        );
    }
}
