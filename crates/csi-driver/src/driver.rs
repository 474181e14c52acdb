//! The driver's shared state: who it is, its volumes and snapshots, and the locks its calls take.

use crate::Error;
use crate::placement::NodePlace;
use crate::snapshots::Snapshot;
use crate::store::Store;
use crate::volume::Volume;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, PoisonError};
use tonic::Status;

/// Who this driver is and where it keeps its volumes.
#[derive(Debug, Clone)]
pub struct Config {
    /// The CSI driver name (`block.csi.ferry.dev`), as StorageClasses and the CSIDriver object name it.
    pub name: String,
    /// The node this instance serves (the kubelet's node name): its node service stages volumes
    /// there, and a volume made without a topology requirement goes there.
    pub node_id: String,
    /// The zone of that node.
    pub zone: String,
    /// Volumes must be attached (ControllerPublishVolume) before a node may stage them.
    pub attach_required: bool,
    /// The largest volume; by default the size of the file system holding `state_dir`.
    pub max_volume_bytes: Option<u64>,
    pub state_dir: PathBuf,
}

impl Config {
    /// The place of the node this instance serves.
    pub fn place(&self) -> NodePlace {
        NodePlace {
            node: self.node_id.clone(),
            zone: self.zone.clone(),
        }
    }
}

/// One instance runs per node, all sharing one state directory (the volumes' images are files on
/// this one machine): the first node's instance also serves the controller to the sidecars, and
/// each instance records its node's place there, so the controller knows every node's zone.
pub struct Driver {
    pub config: Config,
    pub store: Store<Volume>,
    pub snapshots: Store<Snapshot>,
    pub nodes: Store<NodePlace>,
    /// One call that makes, removes or (de)stages volumes at a time: the sidecars and the kubelet
    /// may call concurrently, and a loop device or mount half-made by one call must not be seen by
    /// another.
    serial: tokio::sync::Mutex<()>,
    /// One call per volume at a time. Publishing and unpublishing (a bind mount of a staged volume)
    /// take only this, as production drivers lock per volume (aws-ebs-csi-driver's in-flight
    /// requests, gce-pd's volume locks): a pod's publish does not wait for another volume's
    /// unstage (an ext4 unmount, a third of a second), which a node-wide lock made every new pod
    /// on a freshly swapped volume pay.
    volumes: std::sync::Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl Driver {
    pub fn new(config: Config) -> Result<Driver, Error> {
        let store = Store::open(&config.state_dir)?;
        let snapshots = Store::open(&config.state_dir)?;
        let nodes = Store::open(&config.state_dir)?;
        nodes.put(&config.place())?;
        Ok(Driver {
            config,
            store,
            snapshots,
            nodes,
            serial: tokio::sync::Mutex::new(()),
            volumes: std::sync::Mutex::new(HashMap::new()),
        })
    }

    /// Runs `work` (blocking I/O) on a blocking thread, alone on the node and on volume `key` (a
    /// volume or snapshot ID, or the name a volume is created under).
    pub async fn call<T, F>(self: &Arc<Self>, key: &str, work: F) -> Result<T, Status>
    where
        T: Send + 'static,
        F: FnOnce(&Driver) -> Result<T, Error> + Send + 'static,
    {
        self.locked(key, true, work).await
    }

    /// Runs `work` on a blocking thread, alone on volume `volume_id` only: for work that touches
    /// nothing of other volumes (a bind mount of this one, already staged).
    pub async fn call_on_volume<T, F>(self: &Arc<Self>, volume_id: &str, work: F) -> Result<T, Status>
    where
        T: Send + 'static,
        F: FnOnce(&Driver) -> Result<T, Error> + Send + 'static,
    {
        self.locked(volume_id, false, work).await
    }

    /// Runs `work` holding volume `key`'s lock and, when `node_wide`, the node's. Volume first, then
    /// the node: a call on one volume never holds the node's lock while it waits.
    async fn locked<T, F>(self: &Arc<Self>, key: &str, node_wide: bool, work: F) -> Result<T, Status>
    where
        T: Send + 'static,
        F: FnOnce(&Driver) -> Result<T, Error> + Send + 'static,
    {
        let volume = self.volume_lock(key);
        let held = Arc::clone(&volume).lock_owned().await;
        let alone = if node_wide {
            Some(self.serial.lock().await)
        } else {
            None
        };
        let result = self.run_blocking(work).await;
        drop(alone);
        drop(held);
        self.forget_volume_lock(key, volume);
        result
    }

    async fn run_blocking<T, F>(self: &Arc<Self>, work: F) -> Result<T, Status>
    where
        T: Send + 'static,
        F: FnOnce(&Driver) -> Result<T, Error> + Send + 'static,
    {
        let driver = Arc::clone(self);
        match tokio::task::spawn_blocking(move || work(&driver)).await {
            Ok(result) => result.map_err(|error| {
                tracing::warn!(%error, "call failed");
                Status::from(error)
            }),
            Err(join) => Err(Status::internal(format!("the call's thread failed: {join}"))),
        }
    }

    /// The lock of one volume, made on first use. Handed out only under the map's lock, so a count
    /// read there is exact.
    fn volume_lock(&self, key: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut volumes = self.volumes.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(volumes.entry(key.to_string()).or_default())
    }

    /// Drops a volume's lock from the map once no call holds or waits for it (the map and `ours`
    /// are its last two references), so the map does not grow with every volume ever served.
    fn forget_volume_lock(&self, key: &str, ours: Arc<tokio::sync::Mutex<()>>) {
        let mut volumes = self.volumes.lock().unwrap_or_else(PoisonError::into_inner);
        if Arc::strong_count(&ours) == 2 {
            volumes.remove(key);
        }
    }

    /// The largest volume this driver makes.
    pub fn max_volume_bytes(&self) -> Result<u64, Error> {
        match self.config.max_volume_bytes {
            Some(bytes) => Ok(bytes),
            None => Ok(crate::disk::usage(self.store.dir())?.total_bytes),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use std::path::Path;
    use std::time::Duration;

    fn driver(state: &Path) -> Arc<Driver> {
        Arc::new(
            Driver::new(Config {
                name: "block.csi.ferry.dev".into(),
                node_id: "node".into(),
                zone: "zone".into(),
                attach_required: false,
                max_volume_bytes: None,
                state_dir: state.to_path_buf(),
            })
            .unwrap(),
        )
    }

    /// A call that holds the node and volume `a` until `release` is sent.
    fn held_call(driver: &Arc<Driver>) -> (std::sync::mpsc::Sender<()>, tokio::task::JoinHandle<()>) {
        let (release, wait) = std::sync::mpsc::channel::<()>();
        let (started, running) = std::sync::mpsc::channel::<()>();
        let holder = Arc::clone(driver);
        let task = tokio::spawn(async move {
            holder
                .call("a", move |_| {
                    started.send(()).ok();
                    wait.recv().ok();
                    Ok(())
                })
                .await
                .unwrap();
        });
        running.recv().unwrap();
        (release, task)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_publish_waits_only_for_calls_on_its_own_volume() {
        let state = tempfile::tempdir().unwrap();
        let driver = driver(state.path());
        let (release, holder) = held_call(&driver);

        // Another volume's publish goes ahead while a node-wide call runs.
        tokio::time::timeout(Duration::from_secs(5), driver.call_on_volume("b", |_| Ok(())))
            .await
            .expect("a publish of volume b waited for a call on volume a")
            .unwrap();
        // The same volume's publish, and any other node-wide call, wait for it.
        let same = tokio::spawn({
            let driver = Arc::clone(&driver);
            async move { driver.call_on_volume("a", |_| Ok(())).await }
        });
        let node_wide = tokio::spawn({
            let driver = Arc::clone(&driver);
            async move { driver.call("c", |_| Ok(())).await }
        });
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(
            !same.is_finished(),
            "a publish of volume a ran beside a call on volume a"
        );
        assert!(!node_wide.is_finished(), "two node-wide calls ran at once");

        release.send(()).unwrap();
        holder.await.unwrap();
        same.await.unwrap().unwrap();
        node_wide.await.unwrap().unwrap();
        // Every lock is dropped once nothing holds or waits for it.
        assert!(driver.volumes.lock().unwrap().is_empty());
    }
}
