pub use ferry_engine::resize::action::ActionKind;
use std::borrow::Cow;
use thiserror::Error;

/// Every failure the operator can meet, each with a category that names it in Events and metrics.
#[derive(Debug, Error)]
pub enum Error {
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    /// A request of one of a resize's actions failed: which action, on which object. One variant
    /// with the kind as data (not one variant per kind): every kind is handled alike (refusal,
    /// stale read, retry), only the words and the category differ.
    #[error("{} {object}: {source}", action.doing())]
    Action {
        action: ActionKind,
        object: String,
        source: kube::Error,
    },
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
    #[error("configuration digest key: {0}")]
    DigestKey(String),
    #[error("kubeconfig: {0}")]
    Config(String),
    #[error("unexpected cluster state: {0}")]
    Invariant(String),
    #[error("lost the leader Lease: {0}; exiting so that only the new leader acts")]
    LeadershipLost(String),
    /// A check of `ferry smoke-test` (`helm test`) did not hold.
    #[error("smoke test: {0}")]
    SmokeTest(String),
}

impl Error {
    /// Short stable label for metrics and Event reasons.
    pub fn category(&self) -> Cow<'static, str> {
        let name = match self {
            // The action's kind and `Failed`.
            Error::Action { action, .. } => {
                return Cow::Owned(format!("{}Failed", <&'static str>::from(action)));
            }
            Error::Kube(_) => "KubeApi",
            Error::NotNamespaced { .. } => "InvalidObject",
            Error::Serialize { .. } => "Serialization",
            Error::CrdMissing { .. } => "CrdMissing",
            Error::Http { .. } => "Http",
            Error::Config(_) => "Config",
            Error::Tls(_) => "Tls",
            Error::Webhook(_) => "Webhook",
            Error::DigestKey(_) => "DigestKey",
            Error::Invariant(_) => "UnexpectedState",
            Error::LeadershipLost(_) => "LeadershipLost",
            Error::SmokeTest(_) => "SmokeTest",
        };
        Cow::Borrowed(name)
    }

    /// The API server's status, when this error is its answer.
    fn api_status(&self) -> Option<&kube::core::Status> {
        match self {
            Error::Kube(kube::Error::Api(status))
            | Error::Action {
                source: kube::Error::Api(status),
                ..
            } => Some(status),
            _ => None,
        }
    }

    /// The API server's refusal (403 Forbidden — RBAC, Pod Security, quota — or 422 Invalid), as
    /// its message (after what Ferry was doing, for an action's request), when that is what this
    /// error is.
    pub fn refusal(&self) -> Option<String> {
        self.api_status()
            .filter(|status| status.code == 403 || status.code == 422)
            .map(|status| self.answered(status))
    }

    /// A fault on the API server's side that passes by itself (5xx: an admission webhook it could
    /// not call, etcd slow; 429: too many requests), as its message after what Ferry was doing.
    pub fn transient_fault(&self) -> Option<String> {
        self.api_status()
            .filter(|status| status.code >= 500 || status.code == 429)
            .map(|status| self.answered(status))
    }

    /// The API server's answer, after what Ferry was doing when it asked.
    fn answered(&self, status: &kube::core::Status) -> String {
        match self {
            Error::Action { action, object, .. } => {
                format!("{} {object}: {}", action.doing(), status.message)
            }
            _ => status.message.clone(),
        }
    }

    /// The object changed since this reconcile read it (a write with its resourceVersion or UID as
    /// a precondition was refused): read again and decide afresh, never act on the stale copy.
    pub fn is_stale_read(&self) -> bool {
        self.api_status().is_some_and(|status| status.code == 409)
    }

    /// Retrying cannot fix a permanent error; only a change to the object can. (No API error is:
    /// the cluster may change.)
    pub fn is_permanent(&self) -> bool {
        matches!(self, Error::NotNamespaced { .. } | Error::Serialize { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api_error(code: u16, message: &str) -> kube::Error {
        kube::Error::Api(Box::new(
            kube::core::Status::failure(message, "Reason").with_code(code),
        ))
    }

    fn action_error(code: u16) -> Error {
        Error::Action {
            action: ActionKind::CreateTargetClaim,
            object: "data-db-0-ferry-abc".into(),
            source: api_error(code, "nope"),
        }
    }

    #[test]
    fn an_action_error_says_what_failed_on_which_object() {
        let error = action_error(500);
        let message = error.to_string();
        assert!(
            message.starts_with("creating target claim data-db-0-ferry-abc: "),
            "{message}"
        );
        assert!(message.contains("nope"), "{message}");
        assert_eq!(error.category(), "CreateTargetClaimFailed");
    }

    #[test]
    fn a_refused_action_is_a_refusal_naming_the_action() {
        for code in [403, 422] {
            assert_eq!(
                action_error(code).refusal().as_deref(),
                Some("creating target claim data-db-0-ferry-abc: nope")
            );
            assert_eq!(
                Error::Kube(api_error(code, "nope")).refusal().as_deref(),
                Some("nope")
            );
        }
        assert_eq!(action_error(500).refusal(), None);
        assert_eq!(action_error(409).refusal(), None);
    }

    #[test]
    fn a_conflict_from_an_action_is_a_stale_read() {
        assert!(action_error(409).is_stale_read());
        assert!(Error::Kube(api_error(409, "conflict")).is_stale_read());
        assert!(!action_error(403).is_stale_read());
        assert!(!action_error(500).is_stale_read());
    }

    #[test]
    fn an_action_error_is_never_permanent() {
        for code in [403, 404, 409, 422, 500] {
            assert!(!action_error(code).is_permanent());
        }
    }

    #[test]
    fn every_kind_has_its_own_category_and_words() {
        use strum::IntoEnumIterator;
        let of = |kind: ActionKind| Error::Action {
            action: kind,
            object: "x".into(),
            source: api_error(500, "nope"),
        };
        let categories: std::collections::BTreeSet<String> = ActionKind::iter()
            .map(|kind| of(kind).category().into_owned())
            .collect();
        let words: std::collections::BTreeSet<&str> = ActionKind::iter().map(ActionKind::doing).collect();
        assert_eq!(categories.len(), ActionKind::iter().count());
        assert_eq!(words.len(), ActionKind::iter().count());
        for kind in ActionKind::iter() {
            assert_eq!(of(kind).category(), format!("{kind:?}Failed"));
        }
    }
}
