//! What every controller's wiring shares: the API of one namespace or all, metadata-only watches
//! without managed fields, and how many reconciles run at once.

use kube::core::PartialObjectMeta;
use kube::runtime::{WatchStreamExt, watcher};
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
    watcher(api, config).modify(drop_managed_fields).touched_objects()
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

/// The configuration every controller runs with.
pub fn reconciles() -> kube::runtime::controller::Config {
    kube::runtime::controller::Config::default().concurrency(CONCURRENT_RECONCILES)
}
