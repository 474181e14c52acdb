//! The resize controller's wake-up mappers: which VolumeResizes a change to another object
//! concerns, so a running resize reacts at once to the pods and claims it waits for (a replica stopped or Ready, a mover done, a claim deleted or
//! bound) instead of on its next periodic recheck. Pure: the VolumeResizes come from the
//! controller's store (as `Arc`s or borrowed).

use ferry_api::VolumeResize;
use ferry_api::names::LABEL_VOLUME_RESIZE;
use kube::ResourceExt;
use kube::runtime::reflector::ObjectRef;
use std::borrow::Borrow;

/// A resize still under way (finished ones wait only for time: retention).
fn active(resize: &VolumeResize) -> bool {
    !resize.phase().is_terminal() || resize.metadata.deletion_timestamp.is_some()
}

fn same_namespace(resize: &VolumeResize, namespace: Option<&str>) -> bool {
    resize.namespace().as_deref() == namespace
}

/// `pod` is a replica of StatefulSet `sts` (`<sts>-<ordinal>`).
fn is_replica_of(pod: &str, sts: &str) -> bool {
    pod.strip_prefix(sts)
        .and_then(|rest| rest.strip_prefix('-'))
        .is_some_and(|ordinal| !ordinal.is_empty() && ordinal.bytes().all(|b| b.is_ascii_digit()))
}

/// The active resizes a pod concerns: those of its StatefulSet, and the one a mover pod works for.
pub fn for_pod(
    resizes: &[impl Borrow<VolumeResize>],
    namespace: Option<&str>,
    name: &str,
    mover_of: Option<&str>,
) -> Vec<ObjectRef<VolumeResize>> {
    resizes
        .iter()
        .map(Borrow::<VolumeResize>::borrow)
        .filter(|resize| same_namespace(resize, namespace) && active(resize))
        .filter(|resize| {
            mover_of == Some(resize.name_any().as_str())
                || is_replica_of(name, &resize.spec.stateful_set_name)
        })
        .map(ObjectRef::from_obj)
        .collect()
}

/// The active resizes a claim concerns: those whose plan has it, or its temporary copy target.
pub fn for_claim(
    resizes: &[impl Borrow<VolumeResize>],
    namespace: Option<&str>,
    name: &str,
) -> Vec<ObjectRef<VolumeResize>> {
    resizes
        .iter()
        .map(Borrow::<VolumeResize>::borrow)
        .filter(|resize| same_namespace(resize, namespace) && active(resize))
        .filter(|resize| {
            resize.status.as_ref().is_some_and(|status| {
                status.plan.iter().any(|row| {
                    name == row.claim_name || ferry_engine::names::is_temp_claim_of(name, &row.claim_name)
                })
            })
        })
        .map(ObjectRef::from_obj)
        .collect()
}

/// The active resizes a PersistentVolume concerns: those whose plan moves data from or to it.
pub fn for_volume(resizes: &[impl Borrow<VolumeResize>], name: &str) -> Vec<ObjectRef<VolumeResize>> {
    resizes
        .iter()
        .map(Borrow::<VolumeResize>::borrow)
        .filter(|resize| active(resize))
        .filter(|resize| {
            resize.status.as_ref().is_some_and(|status| {
                status.plan.iter().any(|row| {
                    row.source_volume.as_deref() == Some(name) || row.target_volume.as_deref() == Some(name)
                })
            })
        })
        .map(ObjectRef::from_obj)
        .collect()
}

/// The active resizes of a namespace, for a PodDisruptionBudget change there (a resize holding a
/// replica stop for a budget goes on as soon as the budget allows it).
pub fn for_budget(
    resizes: &[impl Borrow<VolumeResize>],
    namespace: Option<&str>,
) -> Vec<ObjectRef<VolumeResize>> {
    resizes
        .iter()
        .map(Borrow::<VolumeResize>::borrow)
        .filter(|resize| same_namespace(resize, namespace) && active(resize) && resize.status.is_some())
        .map(ObjectRef::from_obj)
        .collect()
}

/// The VolumeResize a pod's labels say it works for (mover and usage pods).
pub fn mover_owner(labels: &std::collections::BTreeMap<String, String>) -> Option<&str> {
    labels.get(LABEL_VOLUME_RESIZE).map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferry_api::{Phase, VolumePlan, VolumeResizeSpec, VolumeResizeStatus};
    use std::sync::Arc;

    fn resize(name: &str, sts: &str, phase: Phase, claims: &[&str]) -> Arc<VolumeResize> {
        let spec: VolumeResizeSpec = serde_json::from_value(serde_json::json!({
            "statefulSetName": sts, "volumes": [{"name": "data", "size": "1Gi"}],
        }))
        .unwrap();
        let mut resize = VolumeResize::new(name, spec);
        resize.metadata.namespace = Some("ns".into());
        resize.status = Some(VolumeResizeStatus {
            phase: Some(phase),
            plan: claims
                .iter()
                .map(|claim| VolumePlan {
                    claim_name: claim.to_string(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        });
        Arc::new(resize)
    }

    fn names(refs: Vec<ObjectRef<VolumeResize>>) -> Vec<String> {
        refs.into_iter().map(|r| r.name).collect()
    }

    #[test]
    fn replicas_and_movers_wake_their_running_resize_only() {
        let resizes = [
            resize("grow", "db", Phase::Running, &["data-db-0"]),
            resize("old", "db", Phase::Succeeded, &["data-db-0"]),
            resize("other", "db-cache", Phase::Running, &["data-db-cache-0"]),
        ];
        assert_eq!(names(for_pod(&resizes, Some("ns"), "db-2", None)), ["grow"]);
        assert_eq!(
            names(for_pod(&resizes, Some("ns"), "db-cache-0", None)),
            ["other"]
        );
        assert!(for_pod(&resizes, Some("ns"), "db-extra", None).is_empty());
        assert!(for_pod(&resizes, Some("ns"), "db-", None).is_empty());
        assert!(for_pod(&resizes, Some("elsewhere"), "db-0", None).is_empty());
        let mover = for_pod(
            &resizes,
            Some("ns"),
            "data-db-0-ferry-1a2b3c4d-warm",
            Some("other"),
        );
        assert_eq!(names(mover), ["other"]);
    }

    #[test]
    fn claims_wake_the_resizes_that_plan_them() {
        let resizes = [
            resize("grow", "db", Phase::Running, &["data-db-0", "data-db-1"]),
            resize("done", "web", Phase::Failed, &["data-web-0"]),
        ];
        assert_eq!(names(for_claim(&resizes, Some("ns"), "data-db-1")), ["grow"]);
        assert_eq!(
            names(for_claim(&resizes, Some("ns"), "data-db-1-ferry-1a2b3c4d")),
            ["grow"]
        );
        assert!(for_claim(&resizes, Some("ns"), "data-db-10").is_empty());
        assert!(for_claim(&resizes, Some("ns"), "data-web-0").is_empty());
    }

    #[test]
    fn budgets_wake_the_running_resizes_of_their_namespace() {
        let resizes = [
            resize("grow", "db", Phase::Running, &["data-db-0"]),
            resize("done", "web", Phase::Succeeded, &["data-web-0"]),
        ];
        assert_eq!(names(for_budget(&resizes, Some("ns"))), ["grow"]);
        assert!(for_budget(&resizes, Some("elsewhere")).is_empty());
    }

    #[test]
    fn volumes_wake_the_resizes_that_move_their_data() {
        let mut running = resize("grow", "db", Phase::Running, &["data-db-0"]);
        let row = &mut Arc::make_mut(&mut running).status.as_mut().unwrap().plan[0];
        row.source_volume = Some("pv-old".into());
        row.target_volume = Some("pv-new".into());
        let resizes = [running];
        assert_eq!(names(for_volume(&resizes, "pv-old")), ["grow"]);
        assert_eq!(names(for_volume(&resizes, "pv-new")), ["grow"]);
        assert!(for_volume(&resizes, "pv-other").is_empty());
    }
}
