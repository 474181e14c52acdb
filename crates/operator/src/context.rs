//! What every reconcile gets: a client, the event recorder, metrics and the VolumeResize cache.

use crate::metrics::Metrics;
use ferry_api::VolumeResize;
use kube::Client;
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::reflector::Store;
use std::sync::{Arc, Once};

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
    /// Whether `resizes` is counted in the metrics' VolumeResize gauges yet.
    counted: Once,
}

impl Context {
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
            counted: Once::new(),
        }
    }

    /// Counts this context's VolumeResize cache in the in-flight and copy-progress gauges, once.
    /// The VolumeResize controller calls it at each reconcile, so the controllers' caches are
    /// counted and a webhook's (which every replica keeps, leader or not) never is.
    pub fn count_resizes_in_metrics(&self) {
        self.counted
            .call_once(|| self.metrics.count_resizes(self.resizes.clone()));
    }
}

/// The VolumeResizes of every watched namespace: one cache per namespace (or one for all).
#[derive(Clone, Default)]
pub struct Resizes(Vec<Store<VolumeResize>>);

impl Resizes {
    pub fn new(stores: Vec<Store<VolumeResize>>) -> Self {
        Resizes(stores)
    }

    pub fn state(&self) -> Vec<Arc<VolumeResize>> {
        self.0.iter().flat_map(Store::state).collect()
    }
}
