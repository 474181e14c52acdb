use super::*;
use proptest::prelude::*;

const HOUR: i64 = 3600;

pub(super) fn policy() -> Policy {
    Policy {
        threshold_percent: 80,
        inodes_threshold_percent: 90,
        increase: Increase::Percent(20),
        min_increase: None,
        max_increase: None,
        max_size: 10 * GI,
        cooldown_seconds: HOUR,
        provider: Provider::Generic,
        grow_after_seconds: 0,
        shrink: None,
    }
}

fn reading(replica: i32, used: u64, capacity: u64) -> Reading {
    Reading {
        replica,
        used_bytes: used,
        capacity_bytes: capacity,
        inodes: None,
    }
}

/// Two replicas of 1Gi; replica 1 holds `used` bytes.
fn two_replicas(used: u64) -> Situation {
    Situation {
        current_size: GI,
        replicas: vec![0, 1],
        readings: vec![reading(0, 100 * MI, GI), reading(1, used, GI)],
        now: 100 * HOUR,
        ..Situation::default()
    }
}

#[test]
fn one_replica_over_the_threshold_grows_all_by_the_step() {
    assert_eq!(
        decide(&policy(), &two_replicas(850 * MI)),
        Verdict::Grow {
            to: 1229 * MI, // 1Gi + 20%, rounded up to MiB
            reason: Reason::Threshold,
            replicas: vec![1],
            capped: false,
        }
    );
    assert_eq!(
        decide(&policy(), &two_replicas(800 * MI)),
        Verdict::Skip(Skip::BelowThreshold)
    );
}

#[test]
fn with_grow_after_a_volume_grows_only_once_its_streak_over_the_threshold_has_lasted() {
    let stabilized = Policy {
        grow_after_seconds: 600,
        ..policy()
    };
    let mut situation = two_replicas(850 * MI);
    situation.over_threshold_since = Some(situation.now - 60);
    assert_eq!(
        decide(&stabilized, &situation),
        Verdict::Skip(Skip::Stabilizing {
            until: situation.now - 60 + 600
        })
    );
    situation.over_threshold_since = Some(situation.now - 600);
    assert!(matches!(decide(&stabilized, &situation), Verdict::Grow { .. }));
    // A rescue does not wait.
    let mut crashing = two_replicas(100 * MI);
    crashing.full_disk_crashes = vec![1];
    assert!(matches!(
        decide(&stabilized, &crashing),
        Verdict::Grow {
            reason: Reason::Rescue,
            ..
        }
    ));
}

#[test]
fn outside_the_maintenance_windows_a_due_grow_waits_and_a_rescue_only_where_allowed() {
    let closed = crate::windows::WindowState::Closed { opens_at: 200 * HOUR };
    let mut situation = two_replicas(850 * MI);
    situation.window = closed;
    assert_eq!(
        decide(&policy(), &situation),
        Verdict::Skip(Skip::OutsideWindow { opens_at: 200 * HOUR })
    );
    situation.window = crate::windows::WindowState::Open {
        closes_at: 101 * HOUR,
    };
    assert!(matches!(decide(&policy(), &situation), Verdict::Grow { .. }));
    let mut crashing = two_replicas(100 * MI);
    crashing.full_disk_crashes = vec![1];
    crashing.window = closed;
    assert!(matches!(
        decide(&policy(), &crashing),
        Verdict::Skip(Skip::OutsideWindow { .. })
    ));
    crashing.rescue_outside_windows = true;
    assert!(matches!(decide(&policy(), &crashing), Verdict::Grow { .. }));
}

#[test]
fn a_grow_is_big_enough_to_end_below_the_threshold() {
    // A volume grown elsewhere to 4Gi, template still 1Gi: 3.9Gi used needs 3.9/0.8 = 4.875Gi.
    let mut situation = two_replicas(0);
    situation.readings[1] = reading(1, 3993 * MI, 4 * GI);
    let Verdict::Grow { to, .. } = decide(&policy(), &situation) else {
        panic!("expected a grow");
    };
    assert!(to * 80 >= 3993 * MI * 100, "{to}");
    assert_eq!(to, 4992 * MI);
}

#[test]
fn provider_units_round_up_to_whole_gibibytes() {
    let policy = Policy {
        provider: Provider::AwsEbs,
        ..policy()
    };
    let Verdict::Grow { to, .. } = decide(&policy, &two_replicas(900 * MI)) else {
        panic!("expected a grow");
    };
    assert_eq!(to, 2 * GI);
}

#[test]
fn never_above_max_size_and_says_when_capped() {
    let policy = Policy {
        max_size: 1100 * MI,
        ..policy()
    };
    assert_eq!(
        decide(&policy, &two_replicas(900 * MI)),
        Verdict::Grow {
            to: 1100 * MI,
            reason: Reason::Threshold,
            replicas: vec![1],
            capped: true,
        }
    );
    let mut at_max = two_replicas(1000 * MI);
    at_max.current_size = 1100 * MI;
    assert_eq!(decide(&policy, &at_max), Verdict::Skip(Skip::AtMaxSize));
}

#[test]
fn min_and_max_increase_bound_the_step() {
    let small = Policy {
        min_increase: Some(GI),
        ..policy()
    };
    assert!(matches!(decide(&small, &two_replicas(900 * MI)), Verdict::Grow { to, .. } if to == 2 * GI));
    let capped_step = Policy {
        increase: Increase::Percent(100),
        max_increase: Some(100 * MI),
        ..policy()
    };
    assert!(
        matches!(decide(&capped_step, &two_replicas(850 * MI)), Verdict::Grow { to, .. } if to == GI + 100 * MI)
    );
    let absolute = Policy {
        increase: Increase::Bytes(512 * MI),
        ..policy()
    };
    assert!(
        matches!(decide(&absolute, &two_replicas(850 * MI)), Verdict::Grow { to, .. } if to == GI + 512 * MI)
    );
}

#[test]
fn inodes_running_out_grow_the_volume_with_them() {
    let mut situation = two_replicas(100 * MI);
    situation.readings[0].inodes = Some((95_000, 100_000));
    let Verdict::Grow {
        to, reason, replicas, ..
    } = decide(&policy(), &situation)
    else {
        panic!("expected a grow");
    };
    assert_eq!((reason, replicas), (Reason::Inodes, vec![0]));
    // 95% of the inodes used, 90% wanted: at least 95/90 of the size.
    assert!(to as u128 * 90 >= GI as u128 * 95, "{to}");
}

#[test]
fn inside_the_cooldown_nothing_grows_and_the_end_is_known() {
    let mut situation = two_replicas(900 * MI);
    situation.history = vec![situation.now - 10 * 60];
    assert_eq!(
        decide(&policy(), &situation),
        Verdict::Skip(Skip::Cooldown {
            until: situation.now + 50 * 60
        })
    );
    situation.now += HOUR;
    assert!(matches!(decide(&policy(), &situation), Verdict::Grow { .. }));
}

#[test]
fn the_provider_window_counts_modifications_in_a_rolling_day() {
    let policy = Policy {
        provider: Provider::AwsEbs,
        cooldown_seconds: 60,
        ..policy()
    };
    let mut situation = two_replicas(900 * MI);
    let now = situation.now;
    situation.history = vec![
        now - 30 * HOUR,
        now - 20 * HOUR,
        now - 10 * HOUR,
        now - 5 * HOUR,
        now - 2 * HOUR,
    ];
    // Four inside the last 24 h: the next is allowed when the oldest of them leaves the window.
    assert_eq!(
        decide(&policy, &situation),
        Verdict::Skip(Skip::ProviderLimit {
            until: now - 20 * HOUR + 24 * HOUR
        })
    );
}

#[test]
fn a_crash_on_a_full_disk_is_rescued_inside_the_cooldown_but_not_past_the_provider() {
    let mut situation = two_replicas(100 * MI);
    situation.full_disk_crashes = vec![1];
    situation.readings.retain(|r| r.replica != 1); // a crashing pod reports no usage
    situation.history = vec![situation.now - 60];
    assert!(matches!(
        decide(&policy(), &situation),
        Verdict::Grow { reason: Reason::Rescue, ref replicas, .. } if *replicas == vec![1]
    ));
    let strict = Policy {
        provider: Provider::OnePerSixHours,
        ..policy()
    };
    assert!(matches!(
        decide(&strict, &situation),
        Verdict::Skip(Skip::ProviderLimit { .. })
    ));
}

#[test]
fn unknown_usage_and_a_running_resize_are_said() {
    let mut situation = two_replicas(100 * MI);
    situation.readings.pop();
    assert_eq!(
        decide(&policy(), &situation),
        Verdict::Skip(Skip::UsageUnknown { replicas: vec![1] })
    );
    let mut busy = two_replicas(900 * MI);
    busy.resize_running = Some("web-resize-1".into());
    assert_eq!(
        decide(&policy(), &busy),
        Verdict::Skip(Skip::ResizeRunning {
            name: "web-resize-1".into()
        })
    );
}

#[test]
fn status_can_say_how_much_a_volume_could_shrink() {
    // 400Mi at most used, 80% threshold: 500Mi would do; the volume is 1Gi.
    let situation = two_replicas(400 * MI);
    assert_eq!(could_shrink_by(&policy(), &situation), Some(524 * MI));
    assert_eq!(could_shrink_by(&policy(), &two_replicas(900 * MI)), None);
}

proptest! {
    /// Whatever the usage, history and policy: a grow is above the current size, never above
    /// maxSize, in whole provider units unless capped, big enough for every replica that asked
    /// (unless capped), and never inside the cooldown or the provider's window.
    #[test]
    fn grows_respect_every_limit(
        used in proptest::collection::vec(0u64..(4 * GI), 1..4),
        current_mi in 64u64..4096,
        max_mi in 64u64..8192,
        threshold in 50u8..99,
        percent in 1u32..200,
        provider in proptest::sample::select(vec![Provider::Generic, Provider::AwsEbs, Provider::OnePerSixHours]),
        ago in proptest::collection::vec(0i64..(48 * HOUR), 0..6),
        cooldown in 0i64..(12 * HOUR),
    ) {
        let policy = Policy {
            threshold_percent: threshold,
            increase: Increase::Percent(percent),
            max_size: max_mi * MI,
            cooldown_seconds: cooldown,
            provider,
            ..policy()
        };
        let current = current_mi * MI;
        let now = 1_000 * HOUR;
        let situation = Situation {
            current_size: current,
            replicas: (0..used.len() as i32).collect(),
            readings: used.iter().enumerate().map(|(i, u)| reading(i as i32, (*u).min(current), current)).collect(),
            history: ago.iter().map(|a| now - a).collect(),
            now,
            ..Situation::default()
        };
        if let Verdict::Grow { to, capped, .. } = decide(&policy, &situation) {
            prop_assert!(to > current && to <= policy.max_size);
            if !capped {
                prop_assert_eq!(to % provider.unit(), 0);
                for r in &situation.readings {
                    if over(r.used_bytes, r.capacity_bytes, threshold) {
                        prop_assert!(u128::from(to) * u128::from(threshold) >= u128::from(r.used_bytes) * 100);
                    }
                }
            }
            if let Some(last) = situation.history.iter().max() {
                prop_assert!(now >= last + cooldown);
            }
            if let Some((window, allowed)) = provider.window() {
                prop_assert!(situation.history.iter().filter(|at| **at > now - window).count() < allowed);
            }
        }
    }
}

#[test]
fn a_failed_resize_stops_grows_until_it_is_deleted() {
    let mut situation = two_replicas(900 * MI);
    situation.resize_failed = Some("db-auto-1".to_string());
    assert_eq!(
        decide(&policy(), &situation),
        Verdict::Skip(Skip::ResizeFailed {
            name: "db-auto-1".to_string()
        })
    );
    situation.full_disk_crashes = vec![1];
    assert!(matches!(
        decide(&policy(), &situation),
        Verdict::Skip(Skip::ResizeFailed { .. })
    ));
}

#[test]
fn the_next_allowed_time_is_the_later_of_cooldown_and_provider_window() {
    let now = 100 * HOUR;
    assert_eq!(next_allowed(&policy(), &[], &[], now), None);
    assert_eq!(
        next_allowed(&policy(), &[now - 10], &[], now),
        Some(now - 10 + HOUR)
    );
    assert_eq!(next_allowed(&policy(), &[now - 2 * HOUR], &[], now), None);
    let ebs = Policy {
        provider: Provider::AwsEbs,
        ..policy()
    };
    let four = [now - 20 * HOUR, now - 10 * HOUR, now - 5 * HOUR, now - 2 * HOUR];
    assert_eq!(
        next_allowed(&ebs, &four, &[], now),
        Some(now - 20 * HOUR + 24 * HOUR)
    );
    assert_eq!(next_allowed(&ebs, &four[1..], &[], now), None);
    // Another VolumeResize's modification of the volume fills the window too (not the cooldown).
    assert_eq!(
        next_allowed(&ebs, &four[1..], &[now - 20 * HOUR], now),
        Some(now - 20 * HOUR + 24 * HOUR)
    );
    assert_eq!(next_allowed(&policy(), &[], &[now - 10], now), None);
}

/// A growth or another attributes class made by another VolumeResize is a modification of the
/// volume to the provider: it counts in the provider's window, and not in the cooldown.
#[test]
fn other_resizes_modifications_count_in_the_provider_window_not_the_cooldown() {
    let ebs = Policy {
        provider: Provider::AwsEbs,
        cooldown_seconds: 6 * HOUR,
        ..policy()
    };
    let mut situation = two_replicas(900 * MI);
    let now = situation.now;
    situation.history = vec![now - 20 * HOUR, now - 10 * HOUR, now - 7 * HOUR];
    assert!(matches!(decide(&ebs, &situation), Verdict::Grow { .. }));
    situation.other_modifications = vec![now - HOUR];
    assert_eq!(
        decide(&ebs, &situation),
        Verdict::Skip(Skip::ProviderLimit {
            until: now - 20 * HOUR + 24 * HOUR
        })
    );
    let mut no_window = two_replicas(900 * MI);
    no_window.other_modifications = vec![now - HOUR];
    assert!(matches!(decide(&policy(), &no_window), Verdict::Grow { .. }));
}

#[test]
fn kstatus_reads_stalled_on_an_invalid_volume_reconciling_while_growing_else_ready() {
    use super::record::overall;
    use ferry_api::AutoscaledVolumeStatus;
    let volume = |state: &str| AutoscaledVolumeStatus {
        stateful_set: "db".into(),
        name: "data".into(),
        state: Some(state.into()),
        message: Some(format!("{state} message")),
        ..AutoscaledVolumeStatus::default()
    };
    let health = |states: &[&str]| {
        let status = overall(
            None,
            states.iter().map(|s| volume(s)).collect(),
            &[],
            Some(3),
            1_000,
        );
        let of = |type_: &str| {
            status
                .conditions
                .iter()
                .find(|c| c.type_ == type_)
                .map(|c| (c.status.clone(), c.reason.clone(), c.observed_generation))
        };
        (of("Ready"), of("Reconciling"), of("Stalled"))
    };
    let ready = Some(("True".to_string(), "Watching".to_string(), Some(3)));
    assert_eq!(
        health(&["BelowThreshold", "AtMaxSize", "UsageUnknown"]),
        (ready, None, None)
    );
    let (ready, reconciling, stalled) = health(&["BelowThreshold", "Growing"]);
    assert_eq!(ready.unwrap().0, "False");
    assert_eq!(reconciling.unwrap().1, "Growing");
    assert_eq!(stalled, None);
    let (ready, reconciling, stalled) = health(&["Growing", "Invalid"]);
    assert_eq!(ready.unwrap().0, "False");
    assert_eq!(
        (reconciling, stalled.unwrap().1),
        (None, "VolumeNeedsAttention".to_string())
    );
}
