//! The one error type of the mover, and the mapping to process exit codes.

use std::io;
use std::path::{Path, PathBuf};

/// Exit code: success.
pub const EXIT_OK: i32 = 0;
/// Exit code: anything not covered by a more specific code.
pub const EXIT_OTHER: i32 = 1;
/// Exit code: bad arguments or bad input (missing source, target inside source, ...).
pub const EXIT_BAD_INPUT: i32 = 2;
/// Exit code: verification found a difference between source and target.
pub const EXIT_VERIFY_MISMATCH: i32 = 3;
/// Exit code: the target filesystem is full (ENOSPC / EDQUOT).
pub const EXIT_TARGET_FULL: i32 = 4;
/// Exit code: permission denied (EACCES / EPERM).
pub const EXIT_PERMISSION: i32 = ferry_mover_report::EXIT_PERMISSION;
/// A strict pass saw its source change (something still writes to it).
pub const EXIT_SOURCE_CHANGED: i32 = 6;
/// A cross-node copy: the other mover could not be reached, refused the handshake, or broke off.
pub const EXIT_TRANSPORT: i32 = ferry_mover_report::EXIT_TRANSPORT;

/// Everything that can make a mover operation fail.
#[derive(Debug, thiserror::Error)]
pub enum MoverError {
    /// The caller asked for something impossible (bad paths, bad option values).
    #[error("bad input: {0}")]
    BadInput(String),

    /// Verification found files whose target differs from the source.
    #[error("verification failed for {} entr{}: {}", paths.len(), if paths.len() == 1 { "y" } else { "ies" }, describe(paths, reasons))]
    VerifyMismatch {
        /// Source-relative paths that differ.
        paths: Vec<PathBuf>,
        /// What differs, one per path.
        reasons: Vec<String>,
    },

    /// The target filesystem ran out of space or quota.
    #[error("target full (no space left on device) while {op} {}: {source}", path.display())]
    TargetFull {
        /// What the mover was doing.
        op: &'static str,
        /// The path being written.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },

    /// The kernel refused an operation for lack of permission.
    #[error("permission denied while {op} {}: {source}", path.display())]
    Permission {
        /// What the mover was doing.
        op: &'static str,
        /// The path concerned.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },

    /// A mover without capabilities cannot give an entry the owner its source has (the copy
    /// would drop it).
    #[error("cannot give {} the owner {uid}:{gid} of its source: the mover runs as uid {euid} without capabilities (Pod Security \"restricted\"); a copy never drops owners", path.display())]
    OwnerNotKept {
        /// The target path.
        path: PathBuf,
        /// The source's owner.
        uid: u32,
        /// The source's group.
        gid: u32,
        /// The mover's effective uid.
        euid: u32,
    },

    /// A mover without capabilities cannot set what only an entry's owner may (mode, times,
    /// ACLs) on an entry another user owns.
    #[error("cannot {op} {}: it is owned by uid {owner}, and the mover runs as uid {euid} without capabilities (Pod Security \"restricted\")", path.display())]
    NotOwner {
        /// What the mover was doing ("set the mode of", ...).
        op: &'static str,
        /// The target path.
        path: PathBuf,
        /// Its current owner.
        owner: u32,
        /// The mover's effective uid.
        euid: u32,
    },

    /// Any other I/O failure.
    #[error("I/O error while {op} {}: {source}", path.display())]
    Io {
        /// What the mover was doing.
        op: &'static str,
        /// The path concerned.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },

    /// A strict pass (the final sync, source stopped) saw entries change or vanish under it:
    /// something still writes to the source, so the copy cannot be trusted.
    #[error("the source changed during a pass that needs it stopped ({count} entr{}); is something still writing to it?", if *count == 1 { "y" } else { "ies" })]
    SourceChanged {
        /// How many entries changed or vanished.
        count: u64,
    },

    /// A cross-node copy: the other mover could not be reached, refused the handshake (another
    /// resize's certificate, or none), or broke off.
    #[error("{0}")]
    Transport(String),

    /// A failure that is not tied to one path (thread pool, output, ...).
    #[error("{0}")]
    Other(String),
}

impl MoverError {
    /// Classifies an I/O error so that ENOSPC and EACCES get their own exit codes.
    pub fn io(op: &'static str, path: &Path, source: io::Error) -> Self {
        let path = path.to_path_buf();
        match source.raw_os_error() {
            Some(code) if code == rustix::io::Errno::NOSPC.raw_os_error() => {
                MoverError::TargetFull { op, path, source }
            }
            Some(code) if code == rustix::io::Errno::DQUOT.raw_os_error() => {
                MoverError::TargetFull { op, path, source }
            }
            Some(code)
                if code == rustix::io::Errno::ACCESS.raw_os_error()
                    || code == rustix::io::Errno::PERM.raw_os_error() =>
            {
                MoverError::Permission { op, path, source }
            }
            _ => MoverError::Io { op, path, source },
        }
    }

    /// This error with the entry's final name where it names the temporary one it was written
    /// under (`tmp`): what the user knows is `dst`.
    pub(crate) fn at_final(self, tmp: &Path, dst: &Path) -> Self {
        match self {
            MoverError::OwnerNotKept { path, uid, gid, euid } if path == tmp => MoverError::OwnerNotKept {
                path: dst.to_path_buf(),
                uid,
                gid,
                euid,
            },
            MoverError::NotOwner {
                op,
                path,
                owner,
                euid,
            } if path == tmp => MoverError::NotOwner {
                op,
                path: dst.to_path_buf(),
                owner,
                euid,
            },
            other => other,
        }
    }

    /// The process exit code for this error (see the crate docs for the table).
    pub fn exit_code(&self) -> i32 {
        match self {
            MoverError::BadInput(_) => EXIT_BAD_INPUT,
            MoverError::VerifyMismatch { .. } => EXIT_VERIFY_MISMATCH,
            MoverError::TargetFull { .. } => EXIT_TARGET_FULL,
            MoverError::Permission { .. } | MoverError::OwnerNotKept { .. } | MoverError::NotOwner { .. } => {
                EXIT_PERMISSION
            }
            MoverError::SourceChanged { .. } => EXIT_SOURCE_CHANGED,
            MoverError::Transport(_) => EXIT_TRANSPORT,
            MoverError::Io { .. } | MoverError::Other(_) => EXIT_OTHER,
        }
    }

    /// A short machine-friendly category name (used in the result file).
    pub fn kind(&self) -> &'static str {
        match self {
            MoverError::BadInput(_) => "badInput",
            MoverError::VerifyMismatch { .. } => "verifyMismatch",
            MoverError::TargetFull { .. } => "targetFull",
            MoverError::Permission { .. } | MoverError::OwnerNotKept { .. } | MoverError::NotOwner { .. } => {
                "permission"
            }
            MoverError::SourceChanged { .. } => "sourceChanged",
            MoverError::Transport(_) => "transport",
            MoverError::Io { .. } => "io",
            MoverError::Other(_) => "other",
        }
    }
}

/// Converts a `rustix` errno into a classified error.
pub(crate) fn errno(op: &'static str, path: &Path, e: rustix::io::Errno) -> MoverError {
    MoverError::io(op, path, io::Error::from(e))
}

fn describe(paths: &[PathBuf], reasons: &[String]) -> String {
    const SHOWN: usize = 20;
    let mut s = paths
        .iter()
        .zip(reasons.iter().map(Some).chain(std::iter::repeat(None)))
        .take(SHOWN)
        .map(|(p, r)| match r {
            Some(r) => format!("{} ({r})", p.display()),
            None => p.display().to_string(),
        })
        .collect::<Vec<_>>()
        .join(", ");
    if paths.len() > SHOWN {
        s.push_str(&format!(", ... ({} more)", paths.len() - SHOWN));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_contract() {
        let nospc = io::Error::from_raw_os_error(28);
        assert_eq!(MoverError::io("writing", Path::new("x"), nospc).exit_code(), 4);
        let acces = io::Error::from_raw_os_error(13);
        assert_eq!(MoverError::io("opening", Path::new("x"), acces).exit_code(), 5);
        let eperm = io::Error::from_raw_os_error(1);
        assert_eq!(MoverError::io("chown", Path::new("x"), eperm).exit_code(), 5);
        let eio = io::Error::from_raw_os_error(5);
        assert_eq!(MoverError::io("reading", Path::new("x"), eio).exit_code(), 1);
        assert_eq!(MoverError::BadInput("x".into()).exit_code(), 2);
        let m = MoverError::VerifyMismatch {
            paths: vec![PathBuf::from("a/b")],
            reasons: vec!["content".into()],
        };
        assert_eq!(m.exit_code(), 3);
        assert!(m.to_string().contains("a/b (content)"), "{m}");
    }
}
