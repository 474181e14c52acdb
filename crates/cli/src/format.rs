//! Small formatting helpers: ages, durations, rates, percentages, ETAs. No I/O.

use ferry_api::quantity::human_bytes;
use std::time::Duration;

/// A kubectl-style age: `42s`, `5m`, `3h`, `2d`.
pub fn age(seconds: i64) -> String {
    let seconds = seconds.max(0);
    match seconds {
        s if s < 120 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 48 * 3600 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

/// A compact duration: `45s`, `3m20s`, `2h05m`, `1d3h`.
pub fn duration(duration: Duration) -> String {
    let total = duration.as_secs();
    let (d, h, m, s) = (total / 86400, total / 3600 % 24, total / 60 % 60, total % 60);
    if d > 0 {
        format!("{d}d{h}h")
    } else if h > 0 {
        format!("{h}h{m:02}m")
    } else if m > 0 {
        format!("{m}m{s:02}s")
    } else {
        format!("{s}s")
    }
}

/// Time left to move `remaining` bytes at `rate` bytes per second; None when it cannot be known.
pub fn eta(done: u64, total: u64, bytes_per_second: Option<u64>) -> Option<Duration> {
    let rate = bytes_per_second.filter(|r| *r > 0)?;
    let remaining = total.saturating_sub(done);
    Some(Duration::from_secs(remaining.div_ceil(rate)))
}

/// Percentage done, 0–100, rounded down; None without a total.
pub fn percent(done: u64, total: u64) -> Option<u64> {
    if total == 0 {
        return None;
    }
    Some((u128::from(done.min(total)) * 100 / u128::from(total)) as u64)
}

/// `12.5 MiB/s`.
pub fn rate(bytes_per_second: u64) -> String {
    format!("{}/s", human_bytes(bytes_per_second))
}

/// `512.0 MiB/1.0 GiB (50%)`, or `512.0 MiB` without a total.
pub fn bytes_progress(done: Option<u64>, total: Option<u64>) -> Option<String> {
    match (done, total) {
        (Some(done), Some(total)) => Some(match percent(done, total) {
            Some(p) => format!("{}/{} ({p}%)", human_bytes(done), human_bytes(total)),
            None => format!("{}/{}", human_bytes(done), human_bytes(total)),
        }),
        (None, Some(total)) => Some(format!("0 B/{}", human_bytes(total))),
        (Some(done), None) => Some(human_bytes(done)),
        (None, None) => None,
    }
}

/// Seconds between two timestamps (0 when negative).
pub fn seconds_between(from: jiff::Timestamp, to: jiff::Timestamp) -> i64 {
    (to.as_second() - from.as_second()).max(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_like_kubectl() {
        assert_eq!(age(-3), "0s");
        assert_eq!(age(59), "59s");
        assert_eq!(age(119), "119s");
        assert_eq!(age(600), "10m");
        assert_eq!(age(7200), "2h");
        assert_eq!(age(3 * 86400), "3d");
    }

    #[test]
    fn durations() {
        assert_eq!(duration(Duration::from_secs(45)), "45s");
        assert_eq!(duration(Duration::from_secs(200)), "3m20s");
        assert_eq!(duration(Duration::from_secs(7500)), "2h05m");
        assert_eq!(duration(Duration::from_secs(97200)), "1d3h");
    }

    #[test]
    fn eta_needs_a_rate() {
        assert_eq!(eta(0, 100, None), None);
        assert_eq!(eta(0, 100, Some(0)), None);
        assert_eq!(eta(50, 100, Some(10)), Some(Duration::from_secs(5)));
        assert_eq!(eta(50, 101, Some(10)), Some(Duration::from_secs(6)));
        assert_eq!(eta(200, 100, Some(10)), Some(Duration::ZERO));
    }

    #[test]
    fn percentages_clamp_and_need_a_total() {
        assert_eq!(percent(1, 0), None);
        assert_eq!(percent(1, 3), Some(33));
        assert_eq!(percent(5, 3), Some(100));
        assert_eq!(percent(u64::MAX, u64::MAX), Some(100));
    }

    #[test]
    fn progress_text() {
        assert_eq!(
            bytes_progress(Some(512 << 20), Some(1 << 30)).as_deref(),
            Some("512.0 MiB/1.0 GiB (50%)")
        );
        assert_eq!(bytes_progress(None, None), None);
        assert_eq!(rate(10 << 20), "10.0 MiB/s");
    }
}
