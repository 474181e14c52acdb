//! Flushing the target in the background while the standby waits: an interim pass's data need
//! not be on disk before the next go is looked for (the final pass's own flush waits for all of
//! it before the pass succeeds), but it should reach the disk while the replica still serves, not
//! in the final pass's flush, where it would be the replica's downtime. So while a pass writes,
//! the target is flushed over and over, each flush taking what was written since the one before.
//!
//! A write-back error is reported once, to the flushes of descriptors opened before it: the final
//! pass's flush, on a descriptor of its own opened later, could miss one that a background flush
//! met. So the flusher keeps one descriptor from before the first interim write, remembers the
//! first error its flushes met, and [`Flusher::finish`] flushes on it once more after the final
//! pass: an error since the standby began fails the pass.

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use rustix::io::Errno;

/// The pause between two flushes while a pass writes: each flush then takes what the pass wrote
/// meanwhile, and flushes of nothing do not follow each other without end.
const AGAIN_AFTER: Duration = Duration::from_millis(50);

/// One flush of the target's file system.
type Flush = Arc<dyn Fn() -> Result<(), Errno> + Send + Sync>;

#[derive(Default)]
struct State {
    /// A pass is writing.
    writing: bool,
    /// A flush is asked for (a pass ended since the last one began).
    asked: bool,
    /// The flusher is finishing.
    stop: bool,
    /// The first error a flush met.
    failed: Option<Errno>,
}

type Shared = Arc<(Mutex<State>, Condvar)>;

/// A thread that flushes the target's file system while passes write, and once after each.
pub(crate) struct Flusher {
    state: Shared,
    flush: Flush,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Flusher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Flusher")
    }
}

impl Flusher {
    /// A flusher of the file system of `target` (a directory), through a descriptor opened now.
    pub fn start(target: &Path) -> Result<Self, Errno> {
        let dir = Arc::new(rustix::fs::open(
            target,
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )?);
        Ok(Self::with(Arc::new(move || rustix::fs::syncfs(&*dir))))
    }

    /// A flusher calling `flush`; without a thread (it could not start), only [`Self::finish`]
    /// flushes.
    fn with(flush: Flush) -> Self {
        let state: Shared = Arc::default();
        let (shared, flushing) = (state.clone(), flush.clone());
        let thread = std::thread::Builder::new()
            .name("ferry-mover-flush".into())
            .spawn(move || flush_while_asked(&*flushing, &shared))
            .ok();
        Flusher { state, flush, thread }
    }

    /// A pass begins writing: flush until it ends.
    pub fn writing(&self) {
        self.set(|state| state.writing = true);
    }

    /// The pass ended: one more flush takes the rest of what it wrote.
    pub fn written(&self) {
        self.set(|state| {
            state.writing = false;
            state.asked = true;
        });
    }

    /// Stops the thread (after its flush under way) and flushes once more: the first error any
    /// flush met since the start, if one did.
    pub fn finish(mut self) -> Option<Errno> {
        self.set(|state| state.stop = true);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let failed = lock(&self.state).failed;
        failed.or_else(|| (self.flush)().err())
    }

    fn set(&self, change: impl FnOnce(&mut State)) {
        change(&mut lock(&self.state));
        self.state.1.notify_one();
    }
}

impl Drop for Flusher {
    fn drop(&mut self) {
        self.set(|state| state.stop = true);
    }
}

fn lock(state: &Shared) -> std::sync::MutexGuard<'_, State> {
    state.0.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The thread: waits until a pass writes or a flush is asked for, flushes, and again.
fn flush_while_asked(flush: &(dyn Fn() -> Result<(), Errno> + Send + Sync), shared: &Shared) {
    loop {
        {
            let mut state = lock(shared);
            while !state.stop && !state.writing && !state.asked {
                state = shared.1.wait(state).unwrap_or_else(PoisonError::into_inner);
            }
            if state.stop {
                return;
            }
            state.asked = false;
        }
        if let Err(e) = flush() {
            lock(shared).failed.get_or_insert(e);
        }
        // The pause ends early at the finish, which waits for this thread during the downtime.
        let state = lock(shared);
        let _ = shared
            .1
            .wait_timeout_while(state, AGAIN_AFTER, |state| !state.stop)
            .unwrap_or_else(PoisonError::into_inner);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// A flush that counts its calls and fails the calls `fails` names (numbered from 1).
    fn counting(fails: fn(u64) -> bool) -> (Flush, Arc<AtomicU64>) {
        let calls = Arc::new(AtomicU64::new(0));
        let counted = calls.clone();
        let flush: Flush = Arc::new(move || {
            let n = counted.fetch_add(1, Ordering::SeqCst) + 1;
            if fails(n) { Err(Errno::IO) } else { Ok(()) }
        });
        (flush, calls)
    }

    /// A pass written, and the thread's flush after it begun.
    fn one_pass_flushed(flusher: &Flusher, calls: &AtomicU64) {
        flusher.writing();
        flusher.written();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while calls.load(Ordering::SeqCst) == 0 {
            assert!(std::time::Instant::now() < deadline, "never flushed");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn a_pass_is_flushed_after_it_ends_and_finish_flushes_once_more() {
        let (flush, calls) = counting(|_| false);
        let flusher = Flusher::with(flush);
        one_pass_flushed(&flusher, &calls);
        let before = calls.load(Ordering::SeqCst);
        assert_eq!(flusher.finish(), None);
        assert!(calls.load(Ordering::SeqCst) > before, "finish did not flush");
    }

    /// An error a background flush met fails the finish, though the flushes after it succeed
    /// (the kernel reports a write-back error once per descriptor).
    #[test]
    fn an_error_met_in_the_background_is_kept_for_the_finish() {
        let (flush, calls) = counting(|n| n == 1);
        let flusher = Flusher::with(flush);
        one_pass_flushed(&flusher, &calls);
        assert_eq!(flusher.finish(), Some(Errno::IO));
    }

    #[test]
    fn an_error_of_the_last_flush_fails_the_finish() {
        let (flush, _) = counting(|_| true);
        assert_eq!(Flusher::with(flush).finish(), Some(Errno::IO));
    }
}
