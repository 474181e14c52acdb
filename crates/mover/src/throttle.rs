//! A bandwidth limit for the copy (`--bwlimit`), so a warm copy does not starve the replica that
//! still serves from the same disk. Shared by all copy threads: the bytes written so far must not
//! run ahead of `rate × elapsed`.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Largest piece copied between two checks of the limit, so pauses stay short and even.
pub const LIMITED_CHUNK: u64 = 1 << 20;

pub struct Throttle {
    /// Bytes per second.
    rate: u64,
    start: Instant,
    written: Mutex<u64>,
}

impl Throttle {
    pub fn new(bytes_per_second: u64) -> Throttle {
        Throttle {
            rate: bytes_per_second.max(1),
            start: Instant::now(),
            written: Mutex::new(0),
        }
    }

    /// Counts `bytes` just written and sleeps until the total is back within the limit.
    pub fn pace(&self, bytes: u64) {
        let total = {
            let mut written = self.written.lock().unwrap_or_else(|e| e.into_inner());
            *written += bytes;
            *written
        };
        let pause = pause_needed(total, self.rate, self.start.elapsed());
        if !pause.is_zero() {
            std::thread::sleep(pause);
        }
    }
}

/// How long to wait so that `written` bytes after `elapsed` stay within `rate` bytes per second.
pub fn pause_needed(written: u64, rate: u64, elapsed: Duration) -> Duration {
    let due = Duration::from_secs_f64(written as f64 / rate.max(1) as f64);
    due.saturating_sub(elapsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_pause_while_under_the_limit() {
        assert_eq!(pause_needed(1_000, 1_000, Duration::from_secs(2)), Duration::ZERO);
        assert_eq!(pause_needed(0, 1, Duration::ZERO), Duration::ZERO);
    }

    #[test]
    fn pauses_until_the_bytes_are_due() {
        assert_eq!(
            pause_needed(3_000, 1_000, Duration::from_secs(1)),
            Duration::from_secs(2)
        );
    }

    #[test]
    fn threads_share_one_budget() {
        let throttle = Throttle::new(4 << 20);
        let started = Instant::now();
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for _ in 0..2 {
                        throttle.pace(512 << 10);
                    }
                });
            }
        });
        // 4 MiB at 4 MiB/s: about one second, whatever the number of threads.
        assert!(
            started.elapsed() >= Duration::from_millis(950),
            "{:?}",
            started.elapsed()
        );
    }
}
