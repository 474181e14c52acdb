//! Space and inodes used by a tree (for the shrink precheck): like `du`, hard links once.

use std::collections::HashSet;
use std::path::Path;

use crate::error::MoverError;
use crate::progress::Warnings;

/// Bytes allocated on disk and inodes in use by a tree: the wire type the planner reads back.
pub use ferry_mover_report::UsageResult as Usage;

/// Measures `dir`.
pub fn usage(dir: &Path) -> Result<Usage, MoverError> {
    let md = std::fs::symlink_metadata(dir).map_err(|e| crate::digest::bad_dir(dir, e))?;
    if !md.is_dir() {
        return Err(MoverError::BadInput(format!(
            "not a directory: {}",
            dir.display()
        )));
    }
    let tree = crate::walk::scan(dir, false, &Warnings::new(false), None)?;
    let mut seen = HashSet::new();
    let mut u = Usage { bytes: 0, inodes: 0 };
    for e in &tree.entries {
        if e.meta.nlink > 1 && !seen.insert((e.meta.dev, e.meta.ino)) {
            continue;
        }
        u.bytes += e.meta.blocks * 512;
        u.inodes += 1;
    }
    Ok(u)
}
