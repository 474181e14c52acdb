//! Prometheus metrics, served on /metrics.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

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
pub struct VolumeLabels {
    pub namespace: String,
    pub autoscaler: String,
    pub stateful_set: String,
    pub volume: String,
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
        let replica_downtime = Histogram::new(exponential_buckets(1.0, 2.0, 12));
        let step_duration =
            Family::<StepLabels, Histogram>::new_with_constructor(step_buckets as fn() -> Histogram);
        registry.register(
            "volume_resizes",
            "Finished VolumeResizes by outcome",
            resizes.clone(),
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
            step_duration.clone(),
        );
        registry.register(
            "volume_resize_reconciles",
            "VolumeResize reconciles by outcome",
            reconciles.clone(),
        );
        registry.register("reconcile_errors", "Reconcile errors by category", errors.clone());
        registry.register(
            "prechecks",
            "Precheck verdicts by reason, counted when they change",
            prechecks.clone(),
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
            autoscale_usage_ratio.clone(),
        );
        registry.register(
            "autoscale_resizes",
            "VolumeResizes autoscalers started, by reason (threshold, inodes, rescue)",
            autoscale_resizes.clone(),
        );
        registry.register(
            "autoscale_skipped",
            "Autoscaler polls that did not grow a volume, by reason",
            autoscale_skipped.clone(),
        );
        Metrics {
            registry,
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
    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)?;
        Ok(out)
    }
}
