//! What every reconcile gets: a client, the event recorder, metrics and the VolumeResize cache.

use crate::metrics::Metrics;
use crate::resize_cache::Resizes;
use kube::Client;
use kube::runtime::events::{Recorder, Reporter};
use std::sync::Arc;

pub struct Context {
    pub client: Client,
    pub recorder: Recorder,
    pub metrics: Arc<Metrics>,
    /// Every VolumeResize the controller watches, to find others on the same StatefulSet.
    pub resizes: Resizes,
    /// Image of mover pods unless a VolumeResize names another.
    pub mover_image: String,
    /// Resources of mover pods unless a VolumeResize sets them (`--mover-resources`).
    pub mover_resources: Option<k8s_openapi::api::core::v1::ResourceRequirements>,
    /// Images other than `mover_image` a VolumeResize may name (`--allowed-mover-images`).
    pub allowed_mover_images: Vec<String>,
    /// Secrets (in each mover pod's namespace) to pull mover images with
    /// (`--mover-image-pull-secrets`).
    pub mover_image_pull_secrets: Vec<String>,
    /// The key of ExtendedStatefulSets' configuration digests (`--config-digest-key-secret`).
    pub config_digest_key: ferry_engine::extended::config::DigestKey,
    /// Features this installation uses (`--disable-features`).
    pub features: crate::features::Features,
    /// Where the per-StatefulSet hold Leases are kept (`--hold-namespace`); `None`: beside the
    /// StatefulSet.
    pub hold_namespace: Option<String>,
    /// What an edit of a StatefulSet's claim templates may do (`--refuse-template-shrinks`).
    pub template_edits: ferry_engine::trigger::template_edit::TemplateEdits,
    /// Where volume usage is read when not from the kubelets (`--usage-prometheus-url`).
    pub usage_prometheus: Option<Arc<crate::usage::prometheus::PrometheusUsage>>,
}

impl Context {
    /// What an edit of a StatefulSet's claim templates may do.
    pub fn with_template_edits(mut self, edits: ferry_engine::trigger::template_edit::TemplateEdits) -> Self {
        self.template_edits = edits;
        self
    }

    /// Images other than the operator's own that a VolumeResize may run movers from.
    pub fn with_allowed_mover_images(mut self, images: Vec<String>) -> Self {
        self.allowed_mover_images = images;
        self
    }

    /// Mover and usage pods name these Secrets of their own namespace to pull their image.
    pub fn with_mover_image_pull_secrets(mut self, secrets: Vec<String>) -> Self {
        self.mover_image_pull_secrets = secrets;
        self
    }

    /// The mover images this operator runs, as the planners see them.
    pub fn mover_images(&self) -> ferry_engine::resize::observed::MoverImages {
        ferry_engine::resize::observed::MoverImages {
            default: self.mover_image.clone(),
            allowed: self.allowed_mover_images.clone(),
        }
    }

    /// Configuration digests are keyed with `key` (one per installation, the same in every replica).
    pub fn with_config_digest_key(mut self, key: ferry_engine::extended::config::DigestKey) -> Self {
        self.config_digest_key = key;
        self
    }

    /// Reads volume usage from this Prometheus instead of the kubelets.
    pub fn with_usage_prometheus(
        mut self,
        usage: Option<Arc<crate::usage::prometheus::PrometheusUsage>>,
    ) -> Self {
        self.usage_prometheus = usage;
        self
    }

    /// Whether volume usage can be read at all: from Prometheus, or from the kubelets when
    /// `kubelet-stats` is on.
    pub fn reads_usage(&self) -> bool {
        self.usage_prometheus.is_some() || self.features.enabled(crate::features::Feature::KubeletStats)
    }

    /// Uses only `features` (the others are switched off, their permissions not granted).
    pub fn with_features(mut self, features: crate::features::Features) -> Self {
        self.features = features;
        self
    }

    /// Hold Leases go to `namespace` (the operator's own) instead of beside each StatefulSet.
    pub fn with_hold_namespace(mut self, namespace: Option<String>) -> Self {
        self.hold_namespace = namespace;
        self
    }

    /// Mover pods get these resources unless their VolumeResize sets its own.
    pub fn with_mover_resources(
        mut self,
        resources: Option<k8s_openapi::api::core::v1::ResourceRequirements>,
    ) -> Self {
        self.mover_resources = resources;
        self
    }

    pub fn new(
        client: Client,
        metrics: Arc<Metrics>,
        resizes: Resizes,
        mover_image: String,
        identity: Option<String>,
    ) -> Self {
        let reporter = Reporter {
            controller: "ferry".into(),
            instance: identity,
        };
        Context {
            recorder: Recorder::new(client.clone(), reporter),
            client,
            metrics,
            resizes,
            mover_image,
            mover_resources: None,
            allowed_mover_images: Vec::new(),
            mover_image_pull_secrets: Vec::new(),
            // Replaced by the installation's key where digests are made (`run_scope`).
            config_digest_key: crate::digest_key::random(),
            features: crate::features::Features::default(),
            hold_namespace: None,
            template_edits: Default::default(),
            usage_prometheus: None,
        }
    }
}
