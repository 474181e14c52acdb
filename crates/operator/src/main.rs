//! `ferry`: the Ferry operator binary.

use clap::{Args, Parser, Subcommand, ValueEnum};
use ferry_engine::trigger::template_edit::TemplateEdits;
use ferry_engine::webhook_probe::ProbeSchedule;
use ferry_operator::features::{Feature, Features};
use ferry_operator::leader::LeaderElection;
use ferry_operator::secure_metrics::SecureMetrics;
use ferry_operator::shared_secret::SecretRef;
use ferry_operator::usage::prometheus::PrometheusSettings;
use ferry_operator::webhook::probe::ProbeSettings;
use ferry_operator::webhook::{Certificates, Endpoint, WebhookSettings};
use ferry_operator::{Error, Settings, crd, run};
use k8s_openapi::api::core::v1::ObjectReference;
use std::net::SocketAddr;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "ferry",
    version,
    about = "Ferry: safe StatefulSet volume changes on Kubernetes"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the operator (uses in-cluster config or KUBECONFIG).
    Run(Box<RunArgs>),
    /// Print the CustomResourceDefinitions as YAML.
    Crd,
    /// Check an installed release (what `helm test` runs): the CRDs are served, the operator's
    /// pods answer /readyz, a VolumeResize passes a server-side dry run.
    SmokeTest(SmokeTestArgs),
}

/// `ferry smoke-test`'s flags.
#[derive(Args)]
struct SmokeTestArgs {
    /// The release's namespace.
    #[arg(long, env = "POD_NAMESPACE")]
    namespace: String,
    /// The operator's Service.
    #[arg(long)]
    service: String,
    /// The port its pods serve /readyz on.
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// The release serves the admission webhooks: a dry-run VolumeResize for a missing
    /// StatefulSet must be refused by them.
    #[arg(long)]
    webhooks: bool,
}

/// `ferry run`'s flags.
#[derive(Args)]
struct RunArgs {
    /// Watch only these namespaces (comma-separated; all when not given).
    #[arg(long = "namespace", env = "FERRY_NAMESPACE", value_delimiter = ',')]
    namespaces: Vec<String>,
    /// Address for /healthz, /readyz and /metrics.
    #[arg(long, env = "FERRY_HTTP_ADDR", default_value = "0.0.0.0:8080")]
    http_addr: SocketAddr,
    /// Serve /metrics over HTTPS on --metrics-listen, and only to a bearer token whose user may
    /// `get` the non-resource URL /metrics (a TokenReview and a SubjectAccessReview, remembered a
    /// minute per token), as kubebuilder's --metrics-secure; /healthz and /readyz stay on
    /// --http-addr, which then serves no /metrics.
    #[arg(long, env = "FERRY_METRICS_SECURE")]
    metrics_secure: bool,
    /// Address of the secure /metrics.
    #[arg(long, env = "FERRY_METRICS_LISTEN", default_value = "0.0.0.0:8443")]
    metrics_listen: SocketAddr,
    /// Read the secure endpoint's certificate from tls.crt/tls.key here (cert-manager), re-read
    /// when they change, instead of issuing it from Ferry's own CA.
    #[arg(long, env = "FERRY_METRICS_CERT_DIR")]
    metrics_cert_dir: Option<std::path::PathBuf>,
    /// Issue the secure endpoint's certificate from the CA in this Secret, `<namespace>/<name>`
    /// (the webhook's, shared by every replica), so scrapers verify it with its `ca.crt`.
    #[arg(long, env = "FERRY_METRICS_CA_SECRET", conflicts_with = "metrics_cert_dir")]
    metrics_ca_secret: Option<String>,
    /// Names (DNS or IP, comma-separated) the certificate Ferry issues for the secure endpoint
    /// carries, e.g. its Service's `<name>.<namespace>.svc`.
    #[arg(
        long,
        env = "FERRY_METRICS_CERT_HOSTS",
        value_delimiter = ',',
        default_value = "localhost,127.0.0.1"
    )]
    metrics_cert_hosts: Vec<String>,
    #[arg(long, env = "FERRY_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    /// Image for mover pods (default: the operator's own image).
    #[arg(long, env = "FERRY_MOVER_IMAGE")]
    mover_image: Option<String>,
    /// Images besides --mover-image that a VolumeResize may name in spec.mover.image
    /// (comma-separated; none by default: movers run the operator's image only).
    #[arg(long, env = "FERRY_ALLOWED_MOVER_IMAGES", value_delimiter = ',')]
    allowed_mover_images: Vec<String>,
    /// Secrets that mover pods pull their image with (comma-separated names): each must exist in
    /// every namespace whose StatefulSets are resized, as a pod's imagePullSecrets must.
    #[arg(long, env = "FERRY_MOVER_IMAGE_PULL_SECRETS", value_delimiter = ',')]
    mover_image_pull_secrets: Vec<String>,
    /// Resources of mover pods unless a VolumeResize sets its own: a ResourceRequirements in
    /// JSON, e.g. `{"requests":{"cpu":"100m","memory":"64Mi"}}`.
    #[arg(long, env = "FERRY_MOVER_RESOURCES", value_parser = ferry_operator::run::parse_mover_resources)]
    mover_resources: Option<k8s_openapi::api::core::v1::ResourceRequirements>,
    /// Serve the admission webhooks and register them with this URL, e.g.
    /// `https://127.0.0.1:9443` for an operator running outside the cluster.
    #[arg(long, env = "FERRY_WEBHOOK_URL", conflicts_with = "webhook_service")]
    webhook_url: Option<String>,
    /// Serve the admission webhooks and register them with this Service,
    /// `<namespace>/<name>:<port>` (in a cluster; the chart's way).
    #[arg(long, env = "FERRY_WEBHOOK_SERVICE")]
    webhook_service: Option<String>,
    /// Address the webhook HTTPS server listens on (default: the port of --webhook-url on
    /// 127.0.0.1, or 0.0.0.0:9443 with --webhook-service).
    #[arg(long, env = "FERRY_WEBHOOK_LISTEN")]
    webhook_listen: Option<SocketAddr>,
    /// Read the serving certificate from tls.crt/tls.key here (cert-manager) instead of
    /// issuing it from Ferry's own CA.
    #[arg(long, env = "FERRY_WEBHOOK_CERT_DIR")]
    webhook_cert_dir: Option<std::path::PathBuf>,
    /// Keep Ferry's own webhook CA in this Secret, `<namespace>/<name>`, shared by every
    /// replica (made by the first one to start).
    #[arg(long, env = "FERRY_WEBHOOK_CA_SECRET", conflicts_with = "webhook_cert_dir")]
    webhook_ca_secret: Option<String>,
    /// The webhook configurations an installer made (the Helm chart): Ferry only keeps their
    /// caBundle instead of registering its own.
    #[arg(long, env = "FERRY_WEBHOOK_CONFIGURATION")]
    webhook_configuration: Option<String>,
    /// Where the leader proves the API server calls the validating webhook (a dry-run
    /// VolumeResize for a missing StatefulSet, 15 s after it leads, then every 5 minutes; every
    /// 30 s while it is not called), said by Events and `ferry_webhook_reachable`. Default: the
    /// first of --namespaces, else the operator's own (`POD_NAMESPACE`), else `default`; `off`:
    /// no probe.
    #[arg(long, env = "FERRY_WEBHOOK_PROBE_NAMESPACE")]
    webhook_probe_namespace: Option<String>,
    /// The operator's pod (the downward API's `POD_NAMESPACE`, `POD_NAME`, `POD_UID`): what the
    /// webhook probe's Events regard.
    #[arg(long, env = "POD_NAMESPACE", hide = true)]
    pod_namespace: Option<String>,
    #[arg(long, env = "POD_NAME", hide = true)]
    pod_name: Option<String>,
    #[arg(long, env = "POD_UID", hide = true)]
    pod_uid: Option<String>,
    /// Act only while holding this Lease, `<namespace>/<name>` (replicas of one Deployment
    /// share it; every replica serves the webhooks).
    #[arg(long, env = "FERRY_LEADER_ELECTION_LEASE")]
    leader_election_lease: Option<String>,
    /// How long the Lease holds without renewal, e.g. `15s`: a dead leader is replaced
    /// within about this time.
    #[arg(long, env = "FERRY_LEADER_ELECTION_DURATION", default_value = "15s", value_parser = parse_interval)]
    leader_election_duration: std::time::Duration,
    /// Keep the key of ExtendedStatefulSets' configuration digests in this Secret,
    /// `<namespace>/<name>`, shared by every replica (made by the first one to start). Without
    /// it each start makes a key of its own, and such ExtendedStatefulSets roll once after it.
    #[arg(long, env = "FERRY_CONFIG_DIGEST_KEY_SECRET")]
    config_digest_key_secret: Option<String>,
    /// How often VolumeAutoscalers read volume usage and decide, e.g. `30s` or `1m` (also the
    /// least time between two stats requests to one node).
    #[arg(long, env = "FERRY_AUTOSCALE_INTERVAL", default_value = "1m", value_parser = parse_interval)]
    autoscale_interval: std::time::Duration,
    /// Read volume usage (for VolumeAutoscalers and dry runs) from this Prometheus, e.g.
    /// `http://prometheus-operated.monitoring:9090`, which must scrape the kubelets'
    /// `kubelet_volume_stats_*`, instead of from each kubelet through `nodes/proxy`.
    #[arg(long, env = "FERRY_USAGE_PROMETHEUS_URL")]
    usage_prometheus_url: Option<String>,
    /// A file holding a bearer token for Prometheus, read again for every query.
    #[arg(
        long,
        env = "FERRY_USAGE_PROMETHEUS_BEARER_TOKEN_FILE",
        requires = "usage_prometheus_url"
    )]
    usage_prometheus_bearer_token_file: Option<std::path::PathBuf>,
    /// PEM certificates to trust for an https Prometheus URL, besides the system's.
    #[arg(
        long,
        env = "FERRY_USAGE_PROMETHEUS_CA_FILE",
        requires = "usage_prometheus_url"
    )]
    usage_prometheus_ca_file: Option<std::path::PathBuf>,
    /// Features to switch off, comma-separated: `secret-references` (Secrets an
    /// ExtendedStatefulSet references are not read), `kubelet-stats` (VolumeAutoscalers read
    /// no usage), `update-hooks` (no pre- or post-update Jobs), `autoscale`,
    /// `extended-stateful-sets`, `triggers`, `direct-go` (a final mover's go by its annotation
    /// alone, no attach). The chart's `features` values set this and withhold the permissions.
    #[arg(long, env = "FERRY_DISABLE_FEATURES", value_delimiter = ',', value_parser = Feature::parse)]
    disable_features: Vec<Feature>,
    /// Keep the per-StatefulSet hold Leases (one resize at a time) in this namespace, the
    /// operator's own; without it they go beside each StatefulSet.
    #[arg(long, env = "FERRY_HOLD_NAMESPACE")]
    hold_namespace: Option<String>,
    /// The ConfigMap (`NAMESPACE/NAME`) whose `owners.yaml` lists owners of StatefulSets Ferry
    /// should know besides its built-in ones (docs/owned-statefulsets.md).
    #[arg(long, env = "FERRY_OWNERS_CONFIG_MAP", value_parser = |text: &str| namespaced_name(text, "--owners-config-map"))]
    owners_config_map: Option<(String, String)>,
    /// `timeoutSeconds` of a VolumeResize that sets none: the longest any step or wait of its run
    /// may take (a replica held down for a volume to grow, a replica never Ready) before it fails.
    #[arg(long, env = "FERRY_DEFAULT_TIMEOUT_SECONDS", default_value_t = ferry_api::DEFAULT_TIMEOUT_SECONDS, value_parser = clap::value_parser!(i64).range(1..))]
    default_timeout_seconds: i64,
    /// Refuse a smaller size in an edit of a StatefulSet's volume claim templates (as the seed's
    /// webhook did) instead of shrinking by copy; growth and class changes are still carried out.
    #[arg(long, env = "FERRY_REFUSE_TEMPLATE_SHRINKS")]
    refuse_template_shrinks: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

fn parse_interval(text: &str) -> Result<std::time::Duration, String> {
    match ferry_engine::duration::seconds(text) {
        Some(seconds) if seconds > 0 => Ok(std::time::Duration::from_secs(seconds.unsigned_abs())),
        _ => Err(format!(
            "{text:?} is not a positive duration such as 30s, 1m or 1h"
        )),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Crd => match crd::all_yaml() {
            Ok(yaml) => {
                print!("{yaml}");
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("ferry: cannot render CRDs: {error}");
                ExitCode::FAILURE
            }
        },
        Command::SmokeTest(args) => smoke_test(args),
        Command::Run(args) => {
            init_logging(args.log_format);
            let settings = match settings(*args) {
                Ok(settings) => settings,
                Err(message) => {
                    eprintln!("ferry: {message}");
                    return ExitCode::from(2);
                }
            };
            let runtime = match tokio::runtime::Runtime::new() {
                Ok(runtime) => runtime,
                Err(error) => {
                    eprintln!("ferry: cannot start the async runtime: {error}");
                    return ExitCode::FAILURE;
                }
            };
            match runtime.block_on(start(settings)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    tracing::error!(%error, "operator stopped");
                    eprintln!("ferry: {error}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

/// `ferry smoke-test`: each check's line on stdout; the first failure on stderr, exit 1.
fn smoke_test(args: SmokeTestArgs) -> ExitCode {
    let test = ferry_operator::smoke::SmokeTest {
        namespace: args.namespace,
        service: args.service,
        port: args.port,
        webhooks: args.webhooks,
    };
    let checked = tokio::runtime::Runtime::new()
        .map_err(|error| format!("cannot start the async runtime: {error}"))
        .and_then(|runtime| {
            runtime.block_on(async {
                let client = kube::Client::try_default()
                    .await
                    .map_err(|error| format!("no cluster to test: {error}"))?;
                ferry_operator::smoke::smoke_test(client, &test)
                    .await
                    .map_err(|error| error.to_string())
            })
        });
    match checked {
        Ok(lines) => {
            for line in lines {
                println!("ok: {line}");
            }
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("ferry: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The operator's settings from `ferry run`'s flags, or what is wrong with them.
fn settings(args: RunArgs) -> Result<Settings, String> {
    let secure_metrics = secure_metrics(&args)?;
    let mut webhook = webhook_settings(
        args.webhook_url,
        args.webhook_service,
        args.webhook_listen,
        args.webhook_cert_dir,
        args.webhook_ca_secret,
        args.webhook_configuration,
    )?;
    if let Some(webhook) = webhook.as_mut() {
        if args.refuse_template_shrinks {
            webhook.template_edits = TemplateEdits::ShrinksRefused;
        }
        webhook.probe = probe_settings(
            &args.namespaces,
            args.webhook_probe_namespace.as_deref(),
            args.pod_namespace.as_deref(),
            args.pod_name.as_deref(),
            args.pod_uid.as_deref(),
        );
    }
    let leader_election = args
        .leader_election_lease
        .as_deref()
        .map(|lease| {
            namespaced_name(lease, "--leader-election-lease").map(|(namespace, name)| LeaderElection {
                namespace,
                name,
                lease_duration: args.leader_election_duration,
            })
        })
        .transpose()?;
    let usage_prometheus = args
        .usage_prometheus_url
        .as_deref()
        .map(|url| {
            PrometheusSettings::new(
                url,
                args.usage_prometheus_bearer_token_file.clone(),
                args.usage_prometheus_ca_file.clone(),
            )
        })
        .transpose()?;
    let config_digest_key = args
        .config_digest_key_secret
        .as_deref()
        .map(|secret| namespaced_name(secret, "--config-digest-key-secret"))
        .transpose()?
        .map(|(namespace, name)| SecretRef { namespace, name });
    Ok(Settings {
        namespaces: args.namespaces,
        http_addr: Some(args.http_addr),
        secure_metrics,
        mover_image: args.mover_image,
        allowed_mover_images: args.allowed_mover_images,
        mover_image_pull_secrets: args.mover_image_pull_secrets,
        mover_resources: args.mover_resources,
        webhook,
        autoscale_interval: Some(args.autoscale_interval),
        usage_prometheus,
        leader_election,
        identity: None,
        config_digest_key,
        features: Features::without(&args.disable_features),
        hold_namespace: args.hold_namespace,
        owners_config_map: args.owners_config_map,
        default_timeout_seconds: Some(args.default_timeout_seconds),
        api_requests: None,
    })
}

/// The secure metrics endpoint the flags describe (none without --metrics-secure).
fn secure_metrics(args: &RunArgs) -> Result<Option<SecureMetrics>, String> {
    if !args.metrics_secure {
        return Ok(None);
    }
    let ca_secret = args
        .metrics_ca_secret
        .as_deref()
        .map(|secret| namespaced_name(secret, "--metrics-ca-secret"))
        .transpose()?
        .map(|(namespace, name)| SecretRef { namespace, name });
    Ok(Some(SecureMetrics {
        listen: args.metrics_listen,
        certificates: args
            .metrics_cert_dir
            .clone()
            .map_or(Certificates::SelfSigned, Certificates::Files),
        ca_secret,
        hosts: args.metrics_cert_hosts.clone(),
    }))
}

/// The webhook settings the flags describe (none without --webhook-url or --webhook-service).
fn webhook_settings(
    url: Option<String>,
    service: Option<String>,
    listen: Option<SocketAddr>,
    cert_dir: Option<std::path::PathBuf>,
    ca_secret: Option<String>,
    configuration: Option<String>,
) -> Result<Option<WebhookSettings>, String> {
    let ca_secret = match ca_secret
        .as_deref()
        .map(|secret| namespaced_name(secret, "--webhook-ca-secret"))
    {
        None => None,
        Some(Ok((namespace, name))) => Some(SecretRef { namespace, name }),
        Some(Err(message)) => return Err(message),
    };
    let certificates = cert_dir.map_or(Certificates::SelfSigned, Certificates::Files);
    let (endpoint, default_listen) = match (url, service) {
        (None, None) => return Ok(None),
        (Some(url), _) => {
            if !url.starts_with("https://") {
                return Err(format!(
                    "--webhook-url {url:?}: the API server calls webhooks over https://"
                ));
            }
            let port = url
                .trim_start_matches("https://")
                .split('/')
                .next()
                .and_then(|authority| authority.rsplit_once(':'))
                .and_then(|(_, port)| port.parse::<u16>().ok())
                .unwrap_or(443);
            (Endpoint::Url(url), SocketAddr::from(([127, 0, 0, 1], port)))
        }
        (None, Some(service)) => {
            let parsed = service.split_once('/').and_then(|(namespace, rest)| {
                let (name, port) = rest.split_once(':').unwrap_or((rest, "443"));
                Some((namespace.to_string(), name.to_string(), port.parse::<i32>().ok()?))
            });
            let Some((namespace, name, port)) = parsed else {
                return Err(format!(
                    "--webhook-service {service:?}: expected <namespace>/<name>:<port>"
                ));
            };
            (
                Endpoint::Service {
                    namespace,
                    name,
                    port,
                },
                SocketAddr::from(([0, 0, 0, 0], 9443)),
            )
        }
    };
    Ok(Some(WebhookSettings {
        listen: listen.unwrap_or(default_listen),
        endpoint,
        certificates,
        ca_secret,
        configuration,
        template_edits: Default::default(),
        probe: None,
    }))
}

/// Where the webhook probe runs, from `--webhook-probe-namespace` (`off`: nowhere), the watched
/// namespaces and the operator's pod; the pod is what its Events regard.
fn probe_settings(
    namespaces: &[String],
    flag: Option<&str>,
    pod_namespace: Option<&str>,
    pod_name: Option<&str>,
    pod_uid: Option<&str>,
) -> Option<ProbeSettings> {
    let namespace = match flag {
        Some("off") => return None,
        Some(namespace) => namespace.to_string(),
        // Watching a list, the operator may create VolumeResizes only there.
        None => namespaces
            .first()
            .map(String::as_str)
            .or(pod_namespace)
            .unwrap_or("default")
            .to_string(),
    };
    let pod = match (pod_namespace, pod_name) {
        (Some(pod_namespace), Some(pod_name)) => Some(ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
            namespace: Some(pod_namespace.to_string()),
            name: Some(pod_name.to_string()),
            uid: pod_uid.map(str::to_string),
            ..ObjectReference::default()
        }),
        _ => None,
    };
    Some(ProbeSettings {
        namespace,
        schedule: ProbeSchedule::default(),
        pod,
    })
}

/// `<namespace>/<name>`, as a flag gives it.
fn namespaced_name(text: &str, flag: &str) -> Result<(String, String), String> {
    match text.split_once('/') {
        Some((namespace, name)) if !namespace.is_empty() && !name.is_empty() && !name.contains('/') => {
            Ok((namespace.to_string(), name.to_string()))
        }
        _ => Err(format!("{flag} {text:?}: expected <namespace>/<name>")),
    }
}

/// Runs until the operator stops or SIGTERM/SIGINT; on a signal a leader gives its Lease up after
/// its controllers have stopped, so that another replica takes over at once.
async fn start(mut settings: Settings) -> Result<(), Error> {
    let config = kube::Config::infer()
        .await
        .map_err(|e| Error::Config(e.to_string()))?;
    let requests = ferry_operator::api_requests::ApiRequests::default();
    let client = ferry_operator::api_requests::client(config, requests.clone())
        .map_err(|e| Error::Config(e.to_string()))?;
    settings.api_requests = Some(requests);
    let identity = ferry_operator::run::default_identity();
    settings.identity = Some(identity.clone());
    let election = settings.leader_election.clone();
    tokio::select! {
        result = run(client.clone(), settings) => result,
        () = stop_signal() => {
            tracing::info!("stopping on a signal");
            if let Some(election) = election {
                ferry_operator::leader::release(client, &election, &identity).await;
            }
            Ok(())
        }
    }
}

/// SIGTERM (a pod's stop) or SIGINT (Ctrl-C).
async fn stop_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
}

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,kube=warn"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    match format {
        LogFormat::Text => builder.init(),
        // The message and the event's fields at the top level of each line, as log shippers
        // (Loki, Elastic, Cloud Logging) read them, not nested under `fields`.
        LogFormat::Json => builder.json().flatten_event(true).init(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings_of(args: &[&str]) -> Result<Settings, String> {
        let cli = Cli::try_parse_from(args).map_err(|error| error.to_string())?;
        match cli.command {
            Command::Run(args) => settings(*args),
            Command::Crd | Command::SmokeTest(_) => Err("not run".to_string()),
        }
    }

    #[test]
    fn refuse_template_shrinks_reaches_the_webhook_and_is_off_by_default() {
        let url = ["ferry", "run", "--webhook-url", "https://ferry.example:9443"];
        let default = settings_of(&url).unwrap().webhook.unwrap();
        assert_eq!(default.template_edits, TemplateEdits::CarriedOut);
        let refused = settings_of(&[&url[..], &["--refuse-template-shrinks"]].concat())
            .unwrap()
            .webhook
            .unwrap();
        assert_eq!(refused.template_edits, TemplateEdits::ShrinksRefused);
    }

    /// The chart sets `FERRY_REFUSE_TEMPLATE_SHRINKS` (to "true", which clap reads as on).
    #[test]
    fn the_charts_environment_turns_refusal_on() {
        let command = <Cli as clap::CommandFactory>::command();
        let run = command.find_subcommand("run").unwrap();
        let flag = run
            .get_arguments()
            .find(|arg| arg.get_id() == "refuse_template_shrinks")
            .unwrap();
        assert_eq!(
            flag.get_env(),
            Some(std::ffi::OsStr::new("FERRY_REFUSE_TEMPLATE_SHRINKS"))
        );
    }

    /// The chart sets the secure metrics flags through their environment variables: each name
    /// it writes is the flag's.
    #[test]
    fn the_charts_environment_names_the_secure_metrics_flags() {
        let deployment = include_str!("../../../deploy/helm/ferry/templates/deployment.yaml");
        let command = <Cli as clap::CommandFactory>::command();
        let run = command.find_subcommand("run").unwrap();
        for id in [
            "metrics_secure",
            "metrics_listen",
            "metrics_cert_dir",
            "metrics_ca_secret",
            "metrics_cert_hosts",
        ] {
            let flag = run.get_arguments().find(|arg| arg.get_id() == id).unwrap();
            let env = flag.get_env().unwrap().to_str().unwrap();
            assert!(
                deployment.contains(&format!("- name: {env}\n")),
                "the chart does not set {env}"
            );
        }
    }

    #[test]
    fn a_lease_flag_that_is_not_namespace_slash_name_is_refused() {
        let error = settings_of(&["ferry", "run", "--leader-election-lease", "lease"]).unwrap_err();
        assert!(error.contains("<namespace>/<name>"), "{error}");
    }

    #[test]
    fn metrics_are_plain_unless_secure_and_then_served_as_the_flags_say() {
        assert_eq!(settings_of(&["ferry", "run"]).unwrap().secure_metrics, None);
        let secure = settings_of(&[
            "ferry",
            "run",
            "--metrics-secure",
            "--metrics-ca-secret",
            "ferry-system/ferry-webhook-ca",
            "--metrics-cert-hosts",
            "ferry.ferry-system.svc,ferry.ferry-system.svc.cluster.local",
        ])
        .unwrap()
        .secure_metrics
        .unwrap();
        assert_eq!(secure.listen, SocketAddr::from(([0, 0, 0, 0], 8443)));
        assert_eq!(secure.certificates, Certificates::SelfSigned);
        assert_eq!(secure.ca_secret.unwrap().name, "ferry-webhook-ca");
        assert_eq!(
            secure.hosts,
            ["ferry.ferry-system.svc", "ferry.ferry-system.svc.cluster.local"]
        );
        let files = settings_of(&["ferry", "run", "--metrics-secure", "--metrics-cert-dir", "/tls"])
            .unwrap()
            .secure_metrics
            .unwrap();
        assert_eq!(files.certificates, Certificates::Files("/tls".into()));
        assert_eq!(files.hosts, ["localhost", "127.0.0.1"]);
        let error =
            settings_of(&["ferry", "run", "--metrics-secure", "--metrics-ca-secret", "x"]).unwrap_err();
        assert!(error.contains("--metrics-ca-secret"), "{error}");
    }

    /// The chart passes `mover.imagePullSecrets` as comma-separated names; none by default.
    #[test]
    fn mover_image_pull_secrets_are_read_as_a_list_and_none_by_default() {
        let none = settings_of(&["ferry", "run"]).unwrap();
        assert!(none.mover_image_pull_secrets.is_empty());
        let two = settings_of(&[
            "ferry",
            "run",
            "--mover-image-pull-secrets",
            "regcred-a,regcred-b",
        ])
        .unwrap();
        assert_eq!(two.mover_image_pull_secrets, ["regcred-a", "regcred-b"]);
    }
}
