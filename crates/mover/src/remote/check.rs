//! Verification of a pull, end to end: a file's content as it landed here (read back from this
//! disk) against the hash the serving mover made of the source's content as it read it from its
//! disk; every entry's metadata against the source's tree; and, with `--verify full`, the two
//! manifests, each made of a whole tree where it lies.

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::error::MoverError;
use crate::meta;
use crate::walk::Tree;
use std::sync::atomic::{AtomicBool, Ordering};

/// How a pull is verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PullVerify {
    /// Not at all.
    None,
    /// Each file written, by hash against the source's content, and every entry's metadata.
    Checksum,
    /// As `Checksum`, then the source's manifest against the target's (both trees read whole).
    Full,
}

impl PullVerify {
    /// Its name in the result.
    pub fn name(self) -> &'static str {
        match self {
            PullVerify::None => "none",
            PullVerify::Checksum => "checksum",
            PullVerify::Full => "full",
        }
    }
}

/// What a landed file is, against the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Landed {
    /// The same content.
    Same,
    /// Another content, but the source changed while it was read (a warm pass; the next pass
    /// copies it again, its mtime no longer being the source's).
    SourceChanged,
    /// Another content from a source that did not change: the copy is wrong.
    Differs,
}

/// Reads the file at `path` back and compares its hash with the source's `expected`.
pub(super) fn landed(path: &Path, expected: u128, source_changed: bool) -> Result<Landed, MoverError> {
    let hash = crate::digest::hash_file(path)?;
    Ok(match (hash == expected, source_changed) {
        (true, _) => Landed::Same,
        (false, true) => Landed::SourceChanged,
        (false, false) => Landed::Differs,
    })
}

/// Every source entry not gone (`vanished`, by source index) is in the target with its
/// metadata, and hard links are links.
pub(super) fn metadata(
    src: &Tree,
    target: &Path,
    vanished: &[AtomicBool],
) -> Result<Vec<(PathBuf, String)>, MoverError> {
    let skipped = |i: usize| vanished[i].load(Ordering::Relaxed);
    let found: Vec<Option<meta::EntryMeta>> = (src.entries.par_iter().enumerate())
        .map(|(i, e)| match skipped(i) {
            true => Ok(None),
            false => meta::read(&target.join(&e.rel), true),
        })
        .collect::<Result<_, _>>()?;
    let leaders = crate::plan::link_leaders(src);
    let bad = (src.entries.iter().enumerate())
        .filter(|(i, _)| !skipped(*i))
        .filter_map(|(i, e)| {
            if let Some(reason) = crate::verify::metadata_mismatch(&e.meta, found[i].as_ref()) {
                return Some((e.rel.clone(), reason));
            }
            let l = leaders[i]?;
            let identity = |m: &Option<meta::EntryMeta>| m.as_ref().map(|m| (m.dev, m.ino));
            (!skipped(l) && identity(&found[i]) != identity(&found[l])).then(|| {
                (
                    e.rel.clone(),
                    format!("not a hard link to {}", src.entries[l].rel.display()),
                )
            })
        })
        .collect();
    Ok(bad)
}
