use thiserror::Error;

#[derive(Debug, Error)]
pub enum Error {
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    #[error("kubeconfig: {0}")]
    Kubeconfig(#[from] kube::config::KubeconfigError),
    #[error("I/O on {path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{0}")]
    Setup(String),
    #[error("timed out after {seconds}s waiting for {what}")]
    Timeout { what: String, seconds: u64 },
    #[error("{path}: {message}")]
    Manifest { path: String, message: String },
    #[error("{what} exited before it was ready ({status}); its log: {log}")]
    Exited {
        what: String,
        status: String,
        log: String,
    },
}

impl Error {
    pub fn io(path: impl std::fmt::Display, source: std::io::Error) -> Self {
        Error::Io {
            path: path.to_string(),
            source,
        }
    }
}
