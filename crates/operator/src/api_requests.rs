//! Counts the operator's requests to the API server by verb (`ferry_api_requests_total`), so the
//! load Ferry puts on a cluster, at rest and at work, is measured rather than guessed.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

/// The verb of one request, as the API server's audit log names it.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct VerbLabels {
    pub verb: String,
}

/// Requests sent, by verb; clones count into the same family.
pub type ApiRequests = Family<VerbLabels, Counter>;

/// A client that counts every request it sends into `requests`.
pub fn client(config: kube::Config, requests: ApiRequests) -> Result<kube::Client, kube::Error> {
    let layer = tower::util::MapRequestLayer::new(move |request: http::Request<kube::client::Body>| {
        let labels = VerbLabels {
            verb: verb(request.method(), request.uri()).to_string(),
        };
        requests.get_or_create(&labels).inc();
        request
    });
    Ok(kube::client::ClientBuilder::try_from(config)?
        .with_layer(&layer)
        .build())
}

/// The verb of a request from its method and address: a GET is a watch (`watch=true`), a list
/// (a collection: `/api/v1/pods`, `/apis/apps/v1/namespaces/ns/statefulsets`) or a get (one
/// object, or one of its subresources).
pub fn verb(method: &http::Method, uri: &http::Uri) -> &'static str {
    match *method {
        http::Method::GET => {
            let watching = uri
                .query()
                .is_some_and(|q| q.split('&').any(|pair| pair == "watch=true" || pair == "watch=1"));
            if watching {
                "watch"
            } else if names_one_object(uri.path()) {
                "get"
            } else {
                "list"
            }
        }
        http::Method::POST => "create",
        http::Method::PUT => "update",
        http::Method::PATCH => "patch",
        http::Method::DELETE => "delete",
        _ => "other",
    }
}

/// Whether `path` names one object rather than a collection.
fn names_one_object(path: &str) -> bool {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    // `/api/v1/...` and `/apis/<group>/<version>/...`; anything else (`/version`) is no collection.
    let rest = match segments.as_slice() {
        ["api", _version, rest @ ..] => rest,
        ["apis", _group, _version, rest @ ..] => rest,
        _ => return true,
    };
    // `namespaces/<ns>/<resource>...` is scoped; `namespaces` and `namespaces/<ns>` are the
    // Namespace collection and one Namespace.
    let rest = match rest {
        ["namespaces", _namespace, scoped @ ..] if !scoped.is_empty() => scoped,
        other => other,
    };
    rest.len() >= 2
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(uri: &str) -> &'static str {
        verb(&http::Method::GET, &uri.parse().unwrap())
    }

    #[test]
    fn a_get_is_a_watch_a_list_or_a_get_by_its_address() {
        assert_eq!(get("/api/v1/pods?watch=true&resourceVersion=5"), "watch");
        assert_eq!(get("/api/v1/pods?limit=500"), "list");
        assert_eq!(get("/api/v1/namespaces/ns/pods"), "list");
        assert_eq!(get("/api/v1/namespaces/ns/pods/web-0"), "get");
        assert_eq!(get("/api/v1/namespaces/ns/pods/web-0/log"), "get");
        assert_eq!(get("/apis/apps/v1/statefulsets?labelSelector=a"), "list");
        assert_eq!(get("/apis/apps/v1/namespaces/ns/statefulsets/db"), "get");
        assert_eq!(
            get("/apis/ferry.dev/v1alpha1/namespaces/ns/volumeresizes"),
            "list"
        );
        assert_eq!(get("/api/v1/persistentvolumes/pv-1"), "get");
        assert_eq!(get("/api/v1/namespaces"), "list");
        assert_eq!(get("/api/v1/namespaces/ns"), "get");
        assert_eq!(get("/version"), "get");
        assert_eq!(get("/api/v1/nodes/n/proxy/stats/summary"), "get");
    }

    #[test]
    fn other_methods_are_their_verbs() {
        let uri: http::Uri = "/api/v1/namespaces/ns/pods".parse().unwrap();
        assert_eq!(verb(&http::Method::POST, &uri), "create");
        assert_eq!(verb(&http::Method::PUT, &uri), "update");
        assert_eq!(verb(&http::Method::PATCH, &uri), "patch");
        assert_eq!(verb(&http::Method::DELETE, &uri), "delete");
        assert_eq!(verb(&http::Method::HEAD, &uri), "other");
    }
}
