//! `ferry-mover` binary: a thin command-line layer over the library.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use ferry_mover::{MoverError, ProgressMode, SyncOptions, VerifyMode};
use ferry_mover_report::FailureResult;

mod ready_file;

const EXIT_CODES: &str = "\
Exit codes:
  0  ok (warnings about files that vanished or changed during a warm copy are allowed)
  1  any other failure
  2  bad arguments or bad input (missing source, target inside source, ...)
  3  verification mismatch (paths named on stderr and in the result file)
  4  target full (ENOSPC)
  5  permission denied
  6  --strict: the source changed during the pass
  7  pull/serve: the other mover could not be reached, refused the handshake, or broke off";

/// Ferry's copy/sync/verify engine: full-fidelity parallel directory sync.
#[derive(Parser, Debug)]
#[command(name = "ferry-mover", version, after_help = EXIT_CODES)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Make TARGET an exact copy of SOURCE (contents, owners, modes, times, links, xattrs, ACLs).
    #[command(after_help = EXIT_CODES)]
    Sync(SyncArgs),
    /// Print a manifest of a tree (one line per entry, or JSON) and its digests.
    #[command(after_help = EXIT_CODES)]
    Digest {
        /// Tree to describe.
        dir: PathBuf,
        /// Print the manifest as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Print allocated bytes and inodes of a tree as JSON: {"bytes":N,"inodes":N}.
    #[command(after_help = EXIT_CODES)]
    Usage {
        /// Tree to measure.
        dir: PathBuf,
        /// Also write the JSON here (default as for `sync`: $FERRY_RESULT_FILE, else
        /// /dev/termination-log in a pod), so a pod reports it as its termination message.
        #[arg(long)]
        result_file: Option<PathBuf>,
    },
    /// Serve SOURCE (read only) to one pulling mover on another node, over mutual TLS, until it
    /// says it is done (a cross-node copy's source side). Prints {"listening":"ADDR"} once it
    /// listens, and what it served when it ends.
    #[command(after_help = EXIT_CODES)]
    Serve {
        /// Directory to serve (read only).
        #[arg(long)]
        source: PathBuf,
        /// Address to listen on (port 0 picks a free one).
        #[arg(long, default_value = "0.0.0.0:7443")]
        listen: std::net::SocketAddr,
        /// Directory with ca.crt (the resize's own authority, the only one trusted), tls.crt and
        /// tls.key.
        #[arg(long)]
        tls: PathBuf,
        /// Watch the source for changes (inotify) from the start, before anything is answered,
        /// so that a `pull --track-changes --changes` visits only what changed since the last
        /// pull that succeeded (wherever the record may be incomplete it walks both trees whole).
        #[arg(long)]
        track_changes: bool,
    },
    /// Make TARGET an exact copy of the tree a `serve` mover holds on another node, verified end
    /// to end (each file written is read back and compared with the hash of the source's content
    /// as the serving mover read it from its disk).
    #[command(after_help = EXIT_CODES)]
    Pull(PullArgs),
    /// Exit 0 if PATH exists, else 1 (a standby's readiness probe: `sync --ready-file PATH`; the
    /// mover image has no shell or `test`).
    Ready {
        /// The file a standby creates once it is armed.
        path: PathBuf,
    },
}

#[derive(clap::Args, Debug)]
struct SyncArgs {
    /// Directory to copy from (read only).
    #[arg(long)]
    source: PathBuf,
    /// Directory to copy to (created if missing; its parent must exist).
    #[arg(long)]
    target: PathBuf,
    /// Delete target entries that are not in the source.
    #[arg(long)]
    delete: bool,
    /// Verification after copying.
    #[arg(long, value_enum, default_value = "checksum")]
    verify: VerifyArg,
    /// Compare contents of same-size files instead of trusting size + mtime.
    #[arg(long)]
    checksum_compare: bool,
    /// The source must be quiet (a final sync): an entry that changes or vanishes during the pass
    /// fails it (exit code 6) instead of being a warning.
    #[arg(long)]
    strict: bool,
    /// Keep a record of the pieces of large files written, in the target, so the next pass
    /// compares a changed file with it instead of reading the target (a warm pass; a --strict
    /// pass, and any pass without this flag, removes it).
    #[arg(long)]
    chunk_record: bool,
    /// The target began as a block-level clone of the source made no earlier than this (seconds
    /// since the epoch): a file the clone made counts as copied then, so only files modified in
    /// the minute before it are compared by content (a clone keeps the source's inode times).
    #[arg(long, value_name = "UNIX_SECONDS")]
    cloned_at: Option<i64>,
    /// Worker threads (default: 8 x cores, between 8 and 64).
    #[arg(long)]
    threads: Option<usize>,
    /// Most bytes per second written, all threads together (default: no limit).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    bwlimit: Option<u64>,
    /// Progress output: JSON lines on stdout, a bar on stderr, or nothing
    /// (default: human on a terminal, json otherwise).
    #[arg(long, value_enum)]
    progress: Option<ProgressArg>,
    /// Start the pass only once FILE has content (a final pass's go: the replica's pod is gone).
    /// Waits with the volumes already mounted, so starting the pod costs no downtime.
    #[arg(long, value_name = "FILE")]
    wait_for: Option<PathBuf>,
    /// With --wait-for: a line on stdin whose SHA-256 is HEX is a go too (the operator's, sent
    /// through an attach stream; sooner than the kubelet rewrites FILE). Other lines are ignored.
    #[arg(long, value_name = "HEX", requires = "wait_for", value_parser = parse_key_digest)]
    go_key_sha256: Option<String>,
    /// With --wait-for: watch the source for changes (inotify) and copy it once before waiting (a
    /// catch-up pass), then print {"standby":"ready",...} on stdout; the final pass visits only
    /// what changed since. Wherever the record may be incomplete it walks both trees whole.
    #[arg(long, requires = "wait_for")]
    track_changes: bool,
    /// With --wait-for: create FILE once the standby is armed and waits for its go (with
    /// --track-changes, when the catch-up pass has ended), so a readiness probe running
    /// `ferry-mover ready FILE` tells the kubelet. Removed at the start if left from before.
    #[arg(long, value_name = "FILE", requires = "wait_for")]
    ready_file: Option<PathBuf>,
    /// Where to write the final result JSON (default: $FERRY_RESULT_FILE, else
    /// /dev/termination-log when running in a pod, else nowhere).
    #[arg(long)]
    result_file: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
struct PullArgs {
    /// The serving mover (IP:PORT).
    #[arg(long)]
    from: std::net::SocketAddr,
    /// Directory with ca.crt (the resize's own authority, the only one trusted), tls.crt and
    /// tls.key.
    #[arg(long)]
    tls: PathBuf,
    /// Directory to copy to (created if missing; its parent must exist).
    #[arg(long)]
    target: PathBuf,
    /// Delete target entries that are not in the source.
    #[arg(long)]
    delete: bool,
    /// Verification: each file written read back and compared with the hash of the source's
    /// content as the serving mover read it, and every entry's metadata (checksum); also both
    /// trees' manifests compared, each hashed whole where it lies (full); or none.
    #[arg(long, value_enum, default_value = "checksum")]
    verify: PullVerifyArg,
    /// Connections fetching file data at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    connections: u16,
    /// Most bytes per second fetched, all connections together (default: no limit).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    bwlimit: Option<u64>,
    /// Tell the serving mover to stop once this pass succeeded (the final pass).
    #[arg(long)]
    stop_server: bool,
    /// Fail (exit 6) when the source changes during the pass, as for `sync`: the final pass.
    #[arg(long)]
    strict: bool,
    /// Mark this pass on the change record of a `serve --track-changes` mover before reading the
    /// tree, and report it passed once it succeeded (every pull of such a server). A server that
    /// does not track changes is pulled from as without this flag.
    #[arg(long)]
    track_changes: bool,
    /// Visit only what changed since the last pull that succeeded, as the serving mover's record
    /// names it (the final pass); both trees are read whole wherever that is not known, and the
    /// result's changeTracking says why.
    #[arg(long, requires = "track_changes")]
    changes: bool,
    /// Seconds to keep trying the first connection while nothing answers (a serving mover that
    /// has just started); a refused handshake is never tried again.
    #[arg(long, value_name = "SECONDS", default_value_t = 0)]
    connect_wait: u64,
    /// Progress output, as for `sync`.
    #[arg(long, value_enum)]
    progress: Option<ProgressArg>,
    /// Start the pass only once FILE has content (a final pass's go), as for `sync`. With
    /// --track-changes --changes it pulls what changed about once a second while it waits
    /// (interim pulls, counted in the result's interimPasses), so the final pass has little left.
    #[arg(long, value_name = "FILE")]
    wait_for: Option<PathBuf>,
    /// With --wait-for: a line on stdin whose SHA-256 is HEX is a go too, as for `sync`.
    #[arg(long, value_name = "HEX", requires = "wait_for", value_parser = parse_key_digest)]
    go_key_sha256: Option<String>,
    /// Where to write the final result JSON (as for `sync`).
    #[arg(long)]
    result_file: Option<PathBuf>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum PullVerifyArg {
    None,
    Checksum,
    Full,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum VerifyArg {
    None,
    Metadata,
    Checksum,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum ProgressArg {
    Json,
    Human,
    None,
}

/// Test hook (feature `test-hooks` only): names a source-relative file to corrupt after writing,
/// before verifying.
#[cfg(feature = "test-hooks")]
fn corrupt_after_write() -> Option<PathBuf> {
    std::env::var_os("FERRY_MOVER_TEST_CORRUPT").map(PathBuf::from)
}

/// Builds without `test-hooks` (every release) ignore the variable: nothing can corrupt a copy.
#[cfg(not(feature = "test-hooks"))]
fn corrupt_after_write() -> Option<PathBuf> {
    None
}

/// Test hook (feature `test-hooks` only): abort after writing this many pieces in place.
#[cfg(feature = "test-hooks")]
fn abort_after_pieces() -> Option<u64> {
    std::env::var("FERRY_MOVER_TEST_ABORT_AFTER_PIECES")
        .ok()?
        .parse()
        .ok()
}

/// Builds without `test-hooks` never abort on purpose.
#[cfg(not(feature = "test-hooks"))]
fn abort_after_pieces() -> Option<u64> {
    None
}
/// Test hooks (feature `test-hooks` only) of change tracking: `FERRY_MOVER_TEST_LOSE_EVENTS` loses
/// the record at the go (`=interim`: the first one an interim pass takes);
/// `FERRY_MOVER_TEST_MOST_WATCHES=N` fails a watch past N directories;
/// `FERRY_MOVER_TEST_INTERIM_MS=N` waits N ms between interim passes (0: none);
/// `FERRY_MOVER_TEST_INTERIM_PASSES=N` runs at most N of them.
#[cfg(feature = "test-hooks")]
fn track_options() -> ferry_mover::TrackOptions {
    let lose = std::env::var_os("FERRY_MOVER_TEST_LOSE_EVENTS");
    let lose_interim = lose.as_deref() == Some(std::ffi::OsStr::new("interim"));
    ferry_mover::TrackOptions {
        lose_events: lose.is_some() && !lose_interim,
        lose_interim,
        most_watches: std::env::var("FERRY_MOVER_TEST_MOST_WATCHES")
            .ok()
            .and_then(|n| n.parse().ok()),
        interim_every: std::env::var("FERRY_MOVER_TEST_INTERIM_MS")
            .ok()
            .and_then(|n| n.parse().ok())
            .map(std::time::Duration::from_millis),
        most_interim: std::env::var("FERRY_MOVER_TEST_INTERIM_PASSES")
            .ok()
            .and_then(|n| n.parse().ok()),
    }
}

/// Builds without `test-hooks` track changes as they happen.
#[cfg(not(feature = "test-hooks"))]
fn track_options() -> ferry_mover::TrackOptions {
    ferry_mover::TrackOptions::default()
}

/// Kubernetes reads at most 4096 bytes of termination message.
const RESULT_LIMIT: usize = 4000;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let code = match cli.cmd {
        Cmd::Sync(args) => run_sync(args),
        Cmd::Serve {
            source,
            listen,
            tls,
            track_changes,
        } => {
            let opts = ferry_mover::remote::ServeOptions {
                source,
                listen,
                tls,
                track: track_changes.then(track_options),
            };
            let served = ferry_mover::remote::serve(&opts, |address| {
                let _ = print_json(&serde_json::json!({ "listening": address.to_string() }));
            });
            report(served.and_then(|r| print_json(&r)))
        }
        Cmd::Pull(args) => run_pull(args),
        // Quiet: a failed probe's output lands in an Event, once a second until the standby is armed.
        Cmd::Ready { path } => i32::from(std::fs::symlink_metadata(path).is_err()),
        Cmd::Digest { dir, json } => report(ferry_mover::digest(&dir).and_then(|m| print_manifest(&m, json))),
        Cmd::Usage { dir, result_file } => report(ferry_mover::usage(&dir).and_then(|u| {
            print_json(&u)?;
            if let Some(path) = result_file.or_else(default_result_file)
                && let Err(e) = std::fs::write(&path, serde_json::to_string(&u).unwrap_or_default())
            {
                eprintln!(
                    "ferry-mover: warning: cannot write result file {}",
                    ferry_mover::one_line(&format!("{}: {e}", path.display()))
                );
            }
            Ok(())
        })),
    };
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

fn report(r: Result<(), MoverError>) -> i32 {
    match r {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("ferry-mover: error: {}", ferry_mover::one_line(&e.to_string()));
            e.exit_code()
        }
    }
}

fn print_json<T: serde::Serialize>(v: &T) -> Result<(), MoverError> {
    let s = serde_json::to_string(v).map_err(|e| MoverError::Other(e.to_string()))?;
    writeln!(std::io::stdout().lock(), "{s}").map_err(|e| MoverError::io("writing", Path::new("stdout"), e))
}

fn print_manifest(m: &ferry_mover::Manifest, json: bool) -> Result<(), MoverError> {
    if json {
        return print_json(m);
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let w = |e| MoverError::io("writing", Path::new("stdout"), e);
    for e in &m.entries {
        write!(
            out,
            "{} {} {}:{} {} {} {} {}",
            e.kind,
            e.mode,
            e.uid,
            e.gid,
            e.mtime_ns,
            e.size,
            e.content_hash.as_deref().unwrap_or("-"),
            e.path
        )
        .map_err(w)?;
        if let Some(t) = &e.link_target {
            write!(out, " -> {t}").map_err(w)?;
        }
        if let Some(l) = &e.hard_link {
            write!(out, " => {l}").map_err(w)?;
        }
        for (k, v) in &e.xattrs {
            write!(out, " xattr:{k}={v}").map_err(w)?;
        }
        if let Some(a) = &e.acl {
            write!(out, " acl:{a}").map_err(w)?;
        }
        if let Some(a) = &e.default_acl {
            write!(out, " default-acl:{a}").map_err(w)?;
        }
        writeln!(out).map_err(w)?;
    }
    writeln!(out, "digest {}\nmetadataDigest {}", m.digest, m.metadata_digest).map_err(w)
}

/// The progress mode asked for: by default a bar on a terminal, JSON lines otherwise.
fn progress_mode(arg: Option<ProgressArg>) -> ProgressMode {
    match arg {
        Some(ProgressArg::Json) => ProgressMode::Json,
        Some(ProgressArg::Human) => ProgressMode::Human,
        Some(ProgressArg::None) => ProgressMode::None,
        None if std::io::stderr().is_terminal() => ProgressMode::Human,
        None => ProgressMode::Json,
    }
}

fn run_sync(args: SyncArgs) -> i32 {
    let progress = progress_mode(args.progress);
    let opts = SyncOptions {
        source: args.source.clone(),
        target: args.target.clone(),
        delete: args.delete,
        verify: match args.verify {
            VerifyArg::None => VerifyMode::None,
            VerifyArg::Metadata => VerifyMode::Metadata,
            VerifyArg::Checksum => VerifyMode::Checksum,
        },
        checksum_compare: args.checksum_compare,
        threads: args.threads,
        progress,
        bwlimit: args.bwlimit,
        print_warnings: true,
        strict: args.strict,
        chunk_record: args.chunk_record,
        cloned_at: args.cloned_at,
        defer_flush: false,
        abort_after_pieces: abort_after_pieces(),
        corrupt_after_write: corrupt_after_write(),
        after_scan: None,
    };
    let result_file = args.result_file.clone().or_else(default_result_file);
    // A ready file left from an earlier run would arm this standby before it is.
    if let Some(path) = &args.ready_file
        && let Err(e) = ready_file::clear(path)
    {
        eprintln!("ferry-mover: error: {}", ferry_mover::one_line(&e.to_string()));
        return e.exit_code();
    }
    let (go_at, outcome) = run_pass(&args, &opts);
    let outcome = outcome.map(|r| with_go(serde_json::to_value(&r).unwrap_or_default(), go_at));
    conclude(outcome, result_file)
}

/// Prints a pass's result (or its error), writes it to the result file, and gives the exit code.
fn conclude(outcome: Result<serde_json::Value, MoverError>, result_file: Option<PathBuf>) -> i32 {
    let (code, json) = match outcome {
        Ok(result) => (0, result.to_string()),
        Err(e) => {
            eprintln!("ferry-mover: error: {}", ferry_mover::one_line(&e.to_string()));
            (e.exit_code(), failure_json(&e))
        }
    };
    if code == 0 {
        let _ = writeln!(std::io::stdout().lock(), "{json}");
    }
    if let Some(path) = result_file
        && let Err(e) = std::fs::write(&path, &json)
    {
        eprintln!(
            "ferry-mover: warning: cannot write result file {}",
            ferry_mover::one_line(&format!("{}: {e}", path.display()))
        );
    }
    code
}

/// The pass, on standby first with --wait-for (then also when its go came, by the wall clock, and
/// how: what the kubelet's delivery of it costs shows against the time it was given).
fn run_pass(
    args: &SyncArgs,
    opts: &SyncOptions,
) -> (
    Option<(u64, ferry_mover::GoBy)>,
    Result<ferry_mover::SyncReport, MoverError>,
) {
    let arm = |tracking: Option<&ferry_mover::Ready>| {
        // The file before the line: whoever reads the line finds the standby armed.
        if let Some(path) = &args.ready_file {
            ready_file::create(path);
        }
        if let Some(ready) = tracking {
            print_ready(ready);
        }
    };
    let lines =
        || (args.go_key_sha256.clone()).map(|digest| (std::io::BufReader::new(std::io::stdin()), digest));
    match &args.wait_for {
        Some(go) if args.track_changes => {
            let ready = |ready: &ferry_mover::Ready| arm(Some(ready));
            // Listens from the first wait on, as a standby without tracking does.
            let mut listening: Option<ferry_mover::Go> = None;
            let wait = |at_most| {
                let listening = listening.get_or_insert_with(|| ferry_mover::Go::new(go, lines()));
                listening.wait(at_most).map(stamped)
            };
            let (went, outcome) = ferry_mover::standby(opts, &track_options(), ready, wait);
            (Some(went), outcome)
        }
        Some(go) => {
            arm(None);
            let by = ferry_mover::wait_for_go(go, lines());
            (Some(stamped(by)), ferry_mover::sync(opts))
        }
        None => (None, ferry_mover::sync(opts)),
    }
}

/// The line a standby prints once it waits for its go (never a result or progress line: the
/// operator reads the last line of a running mover as one of those).
fn print_ready(ready: &ferry_mover::Ready) {
    let line = serde_json::json!({
        "standby": "ready",
        "changeTracking": ready.tracking,
        "catchUpSeconds": ready.catch_up_seconds,
    });
    let _ = writeln!(std::io::stdout().lock(), "{line}");
}

fn default_result_file() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("FERRY_RESULT_FILE") {
        return Some(PathBuf::from(p));
    }
    let tl = Path::new("/dev/termination-log");
    // The kubelet creates the file in a pod; outside Kubernetes we must not litter a host's /dev.
    let in_pod = tl.exists() || std::env::var_os("KUBERNETES_SERVICE_HOST").is_some();
    // As a user (Pod Security "restricted") /dev is not writable, but the file the kubelet made
    // (mode 0666) is.
    let writable = |path: &str| rustix::fs::access(path, rustix::fs::Access::WRITE_OK).is_ok();
    (in_pod && (writable("/dev/termination-log") || writable("/dev"))).then(|| tl.to_path_buf())
}

/// The result of a failed run, kept under the termination-message limit.
fn failure_json(e: &MoverError) -> String {
    let mut failure = FailureResult {
        error: e.to_string(),
        exit_code: e.exit_code(),
        kind: e.kind().to_string(),
        mismatches: match e {
            MoverError::VerifyMismatch { paths, .. } => {
                paths.iter().map(|p| p.display().to_string()).collect()
            }
            _ => Vec::new(),
        },
    };
    loop {
        let s = serde_json::to_string(&failure).unwrap_or_default();
        if s.len() <= RESULT_LIMIT || (failure.error.is_empty() && failure.mismatches.is_empty()) {
            return s;
        }
        if !failure.mismatches.is_empty() {
            failure.mismatches.truncate(failure.mismatches.len() / 2);
        } else {
            let message = &mut failure.error;
            let keep = message.len() / 2;
            let cut = (0..=keep)
                .rev()
                .find(|&i| message.is_char_boundary(i))
                .unwrap_or(0);
            message.truncate(cut);
        }
    }
}

/// A SHA-256 digest as 64 hex digits.
fn parse_key_digest(text: &str) -> Result<String, String> {
    if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(text.to_ascii_lowercase())
    } else {
        Err("expected a SHA-256 digest: 64 hex digits".to_string())
    }
}

fn run_pull(args: PullArgs) -> i32 {
    let opts = ferry_mover::remote::PullOptions {
        from: args.from,
        tls: args.tls,
        target: args.target,
        delete: args.delete,
        verify: match args.verify {
            PullVerifyArg::None => ferry_mover::remote::PullVerify::None,
            PullVerifyArg::Checksum => ferry_mover::remote::PullVerify::Checksum,
            PullVerifyArg::Full => ferry_mover::remote::PullVerify::Full,
        },
        connections: usize::from(args.connections),
        bwlimit: args.bwlimit,
        stop_server: args.stop_server,
        strict: args.strict,
        track_changes: args.track_changes,
        changes: args.changes,
        connect_wait: std::time::Duration::from_secs(args.connect_wait),
        corrupt_after_write: corrupt_after_write(),
        progress: progress_mode(args.progress),
        print_warnings: true,
    };
    let result_file = args.result_file.or_else(default_result_file);
    let (go_at, outcome) = match &args.wait_for {
        // On standby: pulls what changed while it waits (where the server tracks changes).
        Some(go) => {
            let lines = (args.go_key_sha256.clone())
                .map(|digest| (std::io::BufReader::new(std::io::stdin()), digest));
            let mut listening = ferry_mover::Go::new(go, lines);
            let (went, outcome) = ferry_mover::remote::standby(&opts, interim_pulls(), |at_most| {
                listening.wait(at_most).map(stamped)
            });
            (Some(went), outcome)
        }
        None => (None, ferry_mover::remote::pull(&opts)),
    };
    let outcome = outcome.map(|r| with_go(serde_json::to_value(&r).unwrap_or_default(), go_at));
    conclude(outcome, result_file)
}

/// When a standby pull runs interim pulls: the test hooks of a local standby's interim passes
/// (`FERRY_MOVER_TEST_INTERIM_MS`, `FERRY_MOVER_TEST_INTERIM_PASSES`) apply to it too.
fn interim_pulls() -> ferry_mover::remote::InterimPulls {
    let track = track_options();
    let default = ferry_mover::remote::InterimPulls::default();
    ferry_mover::remote::InterimPulls {
        every: track.interim_every.unwrap_or(default.every),
        most: track.most_interim,
    }
}

/// A go with the time it came, by the wall clock (milliseconds since the epoch).
fn stamped(by: ferry_mover::GoBy) -> (u64, ferry_mover::GoBy) {
    let at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_millis() as u64);
    (at, by)
}

/// A result with when its go came and how (`goAtUnixMs`, `goBy`).
fn with_go(mut result: serde_json::Value, go_at: Option<(u64, ferry_mover::GoBy)>) -> serde_json::Value {
    if let (Some((at, by)), Some(fields)) = (go_at, result.as_object_mut()) {
        fields.insert("goAtUnixMs".into(), at.into());
        fields.insert("goBy".into(), by.as_str().into());
    }
    result
}
