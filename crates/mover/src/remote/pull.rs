//! The pulling side of a cross-node copy: a mover on the new volume's node makes its target an
//! exact copy of the tree a serving mover holds on another node. It plans as a local pass does
//! (`plan::plan` over the source's tree, sent over the stream, and its own), fetches the data of
//! the files to copy over several connections at once, and sets metadata, links and nodes itself.
//! Verification compares the manifest the serving mover makes of its own tree (every file hashed
//! where it lies) with the manifest of what landed here, read back from disk: the check is end to
//! end, not of what crossed the network.

use std::collections::HashMap;
use std::fs::File;
use std::net::SocketAddr;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use rustls::ClientConfig;

use super::check::PullVerify;
use super::fetch::{Fetch, Outcome};
use super::peer::Peer;
use super::tls::TlsFiles;
use super::tracked;
use super::wire::{Reply, Request};
use crate::digest::{Manifest, ManifestEntry};
use crate::error::MoverError;
use crate::fresh::FreshDir;
use crate::options::SyncReport;
use crate::plan::{self, Op, PlanOptions};
use crate::progress::{Phase, Progress, ProgressMode, Reporter, Warnings};
use crate::throttle::Throttle;
use crate::walk::Tree;

/// What `ferry-mover pull` is told.
#[derive(Debug, Clone)]
pub struct PullOptions {
    /// The serving mover.
    pub from: SocketAddr,
    /// The directory with `ca.crt`, `tls.crt` and `tls.key`.
    pub tls: PathBuf,
    /// The tree to make a copy of the source (created if missing; its parent must exist).
    pub target: PathBuf,
    /// Remove target entries the source does not have.
    pub delete: bool,
    /// How the copy is verified (exit 3 on a difference).
    pub verify: PullVerify,
    /// Connections that fetch file data at once.
    pub connections: usize,
    /// Most bytes per second fetched, all connections together.
    pub bwlimit: Option<u64>,
    /// Tell the serving mover to stop once the pass succeeded (the final pass).
    pub stop_server: bool,
    /// A source that changes during the pass fails it (exit 6): the final pass, with the
    /// application stopped.
    pub strict: bool,
    /// Mark the pass on the serving mover's change record before reading the tree, and report
    /// it passed once it succeeded (`--track-changes`, the server's too): a later pass with
    /// `changes` visits only what changed since.
    pub track_changes: bool,
    /// Visit only what changed since the latest pass that succeeded, as the serving mover's
    /// record names it (`--changes`: the final pass); both trees whole wherever that is not known.
    pub changes: bool,
    /// How long the first connection is tried again while nothing answers (a serving mover just
    /// started).
    pub connect_wait: std::time::Duration,
    /// Test hook: a byte of this source-relative file is flipped once it is written (before it
    /// is verified).
    pub corrupt_after_write: Option<PathBuf>,
    /// Progress lines, as a local pass writes them.
    pub progress: ProgressMode,
    /// Warnings (a file that changed while it was read, ...) on stderr; an interim pull's are not
    /// (the next pull reads what changed anyway).
    pub print_warnings: bool,
}

/// A pull that succeeded, and whether the serving mover's record knows it passed (a later pull
/// with `changes` then reads only what changed since).
pub(crate) struct Pulled {
    pub report: SyncReport,
    pub marked: bool,
}

/// Makes `opts.target` a copy of what the serving mover at `opts.from` holds.
pub fn pull(opts: &PullOptions) -> Result<SyncReport, MoverError> {
    pull_pass(opts).map(|pulled| pulled.report)
}

/// [`pull`], saying whether the pass was marked passed on the server's record.
pub(crate) fn pull_pass(opts: &PullOptions) -> Result<Pulled, MoverError> {
    let progress = Arc::new(Progress::default());
    let reporter = Reporter::start(opts.progress, progress.clone());
    let result = run(opts, &progress);
    progress.set_phase(Phase::Done);
    reporter.finish();
    result
}

fn run(opts: &PullOptions, progress: &Progress) -> Result<Pulled, MoverError> {
    let start = Instant::now();
    let config = TlsFiles::load(&opts.tls)?.client()?;
    let warnings = Warnings::new(opts.print_warnings);
    let Trees {
        mut control,
        target,
        made_root,
        src,
        dst,
        read,
    } = read_trees(opts, &config, &warnings)?;
    let plan = plan::plan(
        &src,
        &dst,
        PlanOptions {
            delete: opts.delete,
            checksum_compare: false,
            cloned_at: None,
        },
    );
    let (files, bytes) = crate::sync::totals(&src);
    progress.files_total.store(files, Ordering::Relaxed);
    progress.bytes_total.store(bytes, Ordering::Relaxed);
    progress.set_phase(Phase::Delete);
    let fresh = prepare_dirs(&plan, &src, &target, made_root)?;
    let out = Outcome::new(src.entries.len());
    let throttle = opts.bwlimit.map(Throttle::new);
    let fetch = Fetch {
        src: &src,
        ops: &plan.ops,
        target: &target,
        out: &out,
        warnings: &warnings,
        throttle: throttle.as_ref(),
        fresh,
        parents: crate::walk::parents(&src),
        verify: opts.verify != PullVerify::None,
        corrupt: opts.corrupt_after_write.as_deref(),
        progress,
    };
    fetch.run(&plan, opts.connections.max(1), opts.from, &config, &mut control)?;
    progress.set_phase(Phase::Verify);
    verify(opts.verify, &mut control, &src, &target, &out)?;
    let dir = File::open(&target).map_err(|e| MoverError::io("opening", &target, e))?;
    rustix::fs::syncfs(&dir).map_err(|e| crate::error::errno("syncing", &target, e))?;
    if opts.strict {
        quiet(&warnings, &read, &mut control)?;
    }
    let (files, bytes, digest) = totals_after(&src, &dst, read.before, &out);
    if let Some(mark) = read.mark {
        tracked::passed(&mut control, mark, (files, bytes))?;
    }
    if opts.stop_server {
        stop_server(&mut control)?;
    }
    let report = SyncReport {
        files,
        bytes,
        bytes_copied: progress.bytes_copied.load(Ordering::Relaxed),
        deleted: plan.extraneous_entries(),
        digest,
        seconds: (start.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
        verify: opts.verify.name().to_string(),
        warnings: warnings.count(),
        files_copied: out.files_copied.load(Ordering::Relaxed),
        metadata_fixed: out.metadata_fixed.load(Ordering::Relaxed),
        bytes_compared: 0,
        change_tracking: read.tracking,
        entries_visited: Some(src.entries.len() as u64),
        interim_passes: None,
        interim_bytes_copied: None,
    };
    Ok(Pulled {
        report,
        marked: read.mark.is_some(),
    })
}

/// The target's entries and data bytes after the pass, and the metadata digest of the source as
/// read. Where only what changed was read (`before`: the target's totals after the last pass):
/// the last pass's totals, moved by what the read paths hold now against what the target held
/// there, and no digest of the whole.
fn totals_after(src: &Tree, dst: &Tree, before: Option<(u64, u64)>, out: &Outcome) -> (u64, u64, String) {
    let (files, bytes) = crate::sync::totals(src);
    match before {
        Some((files_before, bytes_before)) => {
            let (files_there, bytes_there) = crate::sync::totals(dst);
            (
                (files_before + files).saturating_sub(files_there),
                (bytes_before + bytes).saturating_sub(bytes_there),
                String::new(),
            )
        }
        None => {
            let digest = crate::digest::metadata_digest(src, |i| out.vanished[i].load(Ordering::Relaxed));
            (files, bytes, digest)
        }
    }
}

/// Tells the serving mover to stop (the final pass succeeded).
fn stop_server(control: &mut Peer) -> Result<(), MoverError> {
    control.ask(&Request::Done)?;
    match control.next()? {
        Reply::End { .. } => Ok(()),
        other => Err(control.unexpected(&other)),
    }
}

/// The plan's removals, then its new directories (`made_root`: the target itself was made by
/// this pass): those this pass made, by source index, with what a file made in them has.
fn prepare_dirs(
    plan: &plan::Plan,
    src: &Tree,
    target: &Path,
    made_root: bool,
) -> Result<HashMap<usize, FreshDir>, MoverError> {
    for removal in &plan.removals {
        crate::sync::remove(target, removal)?;
    }
    let umask = crate::fresh::process_umask();
    let mut fresh = HashMap::new();
    for (i, (e, op)) in src.entries.iter().zip(&plan.ops).enumerate() {
        let made = match (op, i) {
            (_, 0) => made_root,
            (Op::Mkdir, _) => make_dir(&target.join(&e.rel))?,
            _ => false,
        };
        if let Some(dir) = made
            .then(|| crate::fresh::inspect(&target.join(&e.rel), umask))
            .flatten()
        {
            fresh.insert(i, dir);
        }
    }
    Ok(fresh)
}

/// The mismatches the copy found, then every entry's metadata, then (`full`) both manifests.
fn verify(
    how: PullVerify,
    control: &mut Peer,
    src: &Tree,
    target: &Path,
    out: &Outcome,
) -> Result<(), MoverError> {
    let mut mismatches = std::mem::take(&mut *crate::progress::lock(&out.mismatches));
    if how != PullVerify::None {
        let known: std::collections::HashSet<PathBuf> = mismatches.iter().map(|m| m.0.clone()).collect();
        let more = super::check::metadata(src, target, &out.vanished)?;
        mismatches.extend(more.into_iter().filter(|m| !known.contains(&m.0)));
    }
    if how == PullVerify::Full && mismatches.is_empty() {
        mismatches = manifests(control, target)?;
    }
    if mismatches.is_empty() {
        return Ok(());
    }
    mismatches.sort();
    let (paths, reasons) = mismatches.into_iter().unzip();
    Err(MoverError::VerifyMismatch { paths, reasons })
}

/// What a pass reads: the control connection, the target (and whether this pass made it), both
/// trees, and how they were found.
struct Trees {
    control: Peer,
    target: PathBuf,
    made_root: bool,
    src: Tree,
    dst: Tree,
    read: Read,
}

/// How a pass found its entries.
struct Read {
    /// Its mark on the server's change record, if the server tracks changes.
    mark: Option<u64>,
    /// With `--changes`: `used`, or `fell back: <why>` (both trees read whole).
    tracking: Option<String>,
    /// Where only what changed was read: the target's totals after the pass it counts from.
    before: Option<(u64, u64)>,
}

/// Connects, marks the pass on the server's change record, then reads both trees: at the paths
/// changed since the latest pass that succeeded (`--changes`, where the record is complete), else
/// whole. The target is made only once the server answered: a refused peer changes nothing.
fn read_trees(
    opts: &PullOptions,
    config: &Arc<ClientConfig>,
    warnings: &Warnings,
) -> Result<Trees, MoverError> {
    let mut control = Peer::connect_within(opts.from, config, opts.connect_wait)?;
    let mark = match opts.track_changes {
        true => tracked::mark(&mut control)?,
        false => Err("the pull does not track changes (no --track-changes)".to_string()),
    };
    let mut read = Read {
        mark: mark.as_ref().ok().copied(),
        tracking: None,
        before: None,
    };
    if !opts.changes {
        let (control, target, src, dst) = read_whole(control, &opts.target, warnings)?;
        return Ok(trees(control, target, src, dst, read));
    }
    let since = match mark {
        Ok(_) => tracked::changes(&mut control, None)?,
        Err(why) => Err(why),
    };
    // The target made here (none was there) is read whole below, but was made by this pass.
    let mut made_here = false;
    let why = match since {
        Ok(since) => {
            let (target, made) = prepare_target(&opts.target)?;
            made_here = made;
            let partial = match made {
                true => Err("the target is new".to_string()),
                false => tracked::read_partial(&mut control, &target, &since.visits, warnings)?,
            };
            match partial {
                Ok((src, dst)) => {
                    read.tracking = Some("used".into());
                    read.before = Some(since.totals);
                    return Ok(trees(control, (target, made), src, dst, read));
                }
                Err(why) => why,
            }
        }
        Err(why) => why,
    };
    let why = format!("fell back: {why}");
    warnings.note(&format!("change tracking {why}; both trees are read whole"));
    read.tracking = Some(why);
    let (control, (target, made), src, dst) = read_whole(control, &opts.target, warnings)?;
    Ok(trees(control, (target, made || made_here), src, dst, read))
}

fn trees(control: Peer, (target, made_root): (PathBuf, bool), src: Tree, dst: Tree, read: Read) -> Trees {
    Trees {
        control,
        target,
        made_root,
        src,
        dst,
        read,
    }
}

/// Reads the source's tree from the serving mover and the target's here at once.
fn read_whole(
    mut control: Peer,
    target: &Path,
    warnings: &Warnings,
) -> Result<(Peer, (PathBuf, bool), Tree, Tree), MoverError> {
    control.ask(&Request::Tree)?;
    let first = control.next()?;
    let (target, made) = prepare_target(target)?;
    let (src, dst) = std::thread::scope(|s| {
        let local = s.spawn(|| crate::walk::scan(&target, true, warnings, None));
        let src = control.tree(first);
        let dst = local
            .join()
            .unwrap_or_else(|_| Err(MoverError::Other("the target's scan panicked".into())));
        (src, dst)
    });
    let (mut src, dst) = (src?, dst?);
    if (src.entries.first()).is_none_or(|root| !root.rel.as_os_str().is_empty()) {
        return Err(control.broke("sent a tree without its root"));
    }
    // (A server that runs as root sends its `lost+found`.)
    src.entries.retain(|e| !crate::as_user::left_alone(&e.rel));
    Ok((control, (target, made), src, dst))
}

/// A strict pass fails if something still writes to the source: the copy cannot be trusted, and
/// the server goes on.
fn quiet(warnings: &Warnings, read: &Read, control: &mut Peer) -> Result<(), MoverError> {
    if warnings.count() > 0 {
        return Err(MoverError::SourceChanged {
            count: warnings.count(),
        });
    }
    // A pass that read only what changed would not see a write to what it did not read.
    match (read.mark, read.tracking.as_deref()) {
        (Some(mark), Some("used")) => quiet_during(control, mark),
        _ => Ok(()),
    }
}

/// A strict pass over what changed fails if the record names anything changed since its own
/// mark (or cannot tell): the application was to be stopped before it began.
fn quiet_during(control: &mut Peer, mark: u64) -> Result<(), MoverError> {
    let count = match tracked::changes(control, Some(mark))? {
        Ok(since) if since.visits.is_empty() => return Ok(()),
        Ok(since) => since.visits.len() as u64,
        Err(why) => {
            eprintln!("warning: cannot tell whether the source changed during the final pass: {why}");
            1
        }
    };
    eprintln!("warning: the source changed during the final pass ({count} paths)");
    Err(MoverError::SourceChanged { count })
}

/// The target directory, made if missing (its parent must exist); whether it was made.
fn prepare_target(target: &Path) -> Result<(PathBuf, bool), MoverError> {
    match std::fs::symlink_metadata(target) {
        Ok(md) if md.is_dir() => Ok((target.to_path_buf(), false)),
        Ok(_) => Err(MoverError::BadInput(format!(
            "not a directory: {}",
            target.display()
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok((target.to_path_buf(), make_dir(target)?)),
        Err(e) => Err(MoverError::io("reading", target, e)),
    }
}

/// A directory, private until its metadata is set at the end; whether this call made it.
fn make_dir(d: &Path) -> Result<bool, MoverError> {
    match std::fs::DirBuilder::new().mode(0o700).create(d) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && d.is_dir() => Ok(false),
        Err(e) => Err(MoverError::io("creating directory", d, e)),
    }
}

/// The serving mover's manifest of the source against this node's of the target (each side
/// hashes its own tree whole): the source entries the target lacks or holds otherwise.
fn manifests(control: &mut Peer, target: &Path) -> Result<Vec<(PathBuf, String)>, MoverError> {
    let (source, landed) = std::thread::scope(|s| {
        let landed = s.spawn(|| crate::digest::digest(target));
        let source = control.manifest();
        let landed = landed
            .join()
            .unwrap_or_else(|_| Err(MoverError::Other("the target's manifest panicked".into())));
        (source, landed)
    });
    Ok(differences(&source?, &landed?))
}

/// The source entries the target lacks or holds otherwise (target-only entries do not count:
/// without `delete` they stay).
pub fn differences(source: &Manifest, landed: &Manifest) -> Vec<(PathBuf, String)> {
    let by_path: HashMap<&str, &ManifestEntry> =
        landed.entries.iter().map(|e| (e.path.as_str(), e)).collect();
    (source.entries.iter())
        .filter(|want| !crate::as_user::left_alone(Path::new(&want.path)))
        .filter_map(|want| match by_path.get(want.path.as_str()) {
            None => Some((PathBuf::from(&want.path), "missing in the target".to_string())),
            Some(got) if !same(want, got) => Some((PathBuf::from(&want.path), describe(want, got))),
            Some(_) => None,
        })
        .collect()
}

/// Whether the target's entry is the source's; the mtime of a root another user owns cannot be
/// set by a mover without capabilities (see `verify::metadata_mismatch`).
fn same(want: &ManifestEntry, got: &ManifestEntry) -> bool {
    let not_ours = want.path == "." && crate::as_user::unprivileged().is_some_and(|who| got.uid != who.uid);
    match not_ours {
        true => {
            want == &ManifestEntry {
                mtime_ns: want.mtime_ns,
                ..got.clone()
            }
        }
        false => want == got,
    }
}

fn describe(want: &ManifestEntry, got: &ManifestEntry) -> String {
    if want.kind != got.kind {
        return format!("a {} where the source has a {}", got.kind, want.kind);
    }
    if want.content_hash != got.content_hash {
        return "content differs from the source's".to_string();
    }
    "metadata differs from the source's".to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(path: &str, kind: &str, hash: Option<&str>, mode: &str) -> ManifestEntry {
        ManifestEntry {
            path: path.into(),
            kind: kind.into(),
            mode: mode.into(),
            uid: 0,
            gid: 0,
            mtime_ns: 1,
            size: 3,
            rdev: None,
            link_target: None,
            hard_link: None,
            xattrs: Default::default(),
            acl: None,
            default_acl: None,
            content_hash: hash.map(String::from),
        }
    }

    fn manifest(entries: Vec<ManifestEntry>) -> Manifest {
        Manifest {
            digest: String::new(),
            metadata_digest: String::new(),
            entries,
        }
    }

    #[test]
    fn every_source_entry_the_target_lacks_or_holds_otherwise_is_named_and_extra_ones_are_not() {
        let source = manifest(vec![
            entry(".", "dir", None, "755"),
            entry("same", "file", Some("aa"), "644"),
            entry("content", "file", Some("bb"), "644"),
            entry("mode", "file", Some("cc"), "644"),
            entry("kind", "file", Some("dd"), "644"),
            entry("missing", "file", Some("ee"), "644"),
        ]);
        let landed = manifest(vec![
            entry(".", "dir", None, "755"),
            entry("same", "file", Some("aa"), "644"),
            entry("content", "file", Some("b0"), "644"),
            entry("mode", "file", Some("cc"), "600"),
            entry("kind", "dir", None, "644"),
            entry("extra", "file", Some("ff"), "644"),
        ]);
        let found: Vec<(String, String)> = differences(&source, &landed)
            .into_iter()
            .map(|(path, why)| (path.display().to_string(), why))
            .collect();
        assert_eq!(
            found,
            [
                ("content", "content differs from the source's"),
                ("mode", "metadata differs from the source's"),
                ("kind", "a dir where the source has a file"),
                ("missing", "missing in the target"),
            ]
            .map(|(p, w)| (p.to_string(), w.to_string()))
        );
    }
}
