//! How long a volume has been over its threshold, or nearly empty, without a break: kept in status
//! from poll to poll (`overThresholdSince`, `belowShrinkSince`), so a restarted operator waits no
//! longer and no shorter. A poll that reads no usage for a replica breaks neither streak nor
//! extends it: it keeps what status says.

use super::shrink::all_below;
use super::{Policy, Situation, over_threshold};

/// Since when, as of this poll: `previous` if the streak goes on, now if it starts, none if it
/// ended.
fn carried(still: bool, previous: Option<i64>, now: i64) -> Option<i64> {
    still.then(|| previous.unwrap_or(now))
}

/// Fills the situation's streaks from this poll's readings and those status recorded.
pub fn update(policy: &Policy, situation: &mut Situation, over_since: Option<i64>, below_since: Option<i64>) {
    let known = situation.replicas.iter().all(|replica| {
        situation
            .readings
            .iter()
            .any(|reading| reading.replica == *replica)
    });
    let now = situation.now;
    let over = over_threshold(policy, situation);
    // A replica over its threshold is over whatever the others say.
    situation.over_threshold_since = match (over, known) {
        (true, _) => carried(true, over_since, now),
        (false, false) => over_since,
        (false, true) => None,
    };
    situation.below_shrink_since = match &policy.shrink {
        None => None,
        Some(_) if !known => below_since,
        Some(shrink) => carried(all_below(shrink, situation), below_since, now),
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autoscale::shrink::Shrink;
    use crate::autoscale::tests::policy;
    use crate::autoscale::{GI, Reading};

    fn at(used_percent: u64, replicas: &[i32]) -> Situation {
        Situation {
            current_size: GI,
            replicas: replicas.to_vec(),
            readings: vec![Reading {
                replica: 0,
                used_bytes: GI / 100 * used_percent,
                capacity_bytes: GI,
                inodes: None,
            }],
            now: 1000,
            ..Situation::default()
        }
    }

    fn shrinking() -> Policy {
        Policy {
            shrink: Some(Shrink {
                below_percent: 30,
                lasting_seconds: 60,
                target_percent: 60,
                min_size: 0,
                every_seconds: 60,
            }),
            ..policy()
        }
    }

    #[test]
    fn a_streak_starts_goes_on_and_ends() {
        let mut full = at(90, &[0]);
        update(&shrinking(), &mut full, None, Some(10));
        assert_eq!(
            (full.over_threshold_since, full.below_shrink_since),
            (Some(1000), None)
        );
        update(&shrinking(), &mut full, Some(500), None);
        assert_eq!(full.over_threshold_since, Some(500));

        let mut empty = at(5, &[0]);
        update(&shrinking(), &mut empty, Some(500), None);
        assert_eq!(
            (empty.over_threshold_since, empty.below_shrink_since),
            (None, Some(1000))
        );
        update(&shrinking(), &mut empty, None, Some(700));
        assert_eq!(empty.below_shrink_since, Some(700));
        update(&policy(), &mut empty, None, Some(700));
        assert_eq!(empty.below_shrink_since, None, "no shrink policy, no streak");
    }

    #[test]
    fn a_replica_not_read_keeps_the_streaks_as_they_were() {
        let mut half_read = at(5, &[0, 1]);
        update(&shrinking(), &mut half_read, Some(400), Some(700));
        assert_eq!(
            (half_read.over_threshold_since, half_read.below_shrink_since),
            (Some(400), Some(700))
        );
        let mut over_and_unread = at(95, &[0, 1]);
        update(&shrinking(), &mut over_and_unread, None, Some(700));
        assert_eq!(over_and_unread.over_threshold_since, Some(1000));
    }
}
