//! The pulling side of change tracking: a pass marks where it begins on the serving mover's
//! record (before it asks for the tree) and reports when it succeeded; a pass over what changed
//! (`pull --changes`) asks for the paths changed since the latest pass that succeeded and reads
//! only those, in both trees (`partial::scan` here, [`Request::PartialTree`] there). Whatever the
//! server cannot vouch for, and hard links the record does not name, make it walk both trees
//! whole, as without tracking, and say why.

use std::collections::HashSet;
use std::path::Path;

use super::peer::Peer;
use super::wire::{Reply, Request, WireVisit};
use crate::changes::Visit;
use crate::error::MoverError;
use crate::meta::Kind;
use crate::partial;
use crate::progress::Warnings;
use crate::walk::Tree;

/// What changed since the latest pass that succeeded, as the server answered it.
pub(super) struct Since {
    /// The paths to visit.
    pub visits: Vec<Visit>,
    /// Entries and data bytes in the target after that pass.
    pub totals: (u64, u64),
}

/// Starts a segment of the server's record for this pass: its mark, or why there is none (the
/// server does not track changes).
pub(super) fn mark(control: &mut Peer) -> Result<Result<u64, String>, MoverError> {
    control.ask(&Request::Mark)?;
    match control.next()? {
        Reply::Marked { mark } => Ok(Ok(mark)),
        Reply::Failed { message, .. } => Ok(Err(message)),
        other => Err(control.unexpected(&other)),
    }
}

/// Tells the server that the pass that began with `mark` succeeded, leaving `totals` (entries,
/// data bytes) in the target.
pub(super) fn passed(control: &mut Peer, mark: u64, totals: (u64, u64)) -> Result<(), MoverError> {
    control.ask(&Request::Passed {
        mark,
        files: totals.0,
        bytes: totals.1,
    })?;
    match control.next()? {
        Reply::End { .. } => Ok(()),
        other => Err(control.unexpected(&other)),
    }
}

/// The paths changed since `since` (`None`: the latest pass that succeeded), or why the server
/// cannot name them.
pub(super) fn changes(control: &mut Peer, since: Option<u64>) -> Result<Result<Since, String>, MoverError> {
    control.ask(&Request::Changes { since })?;
    match control.next()? {
        Reply::Changed { files, bytes, visits } => Ok(Ok(Since {
            visits: (visits.into_iter())
                .map(|v| Visit {
                    rel: v.rel,
                    whole: v.whole,
                })
                .collect(),
            totals: (files, bytes),
        })),
        Reply::Failed { message, .. } => Ok(Err(message)),
        other => Err(control.unexpected(&other)),
    }
}

/// Both trees at `visits`: the target's read here, then the source's from the server (a
/// directory the target lacks is read whole there). `Ok(Err(why))` when the partial trees cannot
/// keep the hard links (a link the record does not name): both must be read whole then.
pub(super) fn read_partial(
    control: &mut Peer,
    target: &Path,
    visits: &[Visit],
    warnings: &Warnings,
) -> Result<Result<(Tree, Tree), String>, MoverError> {
    let dst = partial::scan(target, visits, &|_| false, warnings, None)?;
    let target_dirs: HashSet<&Path> = (dst.entries.iter())
        .filter(|e| e.meta.kind == Kind::Dir)
        .map(|e| e.rel.as_path())
        .collect();
    let asked = (visits.iter())
        .map(|v| WireVisit {
            rel: v.rel.clone(),
            whole: v.whole,
            target_lacks_dir: !target_dirs.contains(v.rel.as_path()),
        })
        .collect();
    control.ask(&Request::PartialTree { visits: asked })?;
    let first = control.next()?;
    let mut src = control.tree(first)?;
    if (src.entries.first()).is_none_or(|root| !root.rel.as_os_str().is_empty()) {
        return Err(control.broke("sent a tree without its root"));
    }
    // (A server that runs as root sends its `lost+found`.)
    src.entries.retain(|e| !crate::as_user::left_alone(&e.rel));
    if let Some(rel) = partial::unplaced_link(&src).or_else(|| partial::unplaced_link(&dst)) {
        return Ok(Err(format!(
            "{} has hard links the record does not name",
            rel.display()
        )));
    }
    Ok(Ok((src, dst)))
}
