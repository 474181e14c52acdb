//! The file a standby creates once it is armed (`sync --ready-file`), for a readiness probe that
//! runs `ferry-mover ready FILE`: the kubelet then shows the operator that the standby waits.

use std::io::ErrorKind;
use std::path::Path;

use ferry_mover::MoverError;

/// Removes a ready file left from an earlier run, and checks that its directory takes one: a
/// standby that could never say it is armed would hold its resize up, unseen.
pub fn clear(path: &Path) -> Result<(), MoverError> {
    let gone = |e: std::io::Error| match e.kind() {
        ErrorKind::NotFound => Ok(()),
        _ => Err(MoverError::io("removing", path, e)),
    };
    std::fs::remove_file(path).or_else(gone)?;
    let dir = path
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let writable = rustix::fs::access(dir, rustix::fs::Access::WRITE_OK);
    writable.map_err(|e| MoverError::io("writing into", dir, e.into()))
}

/// Creates the ready file; a failure is said on stderr (the probe then never passes, and the
/// operator sees a standby that is not armed).
pub fn create(path: &Path) {
    if let Err(e) = std::fs::write(path, b"") {
        eprintln!(
            "ferry-mover: warning: cannot create ready file {}",
            ferry_mover::one_line(&format!("{}: {e}", path.display()))
        );
    }
}
