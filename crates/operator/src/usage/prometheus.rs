//! Volume usage from a Prometheus (`--usage-prometheus-url`) instead of the kubelets: for clusters
//! that forbid `nodes/proxy`. One instant query per namespace per interval covers every claim in
//! it, however many autoscalers and dry runs ask (a failed query also waits out the interval).

use super::per_key::PerKey;
use crate::Error;
use ferry_engine::autoscale::prometheus::{Sample, query, samples};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client as HttpClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Where Prometheus is and how to reach it (`ferry run --usage-prometheus-*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrometheusSettings {
    /// Its base URL, `http(s)://host:port[/path prefix]`; `/api/v1/query` is appended.
    pub url: String,
    /// A file holding a bearer token, read again for every query (tokens are rotated).
    pub bearer_token_file: Option<PathBuf>,
    /// PEM certificates to trust for an `https` URL, besides the system's.
    pub ca_file: Option<PathBuf>,
}

impl PrometheusSettings {
    /// The settings, or what is wrong with the URL.
    pub fn new(
        url: &str,
        bearer_token_file: Option<PathBuf>,
        ca_file: Option<PathBuf>,
    ) -> Result<Self, String> {
        let uri: http::Uri = url
            .parse()
            .map_err(|error| format!("--usage-prometheus-url {url:?}: {error}"))?;
        if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none() {
            return Err(format!(
                "--usage-prometheus-url {url:?}: give an http or https URL with a host, such as http://prometheus.monitoring:9090"
            ));
        }
        if uri.query().is_some() {
            return Err(format!(
                "--usage-prometheus-url {url:?}: a base URL takes no query"
            ));
        }
        Ok(PrometheusSettings {
            url: url.trim_end_matches('/').to_string(),
            bearer_token_file,
            ca_file,
        })
    }
}

/// Queries Prometheus for the usage of each namespace's claims, at most once per interval.
pub struct PrometheusUsage {
    settings: PrometheusSettings,
    http: HttpClient<HttpsConnector<HttpConnector>, Full<Bytes>>,
    answers: PerKey<Vec<Sample>>,
}

/// How long one query may take before its namespace's usage counts as unknown.
const QUERY_TIMEOUT: Duration = Duration::from_secs(10);

impl PrometheusUsage {
    /// A client for `settings`, or why it cannot be made (an unreadable CA file).
    pub fn new(settings: PrometheusSettings, interval: Duration) -> Result<Self, Error> {
        let tls = tls_config(settings.ca_file.as_ref())?;
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .build();
        Ok(PrometheusUsage {
            settings,
            http: HttpClient::builder(TokioExecutor::new()).build(connector),
            answers: PerKey::new(interval),
        })
    }

    /// The volume stats of every claim in `namespace`, at most an interval old (or why there are
    /// none).
    pub async fn samples(&self, namespace: &str) -> Result<Arc<Vec<Sample>>, String> {
        self.answers
            .of(namespace, || async {
                match tokio::time::timeout(QUERY_TIMEOUT, self.query(namespace)).await {
                    Ok(answer) => answer,
                    Err(_) => Err(format!(
                        "Prometheus took longer than {}s",
                        QUERY_TIMEOUT.as_secs()
                    )),
                }
            })
            .await
    }

    async fn query(&self, namespace: &str) -> Result<Vec<Sample>, String> {
        let body = form_urlencoded::Serializer::new(String::new())
            .append_pair("query", &query(namespace))
            .finish();
        let mut request = http::Request::post(format!("{}/api/v1/query", self.settings.url))
            .header(http::header::CONTENT_TYPE, "application/x-www-form-urlencoded");
        if let Some(file) = &self.settings.bearer_token_file {
            let token = tokio::fs::read_to_string(file)
                .await
                .map_err(|error| format!("bearer token file {}: {error}", file.display()))?;
            request = request.header(http::header::AUTHORIZATION, format!("Bearer {}", token.trim()));
        }
        let request = request
            .body(Full::new(Bytes::from(body)))
            .map_err(|error| format!("cannot build the query: {error}"))?;
        let response = self
            .http
            .request(request)
            .await
            .map_err(|error| format!("{}: {error}", self.settings.url))?;
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|error| format!("{}: reading the answer: {error}", self.settings.url))?
            .to_bytes();
        // Prometheus answers a bad query with 400 and its error in the body: read it either way.
        samples(&body).map_err(|error| format!("{} (HTTP {status}): {error}", self.settings.url))
    }
}

/// The system's roots plus `ca_file`'s certificates.
fn tls_config(ca_file: Option<&PathBuf>) -> Result<rustls::ClientConfig, Error> {
    let invalid = |why: String| Error::Invariant(format!("--usage-prometheus-ca-file: {why}"));
    let mut roots = rustls::RootCertStore::empty();
    // A system without certificates (a minimal image) still reaches an http URL or one the CA file
    // vouches for.
    roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
    if let Some(file) = ca_file {
        let pem = std::fs::read(file).map_err(|error| invalid(format!("{}: {error}", file.display())))?;
        let mut added = 0;
        for cert in rustls_pemfile_certs(&pem) {
            roots
                .add(cert)
                .map_err(|error| invalid(format!("{}: {error}", file.display())))?;
            added += 1;
        }
        if added == 0 {
            return Err(invalid(format!("{}: no PEM certificate in it", file.display())));
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| invalid(error.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(config)
}

/// The certificates of a PEM file (other sections skipped).
fn rustls_pemfile_certs(pem: &[u8]) -> Vec<rustls::pki_types::CertificateDer<'static>> {
    use rustls::pki_types::pem::PemObject;
    rustls::pki_types::CertificateDer::pem_slice_iter(pem)
        .filter_map(Result::ok)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_must_be_an_http_base_url() {
        let good = PrometheusSettings::new("http://prometheus.monitoring:9090/", None, None).unwrap();
        assert_eq!(good.url, "http://prometheus.monitoring:9090");
        let prefixed = PrometheusSettings::new("https://thanos.example/prom", None, None).unwrap();
        assert_eq!(prefixed.url, "https://thanos.example/prom");
        for bad in [
            "prometheus:9090",
            "ftp://p:9090",
            "http://",
            "http://p:9090/?x=1",
            "not a url",
        ] {
            let error = PrometheusSettings::new(bad, None, None).unwrap_err();
            assert!(error.contains("--usage-prometheus-url"), "{bad}: {error}");
        }
    }

    #[test]
    fn a_ca_file_without_certificates_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("ca.pem");
        std::fs::write(&file, "not a certificate").unwrap();
        let error = tls_config(Some(&file)).unwrap_err().to_string();
        assert!(error.contains("no PEM certificate"), "{error}");
        let missing = tls_config(Some(&dir.path().join("absent.pem")))
            .unwrap_err()
            .to_string();
        assert!(missing.contains("absent.pem"), "{missing}");
        assert!(tls_config(None).is_ok());
    }
}
