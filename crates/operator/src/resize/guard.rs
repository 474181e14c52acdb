//! The guard, before anything is read: what a reconcile does with the object the watch delivered. The controller watches
//! [`GuardedResize`]s, so a VolumeResize this Ferry cannot read (written by a newer or older Ferry,
//! or under an edited CRD) reaches the reconcile as an error instead of stalling the watch of every
//! other VolumeResize. It is reported and otherwise left alone.

use crate::events::Notice;
use crate::resize_cache::GuardedResize;
use ferry_api::VolumeResize;
use kube::ResourceExt;

/// Reason of the Warning Event on a VolumeResize that cannot be read.
pub const REASON_INVALID_OBJECT: &str = "InvalidObject";

#[derive(Debug)]
pub enum Guarded<'a> {
    /// Reconcile it as usual.
    Readable(&'a VolumeResize),
    /// Publish this Warning on it and do nothing to the cluster: only a change to the object (or
    /// another Ferry) can help, so it is not retried either.
    Unreadable(Notice<'static>),
}

pub fn guard(object: &GuardedResize) -> Guarded<'_> {
    match &object.0 {
        Ok(resize) => Guarded::Readable(resize),
        Err(invalid) => Guarded::Unreadable(Notice {
            warning: true,
            reason: REASON_INVALID_OBJECT,
            action: "Reconcile",
            note: format!(
                "VolumeResize {} cannot be read by Ferry {}: {}; nothing is done for it until it is fixed (or deleted and created again)",
                object.name_any(),
                env!("CARGO_PKG_VERSION"),
                invalid.error
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::Resource;
    use kube::api::DynamicObject;
    use serde_json::json;

    fn guarded(object: serde_json::Value) -> GuardedResize {
        serde_json::from_value(object).unwrap()
    }

    #[test]
    fn a_readable_resize_is_reconciled() {
        let object = guarded(json!({
            "apiVersion": "ferry.dev/v1alpha1", "kind": "VolumeResize",
            "metadata": {"name": "grow", "namespace": "ns"},
            "spec": {"statefulSetName": "db", "volumes": [{"name": "data", "size": "2Gi"}]},
        }));
        match guard(&object) {
            Guarded::Readable(resize) => assert_eq!(resize.spec.stateful_set_name, "db"),
            other => panic!("expected a readable resize, got {other:?}"),
        }
    }

    /// As the API server would send it (a DynamicObject: any fields), a VolumeResize whose spec
    /// does not fit this Ferry's types: the guard keeps its name and the error, and the decision
    /// is a Warning naming what failed, nothing more.
    #[test]
    fn an_unreadable_resize_is_reported_and_left_alone() {
        let dynamic: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "ferry.dev/v1alpha1", "kind": "VolumeResize",
            "metadata": {"name": "future", "namespace": "ns", "uid": "u-1"},
            "spec": {"statefulSetName": "db", "volumes": {"data": "2Gi"}, "verify": "Bitwise"},
        }))
        .unwrap();
        let object = guarded(serde_json::to_value(&dynamic).unwrap());
        let Err(invalid) = &object.0 else {
            panic!("{object:?} should not read as a VolumeResize")
        };
        assert_eq!(invalid.metadata.name.as_deref(), Some("future"));
        assert_eq!(object.namespace().as_deref(), Some("ns"));
        let Guarded::Unreadable(notice) = guard(&object) else {
            panic!("an unreadable resize must not be reconciled")
        };
        assert!(notice.warning);
        assert_eq!(notice.reason, "InvalidObject");
        assert!(notice.note.contains("VolumeResize future"), "{}", notice.note);
        assert!(notice.note.contains(&invalid.error), "{}", notice.note);
        // The Event goes on the object itself, whose reference the guard still gives.
        let reference = object.object_ref(&());
        assert_eq!(reference.kind.as_deref(), Some("VolumeResize"));
        assert_eq!(reference.uid.as_deref(), Some("u-1"));
    }
}
