//! Where the harness keeps its state: the same places `scripts/testenv` uses.

use std::path::PathBuf;

/// `$FERRY_TESTENV_DIR`, else `~/.cache/ferry/run`.
pub fn state_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("FERRY_TESTENV_DIR") {
        return PathBuf::from(dir);
    }
    cache_dir().join("run")
}

fn cache_dir() -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))
        .unwrap_or_else(|| PathBuf::from("/tmp"))
        .join("ferry")
}

/// The repository root (this crate lives in `crates/testenv`).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The cargo target dir the scripts use, where the workspace binaries are.
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| cache_dir().join("target"))
}

/// A workspace binary built in the debug profile (`ferry`, `ferry-mover`, `kubectl-ferry`).
pub fn workspace_binary(name: &str) -> PathBuf {
    target_dir().join("debug").join(name)
}
