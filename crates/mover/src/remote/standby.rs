//! A standby final pull that tracks changes (`pull --wait-for --track-changes --changes`): while
//! it waits for its go it pulls what changed since the last pull that passed, about once a
//! second (an interim pull), so that the final pull, which runs while the replica is down, is
//! left with what changed in the last second and the shutdown. The cross-node twin of the local
//! standby's interim passes (`crate::interim`).
//!
//! Each interim pull is an ordinary tracked pull, not strict, that neither stops the server nor
//! prints progress: it marks its start on the serving mover's record and reports it passed, so
//! the next pull (interim or final) asks only what changed since. Correctness never rests on
//! them: a pull that fails leaves the last passed mark where it was, and the final pull reads
//! from there (or walks whole, saying why).

use std::time::Duration;

use super::pull::{PullOptions, Pulled, pull, pull_pass};
use crate::error::MoverError;
use crate::interim::{INTERIM_EVERY, next_wait};
use crate::options::SyncReport;
use crate::progress::ProgressMode;

/// When interim pulls run.
#[derive(Debug, Clone, Copy)]
pub struct InterimPulls {
    /// The wait between them (zero: none run).
    pub every: Duration,
    /// A test hook: at most this many run.
    pub most: Option<u64>,
}

impl Default for InterimPulls {
    fn default() -> Self {
        InterimPulls {
            every: INTERIM_EVERY,
            most: None,
        }
    }
}

/// What the interim pulls did, and whether more may run.
#[derive(Debug, Default)]
struct Interim {
    passes: u64,
    bytes_copied: u64,
    /// No more run: one failed, the server does not track changes, or a pull after the first
    /// walked both trees whole (each would, every second).
    stopped: bool,
}

/// Waits for the go (`go` waits at most the time it is given), running interim pulls between
/// waits, then runs the final pull `opts` describes. The go's value comes back with its outcome.
pub fn standby<G>(
    opts: &PullOptions,
    pacing: InterimPulls,
    mut go: impl FnMut(Duration) -> Option<G>,
) -> (G, Result<SyncReport, MoverError>) {
    let mut interim = Interim {
        stopped: pacing.every.is_zero() || !(opts.track_changes && opts.changes),
        ..Interim::default()
    };
    let mut wrote = 0;
    let went = loop {
        let wait = match interim.stopped {
            true => Duration::MAX,
            false => next_wait(pacing.every, wrote),
        };
        if let Some(went) = go(wait) {
            break went;
        }
        if interim.stopped {
            continue;
        }
        if pacing.most.is_some_and(|most| interim.passes >= most) {
            interim.stopped = true;
            continue;
        }
        wrote = step(opts, &mut interim);
    };
    let outcome = pull(opts).map(|report| SyncReport {
        interim_passes: Some(interim.passes),
        interim_bytes_copied: Some(interim.bytes_copied),
        ..report
    });
    (went, outcome)
}

/// One interim pull; the bytes it wrote.
fn step(opts: &PullOptions, interim: &mut Interim) -> u64 {
    match pull_pass(&interim_options(opts)) {
        Ok(Pulled { report, marked }) => {
            let first = interim.passes == 0;
            interim.passes += 1;
            interim.bytes_copied += report.bytes_copied;
            let walked_whole = report.change_tracking.as_deref() != Some("used");
            interim.stopped = !marked || (walked_whole && !first);
            report.bytes_copied
        }
        Err(e) => {
            eprintln!(
                "ferry-mover: warning: an interim pull failed, none follow (the final pull reads \
                 from the last that passed): {}",
                crate::one_line(&e.to_string())
            );
            interim.stopped = true;
            0
        }
    }
}

/// An interim pull: the final pull's, with the source still live (not strict), the server left
/// serving, quiet, and one try at connecting (a go must not wait for a server that is gone).
fn interim_options(opts: &PullOptions) -> PullOptions {
    PullOptions {
        strict: false,
        stop_server: false,
        connect_wait: Duration::ZERO,
        corrupt_after_write: None,
        progress: ProgressMode::None,
        print_warnings: false,
        ..opts.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interim_pulls_are_quiet_leave_the_server_serving_and_take_the_live_source() {
        let opts = PullOptions {
            from: "127.0.0.1:1".parse().unwrap(),
            tls: "/tls".into(),
            target: "/target".into(),
            delete: true,
            verify: crate::remote::PullVerify::Checksum,
            connections: 4,
            bwlimit: Some(7),
            stop_server: true,
            strict: true,
            track_changes: true,
            changes: true,
            connect_wait: Duration::from_secs(60),
            corrupt_after_write: Some("x".into()),
            progress: ProgressMode::Json,
            print_warnings: true,
        };
        let interim = interim_options(&opts);
        assert!(!interim.strict && !interim.stop_server && !interim.print_warnings);
        assert_eq!(interim.connect_wait, Duration::ZERO);
        assert_eq!(interim.corrupt_after_write, None);
        // What the copy is stays the final pull's.
        assert!(interim.delete && interim.track_changes && interim.changes);
        assert_eq!((interim.connections, interim.bwlimit), (4, Some(7)));
    }

    #[test]
    fn a_pull_without_change_tracking_runs_no_interim_pulls() {
        let opts = PullOptions {
            from: "127.0.0.1:1".parse().unwrap(),
            tls: "/nonexistent".into(),
            target: "/nonexistent/target".into(),
            delete: true,
            verify: crate::remote::PullVerify::None,
            connections: 1,
            bwlimit: None,
            stop_server: true,
            strict: true,
            track_changes: true,
            changes: false,
            connect_wait: Duration::ZERO,
            corrupt_after_write: None,
            progress: ProgressMode::None,
            print_warnings: false,
        };
        let mut waits = Vec::new();
        let (went, outcome) = standby(&opts, InterimPulls::default(), |wait| {
            waits.push(wait);
            (waits.len() == 2).then_some("go")
        });
        assert_eq!(went, "go");
        // Waited for the go alone, never between pulls; then the final pull (here failing: no
        // TLS files) ran once.
        assert_eq!(waits, vec![Duration::MAX, Duration::MAX]);
        assert!(outcome.is_err());
    }
}
