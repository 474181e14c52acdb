//! Zones: one StatefulSet per zone, replicas spread as evenly as they go.

/// `total` replicas over `zones` StatefulSets: every zone gets `total / zones`, and the first
/// `total % zones` zones one more. Scaling rules (min, max, odd) apply to the total; a zone may
/// then hold none (3 zones, 2 replicas) and an odd total is never odd per zone.
pub fn spread(total: i32, zones: usize) -> Vec<i32> {
    let zones_i32 = i32::try_from(zones.max(1)).unwrap_or(i32::MAX);
    let total = total.max(0);
    (0..zones_i32)
        .map(|index| total / zones_i32 + i32::from(index < total % zones_i32))
        .collect()
}

/// The StatefulSet of zone `index` (`<name>-z<index>`), or `<name>` itself without zones.
pub fn stateful_set_name(name: &str, index: Option<usize>) -> String {
    match index {
        Some(index) => format!("{name}-z{index}"),
        None => name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replicas_spread_evenly_first_zones_first() {
        assert_eq!(spread(5, 3), vec![2, 2, 1]);
        assert_eq!(spread(3, 3), vec![1, 1, 1]);
        assert_eq!(spread(2, 3), vec![1, 1, 0]);
        assert_eq!(spread(4, 1), vec![4]);
        assert_eq!(spread(-1, 2), vec![0, 0]);
        assert_eq!(stateful_set_name("db", Some(2)), "db-z2");
        assert_eq!(stateful_set_name("db", None), "db");
    }

    proptest::proptest! {
        #[test]
        fn the_spread_adds_up_and_differs_by_at_most_one(total in 0i32..1000, zones in 1usize..10) {
            let spread = spread(total, zones);
            proptest::prop_assert_eq!(spread.iter().sum::<i32>(), total);
            let (min, max) = (spread.iter().min().copied().unwrap_or(0), spread.iter().max().copied().unwrap_or(0));
            proptest::prop_assert!(max - min <= 1);
        }
    }
}
