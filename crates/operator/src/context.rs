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
    pub resizes: Store<VolumeResize>,
    /// Image of mover pods unless a VolumeResize names another.
    pub mover_image: String,
}

impl Context {
    pub fn new(
        client: Client,
        metrics: Arc<Metrics>,
        resizes: Store<VolumeResize>,
        mover_image: String,
    ) -> Self {
        let reporter = Reporter {
            controller: "ferry".into(),
            instance: std::env::var("POD_NAME").ok(),
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
