//! The kubelet's log endpoint for the pods the executor runs: the API server proxies
//! `pods/log` to `https://<node InternalIP>:<kubeletEndpoint port>/containerLogs/...`, and every
//! fake node points here. Serves what the process wrote to stdout and stderr, honouring
//! `tailLines` and `limitBytes`; `follow` returns what there is so far.

use crate::Error;
use crate::executor::output_log;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::routing::get;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use k8s_openapi::api::core::v1::Pod;
use kube::{Api, Client, ResourceExt};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

#[derive(Clone)]
struct Kubelet {
    client: Client,
    work_dir: PathBuf,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LogQuery {
    tail_lines: Option<usize>,
    limit_bytes: Option<usize>,
}

/// Serves the log endpoint on `address` with the given serving certificate until the process ends.
pub async fn serve(
    client: Client,
    work_dir: PathBuf,
    address: SocketAddr,
    cert_file: PathBuf,
    key_file: PathBuf,
) -> Result<(), Error> {
    let tls = tls_config(&cert_file, &key_file)?;
    let acceptor = TlsAcceptor::from(Arc::new(tls));
    let listener = TcpListener::bind(address)
        .await
        .map_err(|e| Error::io(address, e))?;
    let app = Router::new()
        .route(
            "/containerLogs/{namespace}/{pod}/{container}",
            get(container_logs),
        )
        .with_state(Kubelet { client, work_dir });
    tracing::info!(%address, "serving container logs");
    loop {
        let (tcp, _) = listener.accept().await.map_err(|e| Error::io(address, e))?;
        let (acceptor, app) = (acceptor.clone(), app.clone());
        tokio::spawn(async move {
            match acceptor.accept(tcp).await {
                Ok(stream) => {
                    let service = TowerToHyperService::new(app);
                    if let Err(error) = auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), service)
                        .await
                    {
                        tracing::debug!(%error, "log connection ended");
                    }
                }
                Err(error) => tracing::debug!(%error, "TLS handshake failed"),
            }
        });
    }
}

fn tls_config(
    cert_file: &std::path::Path,
    key_file: &std::path::Path,
) -> Result<rustls::ServerConfig, Error> {
    let setup =
        |what: &str, error: &dyn std::fmt::Display| Error::Setup(format!("kubelet TLS {what}: {error}"));
    let certs = CertificateDer::pem_file_iter(cert_file)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| setup("certificate", &e))?;
    let key = PrivateKeyDer::from_pem_file(key_file).map_err(|e| setup("key", &e))?;
    rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| setup("protocols", &e))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| setup("configuration", &e))
}

async fn container_logs(
    State(kubelet): State<Kubelet>,
    Path((namespace, pod, _container)): Path<(String, String, String)>,
    Query(query): Query<LogQuery>,
) -> Result<String, (StatusCode, String)> {
    let pods: Api<Pod> = Api::namespaced(kubelet.client.clone(), &namespace);
    let found = pods
        .get_opt(&pod)
        .await
        .map_err(|e| (StatusCode::BAD_GATEWAY, e.to_string()))?
        .ok_or((StatusCode::NOT_FOUND, format!("pod {namespace}/{pod} not found")))?;
    let path = output_log(&kubelet.work_dir, &found.uid().unwrap_or_default());
    let text = tokio::fs::read(&path).await.map_err(|_| {
        (
            StatusCode::NOT_FOUND,
            format!("no log for {namespace}/{pod} (not started here)"),
        )
    })?;
    Ok(select(
        &String::from_utf8_lossy(&text),
        query.tail_lines,
        query.limit_bytes,
    ))
}

/// The last `tail_lines` complete lines, then at most `limit_bytes` bytes of them, as the kubelet does.
fn select(text: &str, tail_lines: Option<usize>, limit_bytes: Option<usize>) -> String {
    let mut out = match tail_lines {
        Some(n) => {
            let lines: Vec<&str> = text.split_inclusive('\n').collect();
            lines[lines.len().saturating_sub(n)..].concat()
        }
        None => text.to_string(),
    };
    if let Some(limit) = limit_bytes
        && out.len() > limit
    {
        let mut cut = limit;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::select;

    #[test]
    fn tail_and_limit_like_the_kubelet() {
        let text = "one\ntwo\nthree\n";
        assert_eq!(select(text, Some(1), None), "three\n");
        assert_eq!(select(text, Some(2), None), "two\nthree\n");
        assert_eq!(select(text, Some(9), None), text);
        assert_eq!(select(text, None, Some(5)), "one\nt");
        assert_eq!(select("", Some(1), None), "");
    }
}
