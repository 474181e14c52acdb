//! Shared setup for the operator's tests on the local control plane: the CRD, a namespace, and the
//! operator itself running in-process, scoped to that namespace.
#![allow(dead_code)]

pub mod disruption;
pub mod down_webhook;
pub mod webhook_ready;

/// With `FERRY_TEST_LOG` set (a `RUST_LOG`-style filter, e.g. `ferry_operator=debug`), the
/// in-process operators log to stderr (`--nocapture` shows it), each line with its time. Without
/// it they log at info to [`operator_log`], which a timed-out wait quotes for its namespace.
fn log_operators() {
    if let Ok(filter) = std::env::var("FERRY_TEST_LOG") {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_writer(std::io::stderr)
            .try_init();
        return;
    }
    let Ok(file) = std::fs::File::create(operator_log()) else {
        return;
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new("ferry_operator=info"))
        .with_ansi(false)
        .with_writer(std::sync::Mutex::new(file))
        .try_init();
}

/// This test process's operator log (`scripts/testenv up` removes those of earlier runs).
fn operator_log() -> std::path::PathBuf {
    ferry_testenv::paths::state_dir()
        .join("logs")
        .join(format!("operator-tests-{}.log", std::process::id()))
}

/// The last `lines` lines of the log `path` that name `namespace`.
fn log_lines_of(path: &std::path::Path, namespace: &str, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mine: Vec<String> = text
        .lines()
        .filter(|line| line.contains(namespace))
        .map(without_colours)
        .collect();
    mine[mine.len().saturating_sub(lines)..].join("\n")
}

/// A log line without its terminal colour codes (`ESC [ … m`).
fn without_colours(line: &str) -> String {
    let mut plain = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            chars.by_ref().find(|&c| c == 'm');
        } else {
            plain.push(c);
        }
    }
    plain
}

use ferry_api::{RowStep, VolumeResize, VolumeResizeSpec};
use ferry_operator::features::{Feature, Features};
use ferry_operator::{Settings, run};
use ferry_testenv::disruption::Allowed;
use ferry_testenv::{TestNamespace, client, wait_until};
use k8s_openapi::api::events::v1::Event;
use kube::api::PostParams;
use kube::{Api, Client, ResourceExt};
use tokio::task::JoinHandle;

pub struct Harness {
    /// The admin client: the test's own setup and checks.
    pub client: Client,
    /// The operator's client: acts as the Helm chart's ServiceAccount, with the chart's RBAC only.
    pub operator_client: Client,
    /// The chart's RBAC applied for this test (none when the test installs the chart itself).
    pub identity: Option<ferry_testenv::chart::OperatorIdentity>,
    pub ns: TestNamespace,
    operator: JoinHandle<()>,
    /// Where the running operator serves /metrics.
    metrics_url: String,
    /// Where the operator serves its admission webhooks, when it does.
    pub webhook_url: Option<String>,
    /// How the operator runs (every restart too).
    options: OperatorOptions,
    /// The applications watched for the whole test, with what each may suffer; asserted by
    /// [`Harness::finish`].
    watched: std::sync::Mutex<Vec<(disruption::DisruptionOracle, Allowed)>>,
}

/// How a test's operator runs, kept across its restarts.
#[derive(Clone, Default)]
pub struct OperatorOptions {
    /// What it runs with switched off.
    pub features: Features,
    /// What its webhook does with an edit of a StatefulSet's claim templates.
    pub template_edits: ferry_engine::trigger::template_edit::TemplateEdits,
    /// Where it reads volume usage instead of the kubelets.
    pub usage_prometheus: Option<ferry_operator::usage::prometheus::PrometheusSettings>,
    /// `timeoutSeconds` of a VolumeResize that sets none (`--default-timeout-seconds`; none: the
    /// built-in hour).
    pub default_timeout_seconds: Option<i64>,
    /// More chart values for its RBAC (`key=value`, as `helm --set` takes them).
    pub chart_values: Vec<String>,
    /// Probe the webhook from the test's namespace on this schedule (none by default).
    pub webhook_probe: Option<ferry_engine::webhook_probe::ProbeSchedule>,
}

impl Harness {
    pub async fn start(prefix: &str) -> Harness {
        Harness::start_without(prefix, &[]).await
    }

    /// Like `start`, with the operator reaching the API server through `path`, which the test can
    /// cut (an outage the operator alone sees).
    pub async fn start_behind(prefix: &str, path: &ferry_testenv::api_path::ApiPath) -> Harness {
        Harness::start_with(prefix, &[], Some(&path.url())).await
    }

    /// Like `start`, with `disabled` features switched off in the chart (their permissions not
    /// granted) and in the operator.
    pub async fn start_without(prefix: &str, disabled: &[Feature]) -> Harness {
        Harness::start_with(prefix, disabled, None).await
    }

    /// Like `start_without`, with the operator otherwise run as `options` say.
    pub async fn start_without_and(prefix: &str, disabled: &[Feature], options: OperatorOptions) -> Harness {
        Harness::start_with_options(prefix, disabled, None, options).await
    }

    async fn start_with(prefix: &str, disabled: &[Feature], api_url: Option<&str>) -> Harness {
        Harness::start_with_options(prefix, disabled, api_url, OperatorOptions::default()).await
    }

    async fn start_with_options(
        prefix: &str,
        disabled: &[Feature],
        api_url: Option<&str>,
        options: OperatorOptions,
    ) -> Harness {
        log_operators();
        let client = client().await.unwrap();
        install_crd(&client).await;
        let ns = TestNamespace::create(&client, prefix).await.unwrap();
        let values: Vec<String> = disabled
            .iter()
            .map(|feature| format!("{}=false", feature.chart_value()))
            .chain(options.chart_values.iter().cloned())
            .collect();
        let values: Vec<&str> = values.iter().map(String::as_str).collect();
        let identity = ferry_testenv::chart::install_identity_with(&ns.name, &values)
            .await
            .unwrap();
        let operator_client = ferry_testenv::chart::client_as_via(&identity.user, api_url)
            .await
            .unwrap();
        let options = OperatorOptions {
            features: Features::without(disabled),
            ..options
        };
        let (operator, metrics_url) =
            spawn_operator(&operator_client, &ns.name, None, Some(&identity), &options);
        Harness {
            client,
            operator_client,
            identity: Some(identity),
            ns,
            operator,
            metrics_url,
            webhook_url: None,
            options,
            watched: Default::default(),
        }
    }

    /// A namespace with no operator and no RBAC for one (a test that installs the chart itself).
    pub async fn start_bare(prefix: &str) -> Harness {
        let client = client().await.unwrap();
        install_crd(&client).await;
        let ns = TestNamespace::create(&client, prefix).await.unwrap();
        Harness {
            operator_client: client.clone(),
            client,
            identity: None,
            ns,
            operator: tokio::spawn(async {}),
            metrics_url: String::new(),
            webhook_url: None,
            options: OperatorOptions::default(),
            watched: Default::default(),
        }
    }

    /// Like `start`, with the operator serving its admission webhooks at a loopback URL (the API
    /// server calls it over TLS). As with the chart, the configurations are made by the installer
    /// (here the test, as admin) and the operator only keeps their caBundle; returns once it has.
    pub async fn start_with_webhook(prefix: &str) -> Harness {
        Harness::start_with_webhook_and(prefix, OperatorOptions::default()).await
    }

    /// Like `start_with_webhook`, with the operator run as `options` say.
    pub async fn start_with_webhook_and(prefix: &str, options: OperatorOptions) -> Harness {
        let client = client().await.unwrap();
        install_crd(&client).await;
        let ns = TestNamespace::create(&client, prefix).await.unwrap();
        let (identity, operator_client) = chart_identity(&ns.name).await;
        let url = format!("https://127.0.0.1:{}", free_port());
        ferry_operator::webhook::register::register(
            &client,
            &ferry_operator::webhook::Endpoint::Url(url.clone()),
            None,
            std::slice::from_ref(&ns.name),
            true,
        )
        .await
        .unwrap();
        let (operator, metrics_url) =
            spawn_operator(&operator_client, &ns.name, Some(&url), Some(&identity), &options);
        let harness = Harness {
            client,
            operator_client,
            identity: Some(identity),
            ns,
            operator,
            metrics_url,
            webhook_url: Some(url),
            options,
            watched: Default::default(),
        };
        harness.wait_webhook_registered().await;
        harness
    }

    /// Waits until the webhook configurations point at this operator's URL and carry its CA, and
    /// the API server calls the operator's webhook for this namespace.
    pub async fn wait_webhook_registered(&self) {
        use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
        let configurations: Api<MutatingWebhookConfiguration> = Api::all(self.client.clone());
        let name = ferry_operator::webhook::register::configuration_name(std::slice::from_ref(&self.ns.name));
        let url = self.webhook_url.clone().unwrap();
        wait_until("the webhook configurations to be registered", 60, || async {
            let configuration = configurations.get_opt(&name).await.ok().flatten()?;
            let hook = configuration.webhooks?.into_iter().next()?;
            hook.client_config.ca_bundle.as_ref()?;
            hook.client_config.url?.starts_with(&url).then_some(())
        })
        .await
        .unwrap();
        webhook_ready::wait_webhook_answers(&self.client, &self.ns.name).await;
    }

    /// Stops the operator (and with it the webhook server) without starting another, and waits
    /// until it has: its task dropped, and with it the webhook's connection tasks (a kept-alive
    /// connection would otherwise answer one more request).
    pub async fn stop_operator(&mut self) {
        self.operator.abort();
        let _ = (&mut self.operator).await;
    }

    /// Kills the operator wherever it is (mid-request included) and starts a fresh one, which
    /// knows nothing but what the cluster and the VolumeResize status say.
    pub fn restart_operator(&mut self) {
        self.operator.abort();
        (self.operator, self.metrics_url) = spawn_operator(
            &self.operator_client,
            &self.ns.name,
            self.webhook_url.as_deref(),
            self.identity.as_ref(),
            &self.options,
        );
    }

    /// A copy's steps, from its target's creation to the replica's start on the new volume: where
    /// [`Harness::finish_killing_at_each_step`] kills the operator in a copy (a move included).
    pub const COPY_STEPS: [RowStep; 6] = [
        RowStep::CreatingTarget,
        RowStep::WarmCopy,
        RowStep::StoppingReplica,
        RowStep::FinalSync,
        RowStep::Swapping,
        RowStep::StartingReplica,
    ];

    /// Waits for the VolumeResize `name` to finish, killing the operator (and starting a fresh one)
    /// the first time each of `steps` shows in its rows; returns it and the steps it was killed at.
    /// It watches rather than polls: every status write arrives, so a step that lasts a few
    /// milliseconds (a claim patched, then waited on) is seen as surely as a long one.
    pub async fn finish_killing_at_each_step(
        &mut self,
        name: &str,
        steps: &[RowStep],
        seconds: u64,
    ) -> (VolumeResize, Vec<RowStep>) {
        let rows_show = |resize: &VolumeResize| -> Vec<RowStep> {
            resize
                .status
                .iter()
                .flat_map(|s| s.plan.iter())
                .filter_map(|row| row.step)
                .collect()
        };
        self.finish_killing_at_first_sight(name, steps, rows_show, seconds)
            .await
    }

    /// Waits for the VolumeResize `name` to finish, killing the operator (and starting a fresh one)
    /// the first time `shown` (what a status says, its rows' steps or its owner's) includes each of
    /// `steps`; returns it and the steps it was killed at.
    pub async fn finish_killing_at_first_sight<S: Copy + PartialEq + std::fmt::Debug>(
        &mut self,
        name: &str,
        steps: &[S],
        shown: impl Fn(&VolumeResize) -> Vec<S>,
        seconds: u64,
    ) -> (VolumeResize, Vec<S>) {
        use futures::StreamExt;
        use kube::runtime::{WatchStreamExt, watcher};
        let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
        let mut events = watcher::watcher(self.ns.api::<VolumeResize>(), config)
            .default_backoff()
            .boxed();
        let mut to_kill_at = steps.to_vec();
        let mut killed_at = Vec::new();
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(seconds);
        loop {
            let event = tokio::time::timeout_at(deadline, events.next()).await;
            let resize = match event {
                Err(_) => panic!("{name} did not finish; killed at {killed_at:?}"),
                Ok(None) => panic!("the watch on {name} ended; killed at {killed_at:?}"),
                Ok(Some(Ok(watcher::Event::Apply(resize) | watcher::Event::InitApply(resize)))) => resize,
                // A restarted watch lists again; a failed one is retried after a backoff.
                Ok(Some(Ok(_) | Err(_))) => continue,
            };
            if resize.phase().is_terminal() {
                return (resize, killed_at);
            }
            let steps = shown(&resize);
            if let Some(position) = to_kill_at.iter().position(|step| steps.contains(step)) {
                killed_at.push(to_kill_at.remove(position));
                self.restart_operator();
            }
        }
    }

    /// The UIDs of the pods labelled `app=<app>`, by name.
    pub async fn pod_uids(&self, app: &str) -> std::collections::BTreeMap<String, String> {
        let pods: Api<k8s_openapi::api::core::v1::Pod> = self.ns.api();
        let list = pods
            .list(&kube::api::ListParams::default().labels(&format!("app={app}")))
            .await
            .unwrap();
        list.items
            .iter()
            .map(|pod| (pod.name_any(), pod.uid().unwrap()))
            .collect()
    }

    /// What a test that timed out should print: whether the operator is ready, its VolumeResizes
    /// and the namespace's Events.
    pub async fn explain(&self) -> String {
        let readyz = self.metrics_url.replace("/metrics", "/readyz");
        let ready = tokio::process::Command::new("curl")
            .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", &readyz])
            .output()
            .await
            .map(|output| String::from_utf8_lossy(&output.stdout).into_owned())
            .unwrap_or_else(|error| error.to_string());
        let mut text = format!("operator /readyz: {ready}\n");
        let resizes = self.ns.api::<VolumeResize>().list(&Default::default()).await;
        for resize in resizes.map(|list| list.items).unwrap_or_default() {
            let status = serde_json::to_string(&resize.status).unwrap_or_default();
            text.push_str(&format!("VolumeResize {}: {status}\n", resize.name_any()));
        }
        let events = self.ns.api::<Event>().list(&Default::default()).await;
        for event in events.map(|list| list.items).unwrap_or_default() {
            let regarding = event.regarding.unwrap_or_default();
            text.push_str(&format!(
                "Event {}/{} {}: {}\n",
                regarding.kind.unwrap_or_default(),
                regarding.name.unwrap_or_default(),
                event.reason.unwrap_or_default(),
                event.note.unwrap_or_default()
            ));
        }
        text
    }

    /// The operator's metrics as served on /metrics now.
    pub async fn metrics(&self) -> String {
        let url = self.metrics_url.clone();
        wait_until("the operator's /metrics", 30, || async {
            let output = tokio::process::Command::new("curl")
                .args(["-sf", &url])
                .output()
                .await
                .ok()?;
            output
                .status
                .success()
                .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
        })
        .await
        .unwrap()
    }

    /// Watches `app`'s `members` pods until [`Harness::finish`], which fails the test when more
    /// than one was down at once or one went down twice ([`Harness::allow_disruption`] says
    /// otherwise).
    pub async fn watch_disruption(&self, app: &str, members: usize) {
        let oracle = disruption::DisruptionOracle::start(self.ns.api(), app, members).await;
        self.watched.lock().unwrap().push((oracle, Allowed::at_once(1)));
    }

    /// What the applications watched since [`Harness::watch_disruption`] may suffer in this test.
    pub fn allow_disruption(&self, allowed: Allowed) {
        for (_, allow) in self.watched.lock().unwrap().iter_mut() {
            *allow = allowed;
        }
    }

    /// Stops the harness's oracles; what went beyond what each allowed.
    async fn disruption_beyond(&self) -> Vec<String> {
        let watched = std::mem::take(&mut *self.watched.lock().unwrap());
        let mut said = Vec::new();
        for (oracle, allowed) in watched {
            let app = oracle.app().to_string();
            let worst = oracle.finish().await;
            said.extend(worst.beyond(&app, allowed));
        }
        said
    }

    pub async fn finish(self) {
        // Before anything goes: the namespace's cleanup takes every pod down.
        let disrupted = self.disruption_beyond().await;
        self.operator.abort();
        // No operator serves this namespace any more: the VolumeResizes' finalizers would hold
        // its deletion for good (and namespaces would pile up on a control plane that runs on).
        let resizes = self.ns.api::<VolumeResize>();
        for resize in resizes.list(&Default::default()).await.unwrap().items {
            if !resize.finalizers().is_empty() {
                let patch = serde_json::json!({"metadata": {"finalizers": null}});
                merge_patch_unless_gone(&resizes, &resize.name_any(), patch).await;
            }
        }
        // Old volumes the namespace's resizes retained go with it: no operator expires them now, and
        // a control plane that runs on would keep their disks.
        let volumes: Api<k8s_openapi::api::core::v1::PersistentVolume> = Api::all(self.client.clone());
        for volume in volumes.list(&Default::default()).await.unwrap().items {
            let spec = volume.spec.as_ref();
            let ours = spec
                .and_then(|s| s.claim_ref.as_ref())
                .is_some_and(|claim| claim.namespace.as_deref() == Some(self.ns.name.as_str()));
            if ours && spec.and_then(|s| s.persistent_volume_reclaim_policy.as_deref()) == Some("Retain") {
                let patch = serde_json::json!({"spec": {"persistentVolumeReclaimPolicy": "Delete"}});
                merge_patch_unless_gone(&volumes, &volume.name_any(), patch).await;
            }
        }
        if self.webhook_url.is_some() {
            use k8s_openapi::api::admissionregistration::v1::{
                MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
            };
            let name =
                ferry_operator::webhook::register::configuration_name(std::slice::from_ref(&self.ns.name));
            let deleted = Api::<MutatingWebhookConfiguration>::all(self.client.clone())
                .delete(&name, &Default::default())
                .await;
            assert!(deleted.is_ok(), "{deleted:?}");
            let deleted = Api::<ValidatingWebhookConfiguration>::all(self.client.clone())
                .delete(&name, &Default::default())
                .await;
            assert!(deleted.is_ok(), "{deleted:?}");
        }
        if let Some(identity) = &self.identity {
            ferry_testenv::chart::remove_identity(identity).await.unwrap();
        }
        self.ns.cleanup().await.unwrap();
        assert!(
            disrupted.is_empty(),
            "the disruption oracle: {}",
            disrupted.join("; ")
        );
    }

    pub async fn create_resize(&self, name: &str, spec: serde_json::Value) -> VolumeResize {
        self.try_create_resize(name, spec).await.unwrap()
    }

    pub async fn try_create_resize(
        &self,
        name: &str,
        spec: serde_json::Value,
    ) -> Result<VolumeResize, kube::Error> {
        let resize: VolumeResize = serde_json::from_value(serde_json::json!({
            "apiVersion": "ferry.dev/v1alpha1", "kind": "VolumeResize",
            "metadata": {"name": name}, "spec": spec,
        }))
        .unwrap_or_else(|_| {
            VolumeResize::new(name, serde_json::from_value::<VolumeResizeSpec>(spec).unwrap())
        });
        self.ns
            .api::<VolumeResize>()
            .create(&PostParams::default(), &resize)
            .await
    }

    /// Waits until the VolumeResize satisfies `done`, returning it.
    pub async fn wait_resize(
        &self,
        name: &str,
        what: &str,
        done: impl Fn(&VolumeResize) -> bool,
    ) -> VolumeResize {
        self.wait_resize_for(name, what, 60, done).await
    }

    /// `wait_resize` with its own time limit, for the waits on a whole copy.
    pub async fn wait_resize_for(
        &self,
        name: &str,
        what: &str,
        seconds: u64,
        done: impl Fn(&VolumeResize) -> bool,
    ) -> VolumeResize {
        let api = self.ns.api::<VolumeResize>();
        let waited = ferry_testenv::wait::wait_for_object(&api, name, what, seconds, done).await;
        match waited {
            Ok(resize) => resize,
            Err(error) => panic!("{error:?}\n{}", self.describe_resize(name).await),
        }
    }

    /// Waits until the VolumeResize's `status.message` contains `part`, at most `seconds`.
    pub async fn wait_message(&self, name: &str, what: &str, seconds: u64, part: &str) -> VolumeResize {
        self.wait_resize_for(name, what, seconds, |resize| {
            resize
                .status
                .as_ref()
                .and_then(|s| s.message.as_deref())
                .is_some_and(|m| m.contains(part))
        })
        .await
    }

    /// Waits until the VolumeResize has ended (succeeded or failed), at most `seconds`; a timeout
    /// panics saying where it stood.
    pub async fn wait_terminal(&self, name: &str, what: &str, seconds: u64) -> VolumeResize {
        self.wait_resize_for(name, what, seconds, |resize| resize.phase().is_terminal())
            .await
    }

    /// The VolumeResize `name`'s status and the Events about it and its StatefulSet, for a failure
    /// message: a test that times out says where the resize stood.
    pub async fn describe_resize(&self, name: &str) -> String {
        let Ok(Some(resize)) = self.ns.api::<VolumeResize>().get_opt(name).await else {
            return format!("VolumeResize {name}: not found");
        };
        let status = serde_json::to_string_pretty(&resize.status).unwrap_or_default();
        let stateful_set = resize.spec.stateful_set_name.clone();
        let mut events = self.events_for("VolumeResize", name).await;
        events.extend(self.events_for("StatefulSet", &stateful_set).await);
        let events: Vec<String> = events
            .into_iter()
            .map(|(kind, reason, note)| format!("  {kind} {reason}: {note}"))
            .collect();
        format!(
            "VolumeResize {name} status: {status}\nEvents:\n{}\n{}\nThe operator's last words here:\n{}\nThe test agent's (kwok's mover pods, local volumes):\n{}",
            events.join("\n"),
            self.describe_workload(&stateful_set).await,
            log_lines_of(&operator_log(), &self.ns.name, 40),
            log_lines_of(
                &ferry_testenv::paths::state_dir().join("logs").join("agent.log"),
                &self.ns.name,
                20
            )
        )
    }

    /// One line per pod and claim of the namespace and one for the StatefulSet: what a resize
    /// that stalled was waiting on.
    async fn describe_workload(&self, stateful_set: &str) -> String {
        use k8s_openapi::api::apps::v1::StatefulSet;
        use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
        let mut lines = Vec::new();
        match self.ns.api::<StatefulSet>().get_opt(stateful_set).await {
            Ok(Some(sts)) => lines.push(format!(
                "StatefulSet {stateful_set}: uid {} status {}",
                sts.uid().unwrap_or_default(),
                serde_json::to_string(&sts.status).unwrap_or_default()
            )),
            other => lines.push(format!("StatefulSet {stateful_set}: {other:?}")),
        }
        for pod in self
            .ns
            .api::<Pod>()
            .list(&Default::default())
            .await
            .map(|l| l.items)
            .unwrap_or_default()
        {
            let status = pod.status.clone().unwrap_or_default();
            let ready = status
                .conditions
                .iter()
                .flatten()
                .find(|c| c.type_ == "Ready")
                .map(|c| c.status.clone());
            lines.push(format!(
                "Pod {}: uid {} phase {:?} ready {ready:?} node {:?} deleting {:?} owners {:?}",
                pod.name_any(),
                pod.uid().unwrap_or_default(),
                status.phase,
                pod.spec.as_ref().and_then(|s| s.node_name.clone()),
                pod.metadata.deletion_timestamp.as_ref().map(|t| t.0.to_string()),
                pod.owner_references()
                    .iter()
                    .map(|o| o.uid.clone())
                    .collect::<Vec<_>>(),
            ));
        }
        let claims = self
            .ns
            .api::<PersistentVolumeClaim>()
            .list(&Default::default())
            .await;
        for claim in claims.map(|l| l.items).unwrap_or_default() {
            lines.push(format!(
                "PersistentVolumeClaim {}: phase {:?} volume {:?} deleting {:?} finalizers {:?}",
                claim.name_any(),
                claim.status.as_ref().and_then(|s| s.phase.clone()),
                claim.spec.as_ref().and_then(|s| s.volume_name.clone()),
                claim
                    .metadata
                    .deletion_timestamp
                    .as_ref()
                    .map(|t| t.0.to_string()),
                claim.finalizers(),
            ));
        }
        lines.join("\n")
    }

    /// Waits until the namespaced object `name` of kind `K` satisfies `done`, returning it.
    pub async fn wait_object<K>(&self, name: &str, what: &str, seconds: u64, done: impl Fn(&K) -> bool) -> K
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug
            + Send
            + 'static,
    {
        ferry_testenv::wait::wait_for_object(&self.ns.api::<K>(), name, what, seconds, done)
            .await
            .unwrap()
    }

    /// Events in the namespace about the named object, as (type, reason, note).
    pub async fn events_for(&self, kind: &str, name: &str) -> Vec<(String, String, String)> {
        self.ns
            .api::<Event>()
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter(|e| {
                e.regarding
                    .as_ref()
                    .is_some_and(|r| r.kind.as_deref() == Some(kind) && r.name.as_deref() == Some(name))
            })
            .map(|e| {
                (
                    e.type_.unwrap_or_default(),
                    e.reason.unwrap_or_default(),
                    e.note.unwrap_or_default(),
                )
            })
            .collect()
    }

    /// Waits for an Event about the object with the given reason; returns all Events about it.
    pub async fn wait_event(&self, kind: &str, name: &str, reason: &str) -> Vec<(String, String, String)> {
        ferry_testenv::wait_until(&format!("an Event {reason} on {kind} {name}"), 30, || async {
            let events = self.events_for(kind, name).await;
            events.iter().any(|(_, r, _)| r == reason).then_some(events)
        })
        .await
        .unwrap()
    }

    /// Every object in the namespace that Ferry could touch: kind/name → the object without its
    /// status and the server's bookkeeping (resourceVersion, managedFields). Ferry never writes the
    /// status of these kinds, while the controllers of Kubernetes still may when a test takes its
    /// snapshot (the PV controller's second status write on a claim just bound came 1.1 s after the
    /// pod was Ready on a loaded machine): a resourceVersion would count that as Ferry's change.
    pub async fn snapshot(&self) -> Vec<String> {
        use k8s_openapi::api::apps::v1::StatefulSet;
        use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod};
        let mut out = Vec::new();
        macro_rules! add {
            ($kind:ty) => {
                for object in self
                    .ns
                    .api::<$kind>()
                    .list(&Default::default())
                    .await
                    .unwrap()
                    .items
                {
                    let mut value = serde_json::to_value(&object).unwrap();
                    value.as_object_mut().unwrap().remove("status");
                    let metadata = value["metadata"].as_object_mut().unwrap();
                    metadata.remove("resourceVersion");
                    metadata.remove("managedFields");
                    out.push(format!(
                        "{}/{} {value}",
                        stringify!($kind),
                        object.name_any()
                    ));
                }
            };
        }
        add!(StatefulSet);
        add!(PersistentVolumeClaim);
        add!(Pod);
        add!(ConfigMap);
        out.sort();
        out
    }
}

/// Runs the operator in this process, serving its endpoints on a free port, with the chart's
/// configuration digest key Secret when `identity` says where it is; returns the task and its
/// /metrics URL.
fn spawn_operator(
    client: &Client,
    namespace: &str,
    webhook_url: Option<&str>,
    identity: Option<&ferry_testenv::chart::OperatorIdentity>,
    options: &OperatorOptions,
) -> (JoinHandle<()>, String) {
    let port = free_port();
    let webhook = webhook_url.map(|url| {
        let webhook_port: u16 = url.rsplit(':').next().unwrap().parse().unwrap();
        ferry_operator::webhook::WebhookSettings {
            listen: ([127, 0, 0, 1], webhook_port).into(),
            endpoint: ferry_operator::webhook::Endpoint::Url(url.to_string()),
            certificates: ferry_operator::webhook::Certificates::SelfSigned,
            ca_secret: None,
            configuration: Some(ferry_operator::webhook::register::configuration_name(&[
                namespace.to_string(),
            ])),
            template_edits: options.template_edits,
            probe: options
                .webhook_probe
                .map(|schedule| ferry_operator::webhook::probe::ProbeSettings {
                    namespace: namespace.to_string(),
                    schedule,
                    pod: None,
                }),
        }
    });
    let settings = Settings {
        namespaces: vec![namespace.to_string()],
        http_addr: Some(([127, 0, 0, 1], port).into()),
        mover_image: Some(ferry_testenv::workload::FERRY_IMAGE.to_string()),
        webhook,
        autoscale_interval: Some(std::time::Duration::from_secs(2)),
        config_digest_key: identity.map(|identity| ferry_operator::shared_secret::SecretRef {
            namespace: namespace.to_string(),
            name: identity.config_digest_key_secret.clone(),
        }),
        features: options.features,
        usage_prometheus: options.usage_prometheus.clone(),
        // As the chart: in the release's namespace (here the watched one).
        hold_namespace: Some(namespace.to_string()),
        default_timeout_seconds: options.default_timeout_seconds,
        owners_config_map: identity
            .map(|identity| (namespace.to_string(), identity.owners_config_map.clone())),
        ..Settings::default()
    };
    let client = client.clone();
    let task = tokio::spawn(async move {
        if let Err(error) = run(client, settings).await {
            eprintln!("operator stopped: {error}");
        }
    });
    (task, format!("http://127.0.0.1:{port}/metrics"))
}

/// The Helm chart's ServiceAccount and RBAC for an operator watching `namespace`, and a client
/// that acts as it.
pub async fn chart_identity(namespace: &str) -> (ferry_testenv::chart::OperatorIdentity, Client) {
    let identity = ferry_testenv::chart::install_identity(namespace).await.unwrap();
    let operator_client = ferry_testenv::chart::client_as(&identity.user).await.unwrap();
    (identity, operator_client)
}

/// A loopback port nobody listens on right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .unwrap()
}

/// Installs the CRDs (VolumeResize, VolumeAutoscaler, ExtendedStatefulSet) and waits until they are
/// established: once per test process (no test edits or deletes them, and `helm uninstall` keeps
/// them), as each apply of three large CRDs cost the API server more than many a test's own
/// requests.
pub async fn install_crd(client: &Client) {
    static INSTALLED: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    INSTALLED
        .get_or_init(|| async {
            for crd in ferry_operator::crd::all() {
                ferry_testenv::cluster::install_crd(client, &crd).await.unwrap();
            }
        })
        .await;
}

pub fn condition<'a>(
    resize: &'a VolumeResize,
    type_: &str,
) -> Option<&'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    resize.condition(type_)
}

/// One claim seeded with sample data: where it was and what it held.
pub struct Seeded {
    pub claim: String,
    pub volume: String,
    pub checksum: String,
}

impl Harness {
    /// Creates the StatefulSet, waits until all its replicas are Ready, and writes `files` sample
    /// files into every claim of the given templates; returns what each claim held.
    /// A PodDisruptionBudget `db` over the pods labelled `app=db` that wants all `pods` of them up
    /// (so allows no disruption), once the disruption controller has counted them.
    pub async fn budget_allowing_no_disruption(
        &self,
        pods: i32,
    ) -> Api<k8s_openapi::api::policy::v1::PodDisruptionBudget> {
        let budgets: Api<k8s_openapi::api::policy::v1::PodDisruptionBudget> = self.ns.api();
        let budget = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "db"},
            "spec": {"minAvailable": pods, "selector": {"matchLabels": {"app": "db"}}},
        }))
        .unwrap();
        budgets.create(&PostParams::default(), &budget).await.unwrap();
        wait_until(
            "the disruption controller to count the budget's pods",
            60,
            || async {
                let status = budgets.get_opt("db").await.ok().flatten()?.status?;
                (status.expected_pods == pods && status.disruptions_allowed == 0).then_some(())
            },
        )
        .await
        .unwrap();
        budgets
    }

    /// Creates the StatefulSet and waits until all its replicas are Ready.
    /// A ResourceQuota `name` with `hard` limits, once the quota controller counts `resource` as
    /// `used` (so the API server judges the next write against what is there).
    pub async fn quota(&self, name: &str, hard: serde_json::Value, (resource, used): (&str, &str)) {
        use k8s_openapi::api::core::v1::ResourceQuota;
        let quota =
            serde_json::from_value(serde_json::json!({"metadata": {"name": name}, "spec": {"hard": hard}}))
                .unwrap();
        let quotas = self.ns.api::<ResourceQuota>();
        quotas.create(&PostParams::default(), &quota).await.unwrap();
        wait_until(&format!("quota {name} to count {resource}"), 60, || async {
            let counted = quotas.get(name).await.ok()?.status?.used?;
            (counted.get(resource)?.0 == used).then_some(())
        })
        .await
        .unwrap();
    }

    pub async fn healthy_stateful_set(&self, sts: k8s_openapi::api::apps::v1::StatefulSet) {
        use ferry_testenv::fixtures::wait_ready;
        let name = sts.name_any();
        let replicas = sts.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
        let sets = self.ns.api::<k8s_openapi::api::apps::v1::StatefulSet>();
        sets.create(&PostParams::default(), &sts).await.unwrap();
        wait_ready(&sets, &name, replicas, 120).await.unwrap();
    }

    pub async fn seeded(
        &self,
        sts: k8s_openapi::api::apps::v1::StatefulSet,
        templates: &[&str],
        files: usize,
    ) -> Vec<Seeded> {
        let name = sts.name_any();
        let replicas = sts.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
        self.healthy_stateful_set(sts).await;
        self.seed_existing(&name, replicas, templates, files).await
    }

    /// Writes `files` sample files into every claim of the given templates of the StatefulSet
    /// `name` (already running); returns what each claim held.
    pub async fn seed_existing(
        &self,
        name: &str,
        replicas: i32,
        templates: &[&str],
        files: usize,
    ) -> Vec<Seeded> {
        use ferry_testenv::fixtures::{claim_directory, tree_checksum, write_sample_data};
        let claims = self.ns.api::<k8s_openapi::api::core::v1::PersistentVolumeClaim>();
        let volumes: Api<k8s_openapi::api::core::v1::PersistentVolume> = Api::all(self.client.clone());
        let mut seeded = Vec::new();
        for template in templates {
            for replica in 0..replicas {
                let claim = format!("{template}-{name}-{replica}");
                let dir = claim_directory(&claims, &volumes, &claim).await.unwrap();
                write_sample_data(&dir, files).unwrap();
                let volume = claims
                    .get(&claim)
                    .await
                    .unwrap()
                    .spec
                    .unwrap()
                    .volume_name
                    .unwrap();
                seeded.push(Seeded {
                    checksum: tree_checksum(&dir).unwrap(),
                    claim,
                    volume,
                });
            }
        }
        seeded
    }

    /// Checksum of what the claim's volume holds now.
    pub async fn checksum(&self, claim: &str) -> String {
        use ferry_testenv::fixtures::{claim_directory, tree_checksum};
        let claims = self.ns.api::<k8s_openapi::api::core::v1::PersistentVolumeClaim>();
        let volumes: Api<k8s_openapi::api::core::v1::PersistentVolume> = Api::all(self.client.clone());
        tree_checksum(&claim_directory(&claims, &volumes, claim).await.unwrap()).unwrap()
    }

    /// Nothing temporary is left: exactly `claims` PVCs (the StatefulSet's own) and no mover pod.
    pub async fn assert_nothing_leaked(&self, claims: usize) {
        let list = self
            .ns
            .api::<k8s_openapi::api::core::v1::PersistentVolumeClaim>()
            .list(&Default::default())
            .await
            .unwrap();
        let names: Vec<String> = list.items.iter().map(|c| c.name_any()).collect();
        assert_eq!(names.len(), claims, "no temporary claim left: {names:?}");
        assert!(self.mover_pods().await.unwrap().is_empty(), "no mover pod left");
        // Every volume of this namespace is either bound to one of its claims or listed as retained
        // by a VolumeResize: nothing is left that nobody knows about.
        let bound: Vec<String> = list
            .items
            .iter()
            .filter_map(|c| c.spec.as_ref()?.volume_name.clone())
            .collect();
        let retained: Vec<String> = self
            .ns
            .api::<VolumeResize>()
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .flat_map(|r| {
                r.status
                    .map(|s| s.created_objects.retained_volumes)
                    .unwrap_or_default()
            })
            .collect();
        let volumes: Api<k8s_openapi::api::core::v1::PersistentVolume> = Api::all(self.client.clone());
        for volume in volumes.list(&Default::default()).await.unwrap().items {
            let claim = volume.spec.as_ref().and_then(|s| s.claim_ref.as_ref());
            if claim.and_then(|c| c.namespace.as_deref()) != Some(self.ns.name.as_str()) {
                continue;
            }
            let name = volume.name_any();
            let deleting = volume.metadata.deletion_timestamp.is_some();
            // A volume whose claim is gone and whose policy is Delete is Kubernetes' to reclaim:
            // the PV controller marks it Released only when it next syncs it, so right after a
            // rollback deleted a temporary claim the volume may still read Bound (then Released).
            let claim_gone = claim.is_some_and(|c| {
                !list
                    .items
                    .iter()
                    .any(|k| k.metadata.uid.is_some() && k.metadata.uid == c.uid)
            });
            let reclaimed_by_kubernetes = volume
                .spec
                .as_ref()
                .and_then(|s| s.persistent_volume_reclaim_policy.as_deref())
                == Some("Delete")
                && claim_gone;
            // A deleted VolumeResize hands its retained volumes over, labelled.
            let handed_over = volume
                .labels()
                .get(ferry_api::names::LABEL_RETAINED)
                .map(String::as_str)
                == Some("true");
            assert!(
                bound.contains(&name)
                    || retained.contains(&name)
                    || handed_over
                    || deleting
                    || reclaimed_by_kubernetes,
                "volume {name} (claim {:?}) is neither bound nor listed as retained",
                claim.and_then(|c| c.name.clone())
            );
        }
    }

    /// The namespace's mover pods (label `ferry.dev/mover`), as the API server lists them now.
    pub async fn mover_pods(&self) -> Result<Vec<k8s_openapi::api::core::v1::Pod>, kube::Error> {
        let list = self
            .ns
            .api::<k8s_openapi::api::core::v1::Pod>()
            .list(&kube::api::ListParams::default().labels(ferry_testenv::MOVER_LABEL))
            .await?;
        Ok(list.items)
    }

    /// Every seeded claim still holds exactly its data (on whichever volume it is bound to now).
    pub async fn assert_data_intact(&self, seeded: &[Seeded]) {
        for entry in seeded {
            assert_eq!(
                self.checksum(&entry.claim).await,
                entry.checksum,
                "{}: data intact",
                entry.claim
            );
        }
    }
}

/// A merge patch of `name` that succeeds, or finds the object gone already.
async fn merge_patch_unless_gone<K>(api: &Api<K>, name: &str, patch: serde_json::Value)
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let patched = api
        .patch(
            name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(patch),
        )
        .await;
    assert!(
        patched.is_ok() || matches!(&patched, Err(kube::Error::Api(s)) if s.code == 404),
        "{patched:?}"
    );
}
