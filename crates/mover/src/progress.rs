//! Progress counters, the periodic reporter (JSON lines on stdout or a bar on stderr), and warnings.

use std::io::Write;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// `text` with every control character escaped (`\n` as the two characters `\` `n`), for
/// output read line by line: a file name holding a newline and a line of JSON could otherwise
/// print a line that reads as the mover's result (the operator takes the result line from the
/// mover's log, where stdout and stderr are one stream).
pub fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| match c.is_control() {
            true => c.escape_default().to_string(),
            false => c.to_string(),
        })
        .collect()
}

/// One progress line: the wire type the planner reads back.
pub use ferry_mover_report::Progress as ProgressLine;

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProgressMode {
    /// JSON lines on stdout (for the operator).
    Json,
    /// A progress bar on stderr (for people).
    Human,
    /// Nothing.
    #[default]
    None,
}

/// The phase the run is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Phase {
    /// Walking source and target.
    Scan = 0,
    /// Removing extraneous, stale or wrongly typed target entries.
    Delete = 1,
    /// Creating entries and copying data.
    Copy = 2,
    /// Checking the target against the source.
    Verify = 3,
    /// Finished.
    Done = 4,
}

impl Phase {
    fn name(self) -> &'static str {
        match self {
            Phase::Scan => "scan",
            Phase::Delete => "delete",
            Phase::Copy => "copy",
            Phase::Verify => "verify",
            Phase::Done => "done",
        }
    }

    fn from_u8(v: u8) -> Phase {
        match v {
            0 => Phase::Scan,
            1 => Phase::Delete,
            2 => Phase::Copy,
            3 => Phase::Verify,
            _ => Phase::Done,
        }
    }
}

/// Counters shared by the workers and the reporter.
#[derive(Debug)]
pub struct Progress {
    phase: AtomicU8,
    /// Entries handled (including skipped ones).
    pub files_done: AtomicU64,
    /// Entries in the source.
    pub files_total: AtomicU64,
    /// Bytes handled (including skipped files).
    pub bytes_done: AtomicU64,
    /// Bytes of regular files in the source.
    pub bytes_total: AtomicU64,
    /// Bytes actually written to the target.
    pub bytes_copied: AtomicU64,
    /// Bytes of the target read to compare it with the source.
    pub bytes_compared: AtomicU64,
    start: Instant,
}

impl Default for Progress {
    fn default() -> Self {
        Progress {
            phase: AtomicU8::new(Phase::Scan as u8),
            files_done: AtomicU64::new(0),
            files_total: AtomicU64::new(0),
            bytes_done: AtomicU64::new(0),
            bytes_total: AtomicU64::new(0),
            bytes_copied: AtomicU64::new(0),
            bytes_compared: AtomicU64::new(0),
            start: Instant::now(),
        }
    }
}

impl Progress {
    /// Switches the phase.
    pub fn set_phase(&self, phase: Phase) {
        self.phase.store(phase as u8, Ordering::Relaxed);
    }

    /// Counts one entry done with `bytes` of data handled.
    pub fn done(&self, bytes: u64) {
        self.files_done.fetch_add(1, Ordering::Relaxed);
        self.bytes_done.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Seconds since the start.
    pub fn elapsed(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    /// A snapshot of the counters.
    pub fn line(&self) -> ProgressLine {
        let elapsed = self.elapsed();
        let copied = self.bytes_copied.load(Ordering::Relaxed);
        let rate = if elapsed > 0.0 {
            (copied as f64 / elapsed) as u64
        } else {
            0
        };
        ProgressLine {
            phase: Phase::from_u8(self.phase.load(Ordering::Relaxed))
                .name()
                .to_string(),
            files_done: self.files_done.load(Ordering::Relaxed),
            files_total: self.files_total.load(Ordering::Relaxed),
            bytes_done: self.bytes_done.load(Ordering::Relaxed),
            bytes_total: self.bytes_total.load(Ordering::Relaxed),
            bytes_per_second: rate,
            elapsed_seconds: (elapsed * 1000.0).round() / 1000.0,
        }
    }
}

/// The background thread that shows progress until [`Reporter::finish`].
pub struct Reporter {
    stop: Arc<(Mutex<bool>, Condvar)>,
    handle: Option<JoinHandle<()>>,
    mode: ProgressMode,
    progress: Arc<Progress>,
    bar: Option<indicatif::ProgressBar>,
}

impl Reporter {
    /// Starts reporting `progress` in `mode`.
    pub fn start(mode: ProgressMode, progress: Arc<Progress>) -> Reporter {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let bar = (mode == ProgressMode::Human).then(human_bar);
        let handle = match mode {
            ProgressMode::None => None,
            _ => {
                let (stop, progress, bar) = (stop.clone(), progress.clone(), bar.clone());
                // JSON at most twice a second (the operator reads it); the bar a bit faster.
                let period = if mode == ProgressMode::Json { 500 } else { 200 };
                std::thread::Builder::new()
                    .name("ferry-progress".into())
                    .spawn(move || {
                        let (flag, cvar) = &*stop;
                        let mut stopped = lock(flag);
                        while !*stopped {
                            let (guard, _) = cvar
                                .wait_timeout(stopped, Duration::from_millis(period))
                                .unwrap_or_else(|e| e.into_inner());
                            stopped = guard;
                            if !*stopped {
                                emit(mode, &progress, bar.as_ref());
                            }
                        }
                    })
                    .ok()
            }
        };
        Reporter {
            stop,
            handle,
            mode,
            progress,
            bar,
        }
    }

    /// Stops the thread and emits the final line.
    pub fn finish(mut self) {
        self.stop_thread();
        emit(self.mode, &self.progress, self.bar.as_ref());
        if let Some(bar) = &self.bar {
            bar.finish();
        }
    }

    fn stop_thread(&mut self) {
        let (flag, cvar) = &*self.stop;
        *lock(flag) = true;
        cvar.notify_all();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Reporter {
    fn drop(&mut self) {
        self.stop_thread();
    }
}

fn human_bar() -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::with_draw_target(Some(0), indicatif::ProgressDrawTarget::stderr());
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{prefix:>6} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} {binary_bytes_per_sec} {msg}",
    ) {
        bar.set_style(style);
    }
    bar
}

fn emit(mode: ProgressMode, progress: &Progress, bar: Option<&indicatif::ProgressBar>) {
    let line = progress.line();
    match mode {
        ProgressMode::Json => {
            if let Ok(s) = serde_json::to_string(&line) {
                let mut out = std::io::stdout().lock();
                // A closed stdout must not fail the copy.
                let _ = writeln!(out, "{s}");
                let _ = out.flush();
            }
        }
        ProgressMode::Human => {
            if let Some(bar) = bar {
                bar.set_prefix(line.phase);
                bar.set_length(line.bytes_total);
                bar.set_position(line.bytes_done);
                bar.set_message(format!("{}/{} files", line.files_done, line.files_total));
            }
        }
        ProgressMode::None => {}
    }
}

/// Non-fatal problems (entries that vanished or changed during a warm copy).
#[derive(Debug, Default)]
pub struct Warnings {
    count: AtomicU64,
    print: bool,
}

impl Warnings {
    /// Creates a collector; with `print`, each warning also goes to stderr as it happens.
    pub fn new(print: bool) -> Warnings {
        Warnings {
            print,
            ..Default::default()
        }
    }

    /// Records one warning.
    pub fn warn(&self, msg: String) {
        self.count.fetch_add(1, Ordering::Relaxed);
        if self.print {
            eprintln!("warning: {}", one_line(&msg));
        }
    }

    /// Prints a warning that does not count as one: nothing went wrong with the copy (a final
    /// pass that walks whole instead of visiting what changed, say).
    pub fn note(&self, msg: &str) {
        if self.print {
            eprintln!("warning: {}", one_line(msg));
        }
    }

    /// How many warnings were recorded.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }
}

/// Locks a mutex, ignoring poisoning (a panicking worker must not hide the others' results).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_line_uses_the_contract_names() {
        let p = Progress::default();
        p.files_total.store(3, Ordering::Relaxed);
        p.done(10);
        p.set_phase(Phase::Copy);
        let v = serde_json::to_value(p.line()).unwrap();
        let obj = v.as_object().unwrap();
        let mut keys: Vec<_> = obj.keys().cloned().collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "bytesDone",
                "bytesPerSecond",
                "bytesTotal",
                "elapsedSeconds",
                "filesDone",
                "filesTotal",
                "phase"
            ]
        );
        assert_eq!(obj["phase"], "copy");
        assert_eq!(obj["filesDone"], 1);
        assert_eq!(obj["bytesDone"], 10);
    }
}
