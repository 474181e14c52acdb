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

/// The repository root: `$FERRY_REPO`, else the nearest directory holding `scripts/testenv` above
/// the package cargo runs a test in (`CARGO_MANIFEST_DIR` at run time) or the current directory.
/// Found at run time, never compiled in: a path in the binary would make every new checkout
/// rebuild this crate and everything that links it.
pub fn repo_root() -> PathBuf {
    if let Some(repo) = std::env::var_os("FERRY_REPO") {
        return PathBuf::from(repo);
    }
    let start = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("."));
    start
        .ancestors()
        .find(|dir| dir.join("scripts/testenv").is_file())
        .map(PathBuf::from)
        .unwrap_or(start)
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
