//! Exit codes scripts can rely on, and the errors that lead to them.

use ferry_api::Phase;
use thiserror::Error;

/// The process exit code of `kubectl ferry`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    /// 0: the command did what was asked (for `status`: the resize Succeeded).
    Ok,
    /// 1: the resize Failed, or the request was refused (e.g. nothing to roll back).
    Failed,
    /// 2: usage error: bad flags or values (e.g. an invalid size).
    Usage,
    /// 3: something named does not exist: VolumeResize, StatefulSet, volume template, StorageClass.
    NotFound,
    /// 4: the cluster cannot be used: unreachable, credentials rejected, forbidden, CRD not installed,
    /// or the VolumeResize named is in a shape this kubectl-ferry cannot read (another Ferry's).
    Cluster,
    /// 5: not finished yet: `status` without `--follow` on a resize still in progress, or a wait
    /// that timed out.
    InProgress,
}

impl ExitCode {
    pub fn as_u8(self) -> u8 {
        match self {
            ExitCode::Ok => 0,
            ExitCode::Failed => 1,
            ExitCode::Usage => 2,
            ExitCode::NotFound => 3,
            ExitCode::Cluster => 4,
            ExitCode::InProgress => 5,
        }
    }

    /// The exit code for a resize's phase: 0 Succeeded, 1 Failed, 5 otherwise.
    pub fn for_phase(phase: Phase) -> ExitCode {
        match phase {
            Phase::Succeeded => ExitCode::Ok,
            Phase::Failed => ExitCode::Failed,
            _ => ExitCode::InProgress,
        }
    }
}

/// An error the user can act on; its message is printed as `error: …` and it picks the exit code.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum CliError {
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Unreachable(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    CrdMissing(String),
    #[error("{0}")]
    Failed(String),
    /// The VolumeResize named cannot be read by this kubectl-ferry (written under another Ferry's CRD).
    #[error("{0}")]
    Unreadable(String),
    #[error("{0}")]
    InProgress(String),
}

impl CliError {
    pub fn exit_code(&self) -> ExitCode {
        match self {
            CliError::Usage(_) => ExitCode::Usage,
            CliError::NotFound(_) => ExitCode::NotFound,
            CliError::Unreachable(_)
            | CliError::Forbidden(_)
            | CliError::CrdMissing(_)
            | CliError::Unreadable(_) => ExitCode::Cluster,
            CliError::Failed(_) => ExitCode::Failed,
            CliError::InProgress(_) => ExitCode::InProgress,
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn phase_exit_codes() {
        assert_eq!(ExitCode::for_phase(Phase::Succeeded), ExitCode::Ok);
        assert_eq!(ExitCode::for_phase(Phase::Failed), ExitCode::Failed);
        assert_eq!(ExitCode::for_phase(Phase::Running), ExitCode::InProgress);
        assert_eq!(ExitCode::for_phase(Phase::Pending), ExitCode::InProgress);
    }

    use super::*;

    #[test]
    fn codes_are_distinct_and_documented() {
        let codes = [
            ExitCode::Ok,
            ExitCode::Failed,
            ExitCode::Usage,
            ExitCode::NotFound,
            ExitCode::Cluster,
            ExitCode::InProgress,
        ]
        .map(ExitCode::as_u8);
        assert_eq!(codes, [0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn cluster_problems_share_one_code() {
        for error in [
            CliError::Unreachable(String::new()),
            CliError::Forbidden(String::new()),
            CliError::CrdMissing(String::new()),
            CliError::Unreadable(String::new()),
        ] {
            assert_eq!(error.exit_code(), ExitCode::Cluster);
        }
        assert_eq!(CliError::Usage("x".into()).exit_code(), ExitCode::Usage);
        assert_eq!(CliError::NotFound("x".into()).exit_code(), ExitCode::NotFound);
    }
}
