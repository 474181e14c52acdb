//! VolumeResizes listed from the API server (not the cache) by the controllers that decide whether
//! to make one: the autoscaler, the trigger controller and the ExtendedStatefulSet controller.
//! Listed raw and sorted by [`ferry_api::listed`], so one VolumeResize this Ferry cannot read (one
//! written under a newer Ferry's CRD) no longer fails the list. The unreadable ones are logged and
//! otherwise only counted where skipping them would be unsafe: one that may be at work on a
//! StatefulSet keeps new work off that StatefulSet (see [`Listing::working_on`]). The resize controller
//! publishes the `InvalidObject` Event for each; nothing here adds Events.

use crate::Error;
use ferry_api::listed::{self, Listing, UnreadableResize};
use kube::api::{DynamicObject, ListParams};
use kube::{Api, Client};

/// The VolumeResizes of `namespace`, each unreadable one logged.
pub async fn list(client: &Client, namespace: &str) -> Result<Listing, Error> {
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), namespace, &listed::api_resource());
    let listing = Listing::from_objects(api.list(&ListParams::default()).await?.items);
    for unreadable in &listing.unreadable {
        warn_unreadable(namespace, unreadable);
    }
    Ok(listing)
}

fn warn_unreadable(namespace: &str, unreadable: &UnreadableResize) {
    match unreadable.stateful_set() {
        Some(stateful_set) => tracing::warn!(
            namespace,
            resize = %unreadable.name(),
            %stateful_set,
            may_be_active = unreadable.may_be_active(),
            error = %unreadable.error,
            "VolumeResize cannot be read by this Ferry: skipped, but while it may be at work no other resize is started on its StatefulSet"
        ),
        None => tracing::warn!(
            namespace,
            resize = %unreadable.name(),
            error = %unreadable.error,
            "VolumeResize cannot be read by this Ferry and names no StatefulSet that can be read: skipped"
        ),
    }
}
