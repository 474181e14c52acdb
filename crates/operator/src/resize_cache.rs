//! The VolumeResize cache every controller, the webhooks and the metrics read: one reflector store
//! per watched namespace (or one for all), holding unreadable objects too.

use ferry_api::VolumeResize;
use futures::FutureExt;
use kube::core::DeserializeGuard;
use kube::runtime::reflector::Store;
use kube::runtime::reflector::store::WriterDropped;
use std::sync::Arc;

/// A VolumeResize as a watch delivers it: readable by this Ferry, or the error and its metadata (one
/// written by a newer or older Ferry, or under an edited CRD). A watch of plain `VolumeResize`s
/// would fail on such an object and stall, for every VolumeResize it covers.
pub type GuardedResize = DeserializeGuard<VolumeResize>;

/// How often [`Resizes::wait_synced`] asks, and how often it says it still waits.
const SYNC_POLL: std::time::Duration = std::time::Duration::from_millis(50);
const SYNC_REPORT: std::time::Duration = std::time::Duration::from_secs(10);

/// Whether the cache's first complete list is in: `None` while it is under way, `Err` when the
/// cache stopped first. Polled with a no-op waker, so it never waits and never needs waking.
fn first_list_done(store: &Store<GuardedResize>) -> Option<Result<(), WriterDropped>> {
    store.wait_until_ready().now_or_never()
}

/// The VolumeResizes of every watched namespace: one cache per namespace (or one for all). The
/// caches hold every object, readable or not; readers get only the readable ones.
#[derive(Clone, Default)]
pub struct Resizes(Vec<Store<GuardedResize>>);

impl Resizes {
    pub fn new(stores: Vec<Store<GuardedResize>>) -> Self {
        Resizes(stores)
    }

    /// These caches and `other`'s, read as one.
    pub fn join(&mut self, other: Resizes) {
        self.0.extend(other.0);
    }

    /// Every cache has been filled by its first complete list. Before that a cache looks like "no
    /// VolumeResizes", which no review may take for an answer.
    pub fn synced(&self) -> bool {
        self.0
            .iter()
            .all(|store| matches!(first_list_done(store), Some(Ok(()))))
    }

    /// Waits until [`Resizes::synced`] (readiness waits on it), or a cache stopped before it
    /// synced. It asks again every [`SYNC_POLL`] instead of waiting to be woken: kube's store wakes
    /// only the last task that polled its readiness, and every webhook review polls it
    /// ([`Resizes::synced`]), so a review during the first list would take this wait's wake-up and
    /// the operator would never start its controllers.
    pub async fn wait_synced(&self) {
        let started = tokio::time::Instant::now();
        let mut next_report = SYNC_REPORT;
        for store in &self.0 {
            loop {
                match first_list_done(store) {
                    Some(Ok(())) => break,
                    Some(Err(_)) => {
                        tracing::warn!("a VolumeResize cache stopped before it synced");
                        break;
                    }
                    None => {}
                }
                if started.elapsed() >= next_report {
                    tracing::warn!(waited = ?started.elapsed(), "still waiting for the VolumeResize cache's first list");
                    next_report += SYNC_REPORT;
                }
                tokio::time::sleep(SYNC_POLL).await;
            }
        }
    }

    /// `f` of every readable VolumeResize, borrowed from the cache: nothing is copied (the watch
    /// mappers run at every change of every pod and claim, the trigger controller at every
    /// StatefulSet reconcile).
    pub fn with_readable<T>(&self, f: impl FnOnce(&[&VolumeResize]) -> T) -> T {
        let all: Vec<Arc<GuardedResize>> = self.0.iter().flat_map(Store::state).collect();
        let readable: Vec<&VolumeResize> = all.iter().filter_map(|guard| guard.0.as_ref().ok()).collect();
        f(&readable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::{reflector, watcher::Event};

    #[test]
    fn a_cache_is_synced_only_after_its_first_complete_list() {
        let (store, mut writer) = reflector::store::<GuardedResize>();
        let resizes = Resizes::new(vec![store]);
        assert!(!resizes.synced(), "nothing listed yet");
        writer.apply_watcher_event(&Event::Init);
        assert!(!resizes.synced(), "a list under way");
        writer.apply_watcher_event(&Event::InitDone);
        assert!(resizes.synced());
    }

    /// kube's store wakes only the last task that polled its readiness: a webhook review asking
    /// `synced()` while the operator waited in `wait_synced()` took that place, and the operator
    /// then waited for good, never starting its controllers (seen as a flaky end-to-end test).
    #[tokio::test]
    async fn a_review_asking_during_the_sync_never_strands_the_wait_for_it() {
        let (store, mut writer) = reflector::store::<GuardedResize>();
        let resizes = Resizes::new(vec![store]);
        let waiting = tokio::spawn({
            let resizes = resizes.clone();
            async move { resizes.wait_synced().await }
        });
        tokio::task::yield_now().await;
        assert!(!resizes.synced(), "a review during the first list");
        writer.apply_watcher_event(&Event::Init);
        writer.apply_watcher_event(&Event::InitDone);
        tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
            .await
            .expect("wait_synced ends once the cache has synced")
            .unwrap();
    }

    #[test]
    fn an_unreadable_resize_is_kept_in_the_cache_but_never_read() {
        let (store, mut writer) = reflector::store::<GuardedResize>();
        let readable: GuardedResize = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "grow", "namespace": "ns"},
            "spec": {"statefulSetName": "db", "volumes": [{"name": "data", "size": "2Gi"}]},
        }))
        .unwrap();
        // A newer Ferry's field shape: `volumes` is not a list here.
        let unreadable: GuardedResize = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "future", "namespace": "ns"},
            "spec": {"statefulSetName": "db", "volumes": {"data": "2Gi"}},
        }))
        .unwrap();
        assert!(unreadable.0.is_err());
        writer.apply_watcher_event(&Event::Apply(readable));
        writer.apply_watcher_event(&Event::Apply(unreadable));
        assert_eq!(store.state().len(), 2);
        let resizes = Resizes::new(vec![store]);
        let names: Vec<String> = resizes.with_readable(|all| {
            all.iter()
                .map(|resize| resize.metadata.name.clone().unwrap_or_default())
                .collect()
        });
        assert_eq!(names, ["grow"]);
        assert_eq!(resizes.with_readable(|all| all.len()), 1);
    }
}
