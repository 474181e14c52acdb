use thiserror::Error;
use tonic::{Code, Status};

/// What went wrong, each carrying the CSI error code the spec names for it.
#[derive(Debug, Error)]
pub enum Error {
    /// A request field is missing or malformed (INVALID_ARGUMENT).
    #[error("{0}")]
    InvalidArgument(String),
    /// No volume (or node) with that id (NOT_FOUND).
    #[error("{0}")]
    NotFound(String),
    /// A volume of that name exists with other parameters or a size outside the range (ALREADY_EXISTS).
    #[error("{0}")]
    AlreadyExists(String),
    /// A size this driver cannot make (OUT_OF_RANGE).
    #[error("{0}")]
    OutOfRange(String),
    /// The volume is not in the state the call needs, e.g. deleting a staged volume (FAILED_PRECONDITION).
    #[error("{0}")]
    FailedPrecondition(String),
    /// The requested topology is not one this driver serves (RESOURCE_EXHAUSTED).
    #[error("{0}")]
    ResourceExhausted(String),
    /// Something outside the driver still holds what the call must release; the caller retries (UNAVAILABLE).
    #[error("{0}")]
    Busy(String),
    /// A failure a test asked for with its StorageClass's parameters (UNAVAILABLE: retried).
    #[error("{0}")]
    Fault(String),
    /// A capability this driver does not offer (INVALID_ARGUMENT for volume capabilities).
    #[error("{0}")]
    Unsupported(String),
    #[error("I/O on {path}: {source}")]
    Io { path: String, source: std::io::Error },
    /// A tool (losetup, mkfs, mount, xfs_growfs) failed.
    #[error("{0}")]
    Command(String),
    #[error("volume record {path}: {source}")]
    Record { path: String, source: serde_json::Error },
    #[error("gRPC server: {0}")]
    Transport(#[from] tonic::transport::Error),
}

impl Error {
    pub fn io(path: impl std::fmt::Display, source: std::io::Error) -> Self {
        Error::Io {
            path: path.to_string(),
            source,
        }
    }

    pub fn code(&self) -> Code {
        match self {
            Error::InvalidArgument(_) | Error::Unsupported(_) => Code::InvalidArgument,
            Error::NotFound(_) => Code::NotFound,
            Error::AlreadyExists(_) => Code::AlreadyExists,
            Error::OutOfRange(_) => Code::OutOfRange,
            Error::FailedPrecondition(_) => Code::FailedPrecondition,
            Error::ResourceExhausted(_) => Code::ResourceExhausted,
            Error::Busy(_) | Error::Fault(_) => Code::Unavailable,
            Error::Io { .. } | Error::Command(_) | Error::Record { .. } | Error::Transport(_) => {
                Code::Internal
            }
        }
    }
}

impl From<Error> for Status {
    fn from(error: Error) -> Status {
        Status::new(error.code(), error.to_string())
    }
}
