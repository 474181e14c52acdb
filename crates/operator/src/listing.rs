//! VolumeResizes listed from the API server (not the cache) by the controllers that decide whether
//! to make one: the autoscaler, the trigger controller and the ExtendedStatefulSet controller.
//! Listed raw and sorted by [`ferry_api::listed`], so one VolumeResize this Ferry cannot read (one
//! written under a newer Ferry's CRD) no longer fails the list. The unreadable ones are logged and
//! otherwise only counted where skipping them would be unsafe: one that may be at work on a
//! StatefulSet keeps new work off that StatefulSet (see [`working_on`]). The resize controller
//! publishes the `InvalidObject` Event for each; nothing here adds Events.

use crate::Error;
use ferry_api::listed::{self, Listing, UnreadableResize};
use kube::api::{DynamicObject, ListParams};
use kube::{Api, Client, ResourceExt};

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

/// The name of the VolumeResize at work on `stateful_set`, if any: a readable one not finished, or
/// an unreadable one that names it and may be at work (its phase is not known to be finished). A
/// readable one is preferred, being the one whose progress can be told.
pub fn working_on(listing: &Listing, stateful_set: &str) -> Option<String> {
    listing
        .readable
        .iter()
        .find(|resize| resize.spec.stateful_set_name == stateful_set && !resize.phase().is_terminal())
        .map(ResourceExt::name_any)
        .or_else(|| {
            unreadable_working_on(listing, stateful_set)
                .next()
                .map(UnreadableResize::name)
        })
}

/// The unreadable VolumeResizes that name `stateful_set` and may be at work on it.
pub fn unreadable_working_on<'a>(
    listing: &'a Listing,
    stateful_set: &'a str,
) -> impl Iterator<Item = &'a UnreadableResize> + 'a {
    listing.unreadable.iter().filter(move |unreadable| {
        unreadable.may_be_active() && unreadable.stateful_set().as_deref() == Some(stateful_set)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(name: &str, stateful_set: &str, phase: &str, step: &str) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "ferry.dev/v1alpha1", "kind": "VolumeResize",
            "metadata": {"name": name, "namespace": "ns"},
            "spec": {"statefulSetName": stateful_set, "volumes": [{"name": "data", "size": "2Gi"}]},
            "status": {"phase": phase, "plan": [{
                "replica": 0, "volume": "data", "claimName": format!("data-{stateful_set}-0"),
                "targetSize": "2Gi", "step": step,
            }]},
        }))
        .unwrap()
    }

    /// `Teleporting` is a row step only a newer Ferry knows: that object is unreadable here.
    fn listing(objects: &[(&str, &str, &str, bool)]) -> Listing {
        Listing::from_objects(objects.iter().map(|(name, sts, phase, readable)| {
            object(
                name,
                sts,
                phase,
                if *readable { "WarmCopy" } else { "Teleporting" },
            )
        }))
    }

    #[test]
    fn nothing_is_at_work_on_a_statefulset_no_resize_names() {
        let listing = listing(&[("a", "db", "Running", true), ("b", "db", "Running", false)]);
        assert_eq!(working_on(&listing, "web"), None);
    }

    #[test]
    fn a_readable_unfinished_resize_is_at_work_and_a_finished_one_is_not() {
        let listing = listing(&[("done", "db", "Succeeded", true), ("grow", "db", "Running", true)]);
        assert_eq!(working_on(&listing, "db").as_deref(), Some("grow"));
        let listing = self::listing(&[("done", "db", "Failed", true)]);
        assert_eq!(working_on(&listing, "db"), None);
    }

    #[test]
    fn an_unreadable_resize_that_may_be_running_keeps_its_statefulset_busy() {
        let listing = listing(&[
            ("done", "db", "Succeeded", true),
            ("future", "db", "Running", false),
        ]);
        assert_eq!(listing.unreadable.len(), 1);
        assert_eq!(working_on(&listing, "db").as_deref(), Some("future"));
        // A phase this Ferry does not know is not known to be finished.
        let listing = self::listing(&[("future", "db", "Migrating", false)]);
        assert_eq!(working_on(&listing, "db").as_deref(), Some("future"));
    }

    #[test]
    fn an_unreadable_resize_known_to_be_finished_blocks_nothing() {
        let listing = listing(&[
            ("old", "db", "Succeeded", false),
            ("older", "db", "Failed", false),
        ]);
        assert_eq!(working_on(&listing, "db"), None);
    }

    #[test]
    fn a_readable_resize_at_work_is_named_before_an_unreadable_one() {
        let listing = listing(&[
            ("future", "db", "Running", false),
            ("grow", "db", "Pending", true),
        ]);
        assert_eq!(working_on(&listing, "db").as_deref(), Some("grow"));
    }
}
