//! What every reconcile gets: a client, the event recorder, metrics and the VolumeResize cache.

use crate::metrics::Metrics;
use ferry_api::VolumeResize;
use kube::Client;
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::reflector::Store;
use std::sync::Arc;

pub struct Context {
    pub client: Client,
    pub recorder: Recorder,
    pub metrics: Arc<Metrics>,
    /// Every VolumeResize the controller watches, to find others on the same StatefulSet.
    pub resizes: Resizes,
    /// Image of mover pods unless a VolumeResize names another.
    pub mover_image: String,
}

impl Context {
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
        }
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
