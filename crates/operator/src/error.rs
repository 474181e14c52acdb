use thiserror::Error;

/// Every failure the operator can meet, each with a category that names it in Events and metrics.
#[derive(Debug, Error)]
pub enum Error {
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    #[error("{kind} {name} has no namespace")]
    NotNamespaced { kind: &'static str, name: String },
    #[error("serializing {what}: {source}")]
    Serialize {
        what: &'static str,
        source: serde_json::Error,
    },
    #[error(
        "the CustomResourceDefinition {crd} is not installed or not established: {detail}; install it with `ferry crd | kubectl apply -f -`"
    )]
    CrdMissing { crd: String, detail: String },
    #[error("HTTP server on {addr}: {source}")]
    Http { addr: String, source: std::io::Error },
    #[error("webhook TLS: {0}")]
    Tls(String),
    #[error("webhook: {0}")]
    Webhook(String),
    #[error("kubeconfig: {0}")]
    Config(String),
    #[error("unexpected cluster state: {0}")]
    Invariant(String),
    #[error("lost the leader Lease: {0}; exiting so that only the new leader acts")]
    LeadershipLost(String),
}

impl Error {
    /// Short stable label for metrics and Event reasons.
    pub fn category(&self) -> &'static str {
        match self {
            Error::Kube(_) => "KubeApi",
            Error::NotNamespaced { .. } => "InvalidObject",
            Error::Serialize { .. } => "Serialization",
            Error::CrdMissing { .. } => "CrdMissing",
            Error::Http { .. } => "Http",
            Error::Config(_) => "Config",
            Error::Tls(_) => "Tls",
            Error::Webhook(_) => "Webhook",
            Error::Invariant(_) => "UnexpectedState",
            Error::LeadershipLost(_) => "LeadershipLost",
        }
    }

    /// The API server's refusal (403 Forbidden — RBAC, Pod Security, quota — or 422 Invalid), as
    /// its message, when that is what this error is.
    pub fn refusal(&self) -> Option<String> {
        match self {
            Error::Kube(kube::Error::Api(status)) if status.code == 403 || status.code == 422 => {
                Some(status.message.clone())
            }
            _ => None,
        }
    }

    /// The object changed since this reconcile read it (a write with its resourceVersion as a
    /// precondition was refused): read again and decide afresh, never act on the stale copy.
    pub fn is_stale_read(&self) -> bool {
        matches!(self, Error::Kube(kube::Error::Api(status)) if status.code == 409)
    }

    /// Retrying cannot fix a permanent error; only a change to the object can.
    pub fn is_permanent(&self) -> bool {
        matches!(self, Error::NotNamespaced { .. } | Error::Serialize { .. })
    }
}
