//! The webhook's serving certificate: issued by the operator's own CA (the CA goes into the webhook
//! configurations' `caBundle`) and renewed before it expires, or read from files another issuer
//! keeps current (cert-manager), re-read when they change. Either way the TLS server asks
//! `CurrentCertificate` on every handshake, so a renewal needs no restart.

use crate::Error;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
    KeyPair, KeyUsagePurpose,
};
use std::sync::{Arc, RwLock};
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::rustls::server::{ClientHello, ResolvesServerCert};
use tokio_rustls::rustls::sign::CertifiedKey;

/// How long a serving certificate Ferry issues is valid, and the CA that signs it.
pub const LEAF_DAYS: i64 = 90;
const CA_DAYS: i64 = 3650;

fn tls_error(what: &str, error: impl std::fmt::Display) -> Error {
    Error::Tls(format!("{what}: {error}"))
}

/// The certificate handed out on every TLS handshake; swapped in place on renewal.
#[derive(Debug)]
pub struct CurrentCertificate(RwLock<Arc<CertifiedKey>>);

impl CurrentCertificate {
    pub fn new(key: CertifiedKey) -> Self {
        CurrentCertificate(RwLock::new(Arc::new(key)))
    }

    pub fn replace(&self, key: CertifiedKey) {
        // A poisoned lock only means a panic elsewhere mid-swap; the value is still whole.
        let mut current = self.0.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        *current = Arc::new(key);
    }

    fn get(&self) -> Arc<CertifiedKey> {
        self.0
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }
}

impl ResolvesServerCert for CurrentCertificate {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.get())
    }
}

/// The rustls server configuration around the current certificate (HTTP/2 and HTTP/1.1).
pub fn server_config(current: Arc<CurrentCertificate>) -> Result<Arc<rustls::ServerConfig>, Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| tls_error("TLS versions", e))?
        .with_no_client_auth()
        .with_cert_resolver(current);
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

fn certified(chain: Vec<CertificateDer<'static>>, key: &PrivateKeyDer<'_>) -> Result<CertifiedKey, Error> {
    let signer =
        rustls::crypto::ring::sign::any_supported_type(key).map_err(|e| tls_error("private key", e))?;
    let key = CertifiedKey::new(chain, signer);
    // Mid-rotation a certificate and a key can be of different pairs: never serve that.
    key.keys_match()
        .map_err(|e| tls_error("the private key does not match the certificate", e))?;
    Ok(key)
}

/// rcgen's time for a civil date (its time type is not re-exported, so this stays a macro).
macro_rules! date {
    ($day:expr $(,)?) => {{
        let day: jiff::civil::Date = $day;
        rcgen::date_time_ymd(i32::from(day.year()), day.month() as u8, day.day() as u8)
    }};
}

/// Ferry's own CA: made when the operator starts, or read back from the Secret the replicas
/// share (so every replica's serving certificate chains to the one `caBundle`). It signs the
/// serving certificates.
pub struct Authority {
    issuer: Issuer<'static, KeyPair>,
    ca_pem: String,
    ca_der: CertificateDer<'static>,
    key_pem: String,
}

/// A serving certificate and the day it was issued and expires (renewal is planned on days).
pub struct Issued {
    pub key: CertifiedKey,
    pub issued: jiff::civil::Date,
    pub expires: jiff::civil::Date,
}

/// The CA's subject and key usages: the same whether the CA is made or read back, because a
/// serving certificate names its issuer by them.
fn ca_params(today: jiff::civil::Date) -> Result<CertificateParams, Error> {
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(|e| tls_error("CA", e))?;
    params
        .distinguished_name
        .push(DnType::CommonName, "Ferry webhook CA");
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params.not_before = date!(today.yesterday().map_err(|e| tls_error("date", e))?);
    params.not_after = date!(
        today
            .checked_add(jiff::Span::new().days(CA_DAYS))
            .map_err(|e| tls_error("date", e))?,
    );
    Ok(params)
}

impl Authority {
    pub fn new(today: jiff::civil::Date) -> Result<Self, Error> {
        let key = KeyPair::generate().map_err(|e| tls_error("CA key", e))?;
        let key_pem = key.serialize_pem();
        let issuer = CertifiedIssuer::self_signed(ca_params(today)?, key)
            .map_err(|e| tls_error("CA certificate", e))?;
        let ca_pem = issuer.pem();
        Authority::from_pem(&ca_pem, &key_pem, today)
    }

    /// The CA stored earlier (`ca_pem`, `key_pem` as [`Authority::ca_pem`] and
    /// [`Authority::key_pem`] gave them).
    pub fn from_pem(ca_pem: &str, key_pem: &str, today: jiff::civil::Date) -> Result<Self, Error> {
        let ca_der =
            CertificateDer::from_pem_slice(ca_pem.as_bytes()).map_err(|e| tls_error("CA certificate", e))?;
        let key = KeyPair::from_pem(key_pem).map_err(|e| tls_error("CA key", e))?;
        Ok(Authority {
            issuer: Issuer::new(ca_params(today)?, key),
            ca_pem: ca_pem.to_string(),
            ca_der,
            key_pem: key_pem.to_string(),
        })
    }

    /// The CA certificate, PEM: the webhook configurations' `caBundle`.
    pub fn ca_pem(&self) -> String {
        self.ca_pem.clone()
    }

    /// The CA's private key, PEM, for the Secret the replicas share.
    pub fn key_pem(&self) -> String {
        self.key_pem.clone()
    }

    /// A serving certificate for `hosts` (DNS names or IP addresses), valid `LEAF_DAYS` from today.
    pub fn issue(&self, hosts: &[String], today: jiff::civil::Date) -> Result<Issued, Error> {
        let mut params =
            CertificateParams::new(hosts.to_vec()).map_err(|e| tls_error("serving certificate", e))?;
        params
            .distinguished_name
            .push(DnType::CommonName, hosts.first().cloned().unwrap_or_default());
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let expires = today
            .checked_add(jiff::Span::new().days(LEAF_DAYS))
            .map_err(|e| tls_error("date", e))?;
        params.not_before = date!(today.yesterday().map_err(|e| tls_error("date", e))?);
        params.not_after = date!(expires);
        let key = KeyPair::generate().map_err(|e| tls_error("serving key", e))?;
        let cert = params
            .signed_by(&key, &self.issuer)
            .map_err(|e| tls_error("serving certificate", e))?;
        let private = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        Ok(Issued {
            key: certified(vec![cert.der().clone(), self.ca_der.clone()], &private)?,
            issued: today,
            expires,
        })
    }
}

/// Renew once two thirds of the validity have passed, so a missed check or two still renews in
/// time.
pub fn renewal_due(issued: jiff::civil::Date, expires: jiff::civil::Date, today: jiff::civil::Date) -> bool {
    let lifetime = (expires - issued).get_days();
    let age = (today - issued).get_days();
    age * 3 >= lifetime * 2
}

/// A certificate and key another issuer keeps in `dir` (`tls.crt`, `tls.key`, as a
/// `kubernetes.io/tls` Secret mounts them).
pub fn load_files(dir: &std::path::Path) -> Result<(CertifiedKey, Vec<u8>), Error> {
    let cert_path = dir.join("tls.crt");
    let key_path = dir.join("tls.key");
    let cert_pem = std::fs::read(&cert_path).map_err(|e| tls_error(&cert_path.display().to_string(), e))?;
    let chain = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| tls_error(&cert_path.display().to_string(), e))?;
    if chain.is_empty() {
        return Err(tls_error(
            &cert_path.display().to_string(),
            "no certificate in it",
        ));
    }
    let key_pem = std::fs::read(&key_path).map_err(|e| tls_error(&key_path.display().to_string(), e))?;
    let key =
        PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| tls_error(&key_path.display().to_string(), e))?;
    let mut fingerprint = cert_pem;
    fingerprint.extend_from_slice(&key_pem);
    Ok((certified(chain, &key)?, fingerprint))
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::civil::date;

    #[test]
    fn renewal_is_due_after_two_thirds_of_the_validity() {
        let issued = date(2026, 1, 1);
        let expires = date(2026, 4, 1); // 90 days
        assert!(!renewal_due(issued, expires, date(2026, 1, 1)));
        assert!(!renewal_due(issued, expires, date(2026, 2, 28)));
        assert!(renewal_due(issued, expires, date(2026, 3, 2)));
        assert!(renewal_due(issued, expires, date(2026, 5, 1)));
    }

    #[test]
    fn files_another_issuer_keeps_are_loaded_and_garbage_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert!(load_files(dir.path()).is_err(), "no files");
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(vec!["ferry.ferry-system.svc".to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        std::fs::write(dir.path().join("tls.crt"), cert.pem()).unwrap();
        std::fs::write(dir.path().join("tls.key"), key.serialize_pem()).unwrap();
        let (loaded, fingerprint) = load_files(dir.path()).unwrap();
        assert_eq!(loaded.cert.len(), 1);
        // Half a rotation (a new key, the old certificate) is refused: the reloader keeps the
        // current one. The whole rotation changes the fingerprint the reloader compares.
        let other = KeyPair::generate().unwrap();
        std::fs::write(dir.path().join("tls.key"), other.serialize_pem()).unwrap();
        let error = load_files(dir.path()).err().unwrap().to_string();
        assert!(error.contains("does not match"), "{error}");
        let renewed = CertificateParams::new(vec!["ferry.ferry-system.svc".to_string()])
            .unwrap()
            .self_signed(&other)
            .unwrap();
        std::fs::write(dir.path().join("tls.crt"), renewed.pem()).unwrap();
        assert_ne!(load_files(dir.path()).unwrap().1, fingerprint);
        std::fs::write(dir.path().join("tls.crt"), "not a certificate").unwrap();
        let error = load_files(dir.path()).err().unwrap().to_string();
        assert!(error.contains("tls.crt"), "{error}");
    }

    #[test]
    fn the_authority_issues_a_certificate_for_ip_and_dns_names() {
        let authority = Authority::new(date(2026, 11, 23)).unwrap();
        assert!(authority.ca_pem().starts_with("-----BEGIN CERTIFICATE-----"));
        let issued = authority
            .issue(
                &["127.0.0.1".into(), "ferry.ferry-system.svc".into()],
                date(2026, 11, 23),
            )
            .unwrap();
        assert_eq!(issued.key.cert.len(), 2);
        assert_eq!(issued.expires, date(2027, 2, 21));
    }
}
