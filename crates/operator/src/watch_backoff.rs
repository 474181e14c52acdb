//! How the watches retry after the API server failed them: doubling from half a second up to five.
//! client-go's default (kube's `default_backoff`) goes up to 30 s, which after an API server outage
//! left Ferry idle for up to that long once the API server was back, with replicas waiting on it.

use kube::runtime::utils::Backoff;
use std::time::Duration;

const FIRST: Duration = Duration::from_millis(500);
const LONGEST: Duration = Duration::from_secs(5);

/// The watches' retry delays: 0.5, 1, 2, 4, 5, 5, … s; back to the start on the next success.
#[derive(Debug, Clone)]
pub struct WatchBackoff {
    next: Duration,
}

impl Default for WatchBackoff {
    fn default() -> Self {
        WatchBackoff { next: FIRST }
    }
}

impl Iterator for WatchBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let delay = self.next;
        self.next = (delay * 2).min(LONGEST);
        Some(delay)
    }
}

impl Backoff for WatchBackoff {
    fn reset(&mut self) {
        self.next = FIRST;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_up_to_five_seconds_and_start_over_after_a_success() {
        let mut backoff = WatchBackoff::default();
        let delays: Vec<u128> = backoff.by_ref().take(6).map(|d| d.as_millis()).collect();
        assert_eq!(delays, [500, 1000, 2000, 4000, 5000, 5000]);
        backoff.reset();
        assert_eq!(backoff.next(), Some(FIRST));
    }
}
