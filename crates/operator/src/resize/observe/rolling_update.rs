//! Whether the StatefulSet controller is in the middle of a rolling update: it then deletes
//! replicas on its own (one at a time, ignoring PodDisruptionBudgets), so Ferry must not take the
//! StatefulSet off to stop a replica of its own until the update is through.

use k8s_openapi::api::apps::v1::StatefulSet;

/// The controller still has pods to replace: it has not yet seen the latest spec, or (strategy
/// `RollingUpdate`) fewer pods run the update revision than the partition asks for. `OnDelete`
/// replaces nothing by itself.
pub(super) fn rolling_out(sts: &StatefulSet) -> bool {
    let Some(spec) = sts.spec.as_ref() else {
        return false;
    };
    let status = sts.status.clone().unwrap_or_default();
    if status.observed_generation.unwrap_or(0) < sts.metadata.generation.unwrap_or(0) {
        return true;
    }
    let strategy = spec.update_strategy.clone().unwrap_or_default();
    if strategy.type_.as_deref() == Some("OnDelete") {
        return false;
    }
    if status.update_revision.is_none() || status.update_revision == status.current_revision {
        return false;
    }
    // Pods at or above the partition (an index from the first ordinal) get the new revision.
    let replicas = crate::ordinals::replicas(sts).max(0);
    let partition = strategy
        .rolling_update
        .and_then(|r| r.partition)
        .unwrap_or(0)
        .clamp(0, replicas);
    status.updated_replicas.unwrap_or(0) < replicas - partition
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::{
        RollingUpdateStatefulSetStrategy, StatefulSetSpec, StatefulSetStatus, StatefulSetUpdateStrategy,
    };

    fn sts(generation: i64, observed: i64, current: &str, update: &str, updated: i32) -> StatefulSet {
        let mut sts = StatefulSet {
            spec: Some(StatefulSetSpec {
                replicas: Some(3),
                ..StatefulSetSpec::default()
            }),
            status: Some(StatefulSetStatus {
                observed_generation: Some(observed),
                current_revision: Some(current.into()),
                update_revision: Some(update.into()),
                updated_replicas: Some(updated),
                replicas: 3,
                ..StatefulSetStatus::default()
            }),
            ..StatefulSet::default()
        };
        sts.metadata.generation = Some(generation);
        sts
    }

    fn with_strategy(mut sts: StatefulSet, type_: &str, partition: Option<i32>) -> StatefulSet {
        if let Some(spec) = sts.spec.as_mut() {
            spec.update_strategy = Some(StatefulSetUpdateStrategy {
                type_: Some(type_.into()),
                rolling_update: partition.map(|p| RollingUpdateStatefulSetStrategy {
                    partition: Some(p),
                    ..RollingUpdateStatefulSetStrategy::default()
                }),
            });
        }
        sts
    }

    #[test]
    fn a_settled_stateful_set_is_not_rolling_out() {
        assert!(!rolling_out(&sts(2, 2, "db-a", "db-a", 3)));
        assert!(!rolling_out(&StatefulSet::default()));
    }

    #[test]
    fn a_spec_the_controller_has_not_seen_yet_is_rolling_out() {
        assert!(rolling_out(&sts(3, 2, "db-a", "db-a", 3)));
    }

    #[test]
    fn pods_left_on_the_old_revision_are_rolling_out() {
        assert!(rolling_out(&sts(2, 2, "db-a", "db-b", 1)));
        assert!(rolling_out(&with_strategy(
            sts(2, 2, "db-a", "db-b", 0),
            "RollingUpdate",
            None
        )));
    }

    #[test]
    fn a_partition_reached_or_on_delete_is_not_rolling_out() {
        let partitioned = with_strategy(sts(2, 2, "db-a", "db-b", 1), "RollingUpdate", Some(2));
        assert!(!rolling_out(&partitioned));
        let short = with_strategy(sts(2, 2, "db-a", "db-b", 1), "RollingUpdate", Some(1));
        assert!(rolling_out(&short));
        assert!(!rolling_out(&with_strategy(
            sts(2, 2, "db-a", "db-b", 0),
            "OnDelete",
            None
        )));
    }
}
