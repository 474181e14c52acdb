//! What every controller's wiring shares: the API of one namespace or all, metadata-only watches
//! without managed fields, watches that each back off on their own, and how many reconciles run
//! at once.

use crate::watch_backoff::{NoPause, backing_off};
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{self, Store, reflector};
use kube::runtime::{Controller, WatchStreamExt, watcher};
use kube::{Api, Client};

/// The API for `K` in one namespace, or in all.
pub fn scoped<K>(client: &Client, scope: Option<&str>) -> Api<K>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
{
    match scope {
        Some(namespace) => Api::namespaced(client.clone(), namespace),
        None => Api::all(client.clone()),
    }
}

/// The objects of `api` that change or go, with their metadata only (no spec or status is sent
/// or parsed, managed fields dropped): for a watch that only maps an object to the ones it
/// wakes. With every StatefulSet, pod and claim of a cluster watched this way, the operator's
/// memory no longer grows with their size. The initial list is read in pages of 500 (a list "at
/// any version" is served from the API server's cache in one piece, which for 60,000 pods is one
/// body of tens of MiB to hold and decode at once).
pub fn touched_metadata<K>(
    api: Api<PartialObjectMeta<K>>,
) -> impl futures::Stream<Item = Result<PartialObjectMeta<K>, watcher::Error>> + Send + 'static
where
    K: kube::Resource + Clone + std::fmt::Debug + Send + Sync + 'static,
    K::DynamicType: Default + Clone + std::fmt::Debug + Eq + std::hash::Hash,
{
    touched_metadata_with(api, watcher::Config::default())
}

/// [`touched_metadata`] with a watch configuration of its own (a label selector).
pub fn touched_metadata_with<K>(
    api: Api<PartialObjectMeta<K>>,
    config: watcher::Config,
) -> impl futures::Stream<Item = Result<PartialObjectMeta<K>, watcher::Error>> + Send + 'static
where
    K: kube::Resource + Clone + std::fmt::Debug + Send + Sync + 'static,
    K::DynamicType: Default + Clone + std::fmt::Debug + Eq + std::hash::Hash,
{
    backing_off(watcher(api, config))
        .modify(drop_managed_fields)
        .touched_objects()
}

/// A controller of the objects `api` holds (within `config`), kept in its store, its watch
/// backing off on its own ([`controller_for_stream`]).
pub fn controller<K>(api: Api<K>, config: watcher::Config) -> Controller<K>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
    K::DynamicType: Default + Clone + std::fmt::Debug + Eq + std::hash::Hash + Unpin,
{
    let (store, writer) = reflector::store();
    let objects = reflector(writer, backing_off(watcher(api, config))).applied_objects();
    controller_for_stream(objects, store)
}

/// A controller of the objects `stream` delivers and `store` keeps. Every watch given to it must
/// back off on its own ([`backing_off`]; [`touched_metadata`] does): the controller itself never
/// pauses, so one watch's error never holds up the others' events.
pub fn controller_for_stream<K>(
    stream: impl futures::Stream<Item = Result<K, watcher::Error>> + Send + 'static,
    store: Store<K>,
) -> Controller<K>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
    K::DynamicType: Default + Clone + std::fmt::Debug + Eq + std::hash::Hash + Unpin,
{
    Controller::for_stream(stream, store)
        .with_config(reconciles())
        .trigger_backoff(NoPause)
}

/// Drops the managed fields, which no controller reads and which are often the larger part of
/// an object's metadata.
fn drop_managed_fields<K: kube::Resource>(object: &mut K) {
    object.meta_mut().managed_fields = None;
}

/// How many reconciles of one controller run at once. Unbounded (kube's default), a start that
/// lists 20,000 StatefulSets spawned 20,000 reconcile tasks at once, about 9 KiB of future each:
/// 173 MiB for a moment (heaptrack). The rest wait in the controller's queue, a few bytes each.
const CONCURRENT_RECONCILES: u16 = 32;

/// The configuration every controller runs with (through [`controller_for_stream`], which also
/// sets its backoff: no controller is built without both).
fn reconciles() -> kube::runtime::controller::Config {
    kube::runtime::controller::Config::default().concurrency(CONCURRENT_RECONCILES)
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::{StreamExt, stream};
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::runtime::controller::Action;
    use kube::runtime::reflector::ObjectRef;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;
    use tokio::time::Instant;

    const WATCHES: usize = 6;

    fn map(name: &str) -> ConfigMap {
        let mut map = ConfigMap::default();
        map.metadata.name = Some(name.to_string());
        map.metadata.namespace = Some("ns".to_string());
        map
    }

    /// A watch that fails once (as each of a controller's watches did after an API server
    /// restart: "too old resource version"), then sees `name` change, then waits.
    fn failing_once(
        name: &str,
    ) -> impl futures::Stream<Item = Result<ConfigMap, watcher::Error>> + Send + use<> {
        stream::iter([Err(watcher::Error::NoResourceVersion), Ok(map(name))]).chain(stream::pending())
    }

    /// Six watches fail at once; each one's event comes after its own first retry delay (0.5 s),
    /// not after the pauses the others' errors caused (kube's controller backoff: 0.5 + 1 + 2 + 4
    /// + 5 s and more, one after another).
    #[tokio::test(start_paused = true)]
    async fn one_watchs_error_holds_up_no_other_watchs_events() {
        let names: Vec<String> = (0..WATCHES).map(|i| format!("m{i}")).collect();
        let (store, writer) = reflector::store::<ConfigMap>();
        let listed: Vec<watcher::Event<ConfigMap>> = std::iter::once(watcher::Event::Init)
            .chain(names.iter().map(|name| watcher::Event::InitApply(map(name))))
            .chain(std::iter::once(watcher::Event::InitDone))
            .collect();
        let own = reflector(
            writer,
            backing_off(stream::iter(listed.into_iter().map(Ok)).chain(stream::pending())),
        )
        .applied_objects();
        let mut controller = controller_for_stream(own, store);
        for name in &names {
            controller = controller.watches_stream(backing_off(failing_once(name)), |map: ConfigMap| {
                Some(ObjectRef::from_obj(&map))
            });
        }
        let started = Instant::now();
        let reconciled: Arc<Mutex<Vec<(String, Duration)>>> = Arc::default();
        let run = controller.run(
            |map: Arc<ConfigMap>, seen: Arc<Mutex<Vec<(String, Duration)>>>| async move {
                let name = map.metadata.name.clone().unwrap_or_default();
                seen.lock().unwrap().push((name, started.elapsed()));
                Ok::<_, kube::Error>(Action::await_change())
            },
            |_, _, _| Action::await_change(),
            reconciled.clone(),
        );
        let _ = tokio::time::timeout(Duration::from_secs(60), run.for_each(|_| async {})).await;
        let reconciled = reconciled.lock().unwrap();
        for name in &names {
            let woken_again = reconciled
                .iter()
                .filter(|(seen, _)| seen == name)
                .map(|(_, at)| *at)
                .max();
            assert!(
                woken_again
                    .is_some_and(|at| at >= Duration::from_millis(500) && at <= Duration::from_secs(1)),
                "{name}: its watch's event reconciled it at {woken_again:?}, not 0.5-1 s after the errors: {reconciled:?}"
            );
        }
    }
}
