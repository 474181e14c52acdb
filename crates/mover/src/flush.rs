//! Flushing the target in the background while the standby waits: an interim pass's data need
//! not be on disk before the next go is looked for (the final pass's own flush waits for all of
//! it before the pass succeeds), but its flush should start at once, not at the final pass, where
//! it would be the replica's downtime.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{Sender, channel};

/// A thread that flushes the target's file system each time it is asked to (asks that come while
/// it flushes are served by one more flush).
pub(crate) struct Flusher {
    ask: Option<Sender<()>>,
}

impl Flusher {
    /// Starts the thread; without one (the thread could not start), each ask is a no-op and the
    /// final pass's flush does all the work.
    pub fn start(target: &Path) -> Self {
        let (ask, asked) = channel::<()>();
        let target: PathBuf = target.to_path_buf();
        let started = std::thread::Builder::new()
            .name("ferry-mover-flush".into())
            .spawn(move || {
                while asked.recv().is_ok() {
                    while asked.try_recv().is_ok() {}
                    // A flush that fails here fails the final pass's own flush, which reports it.
                    if let Ok(dir) = std::fs::File::open(&target) {
                        let _ = rustix::fs::syncfs(&dir);
                    }
                }
            });
        Flusher {
            ask: started.ok().map(|_| ask),
        }
    }

    /// Starts a flush of everything written so far (returns at once).
    pub fn ask(&self) {
        if let Some(ask) = &self.ask {
            let _ = ask.send(());
        }
    }
}
