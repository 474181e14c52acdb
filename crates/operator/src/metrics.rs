//! Prometheus metrics, served on /metrics. docs/metrics.md lists them; the Grafana dashboard
//! (deploy/helm/ferry/dashboards/ferry.json) queries them, and a test checks that every metric it
//! queries is declared here.

use crate::resize_cache::Resizes;
use ferry_api::VolumeResize;
use ferry_engine::resize::gauges::{copy_progress, in_flight};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric, MetricEncoder};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::sync::{Arc, Mutex, PoisonError};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct BuildLabels {
    pub version: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabels {
    pub outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CategoryLabels {
    pub category: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabels {
    pub reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StepLabels {
    pub step: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PhaseLabels {
    pub namespace: String,
    pub phase: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CopyLabels {
    pub namespace: String,
    pub volume_resize: String,
    pub replica: String,
    pub volume: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct VolumeLabels {
    pub namespace: String,
    pub autoscaler: String,
    pub stateful_set: String,
    pub volume: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WebhookLabels {
    pub webhook: String,
}

pub struct Metrics {
    pub registry: Registry,
    /// Finished VolumeResizes by outcome (succeeded, failed).
    pub resizes: Family<OutcomeLabels, Counter>,
    /// Bytes the mover passes of copies wrote to new volumes.
    pub copied_bytes: Counter,
    /// How long each replica was down during a copy.
    pub replica_downtime: Histogram,
    /// How long rows spent in each step of a resize.
    pub step_duration: Family<StepLabels, Histogram>,
    pub reconciles: Family<OutcomeLabels, Counter>,
    pub errors: Family<CategoryLabels, Counter>,
    pub prechecks: Family<ReasonLabels, Counter>,
    pub reconcile_duration: Histogram,
    /// The fullest replica's share of its volume, per autoscaled volume.
    pub autoscale_usage_ratio: Family<VolumeLabels, Gauge<f64, std::sync::atomic::AtomicU64>>,
    /// Grows an autoscaler started, by reason (threshold, inodes, rescue).
    pub autoscale_resizes: Family<ReasonLabels, Counter>,
    /// Autoscaler decisions not to grow, by reason (below-threshold, cooldown, at-max-size, ...).
    pub autoscale_skipped: Family<ReasonLabels, Counter>,
    /// 1 while this replica runs the controllers (it holds the Lease, or leader election is off).
    pub leader: Gauge,
    /// 1 while the API server calls the validating webhook (the probe's dry run was refused by
    /// it), 0 once probes in a row found it not called; absent until the first report.
    pub webhook_reachable: Family<WebhookLabels, Gauge>,
    /// The VolumeResize caches of the running controllers, read at each scrape for the in-flight
    /// and copy-progress gauges.
    resize_caches: ResizeCaches,
    /// The standard `process_*` metrics, unprefixed as every Prometheus client exports them.
    process: Registry,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("ferry");
        let reconciles = Family::<OutcomeLabels, Counter>::default();
        let errors = Family::<CategoryLabels, Counter>::default();
        let prechecks = Family::<ReasonLabels, Counter>::default();
        let reconcile_duration = Histogram::new(exponential_buckets(0.005, 2.0, 12));
        let resizes = Family::<OutcomeLabels, Counter>::default();
        let copied_bytes = Counter::default();
        let replica_downtime = Histogram::new(exponential_buckets(0.25, 2.0, 14));
        let step_duration =
            Family::<StepLabels, Histogram>::new_with_constructor(step_buckets as fn() -> Histogram);
        registry.register(
            "volume_resizes",
            "Finished VolumeResizes by outcome",
            Declared(resizes.clone()),
        );
        registry.register(
            "copied_bytes",
            "Bytes the mover passes of copies wrote to new volumes",
            copied_bytes.clone(),
        );
        registry.register(
            "replica_downtime_seconds",
            "How long a replica was down during a copy, from its stop until a new pod was Ready",
            replica_downtime.clone(),
        );
        registry.register(
            "step_duration_seconds",
            "How long a volume spent in one step of a resize (CreatingTarget, WarmCopy, FinalSync, ...)",
            Declared(step_duration.clone()),
        );
        registry.register(
            "volume_resize_reconciles",
            "VolumeResize reconciles by outcome",
            Declared(reconciles.clone()),
        );
        registry.register(
            "reconcile_errors",
            "Reconcile errors by category",
            Declared(errors.clone()),
        );
        registry.register(
            "prechecks",
            "Precheck verdicts by reason, counted when they change",
            Declared(prechecks.clone()),
        );
        registry.register(
            "volume_resize_reconcile_duration_seconds",
            "Time one VolumeResize reconcile takes",
            reconcile_duration.clone(),
        );
        let autoscale_usage_ratio = Family::default();
        let autoscale_resizes = Family::<ReasonLabels, Counter>::default();
        let autoscale_skipped = Family::<ReasonLabels, Counter>::default();
        registry.register(
            "autoscale_usage_ratio",
            "The fullest replica's used share of an autoscaled volume (0 to 1)",
            Declared(autoscale_usage_ratio.clone()),
        );
        registry.register(
            "autoscale_resizes",
            "VolumeResizes autoscalers started, by reason (threshold, inodes, rescue)",
            Declared(autoscale_resizes.clone()),
        );
        registry.register(
            "autoscale_skipped",
            "Autoscaler polls that did not grow a volume, by reason",
            Declared(autoscale_skipped.clone()),
        );
        let leader = Gauge::default();
        registry.register(
            "leader",
            "1 while this replica runs the controllers (it holds the Lease, or leader election is off), 0 while it waits",
            leader.clone(),
        );
        let webhook_reachable = Family::<WebhookLabels, Gauge>::default();
        registry.register(
            "webhook_reachable",
            "1 while the API server calls Ferry's validating webhook (a dry-run VolumeResize for a missing StatefulSet is refused by it), 0 once probes in a row found it not called (it fails open)",
            Declared(webhook_reachable.clone()),
        );
        // The Prometheus convention for a build's identity: a constant 1 carrying it as labels.
        let build_info = Family::<BuildLabels, Gauge>::default();
        build_info
            .get_or_create(&BuildLabels {
                version: env!("CARGO_PKG_VERSION").to_string(),
            })
            .set(1);
        registry.register(
            "build_info",
            "Always 1; its version label is this operator's version",
            build_info,
        );
        let resize_caches = ResizeCaches::default();
        registry.register_collector(Box::new(resize_caches.clone()));
        let mut process = Registry::default();
        process.register_collector(Box::new(process::ProcessCollector));
        Metrics {
            registry,
            process,
            leader,
            webhook_reachable,
            resize_caches,
            autoscale_usage_ratio,
            autoscale_resizes,
            autoscale_skipped,
            resizes,
            copied_bytes,
            replica_downtime,
            step_duration,
            reconciles,
            errors,
            prechecks,
            reconcile_duration,
        }
    }
}

/// 0.25 s to about 2 hours.
fn step_buckets() -> Histogram {
    Histogram::new(exponential_buckets(0.25, 2.0, 16))
}

impl Metrics {
    /// Exposes the client's request counts (`ferry_api_requests_total{verb}`), when it keeps any.
    pub fn with_api_requests(mut self, requests: Option<crate::api_requests::ApiRequests>) -> Self {
        if let Some(requests) = requests {
            self.registry.register(
                "api_requests",
                "Requests this process sent to the API server, by verb (get, list, watch, create, update, patch, delete)",
                Declared(requests),
            );
        }
        self
    }

    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        let mut out = String::new();
        prometheus_client::encoding::text::encode_registry(&mut out, &self.registry)?;
        prometheus_client::encoding::text::encode_registry(&mut out, &self.process)?;
        prometheus_client::encoding::text::encode_eof(&mut out)?;
        Ok(out)
    }

    /// Counts the VolumeResizes of a running controller's cache in the in-flight and
    /// copy-progress gauges (each cache once: the controllers' caches cover disjoint namespaces).
    pub fn count_resizes(&self, resizes: Resizes) {
        self.resize_caches.lock().join(resizes);
    }
}

/// A label family declared (`# HELP`, `# TYPE`) before its first sample, so that dashboards and
/// alerts find every metric on a fresh operator: prometheus-client 0.24 leaves out empty families.
#[derive(Debug)]
struct Declared<M>(M);

impl<M: EncodeMetric> EncodeMetric for Declared<M> {
    fn encode(&self, encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        self.0.encode(encoder)
    }

    fn metric_type(&self) -> MetricType {
        self.0.metric_type()
    }
}

/// The gauges read off the VolumeResize caches at each scrape: resizes in flight by namespace and
/// phase, and the copy progress of each replica's volume of unfinished resizes. Nothing is kept
/// between scrapes, so a finished or deleted resize leaves no series behind. A replica that runs
/// no controller (a follower) declares them without samples.
#[derive(Clone, Default)]
struct ResizeCaches(Arc<Mutex<Resizes>>);

impl ResizeCaches {
    fn lock(&self) -> std::sync::MutexGuard<'_, Resizes> {
        // The caches are only ever joined: a panic elsewhere cannot leave them half-written.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl std::fmt::Debug for ResizeCaches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResizeCaches").finish_non_exhaustive()
    }
}

impl Collector for ResizeCaches {
    fn encode(&self, encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        // The caches' handles are copied out, not the VolumeResizes: the lock is not held while
        // encoding.
        let caches = self.lock().clone();
        caches.with_readable(|resizes| encode_resizes(resizes, encoder))
    }
}

/// The in-flight and copy-progress gauges of these VolumeResizes.
fn encode_resizes(resizes: &[&VolumeResize], mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
    {
        let mut family = encoder.encode_descriptor(
            "volume_resizes_in_flight",
            "VolumeResizes not finished yet, by namespace and phase (one without a status is Pending)",
            None,
            MetricType::Gauge,
        )?;
        for ((namespace, phase), count) in in_flight(resizes.iter().copied()) {
            let labels = PhaseLabels {
                namespace,
                phase: phase.into(),
            };
            family.encode_family(&labels)?.encode_gauge(&count)?;
        }
    }
    let progress: Vec<(CopyLabels, u64, u64)> = resizes
        .iter()
        .flat_map(|resize| {
            copy_progress(resize).into_iter().map(|row| {
                let labels = CopyLabels {
                    namespace: resize.metadata.namespace.clone().unwrap_or_default(),
                    volume_resize: resize.metadata.name.clone().unwrap_or_default(),
                    replica: row.replica.to_string(),
                    volume: row.volume,
                };
                (labels, row.done_bytes, row.size_bytes)
            })
        })
        .collect();
    {
        let mut family = encoder.encode_descriptor(
                "copy_done_bytes",
                "Bytes the current mover pass has gone through, per replica and volume of an unfinished VolumeResize",
                None,
                MetricType::Gauge,
            )?;
        for (labels, done, _) in &progress {
            family.encode_family(labels)?.encode_gauge(done)?;
        }
    }
    let mut family = encoder.encode_descriptor(
        "copy_size_bytes",
        "Bytes to copy (the data on the old volume), per replica and volume of an unfinished VolumeResize",
        None,
        MetricType::Gauge,
    )?;
    for (labels, _, size) in &progress {
        family.encode_family(labels)?.encode_gauge(size)?;
    }
    Ok(())
}

pub mod access;
pub mod process;
pub mod reviews;
#[cfg(test)]
mod tests;
