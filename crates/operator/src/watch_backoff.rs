//! How the watches retry after the API server failed them: doubling from half a second up to five.
//! client-go's default (kube's `default_backoff`) goes up to 30 s, which after an API server outage
//! left Ferry idle for up to that long once the API server was back, with replicas waiting on it.
//!
//! Each watch backs off on its own ([`backing_off`]), as client-go's informers do. A kube
//! controller's own backoff ([`NoPause`] for Ferry's) pauses all its watches together after an
//! error of any one of them: after an API server restart each of a controller's six watches
//! failed once ("too old resource version") and the next waited out the pause the last one
//! caused, so its triggers stopped for 25 s while a copy, a replica down, went on at its 2 s
//! recheck.

use kube::runtime::utils::{Backoff, StreamBackoff};
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

/// `stream` (a watch) retrying after each error by [`WatchBackoff`], paused alone meanwhile.
pub fn backing_off<S: futures::TryStream>(stream: S) -> StreamBackoff<S, WatchBackoff> {
    StreamBackoff::new(stream, WatchBackoff::default())
}

/// A controller's backoff over all its watches at once: none, as each watch backs off itself.
#[derive(Debug, Clone, Default)]
pub struct NoPause;

impl Iterator for NoPause {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        // Zero, not `None`: `None` would end the controller's watches for good.
        Some(Duration::ZERO)
    }
}

impl Backoff for NoPause {
    fn reset(&mut self) {}
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
