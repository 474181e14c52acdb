//! Warm passes repeated before the stop: while the replica serves, each warm pass copies what
//! changed during the one before, so the final pass (the downtime) starts from the smallest change
//! the passes can reach. A first pass of a large volume takes minutes, and everything written
//! meanwhile would otherwise fall to the final pass.

/// Warm passes a row makes at most.
pub const MAX_WARM_PASSES: usize = 3;
/// A warm pass shorter than this leaves too little behind to be worth another.
pub const CONVERGE_MIN_MILLISECONDS: u64 = 10_000;

/// Whether another warm pass should follow the ones that took `passes` milliseconds (in order):
/// the last took long enough that what changed meanwhile is worth catching up while the replica
/// still serves, and it was clearly shorter than the one before it (the passes still converge;
/// a pass as long as the last one means the writes keep pace with the copy).
pub fn another_warm_pass(passes: &[u64]) -> bool {
    match passes {
        [] => false,
        [.., last] if passes.len() >= MAX_WARM_PASSES || *last < CONVERGE_MIN_MILLISECONDS => false,
        [_] => true,
        [.., before, last] => last.saturating_mul(4) <= before.saturating_mul(3),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_repeat_while_long_and_shrinking_at_most_three_times() {
        let cases: [(&[u64], bool); 8] = [
            (&[], false),
            (&[5_000], false),
            (&[10_000], true),
            (&[120_000], true),
            (&[120_000, 30_000], true),
            (&[120_000, 100_000], false),
            (&[120_000, 30_000, 12_000], false),
            (&[120_000, 9_000], false),
        ];
        for (passes, want) in cases {
            assert_eq!(another_warm_pass(passes), want, "{passes:?}");
        }
    }
}
