//! Who may read the secure metrics endpoint, decided as kubebuilder's `--metrics-secure` filter
//! decides it: a bearer token the API server vouches for (TokenReview) whose user may `get` the
//! non-resource URL `/metrics` (SubjectAccessReview). Pure: the reviews' answers come in, a verdict
//! goes out; the answers are remembered a while per token.

use k8s_openapi::api::authentication::v1::{TokenReviewStatus, UserInfo};
use k8s_openapi::api::authorization::v1::SubjectAccessReviewStatus;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The path and verb a reader needs RBAC for (`nonResourceURLs: ["/metrics"]`, `verbs: ["get"]`).
pub const METRICS_PATH: &str = "/metrics";
pub const METRICS_VERB: &str = "get";

/// How long a review's verdict stands for one token, as controller-runtime's filter keeps both
/// its authentication and authorization answers: a scrape every 30 s costs the API server two
/// reviews a minute per token at most, and a withdrawn binding or token stops working within it.
pub const VERDICT_TTL: Duration = Duration::from_secs(60);

/// Tokens remembered at most: a stream of made-up tokens cannot grow the cache without bound.
pub const MAX_REMEMBERED: usize = 1024;

/// What a request to /metrics gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// 200 and the metrics.
    Allowed,
    /// 401: no bearer token, or one the API server does not vouch for.
    Unauthenticated,
    /// 403: a known user without `get` on `/metrics`.
    Forbidden,
}

impl Verdict {
    pub fn status_code(self) -> u16 {
        match self {
            Verdict::Allowed => 200,
            Verdict::Unauthenticated => 401,
            Verdict::Forbidden => 403,
        }
    }
}

/// The token of an `Authorization: Bearer <token>` header (the scheme in any case, as RFC 7235
/// says); `None` for no header, another scheme or an empty token.
pub fn bearer_token(header: Option<&str>) -> Option<&str> {
    let (scheme, token) = header?.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty() && !token.contains(' ')).then_some(token)
}

/// The user a TokenReview vouches for, or `None` when it does not (not authenticated, an error,
/// or no user named).
pub fn authenticated_user(status: Option<&TokenReviewStatus>) -> Option<UserInfo> {
    let status = status?;
    if status.authenticated != Some(true) || status.error.as_deref().is_some_and(|e| !e.is_empty()) {
        return None;
    }
    status
        .user
        .clone()
        .filter(|user| user.username.as_deref().is_some_and(|name| !name.is_empty()))
}

/// A SubjectAccessReview's answer: allowed only when it says so and no authorizer denied.
pub fn authorized(status: Option<&SubjectAccessReviewStatus>) -> Verdict {
    match status {
        Some(status) if status.allowed && status.denied != Some(true) => Verdict::Allowed,
        _ => Verdict::Forbidden,
    }
}

/// Verdicts remembered per token (keyed by the token's SHA-256, so no token is kept in memory).
#[derive(Debug, Default)]
pub struct VerdictCache {
    entries: HashMap<[u8; 32], (Verdict, Instant)>,
}

impl VerdictCache {
    /// The verdict for this token, while it stands at `now`.
    pub fn get(&self, token: &str, now: Instant) -> Option<Verdict> {
        self.entries
            .get(&key(token))
            .filter(|(_, until)| now < *until)
            .map(|(verdict, _)| *verdict)
    }

    /// Remembers a verdict until `now + VERDICT_TTL`; when full, the stale ones go first, then all.
    pub fn put(&mut self, token: &str, verdict: Verdict, now: Instant) {
        if self.entries.len() >= MAX_REMEMBERED {
            self.entries.retain(|_, (_, until)| now < *until);
        }
        if self.entries.len() >= MAX_REMEMBERED {
            self.entries.clear();
        }
        self.entries.insert(key(token), (verdict, now + VERDICT_TTL));
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

fn key(token: &str) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(token.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_bearer_header_with_one_token_gives_a_token() {
        assert_eq!(bearer_token(Some("Bearer abc.def")), Some("abc.def"));
        assert_eq!(bearer_token(Some("bearer  abc ")), Some("abc"));
        assert_eq!(bearer_token(Some("BEARER abc")), Some("abc"));
        assert_eq!(bearer_token(None), None);
        assert_eq!(bearer_token(Some("")), None);
        assert_eq!(bearer_token(Some("Bearer")), None);
        assert_eq!(bearer_token(Some("Bearer ")), None);
        assert_eq!(bearer_token(Some("Basic dXNlcjpwYXNz")), None);
        assert_eq!(bearer_token(Some("Bearer a b")), None);
    }

    fn user(name: &str) -> UserInfo {
        UserInfo {
            username: Some(name.to_string()),
            ..UserInfo::default()
        }
    }

    #[test]
    fn a_token_review_vouches_only_when_authenticated_without_error_and_naming_a_user() {
        let vouched = TokenReviewStatus {
            authenticated: Some(true),
            user: Some(user("system:serviceaccount:monitoring:prometheus")),
            ..TokenReviewStatus::default()
        };
        assert_eq!(
            authenticated_user(Some(&vouched)).and_then(|user| user.username),
            Some("system:serviceaccount:monitoring:prometheus".to_string())
        );
        let not = TokenReviewStatus {
            authenticated: Some(false),
            ..vouched.clone()
        };
        let unsaid = TokenReviewStatus {
            authenticated: None,
            ..vouched.clone()
        };
        let erred = TokenReviewStatus {
            error: Some("token expired".into()),
            ..vouched.clone()
        };
        let nameless = TokenReviewStatus {
            user: Some(user("")),
            ..vouched.clone()
        };
        for status in [not, unsaid, erred, nameless] {
            assert_eq!(authenticated_user(Some(&status)), None, "{status:?}");
        }
        assert_eq!(authenticated_user(None), None);
    }

    #[test]
    fn access_is_allowed_only_when_the_review_allows_and_nothing_denies() {
        let review = |allowed, denied| SubjectAccessReviewStatus {
            allowed,
            denied,
            ..SubjectAccessReviewStatus::default()
        };
        assert_eq!(authorized(Some(&review(true, None))), Verdict::Allowed);
        assert_eq!(authorized(Some(&review(true, Some(false)))), Verdict::Allowed);
        assert_eq!(authorized(Some(&review(true, Some(true)))), Verdict::Forbidden);
        assert_eq!(authorized(Some(&review(false, None))), Verdict::Forbidden);
        assert_eq!(authorized(None), Verdict::Forbidden);
        assert_eq!(Verdict::Allowed.status_code(), 200);
        assert_eq!(Verdict::Unauthenticated.status_code(), 401);
        assert_eq!(Verdict::Forbidden.status_code(), 403);
    }

    #[test]
    fn a_verdict_stands_for_its_time_per_token_and_the_cache_stays_bounded() {
        let start = Instant::now();
        let mut cache = VerdictCache::default();
        cache.put("reader", Verdict::Allowed, start);
        cache.put("stranger", Verdict::Forbidden, start);
        assert_eq!(cache.get("reader", start), Some(Verdict::Allowed));
        assert_eq!(
            cache.get("stranger", start + VERDICT_TTL - Duration::from_secs(1)),
            Some(Verdict::Forbidden)
        );
        assert_eq!(cache.get("reader", start + VERDICT_TTL), None);
        assert_eq!(cache.get("unknown", start), None);
        for n in 0..MAX_REMEMBERED * 2 {
            cache.put(&format!("made-up-{n}"), Verdict::Unauthenticated, start);
        }
        assert!(cache.len() <= MAX_REMEMBERED, "{}", cache.len());
        // A full cache drops its stale entries first, and keeps the fresh ones.
        let mut full = VerdictCache::default();
        let soon = start + Duration::from_secs(30);
        full.put("recent", Verdict::Allowed, soon);
        for n in 1..MAX_REMEMBERED {
            full.put(&format!("old-{n}"), Verdict::Unauthenticated, start);
        }
        assert_eq!(full.len(), MAX_REMEMBERED);
        let later = start + VERDICT_TTL;
        full.put("fresh", Verdict::Allowed, later);
        assert_eq!(full.len(), 2);
        assert_eq!(full.get("recent", later), Some(Verdict::Allowed));
        assert_eq!(full.get("fresh", later), Some(Verdict::Allowed));
    }
}
