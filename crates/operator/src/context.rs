//! What every reconcile gets: a client, the event recorder, metrics and the VolumeResize cache,
//! the features and usage source more than one wing reads, and each wing's own settings.

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
    /// Features this installation uses (`--disable-features`).
    pub features: crate::features::Features,
    /// Where volume usage is read when not from the kubelets (`--usage-prometheus-url`): the
    /// autoscaler's usage, and a resize's dry run.
    pub usage_prometheus: Option<Arc<crate::usage::prometheus::PrometheusUsage>>,
    /// The resize wing's own settings.
    pub resize: ResizeSettings,
    /// The ExtendedStatefulSet wing's.
    pub extended: ExtendedSettings,
    /// The trigger wing's (its webhook's).
    pub trigger: TriggerSettings,
}

/// What only the resize wing reads: its mover pods and its hold Leases.
pub struct ResizeSettings {
    /// Image of mover pods unless a VolumeResize names another.
    pub mover_image: String,
    /// Resources of mover pods unless a VolumeResize sets them (`--mover-resources`).
    pub mover_resources: Option<k8s_openapi::api::core::v1::ResourceRequirements>,
    /// Images other than `mover_image` a VolumeResize may name (`--allowed-mover-images`).
    pub allowed_mover_images: Vec<String>,
    /// Secrets (in each mover pod's namespace) to pull mover images with
    /// (`--mover-image-pull-secrets`).
    pub mover_image_pull_secrets: Vec<String>,
    /// Where the per-StatefulSet hold Leases are kept (`--hold-namespace`); `None`: beside the
    /// StatefulSet.
    pub hold_namespace: Option<String>,
    /// `timeoutSeconds` of a VolumeResize that sets none (`--default-timeout-seconds`).
    pub default_timeout_seconds: i64,
    /// The ConfigMap (namespace, name) of the admins' owner entries (`--owners-config-map`).
    pub owners_config_map: Option<(String, String)>,
}

impl ResizeSettings {
    /// The mover images this operator runs, as the planners see them.
    pub fn mover_images(&self) -> ferry_engine::resize::observed::MoverImages {
        ferry_engine::resize::observed::MoverImages {
            default: self.mover_image.clone(),
            allowed: self.allowed_mover_images.clone(),
        }
    }
}

/// What only the ExtendedStatefulSet wing reads.
pub struct ExtendedSettings {
    /// The key of ExtendedStatefulSets' configuration digests (`--config-digest-key-secret`).
    pub config_digest_key: ferry_engine::extended::config::DigestKey,
}

/// What only the trigger wing reads.
pub struct TriggerSettings {
    /// What an edit of a StatefulSet's claim templates may do (`--refuse-template-shrinks`).
    pub template_edits: ferry_engine::trigger::template_edit::TemplateEdits,
}

impl Context {
    /// What an edit of a StatefulSet's claim templates may do.
    pub fn with_template_edits(mut self, edits: ferry_engine::trigger::template_edit::TemplateEdits) -> Self {
        self.trigger.template_edits = edits;
        self
    }

    /// Images other than the operator's own that a VolumeResize may run movers from.
    pub fn with_allowed_mover_images(mut self, images: Vec<String>) -> Self {
        self.resize.allowed_mover_images = images;
        self
    }

    /// Mover and usage pods name these Secrets of their own namespace to pull their image.
    pub fn with_mover_image_pull_secrets(mut self, secrets: Vec<String>) -> Self {
        self.resize.mover_image_pull_secrets = secrets;
        self
    }

    /// Configuration digests are keyed with `key` (one per installation, the same in every replica).
    pub fn with_config_digest_key(mut self, key: ferry_engine::extended::config::DigestKey) -> Self {
        self.extended.config_digest_key = key;
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
    pub fn with_owners_config_map(mut self, config_map: Option<(String, String)>) -> Self {
        self.resize.owners_config_map = config_map;
        self
    }

    pub fn with_hold_namespace(mut self, namespace: Option<String>) -> Self {
        self.resize.hold_namespace = namespace;
        self
    }

    /// A VolumeResize without `timeoutSeconds` gets `seconds` (else the built-in default).
    pub fn with_default_timeout_seconds(mut self, seconds: Option<i64>) -> Self {
        self.resize.default_timeout_seconds = seconds.unwrap_or(ferry_api::DEFAULT_TIMEOUT_SECONDS);
        self
    }

    /// Mover pods get these resources unless their VolumeResize sets its own.
    pub fn with_mover_resources(
        mut self,
        resources: Option<k8s_openapi::api::core::v1::ResourceRequirements>,
    ) -> Self {
        self.resize.mover_resources = resources;
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
            features: crate::features::Features::default(),
            usage_prometheus: None,
            resize: ResizeSettings {
                mover_image,
                mover_resources: None,
                allowed_mover_images: Vec::new(),
                mover_image_pull_secrets: Vec::new(),
                hold_namespace: None,
                default_timeout_seconds: ferry_api::DEFAULT_TIMEOUT_SECONDS,
                owners_config_map: None,
            },
            extended: ExtendedSettings {
                // Replaced by the installation's key where digests are made (`run_scope`).
                config_digest_key: crate::digest_key::random(),
            },
            trigger: TriggerSettings {
                template_edits: Default::default(),
            },
        }
    }
}
