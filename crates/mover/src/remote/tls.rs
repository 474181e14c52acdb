//! Mutual TLS between the two movers of a cross-node copy. Each holds a certificate issued by an
//! authority that exists for that one resize (`ca.crt`, `tls.crt`, `tls.key` in one directory: a
//! `kubernetes.io/tls` Secret with the authority's certificate beside it) and trusts that authority
//! alone: a peer with another resize's certificate, or with none, fails the handshake.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, RootCertStore, ServerConfig};

use crate::error::MoverError;

/// The DNS name both movers' certificates carry and the client checks: the serving mover is
/// reached by pod IP, which is not known when the certificates are issued.
pub const PEER_NAME: &str = "ferry-mover";

/// The certificate files of one side.
pub struct TlsFiles {
    authority: Vec<CertificateDer<'static>>,
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
}

fn refused(what: &str, dir: &Path, e: impl std::fmt::Display) -> MoverError {
    MoverError::BadInput(format!("{what} in {}: {e}", dir.display()))
}

impl TlsFiles {
    /// Reads `ca.crt`, `tls.crt` and `tls.key` from `dir`.
    pub fn load(dir: &Path) -> Result<TlsFiles, MoverError> {
        let certs = |name: &str| -> Result<Vec<CertificateDer<'static>>, MoverError> {
            let path = dir.join(name);
            let certs = CertificateDer::pem_file_iter(&path)
                .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                .map_err(|e| refused(name, dir, e))?;
            if certs.is_empty() {
                return Err(refused(name, dir, "no certificate"));
            }
            Ok(certs)
        };
        let authority = certs("ca.crt")?;
        let chain = certs("tls.crt")?;
        let key =
            PrivateKeyDer::from_pem_file(dir.join("tls.key")).map_err(|e| refused("tls.key", dir, e))?;
        Ok(TlsFiles {
            authority,
            chain,
            key,
        })
    }

    fn roots(&self) -> Result<Arc<RootCertStore>, MoverError> {
        let mut roots = RootCertStore::empty();
        for cert in &self.authority {
            roots
                .add(cert.clone())
                .map_err(|e| MoverError::BadInput(format!("ca.crt: {e}")))?;
        }
        Ok(Arc::new(roots))
    }

    /// The serving side: it asks for the client's certificate and refuses any other authority's.
    pub fn server(&self) -> Result<Arc<ServerConfig>, MoverError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = WebPkiClientVerifier::builder_with_provider(self.roots()?, provider.clone())
            .build()
            .map_err(|e| MoverError::BadInput(format!("client verification: {e}")))?;
        let config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| MoverError::Other(format!("TLS versions: {e}")))?
            .with_client_cert_verifier(verifier)
            .with_single_cert(self.chain.clone(), self.key.clone_key())
            .map_err(|e| MoverError::BadInput(format!("tls.crt and tls.key: {e}")))?;
        Ok(Arc::new(config))
    }

    /// The pulling side: it trusts the resize's authority alone and shows its own certificate.
    pub fn client(&self) -> Result<Arc<ClientConfig>, MoverError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| MoverError::Other(format!("TLS versions: {e}")))?
            .with_root_certificates(self.roots()?)
            .with_client_auth_cert(self.chain.clone(), self.key.clone_key())
            .map_err(|e| MoverError::BadInput(format!("tls.crt and tls.key: {e}")))?;
        Ok(Arc::new(config))
    }
}

/// The name the client checks the server's certificate against.
pub fn peer_name() -> Result<ServerName<'static>, MoverError> {
    ServerName::try_from(PEER_NAME).map_err(|e| MoverError::Other(format!("{PEER_NAME}: {e}")))
}
