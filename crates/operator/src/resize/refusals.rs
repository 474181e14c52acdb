//! How soon a VolumeResize whose request the API server refused (403, 422) is reconciled again.
//! A refusal is usually lasting (RBAC, Pod Security, a quota), but not always: an API server that
//! has just started answers 403 until its RBAC caches have synced (seen here 28 s into a copy
//! whose API server restarted, with a flat 30 s retry). So the first retries come soon and back
//! off to [`REFUSED_RETRY_MAX`]; any reconcile that gets through starts the count again.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// The slowest a refused request is asked again (only a change elsewhere helps by then).
pub const REFUSED_RETRY_MAX: Duration = Duration::from_secs(30);

/// The pause before retry number `attempt` (1 for the first): 2, 4, 8, 16, then 30 s.
pub fn refused_retry(attempt: u32) -> Duration {
    let seconds = 1u64.checked_shl(attempt.min(16)).unwrap_or(u64::MAX);
    Duration::from_secs(seconds).min(REFUSED_RETRY_MAX)
}

/// Refusals in a row, per VolumeResize (`namespace/name`).
#[derive(Default)]
pub struct Refusals(Mutex<HashMap<String, u32>>);

impl Refusals {
    /// Counts one more refusal of `key`; the pause before its next try.
    pub fn refused(&self, key: &str) -> Duration {
        let Ok(mut counts) = self.0.lock() else {
            return REFUSED_RETRY_MAX;
        };
        let attempt = counts.entry(key.to_string()).or_insert(0);
        *attempt = attempt.saturating_add(1);
        refused_retry(*attempt)
    }

    /// `key` got through: its next refusal is a first one again.
    pub fn cleared(&self, key: &str) {
        if let Ok(mut counts) = self.0.lock() {
            counts.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_back_off_from_two_seconds_to_thirty_and_start_again_once_through() {
        let pauses: Vec<u64> = (1..=7).map(|n| refused_retry(n).as_secs()).collect();
        assert_eq!(pauses, [2, 4, 8, 16, 30, 30, 30]);
        assert_eq!(refused_retry(u32::MAX), REFUSED_RETRY_MAX);
        let refusals = Refusals::default();
        assert_eq!(refusals.refused("ns/a"), Duration::from_secs(2));
        assert_eq!(refusals.refused("ns/a"), Duration::from_secs(4));
        assert_eq!(
            refusals.refused("ns/b"),
            Duration::from_secs(2),
            "counted per resize"
        );
        refusals.cleared("ns/a");
        assert_eq!(refusals.refused("ns/a"), Duration::from_secs(2));
    }
}
