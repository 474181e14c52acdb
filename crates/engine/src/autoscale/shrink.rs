//! The shrink policy: a volume that every replica has kept nearly empty for long enough is made
//! smaller by copy, to a size that holds the fullest replica's data at a target share (never below
//! a floor), at most once per period. Judged only when no replica asks to grow and every replica's
//! usage is known: a volume whose usage is partly unknown is never shrunk.

use super::{GI, Policy, Situation, Skip, Verdict, over, round_up, size_for};

/// The shrink policy of one volume, defaults applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shrink {
    /// Shrink when every replica's volume is less than this full (% of bytes).
    pub below_percent: u8,
    /// For this long without a break.
    pub lasting_seconds: i64,
    /// The fullest replica's share of the new size.
    pub target_percent: u8,
    /// Never smaller than this.
    pub min_size: u64,
    /// At most one shrink per this period.
    pub every_seconds: i64,
}

impl Shrink {
    pub const DEFAULT_BELOW: u8 = 30;
    pub const DEFAULT_LASTING_SECONDS: i64 = 24 * 3600;
    pub const DEFAULT_TARGET: u8 = 60;
    pub const DEFAULT_MIN_SIZE: u64 = GI;
    pub const DEFAULT_EVERY_SECONDS: i64 = 7 * 24 * 3600;
}

/// Whether every replica's volume is read and less than `below_percent` full now.
pub fn all_below(shrink: &Shrink, situation: &Situation) -> bool {
    !situation.replicas.is_empty()
        && situation.replicas.iter().all(|replica| {
            situation
                .readings
                .iter()
                .find(|reading| reading.replica == *replica)
                .is_some_and(|reading| {
                    reading.capacity_bytes > 0
                        && !over(reading.used_bytes, reading.capacity_bytes, shrink.below_percent)
                })
        })
}

/// The size a shrink makes now, if it is smaller than the current one: the fullest replica's data
/// at `target_percent`, in whole provider units, at least `min_size`.
pub fn shrunk_size(policy: &Policy, shrink: &Shrink, situation: &Situation) -> Option<u64> {
    let most_used = situation.readings.iter().map(|r| r.used_bytes).max()?;
    let unit = policy.provider.unit();
    let size =
        round_up(size_for(most_used, 1, 1, shrink.target_percent), unit).max(round_up(shrink.min_size, unit));
    (size < situation.current_size).then_some(size)
}

/// The verdict when no replica asks to grow and every replica's usage is known.
pub fn decide(policy: &Policy, situation: &Situation) -> Verdict {
    let below_threshold = Verdict::Skip(Skip::BelowThreshold);
    let Some(shrink) = &policy.shrink else {
        return below_threshold;
    };
    if !all_below(shrink, situation) {
        return below_threshold;
    }
    let Some(to) = shrunk_size(policy, shrink, situation) else {
        return below_threshold;
    };
    if let Some(name) = &situation.resize_running {
        return Verdict::Skip(Skip::ResizeRunning { name: name.clone() });
    }
    if let Some(name) = &situation.resize_failed {
        return Verdict::Skip(Skip::ResizeFailed { name: name.clone() });
    }
    let long_enough = situation.below_shrink_since.unwrap_or(situation.now) + shrink.lasting_seconds;
    let period_over = situation
        .last_shrink
        .map_or(i64::MIN, |last| last + shrink.every_seconds);
    let at = long_enough.max(period_over);
    if situation.now < at {
        return Verdict::Skip(Skip::ShrinkPending { at, to });
    }
    if let Some(skip) = super::outside_window(situation, false) {
        return Verdict::Skip(skip);
    }
    Verdict::Shrink { to }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autoscale::Reading;
    use crate::autoscale::tests::policy;

    const MI: u64 = 1 << 20;

    fn shrink() -> Shrink {
        Shrink {
            below_percent: 30,
            lasting_seconds: 3600,
            target_percent: 60,
            min_size: 100 * MI,
            every_seconds: 86_400,
        }
    }

    fn nearly_empty(used: &[u64]) -> Situation {
        Situation {
            current_size: GI,
            replicas: (0..used.len() as i32).collect(),
            readings: used
                .iter()
                .enumerate()
                .map(|(replica, used)| Reading {
                    replica: replica as i32,
                    used_bytes: *used,
                    capacity_bytes: GI,
                    inodes: None,
                })
                .collect(),
            now: 100_000,
            ..Situation::default()
        }
    }

    fn with_shrink() -> Policy {
        Policy {
            shrink: Some(shrink()),
            ..policy()
        }
    }

    #[test]
    fn a_volume_nearly_empty_long_enough_shrinks_to_its_fullest_replica_at_the_target() {
        let mut situation = nearly_empty(&[120 * MI, 150 * MI]);
        situation.below_shrink_since = Some(situation.now - 3600);
        // 150 MiB at 60 % → 250 MiB.
        assert_eq!(
            decide(&with_shrink(), &situation),
            Verdict::Shrink { to: 250 * MI }
        );
    }

    #[test]
    fn it_waits_for_the_duration_and_the_period_and_says_until_when() {
        let mut situation = nearly_empty(&[120 * MI]);
        situation.below_shrink_since = Some(situation.now - 60);
        assert_eq!(
            decide(&with_shrink(), &situation),
            Verdict::Skip(Skip::ShrinkPending {
                at: situation.now - 60 + 3600,
                to: 200 * MI
            })
        );
        situation.below_shrink_since = Some(situation.now - 7200);
        situation.last_shrink = Some(situation.now - 600);
        assert_eq!(
            decide(&with_shrink(), &situation),
            Verdict::Skip(Skip::ShrinkPending {
                at: situation.now - 600 + 86_400,
                to: 200 * MI
            })
        );
    }

    #[test]
    fn nothing_shrinks_without_the_policy_or_above_below_or_at_the_floor_or_while_a_resize_runs() {
        let mut situation = nearly_empty(&[120 * MI, 400 * MI]);
        situation.below_shrink_since = Some(0);
        assert_eq!(
            decide(&policy(), &nearly_empty(&[MI])),
            Verdict::Skip(Skip::BelowThreshold)
        );
        // 400 MiB of 1 GiB is 39 %, not below 30 %.
        assert_eq!(
            decide(&with_shrink(), &situation),
            Verdict::Skip(Skip::BelowThreshold)
        );
        let floor = Policy {
            shrink: Some(Shrink {
                min_size: GI,
                ..shrink()
            }),
            ..policy()
        };
        let mut tiny = nearly_empty(&[MI]);
        tiny.below_shrink_since = Some(0);
        assert_eq!(decide(&floor, &tiny), Verdict::Skip(Skip::BelowThreshold));
        tiny.resize_running = Some("db-auto-1".to_string());
        assert_eq!(
            decide(&with_shrink(), &tiny),
            Verdict::Skip(Skip::ResizeRunning {
                name: "db-auto-1".to_string()
            })
        );
    }

    #[test]
    fn a_replica_without_usage_is_never_shrunk() {
        let mut situation = nearly_empty(&[MI]);
        situation.replicas.push(1);
        assert!(!all_below(&shrink(), &situation));
    }
}
