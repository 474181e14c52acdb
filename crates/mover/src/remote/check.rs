//! Verification of a pull, end to end: a file's content as it landed here (read back from this
//! disk) against the hash the serving mover made of the source's content as it read it from its
//! disk; every entry's metadata against the source's tree; and, with `--verify full`, the two
//! manifests, each made of a whole tree where it lies.

use std::fs::File;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use xxhash_rust::xxh3::Xxh3;

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

/// Reads `file` (at `path`) back through `buf` and compares the hash of its content with the
/// source's `expected`.
pub(super) fn landed(
    file: &File,
    path: &Path,
    buf: &mut [u8],
    expected: u128,
    source_changed: bool,
) -> Result<Landed, MoverError> {
    let mut hash = Xxh3::new();
    let mut at = 0;
    loop {
        let n = crate::copy::read_full(file, path, buf, at)?;
        if n == 0 {
            break;
        }
        hash.update(&buf[..n]);
        at += n as u64;
    }
    Ok(match (hash.digest128() == expected, source_changed) {
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
            if let Some(reason) = crate::verify::metadata_mismatch(&e.meta, found[i].as_ref(), i == 0) {
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
