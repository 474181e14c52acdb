//! The lists a running resize reads at every step, served by the API server's watch cache no older
//! than what the resize's previous observation saw.
//!
//! A list without a resourceVersion is a consistent read: the API server first waits until its
//! watch cache has caught up with etcd's newest revision, and a kind with no events of its own
//! (PodDisruptionBudgets, the claims of a quiet namespace) catches up only through a progress
//! notification it requests every 100 ms. Measured on the real node while the cluster writes: 40 to
//! 100 ms per list, against 5 ms without the wait, for each of a run's steps in a replica's downtime.
//!
//! `resourceVersionMatch=NotOlderThan` at the resourceVersion of the resize's previous list of the
//! same kind is served as soon as the cache holds that revision (at once on the same API server), so
//! one resize's observations never go back in time, across API servers too. What such a list may
//! miss is the last milliseconds of writes, as an informer's cache may: every step the planner takes
//! is idempotent (an object already created, one already gone), as it is for an operator killed
//! between its write and the next observation. A resize's first list in this process is consistent.

use kube::api::{ListParams, VersionMatch};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;
use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::{Mutex, PoisonError};

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct FloorKey {
    namespace: String,
    resize: String,
    kind: String,
}

/// Per VolumeResize and kind, the resourceVersion of its last list.
#[derive(Debug, Default)]
pub struct ReadFloors {
    floors: Mutex<HashMap<FloorKey, String>>,
}

impl ReadFloors {
    /// Every `K` of `api`'s namespace, no older than resize `namespace/resize`'s last list of `K`.
    pub async fn list<K>(&self, api: &Api<K>, namespace: &str, resize: &str) -> Result<Vec<K>, kube::Error>
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
    {
        let key = FloorKey {
            namespace: namespace.to_string(),
            resize: resize.to_string(),
            kind: K::kind(&()).into_owned(),
        };
        let floor = self.lock().get(&key).cloned();
        let list = match floor {
            None => api.list(&ListParams::default()).await?,
            Some(version) => {
                let params = ListParams::default()
                    .at(&version)
                    .matching(VersionMatch::NotOlderThan);
                match api.list(&params).await {
                    Ok(list) => list,
                    // An API server whose cache did not reach the floor in time ("Too large
                    // resource version", after a few seconds): a consistent read, as the first.
                    Err(kube::Error::Api(status)) => {
                        tracing::debug!(kind = %key.kind, %namespace, %resize, error = %status.message, "list at the last observation's version refused; reading consistently");
                        api.list(&ListParams::default()).await?
                    }
                    Err(error) => return Err(error),
                }
            }
        };
        if let Some(version) = list.metadata.resource_version.clone() {
            self.lock().insert(key, version);
        }
        Ok(list.items)
    }

    /// Drops a resize's floors (it has ended: nothing reads for it any more).
    pub fn forget(&self, namespace: &str, resize: &str) {
        self.lock()
            .retain(|key, _| key.namespace != namespace || key.resize != resize);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<FloorKey, String>> {
        self.floors.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
