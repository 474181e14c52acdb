//! The two questions the secure metrics endpoint asks the API server about a bearer token: who it
//! is (TokenReview), and whether that user may `get` `/metrics` (SubjectAccessReview).

use super::access::{self, METRICS_PATH, METRICS_VERB, Verdict};
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::PostParams;
use kube::{Api, Client};

/// The verdict for `token`, or the API server's error (not a verdict: nothing is remembered).
pub async fn review(client: &Client, token: &str) -> Result<Verdict, kube::Error> {
    let asked = TokenReview {
        spec: TokenReviewSpec {
            token: Some(token.to_string()),
            // The API server's own audiences: a ServiceAccount token as Prometheus mounts it.
            audiences: None,
        },
        ..TokenReview::default()
    };
    let answered = Api::<TokenReview>::all(client.clone())
        .create(&PostParams::default(), &asked)
        .await?;
    let Some(user) = access::authenticated_user(answered.status.as_ref()) else {
        return Ok(Verdict::Unauthenticated);
    };
    let asked = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: user.username,
            groups: user.groups,
            uid: user.uid,
            extra: user.extra,
            non_resource_attributes: Some(NonResourceAttributes {
                path: Some(METRICS_PATH.to_string()),
                verb: Some(METRICS_VERB.to_string()),
            }),
            ..SubjectAccessReviewSpec::default()
        },
        ..SubjectAccessReview::default()
    };
    let answered = Api::<SubjectAccessReview>::all(client.clone())
        .create(&PostParams::default(), &asked)
        .await?;
    Ok(access::authorized(answered.status.as_ref()))
}
