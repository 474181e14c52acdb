//! Autoresize decisions (the `VolumeAutoscaler` policy of one volume template): from the usage of
//! every replica's volume, the policy and the record of earlier resizes, whether to grow now, to
//! what size, and if not, why not. Pure: the operator polls usage and keeps the record in status,
//! so a restarted operator decides the same (cooldowns and provider windows included).

pub mod action;
pub mod autoresizer;
pub mod measure;
pub mod plan;
pub mod policy;
pub mod prometheus;
pub mod record;
pub mod request;
pub mod rescue;
pub mod seed;
pub mod shrink;
pub mod situation;
pub mod streaks;
pub mod trend;
pub mod usage;

#[cfg(test)]
mod tests;

const MI: u64 = 1 << 20;
const GI: u64 = 1 << 30;

/// How much a grow adds at least.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Increase {
    /// Percent of the current size.
    Percent(u32),
    Bytes(u64),
}

/// Limits a storage provider puts on volume modifications, and the unit it sizes volumes in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Provider {
    /// No limit known; sizes in MiB.
    #[default]
    Generic,
    /// AWS EBS: at most 4 modifications of a volume in a rolling 24 h; sizes in GiB.
    AwsEbs,
    /// Providers that allow one modification per 6 h; sizes in GiB.
    OnePerSixHours,
}

impl Provider {
    /// (window in seconds, modifications allowed in it).
    pub fn window(self) -> Option<(i64, usize)> {
        match self {
            Provider::Generic => None,
            Provider::AwsEbs => Some((24 * 3600, 4)),
            Provider::OnePerSixHours => Some((6 * 3600, 1)),
        }
    }

    /// Sizes are rounded up to whole multiples of this.
    pub fn unit(self) -> u64 {
        match self {
            Provider::Generic => MI,
            Provider::AwsEbs | Provider::OnePerSixHours => GI,
        }
    }
}

/// One volume template's policy, defaults applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Grow when a volume is at least this full (% of bytes).
    pub threshold_percent: u8,
    /// Grow when a volume has used at least this share of its inodes.
    pub inodes_threshold_percent: u8,
    pub increase: Increase,
    pub min_increase: Option<u64>,
    pub max_increase: Option<u64>,
    pub max_size: u64,
    pub cooldown_seconds: i64,
    pub provider: Provider,
    /// Grow only after the volume has been over its threshold this long (rescues do not wait).
    pub grow_after_seconds: i64,
    /// When and how far to shrink, if at all.
    pub shrink: Option<shrink::Shrink>,
}

impl Policy {
    pub const DEFAULT_THRESHOLD: u8 = 80;
    pub const DEFAULT_INODES_THRESHOLD: u8 = 90;
    pub const DEFAULT_INCREASE: Increase = Increase::Percent(20);
    pub const DEFAULT_COOLDOWN_SECONDS: i64 = 3600;
}

/// What one replica's volume holds, as the kubelet reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reading {
    pub replica: i32,
    pub used_bytes: u64,
    pub capacity_bytes: u64,
    /// (used, total) inodes, where the file system reports them.
    pub inodes: Option<(u64, u64)>,
}

/// Everything the decision looks at, read fresh each time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Situation {
    /// The size the template and the claims ask for now (the largest claim, if they differ).
    pub current_size: u64,
    /// The running replicas.
    pub replicas: Vec<i32>,
    pub readings: Vec<Reading>,
    /// Replicas whose pod cannot start or keeps crashing because its volume is full.
    pub full_disk_crashes: Vec<i32>,
    /// Replicas whose pod says its disk is full while no reading of its volume exists (none of
    /// its containers runs): measured before anything grows (`plan`'s `MeasureVolume`).
    pub unmeasured_crashes: Vec<i32>,
    /// A VolumeResize working on the StatefulSet now.
    pub resize_running: Option<String>,
    /// This autoscaler's last VolumeResize of this volume, if it failed and is still there: no
    /// grow until someone deletes it (a failure would repeat at every poll otherwise).
    pub resize_failed: Option<String>,
    /// When earlier autoresizes of this volume were made (Unix seconds), from status.
    pub history: Vec<i64>,
    /// The newest autoscaler grow of this volume, as its VolumeResize records it (status may
    /// have lost it: the grow is made before its status is written).
    pub last_grow: Option<ferry_api::AutoResize>,
    /// When other VolumeResizes (by hand, by a trigger) changed this volume in place: a growth or
    /// another attributes class is a modification to the provider too, so they count in its
    /// window (not in the cooldown, which is the autoscaler's own pace).
    pub other_modifications: Vec<i64>,
    /// Why the usage source could not answer, when it could not: said where usage is unknown.
    pub usage_unreadable: Option<String>,
    /// Since when the volume has been over its threshold without a break, this poll included.
    pub over_threshold_since: Option<i64>,
    /// Since when every replica has been below the shrink threshold without a break.
    pub below_shrink_since: Option<i64>,
    /// When the autoscaler last shrank this volume (status, or its VolumeResizes).
    pub last_shrink: Option<i64>,
    /// Whether the autoscaler's maintenance windows let a resize start now.
    pub window: crate::windows::WindowState,
    /// A rescue may start outside the windows.
    pub rescue_outside_windows: bool,
    pub now: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Reason {
    Threshold,
    Inodes,
    /// A pod crashing on a full disk: grown even though the StatefulSet is not Ready, and inside
    /// the cooldown (never beyond the provider's limit, which the provider would refuse anyway).
    Rescue,
    /// Not a grow: the shrink policy's (every replica nearly empty for long enough).
    Shrink,
}

impl Reason {
    pub fn label(self) -> &'static str {
        match self {
            Reason::Threshold => "threshold",
            Reason::Inodes => "inodes",
            Reason::Rescue => "rescue",
            Reason::Shrink => "shrink",
        }
    }
}

/// Why nothing happens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skip {
    BelowThreshold,
    /// Some replicas' usage is not known (and none known is over the threshold).
    UsageUnknown {
        replicas: Vec<i32>,
    },
    ResizeRunning {
        name: String,
    },
    AtMaxSize,
    Cooldown {
        until: i64,
    },
    ProviderLimit {
        until: i64,
    },
    ResizeFailed {
        name: String,
    },
    /// Over the threshold for less than `growAfter`: grows at `until` if it stays over.
    Stabilizing {
        until: i64,
    },
    /// Nearly empty: shrinks to `to` at `at` if it stays so (`shrink.for`, `shrink.every`).
    ShrinkPending {
        at: i64,
        to: u64,
    },
    /// A resize is due, and waits for the maintenance window that opens at `opens_at`.
    OutsideWindow {
        opens_at: i64,
    },
}

impl Skip {
    pub fn label(&self) -> &'static str {
        match self {
            Skip::BelowThreshold => "below-threshold",
            Skip::UsageUnknown { .. } => "usage-unknown",
            Skip::ResizeRunning { .. } => "resize-running",
            Skip::AtMaxSize => "at-max-size",
            Skip::Cooldown { .. } => "cooldown",
            Skip::ProviderLimit { .. } => "provider-limit",
            Skip::ResizeFailed { .. } => "resize-failed",
            Skip::Stabilizing { .. } => "stabilizing",
            Skip::ShrinkPending { .. } => "shrink-pending",
            Skip::OutsideWindow { .. } => "outside-window",
        }
    }

    /// The name status gives this state.
    pub fn state(&self) -> &'static str {
        match self {
            Skip::BelowThreshold => "BelowThreshold",
            Skip::UsageUnknown { .. } => "UsageUnknown",
            Skip::ResizeRunning { .. } => "ResizeRunning",
            Skip::AtMaxSize => "AtMaxSize",
            Skip::Cooldown { .. } => "Cooldown",
            Skip::ProviderLimit { .. } => "ProviderLimit",
            Skip::ResizeFailed { .. } => "ResizeFailed",
            Skip::Stabilizing { .. } => "Stabilizing",
            Skip::ShrinkPending { .. } => "ShrinkPending",
            Skip::OutsideWindow { .. } => "OutsideWindow",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Grow every replica's volume and the template to `to` bytes.
    Grow {
        to: u64,
        reason: Reason,
        /// The replicas that asked for it.
        replicas: Vec<i32>,
        /// `to` is `maxSize`, less than the replicas needed.
        capped: bool,
    },
    /// Shrink every replica's volume and the template to `to` bytes, by copy.
    Shrink {
        to: u64,
    },
    Skip(Skip),
}

fn ceil_div(value: u128, divisor: u128) -> u128 {
    value.div_ceil(divisor.max(1))
}

pub(crate) fn round_up(bytes: u64, unit: u64) -> u64 {
    bytes.div_ceil(unit.max(1)).saturating_mul(unit.max(1))
}

/// The smallest size, in whole `unit`s, that holds `used` bytes below `threshold_percent` full:
/// what a volume could shrink to (the autoscaler's `couldShrinkBy`, `kubectl ferry report`).
pub fn smallest_size(used: u64, threshold_percent: u8, unit: u64) -> u64 {
    round_up(size_for(used, 1, 1, threshold_percent), unit)
}

/// The smallest size at which `used` of something is below `percent` of it, scaled from a
/// volume of `capacity` (inodes grow with the file system).
pub(crate) fn size_for(used: u64, total: u64, capacity: u64, percent: u8) -> u64 {
    // size ≥ capacity × used × 100 / (total × percent)
    let needed = ceil_div(
        u128::from(capacity) * u128::from(used) * 100,
        u128::from(total) * u128::from(percent.max(1)),
    );
    u64::try_from(needed).unwrap_or(u64::MAX)
}

pub(crate) fn over(used: u64, total: u64, percent: u8) -> bool {
    total > 0 && u128::from(used) * 100 >= u128::from(total) * u128::from(percent)
}

/// Who asks to grow now, why, and how big each needs its volume.
fn asking(policy: &Policy, situation: &Situation) -> Vec<(i32, Reason, u64)> {
    let mut asking: Vec<(i32, Reason, u64)> = Vec::new();
    for reading in &situation.readings {
        if !situation.replicas.contains(&reading.replica) {
            continue;
        }
        let capacity = reading.capacity_bytes.max(situation.current_size);
        if over(
            reading.used_bytes,
            reading.capacity_bytes,
            policy.threshold_percent,
        ) {
            let need = size_for(reading.used_bytes, capacity, capacity, policy.threshold_percent);
            asking.push((reading.replica, Reason::Threshold, need));
        }
        if let Some((used, total)) = reading.inodes
            && over(used, total, policy.inodes_threshold_percent)
        {
            let need = size_for(used, total, capacity, policy.inodes_threshold_percent);
            asking.push((reading.replica, Reason::Inodes, need));
        }
    }
    for &replica in &situation.full_disk_crashes {
        asking.push((replica, Reason::Rescue, 0));
    }
    asking
}

/// Whether a replica's volume is over the bytes or inodes threshold now (a rescue aside).
pub fn over_threshold(policy: &Policy, situation: &Situation) -> bool {
    asking(policy, situation)
        .iter()
        .any(|(_, reason, _)| *reason != Reason::Rescue)
}

pub fn decide(policy: &Policy, situation: &Situation) -> Verdict {
    let asking = asking(policy, situation);
    let Some(reason) = asking.iter().map(|(_, reason, _)| *reason).max() else {
        let unknown: Vec<i32> = situation
            .replicas
            .iter()
            .copied()
            .filter(|replica| !situation.readings.iter().any(|r| r.replica == *replica))
            .collect();
        return if unknown.is_empty() {
            shrink::decide(policy, situation)
        } else {
            Verdict::Skip(Skip::UsageUnknown { replicas: unknown })
        };
    };

    if let Some(name) = &situation.resize_running {
        return Verdict::Skip(Skip::ResizeRunning { name: name.clone() });
    }
    if let Some(name) = &situation.resize_failed {
        return Verdict::Skip(Skip::ResizeFailed { name: name.clone() });
    }
    if situation.current_size >= policy.max_size {
        return Verdict::Skip(Skip::AtMaxSize);
    }
    if reason != Reason::Rescue && policy.grow_after_seconds > 0 {
        let until = situation.over_threshold_since.unwrap_or(situation.now) + policy.grow_after_seconds;
        if situation.now < until {
            return Verdict::Skip(Skip::Stabilizing { until });
        }
    }
    if let Some(until) = provider_window_ends(
        policy,
        &situation.history,
        &situation.other_modifications,
        situation.now,
    ) {
        return Verdict::Skip(Skip::ProviderLimit { until });
    }
    if reason != Reason::Rescue
        && let Some(last) = situation.history.iter().max()
        && situation.now < last + policy.cooldown_seconds
    {
        return Verdict::Skip(Skip::Cooldown {
            until: last + policy.cooldown_seconds,
        });
    }

    let current = situation.current_size;
    let mut step = match policy.increase {
        Increase::Percent(percent) => {
            u64::try_from(ceil_div(u128::from(current) * u128::from(percent), 100)).unwrap_or(u64::MAX)
        }
        Increase::Bytes(bytes) => bytes,
    };
    if let Some(min) = policy.min_increase {
        step = step.max(min);
    }
    if let Some(max) = policy.max_increase {
        step = step.min(max);
    }
    let needed = asking
        .iter()
        .map(|(_, _, need)| *need)
        .fold(current.saturating_add(step.max(1)), u64::max);
    let wanted = round_up(needed, policy.provider.unit());
    let to = wanted.min(policy.max_size);
    if to <= current {
        return Verdict::Skip(Skip::AtMaxSize);
    }
    if let Some(skip) = outside_window(situation, reason == Reason::Rescue) {
        return Verdict::Skip(skip);
    }
    let mut replicas: Vec<i32> = asking.iter().map(|(replica, _, _)| *replica).collect();
    replicas.sort_unstable();
    replicas.dedup();
    Verdict::Grow {
        to,
        reason,
        replicas,
        capped: wanted > policy.max_size,
    }
}

/// The skip of a resize that is due while the maintenance windows are closed (a rescue passes
/// where `rescueOutsideWindows` says so).
fn outside_window(situation: &Situation, rescue: bool) -> Option<Skip> {
    match situation.window {
        crate::windows::WindowState::Closed { opens_at } if !(rescue && situation.rescue_outside_windows) => {
            Some(Skip::OutsideWindow { opens_at })
        }
        _ => None,
    }
}

/// How much smaller the volume could be with every replica's data still below the threshold
/// (status shows this whether or not the shrink policy acts on it).
pub fn could_shrink_by(policy: &Policy, situation: &Situation) -> Option<u64> {
    let most_used = situation.readings.iter().map(|r| r.used_bytes).max()?;
    let smallest = smallest_size(most_used, policy.threshold_percent, policy.provider.unit());
    situation.current_size.checked_sub(smallest).filter(|by| *by > 0)
}

/// When the provider's window lets the volume be modified again, if it does not now: the grows in
/// `history` and the `others` modifications of the volume together fill it.
fn provider_window_ends(policy: &Policy, history: &[i64], others: &[i64], now: i64) -> Option<i64> {
    let (window, allowed) = policy.provider.window()?;
    let mut recent: Vec<i64> = history
        .iter()
        .chain(others)
        .copied()
        .filter(|at| *at > now - window)
        .collect();
    recent.sort_unstable();
    recent.dedup();
    (recent.len() >= allowed).then(|| recent[recent.len() - allowed] + window)
}

/// The earliest time (Unix seconds) a grow that is not a rescue is allowed again after the grows
/// in `history` (and the volume's `others` modifications, for the provider's window), if that is
/// later than `now`: the cooldown and the provider's window both hold.
pub fn next_allowed(policy: &Policy, history: &[i64], others: &[i64], now: i64) -> Option<i64> {
    let cooldown_ends = history.iter().max().map(|last| last + policy.cooldown_seconds);
    let window_ends = provider_window_ends(policy, history, others, now);
    cooldown_ends.max(window_ends).filter(|at| *at > now)
}
