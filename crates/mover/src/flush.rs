//! Flushing the target in the background while the standby waits: an interim pass's data need
//! not be on disk before the next go is looked for (the final pass's own flush waits for all of
//! it before the pass succeeds), but it should reach the disk while the replica still serves, not
//! in the final pass's flush, where it would be the replica's downtime. So while a pass writes,
//! the target is flushed over and over, each flush taking what was written since the one before.

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

/// The pause between two flushes while a pass writes: each flush then takes what the pass wrote
/// meanwhile, and flushes of nothing do not follow each other without end.
const AGAIN_AFTER: Duration = Duration::from_millis(50);

#[derive(Default)]
struct State {
    /// A pass is writing.
    writing: bool,
    /// A flush is asked for (a pass ended since the last one began).
    asked: bool,
    /// The flusher is dropped.
    stop: bool,
}

/// A thread that flushes the target's file system while passes write, and once after each.
pub(crate) struct Flusher {
    state: Arc<(Mutex<State>, Condvar)>,
}

impl Flusher {
    /// Starts the thread; without one (it could not start), the final pass's flush does all the
    /// work.
    pub fn start(target: &Path) -> Self {
        let state: Arc<(Mutex<State>, Condvar)> = Arc::default();
        let shared = state.clone();
        let target = target.to_path_buf();
        let _ = std::thread::Builder::new()
            .name("ferry-mover-flush".into())
            .spawn(move || flush_while_asked(&target, &shared));
        Flusher { state }
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

    fn set(&self, change: impl FnOnce(&mut State)) {
        let (lock, changed) = &*self.state;
        change(&mut lock.lock().unwrap_or_else(PoisonError::into_inner));
        changed.notify_one();
    }
}

impl Drop for Flusher {
    fn drop(&mut self) {
        self.set(|state| state.stop = true);
    }
}

/// The thread: waits until a pass writes or a flush is asked for, flushes, and again.
fn flush_while_asked(target: &Path, shared: &(Mutex<State>, Condvar)) {
    let (lock, changed) = shared;
    loop {
        {
            let mut state = lock.lock().unwrap_or_else(PoisonError::into_inner);
            while !state.stop && !state.writing && !state.asked {
                state = changed.wait(state).unwrap_or_else(PoisonError::into_inner);
            }
            if state.stop {
                return;
            }
            state.asked = false;
        }
        // A flush that fails here fails the final pass's own flush, which reports it.
        if let Ok(dir) = std::fs::File::open(target) {
            let _ = rustix::fs::syncfs(&dir);
        }
        std::thread::sleep(AGAIN_AFTER);
    }
}
