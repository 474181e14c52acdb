//! A standby final pass that knows what changed (`--track-changes`): watch the source, copy what
//! changed before the watch began (the catch-up pass), wait for the go, then visit only what the
//! change record names. Wherever the record may be incomplete the final pass walks both trees
//! whole, as without tracking: correctness never rests on the record.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::error::{MoverError, errno};
use crate::flush::Flusher;
use crate::interim::{self, CaughtUp, Interim, scope_of};
use crate::options::{SyncOptions, SyncReport};
use crate::partial::LinkGroups;
use crate::progress::{ProgressMode, Warnings};
use crate::sync::{self, Scope};
use crate::watch;

/// Test hooks of change tracking (`test-hooks` builds only; all off otherwise).
#[derive(Debug, Clone, Default)]
pub struct TrackOptions {
    /// The record is lost at the go, as when the kernel's event queue overflows.
    pub lose_events: bool,
    /// At most this many directories can be watched, as when the watch limit is reached.
    pub most_watches: Option<usize>,
    /// The first record an interim pass takes is lost.
    pub lose_interim: bool,
    /// The wait between interim passes instead of [`interim::INTERIM_EVERY`]; zero runs none.
    pub interim_every: Option<Duration>,
    /// At most this many interim passes run.
    pub most_interim: Option<u64>,
}

/// The standby is ready for its go: what the operator may read once it waits.
#[derive(Debug, Clone, PartialEq)]
pub struct Ready {
    /// `on`, or `off: <why>` (the final pass will walk both trees whole).
    pub tracking: String,
    /// How long the catch-up pass took.
    pub catch_up_seconds: f64,
}

/// Runs a standby final pass with change tracking: `ready` is called once it waits for its go,
/// `go` waits at most the time it is given for it (its value is returned with the pass's
/// outcome). Between waits the standby runs interim passes over what changed.
pub fn standby<G>(
    opts: &SyncOptions,
    track: &TrackOptions,
    ready: impl FnOnce(&Ready),
    mut go: impl FnMut(Duration) -> Option<G>,
) -> (G, Result<SyncReport, MoverError>) {
    let warnings = Warnings::new(opts.print_warnings);
    let start = Instant::now();
    let caught_up = catch_up(opts, track);
    let tracking = match &caught_up {
        Ok(_) => "on".to_string(),
        Err(why) => {
            warnings.note(&format!("change tracking off, the final pass walks whole: {why}"));
            format!("off: {why}")
        }
    };
    ready(&Ready {
        tracking,
        catch_up_seconds: (start.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
    });
    let (went, mut interim, scope, watching) = match caught_up {
        Ok(mut caught_up) => {
            let pacing = interim::Pacing {
                every: track.interim_every.unwrap_or(interim::INTERIM_EVERY),
                lose_first: track.lose_interim,
                most: track.most_interim,
            };
            let (went, interim) = interim::converge(opts, pacing, &mut caught_up, &mut go);
            let (scope, watcher) = final_scope(track, caught_up, &interim);
            (went, interim, scope, Some(watcher))
        }
        Err(why) => (interim::wait(&mut go), Interim::default(), Err(why), None),
    };
    let outcome = match scope {
        Ok(scope) => sync::pass(opts, &scope)
            .map(|(report, _)| report)
            .and_then(|report| quiet_during(opts, watching, report)),
        Err(why) => {
            warnings.note(&format!(
                "change tracking fell back, the final pass walks whole: {why}"
            ));
            sync::pass(opts, &Scope::Whole).map(|(report, _)| SyncReport {
                change_tracking: Some(format!("fell back: {why}")),
                ..report
            })
        }
    };
    // After the final pass: a write-back error a background flush met fails it.
    let flushed = interim.flusher.take().and_then(Flusher::finish);
    let outcome = outcome.and_then(|report| match flushed {
        Some(e) => Err(errno("flushing", &opts.target, e)),
        None => Ok(report),
    });
    let outcome = outcome.map(|report| SyncReport {
        interim_passes: Some(interim.passes),
        interim_bytes_copied: Some(interim.bytes_copied),
        ..report
    });
    (went, outcome)
}

/// What the final pass reads: the record gathered since the last interim pass, unless a record
/// was lost or an interim pass failed (then it walks whole). The watch goes on during the pass.
fn final_scope(
    track: &TrackOptions,
    caught_up: CaughtUp,
    interim: &Interim,
) -> (Result<Scope, String>, watch::Watcher) {
    let CaughtUp {
        watcher,
        files,
        bytes,
        links,
    } = caught_up;
    let mut record = watcher.take();
    if let Some(why) = &interim.whole {
        record.lose(why.clone());
    }
    if track.lose_events {
        record.lose("events were lost (test hook)".into());
    }
    (scope_of(&record, &links, files, bytes), watcher)
}

/// The report of a strict pass that read only what changed, if nothing changed while it ran: a
/// write it did not read would otherwise go unseen (a full pass at least reads every entry).
fn quiet_during(
    opts: &SyncOptions,
    watching: Option<watch::Watcher>,
    report: SyncReport,
) -> Result<SyncReport, MoverError> {
    let during = watching.map(watch::Watcher::finish).unwrap_or_default();
    if opts.strict && !during.is_empty() {
        // Always said, with what changed: the pass fails on it, and the paths tell a writer
        // still at work from anything else.
        eprintln!(
            "the source changed during the final pass ({} paths): {}",
            during.changes(),
            during.described(5)
        );
        return Err(MoverError::SourceChanged {
            count: during.changes(),
        });
    }
    Ok(report)
}

/// Starts watching the source, then copies it as a warm pass does, so that everything changed
/// before the watch began is in the target. The error says why tracking is off.
fn catch_up(opts: &SyncOptions, track: &TrackOptions) -> Result<CaughtUp, String> {
    let source = resolved(&opts.source)?;
    let watcher = watch::start(&source, track.most_watches)?;
    let warm = SyncOptions {
        strict: false,
        // The final pass compares large files with the record this pass leaves, and removes it.
        chunk_record: true,
        progress: ProgressMode::None,
        abort_after_pieces: None,
        corrupt_after_write: None,
        after_scan: None,
        ..opts.clone()
    };
    let (report, tree) =
        sync::pass(&warm, &Scope::Whole).map_err(|e| format!("the catch-up pass failed: {e}"))?;
    Ok(CaughtUp {
        watcher,
        files: report.files,
        bytes: report.bytes,
        links: LinkGroups::of_tree(&tree),
    })
}

/// The source as the watches see it: symlinks resolved, as the pass resolves them.
fn resolved(source: &Path) -> Result<std::path::PathBuf, String> {
    std::fs::canonicalize(source).map_err(|e| format!("cannot resolve {}: {e}", source.display()))
}
