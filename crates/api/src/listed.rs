//! VolumeResizes as a LIST returns them: each one readable by this Ferry, or not. A VolumeResize
//! written under another Ferry's CRD (a newer one's `status.plan[].step`, say) does not parse as
//! this version's [`VolumeResize`]; listed as typed objects, that one object fails the whole list.
//! Listed as [`DynamicObject`]s and sorted here, the readable ones are used and the unreadable ones
//! keep their raw JSON, from which the few fields a caller must not ignore (the StatefulSet they
//! name, their phase) are read as far as they still can be.

use crate::names::LABEL_STATEFUL_SET;
use crate::{Phase, VolumeResize};
use kube::ResourceExt;
use kube::core::{ApiResource, DynamicObject};

/// What to list VolumeResizes as: `Api::<DynamicObject>::namespaced_with(client, ns, &api_resource())`.
pub fn api_resource() -> ApiResource {
    ApiResource::erase::<VolumeResize>(&())
}

/// One VolumeResize of a list.
#[derive(Debug, Clone)]
pub enum ListedResize {
    Readable(Box<VolumeResize>),
    Unreadable(UnreadableResize),
}

impl ListedResize {
    /// Parses `object` as this Ferry's VolumeResize, keeping it raw when that fails.
    pub fn from_object(object: DynamicObject) -> ListedResize {
        let parsed = serde_json::to_value(&object).and_then(serde_json::from_value::<VolumeResize>);
        match parsed {
            Ok(resize) => ListedResize::Readable(Box::new(resize)),
            Err(error) => ListedResize::Unreadable(UnreadableResize {
                object: Box::new(object),
                error: error.to_string(),
            }),
        }
    }
}

/// A VolumeResize this Ferry cannot read: its raw object and why it does not parse.
#[derive(Debug, Clone)]
pub struct UnreadableResize {
    pub object: Box<DynamicObject>,
    /// The parse error.
    pub error: String,
}

impl UnreadableResize {
    pub fn name(&self) -> String {
        self.object.name_any()
    }

    pub fn namespace(&self) -> Option<String> {
        self.object.namespace()
    }

    /// The StatefulSet it changes, as far as can be told: `spec.statefulSetName` when that is still
    /// a string, else the `ferry.dev/stateful-set` label Ferry puts on the resizes it makes.
    pub fn stateful_set(&self) -> Option<String> {
        self.object
            .data
            .pointer("/spec/statefulSetName")
            .and_then(serde_json::Value::as_str)
            .or_else(|| self.object.labels().get(LABEL_STATEFUL_SET).map(String::as_str))
            .filter(|name| !name.is_empty())
            .map(str::to_string)
    }

    /// `status.phase` when it is a phase this Ferry knows (None for none yet, or an unknown one).
    pub fn phase(&self) -> Option<Phase> {
        self.object
            .data
            .pointer("/status/phase")
            .and_then(|phase| serde_json::from_value(phase.clone()).ok())
    }

    /// Whether it may still be at work: unless its phase says it finished, it is assumed to be (a
    /// newer Ferry may be running it; this one cannot tell how far it got).
    pub fn may_be_active(&self) -> bool {
        !self.phase().is_some_and(Phase::is_terminal)
    }
}

/// The VolumeResizes of one list, sorted into the readable and the unreadable.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    pub readable: Vec<VolumeResize>,
    pub unreadable: Vec<UnreadableResize>,
}

impl Listing {
    pub fn from_objects(objects: impl IntoIterator<Item = DynamicObject>) -> Listing {
        let mut listing = Listing::default();
        for object in objects {
            match ListedResize::from_object(object) {
                ListedResize::Readable(resize) => listing.readable.push(*resize),
                ListedResize::Unreadable(unreadable) => listing.unreadable.push(unreadable),
            }
        }
        listing
    }

    /// The name of the VolumeResize at work on `stateful_set`, if any: a readable one not finished, or
    /// an unreadable one that names it and may be at work (its phase is not known to be finished). A
    /// readable one is preferred, being the one whose progress can be told.
    pub fn working_on(&self, stateful_set: &str) -> Option<String> {
        self.readable
            .iter()
            .find(|resize| resize.spec.stateful_set_name == stateful_set && !resize.phase().is_terminal())
            .map(ResourceExt::name_any)
            .or_else(|| {
                self.unreadable_working_on(stateful_set)
                    .next()
                    .map(UnreadableResize::name)
            })
    }

    /// The unreadable VolumeResizes that name `stateful_set` and may be at work on it.
    pub fn unreadable_working_on<'a>(
        &'a self,
        stateful_set: &'a str,
    ) -> impl Iterator<Item = &'a UnreadableResize> + 'a {
        self.unreadable.iter().filter(move |unreadable| {
            unreadable.may_be_active() && unreadable.stateful_set().as_deref() == Some(stateful_set)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: serde_json::Value) -> DynamicObject {
        serde_json::from_value(value).unwrap()
    }

    fn readable_json() -> serde_json::Value {
        json!({
            "apiVersion": "ferry.dev/v1alpha1", "kind": "VolumeResize",
            "metadata": {"name": "grow", "namespace": "ns"},
            "spec": {"statefulSetName": "db", "volumes": [{"name": "data", "size": "2Gi"}]},
            "status": {"phase": "Running"},
        })
    }

    /// A newer Ferry's row step: this Ferry's `RowStep` has no such variant.
    fn future_step_json(name: &str, phase: &str) -> serde_json::Value {
        json!({
            "apiVersion": "ferry.dev/v1alpha1", "kind": "VolumeResize",
            "metadata": {"name": name, "namespace": "ns"},
            "spec": {"statefulSetName": "db", "volumes": [{"name": "data", "size": "2Gi"}]},
            "status": {"phase": phase, "plan": [{
                "replica": 0, "volume": "data", "claimName": "data-db-0",
                "targetSize": "2Gi", "step": "Teleporting",
            }]},
        })
    }

    #[test]
    fn a_readable_object_parses_as_a_volume_resize() {
        let ListedResize::Readable(resize) = ListedResize::from_object(object(readable_json())) else {
            panic!("readable");
        };
        assert_eq!(resize.spec.stateful_set_name, "db");
        assert_eq!(resize.phase(), Phase::Running);
    }

    #[test]
    fn an_unknown_row_step_is_unreadable_but_its_name_statefulset_and_phase_are_kept() {
        let ListedResize::Unreadable(unreadable) =
            ListedResize::from_object(object(future_step_json("future", "Running")))
        else {
            panic!("unreadable");
        };
        assert_eq!(unreadable.name(), "future");
        assert_eq!(unreadable.namespace().as_deref(), Some("ns"));
        assert!(unreadable.error.contains("Teleporting"), "{}", unreadable.error);
        assert_eq!(unreadable.stateful_set().as_deref(), Some("db"));
        assert_eq!(unreadable.phase(), Some(Phase::Running));
        assert!(unreadable.may_be_active());
    }

    #[test]
    fn only_a_known_finished_phase_makes_an_unreadable_resize_inactive() {
        let phase_of = |phase: serde_json::Value| {
            let mut value = future_step_json("future", "Running");
            value["status"]["phase"] = phase;
            match ListedResize::from_object(object(value)) {
                ListedResize::Unreadable(unreadable) => unreadable.may_be_active(),
                ListedResize::Readable(_) => panic!("unreadable"),
            }
        };
        assert!(!phase_of(json!("Succeeded")));
        assert!(!phase_of(json!("Failed")));
        assert!(phase_of(json!("Paused")));
        assert!(phase_of(json!("Migrating")), "a phase this Ferry does not know");
        assert!(phase_of(serde_json::Value::Null));
    }

    #[test]
    fn the_statefulset_falls_back_to_the_label_when_the_spec_field_is_not_a_string() {
        let mut value = future_step_json("future", "Running");
        value["spec"]["statefulSetName"] = json!({"name": "db"});
        value["metadata"]["labels"] = json!({LABEL_STATEFUL_SET: "db-from-label"});
        let ListedResize::Unreadable(unreadable) = ListedResize::from_object(object(value.clone())) else {
            panic!("unreadable");
        };
        assert_eq!(unreadable.stateful_set().as_deref(), Some("db-from-label"));
        value["metadata"]["labels"] = json!({});
        let ListedResize::Unreadable(unreadable) = ListedResize::from_object(object(value)) else {
            panic!("unreadable");
        };
        assert_eq!(unreadable.stateful_set(), None);
    }

    #[test]
    fn a_listing_keeps_both_kinds_in_order() {
        let listing = Listing::from_objects([
            object(readable_json()),
            object(future_step_json("future", "Pending")),
        ]);
        assert_eq!(listing.readable.len(), 1);
        assert_eq!(listing.unreadable.len(), 1);
        assert_eq!(listing.unreadable[0].name(), "future");
    }

    fn resize_object(name: &str, stateful_set: &str, phase: &str, step: &str) -> DynamicObject {
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
            resize_object(
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
        assert_eq!(listing.working_on("web"), None);
    }

    #[test]
    fn a_readable_unfinished_resize_is_at_work_and_a_finished_one_is_not() {
        let listing = listing(&[("done", "db", "Succeeded", true), ("grow", "db", "Running", true)]);
        assert_eq!(listing.working_on("db").as_deref(), Some("grow"));
        let listing = self::listing(&[("done", "db", "Failed", true)]);
        assert_eq!(listing.working_on("db"), None);
    }

    #[test]
    fn an_unreadable_resize_that_may_be_running_keeps_its_statefulset_busy() {
        let listing = listing(&[
            ("done", "db", "Succeeded", true),
            ("future", "db", "Running", false),
        ]);
        assert_eq!(listing.unreadable.len(), 1);
        assert_eq!(listing.working_on("db").as_deref(), Some("future"));
        // A phase this Ferry does not know is not known to be finished.
        let listing = self::listing(&[("future", "db", "Migrating", false)]);
        assert_eq!(listing.working_on("db").as_deref(), Some("future"));
    }

    #[test]
    fn an_unreadable_resize_known_to_be_finished_blocks_nothing() {
        let listing = listing(&[
            ("old", "db", "Succeeded", false),
            ("older", "db", "Failed", false),
        ]);
        assert_eq!(listing.working_on("db"), None);
    }

    #[test]
    fn a_readable_resize_at_work_is_named_before_an_unreadable_one() {
        let listing = listing(&[
            ("future", "db", "Running", false),
            ("grow", "db", "Pending", true),
        ]);
        assert_eq!(listing.working_on("db").as_deref(), Some("grow"));
    }
}
