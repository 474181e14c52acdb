//! Which ordinals a StatefulSet's replicas have: `spec.ordinals.start` onwards, `spec.replicas`
//! of them (pods `<name>-<start>` … `<name>-<start + replicas - 1>`).

use k8s_openapi::api::apps::v1::StatefulSet;
use std::ops::Range;

/// `spec.ordinals.start` (0 when unset).
pub fn first_ordinal(sts: &StatefulSet) -> i32 {
    sts.spec
        .as_ref()
        .and_then(|s| s.ordinals.as_ref())
        .and_then(|o| o.start)
        .unwrap_or(0)
}

/// `spec.replicas` (1 when unset, as the API server defaults it).
pub fn replicas(sts: &StatefulSet) -> i32 {
    sts.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
}

/// The ordinals the StatefulSet asks for.
pub fn ordinals(sts: &StatefulSet) -> Range<i32> {
    let start = first_ordinal(sts);
    start..start.saturating_add(replicas(sts).max(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::{StatefulSetOrdinals, StatefulSetSpec};

    fn sts(replicas: Option<i32>, start: Option<i32>) -> StatefulSet {
        StatefulSet {
            spec: Some(StatefulSetSpec {
                replicas,
                ordinals: start.map(|start| StatefulSetOrdinals { start: Some(start) }),
                ..StatefulSetSpec::default()
            }),
            ..StatefulSet::default()
        }
    }

    #[test]
    fn ordinals_start_where_the_spec_says() {
        assert_eq!(ordinals(&sts(Some(3), Some(5))), 5..8);
        assert_eq!(ordinals(&sts(Some(2), None)), 0..2);
        assert_eq!(ordinals(&sts(None, Some(1))), 1..2);
        assert_eq!(ordinals(&sts(Some(0), Some(4))), 4..4);
        assert_eq!(ordinals(&StatefulSet::default()), 0..1);
    }
}
