//! Ferry's admission webhooks, served over TLS by the operator: the mutating one that turns an
//! edit of a StatefulSet's volume claim templates into a VolumeResize, and the validating one
//! that refuses a VolumeResize which names something that does not exist.

pub mod config_delete;
pub mod probe;
pub mod register;
pub mod review;
pub mod server;
pub mod shared_ca;
pub mod template_check;
pub mod tls;

use crate::Error;
use crate::context::Context;
pub use register::Endpoint;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tls::{Authority, CurrentCertificate};
use tokio::task::JoinHandle;

/// Who keeps the serving certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Certificates {
    /// Ferry's own CA, made at start; renewed before expiry, `caBundle` kept by Ferry.
    SelfSigned,
    /// `tls.crt` and `tls.key` in this directory (a cert-manager Secret mounted), re-read when
    /// they change; `caBundle` kept by cert-manager's CA injector.
    Files(PathBuf),
}

#[derive(Debug, Clone)]
pub struct WebhookSettings {
    /// Where the HTTPS server listens.
    pub listen: SocketAddr,
    pub endpoint: Endpoint,
    pub certificates: Certificates,
    /// With `Certificates::SelfSigned`: keep the CA in this Secret, shared by every replica
    /// (without it each process makes its own, which suits one replica only).
    pub ca_secret: Option<crate::shared_secret::SecretRef>,
    /// The configurations an installer made (the chart): Ferry only keeps their `caBundle`.
    /// Without it Ferry registers whole configurations of its own.
    pub configuration: Option<String>,
    /// What an edit of a StatefulSet's claim templates may do (`--refuse-template-shrinks`).
    pub template_edits: ferry_engine::trigger::template_edit::TemplateEdits,
    /// Where and when the leader proves the API server calls the validating webhook (`None`: it
    /// does not).
    pub probe: Option<probe::ProbeSettings>,
}

/// How often the certificate is checked for renewal (self-signed) or change (files).
const CERTIFICATE_CHECK: Duration = Duration::from_secs(60);

fn today() -> jiff::civil::Date {
    jiff::Zoned::now().date()
}

/// A running TLS server (the webhooks', or secure metrics') and its certificate keeper; both stop
/// when this is dropped (an operator stopped mid-flight must not leave a server answering for it).
pub struct Running {
    server: JoinHandle<()>,
    keeper: JoinHandle<()>,
}

impl Running {
    pub fn new(server: JoinHandle<()>, keeper: JoinHandle<()>) -> Running {
        Running { server, keeper }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.server.abort();
        self.keeper.abort();
    }
}

/// Starts serving, then registers the webhook configurations.
pub async fn start(
    ctx: Arc<Context>,
    settings: &WebhookSettings,
    watched: &[String],
) -> Result<Running, Error> {
    let Kept {
        current,
        ca_pem: ca_bundle,
        keeper,
    } = keep_certificate(
        &ctx.client,
        &settings.certificates,
        settings.ca_secret.as_ref(),
        settings.endpoint.hosts(),
    )
    .await?;
    let config = tls::server_config(current)?;
    let listener = match tokio::net::TcpListener::bind(settings.listen).await {
        Ok(listener) => listener,
        Err(source) => {
            keeper.abort();
            return Err(Error::Http {
                addr: settings.listen.to_string(),
                source,
            });
        }
    };
    let running = Running {
        server: tokio::spawn(server::serve(listener, config, server::router(ctx.clone()))),
        keeper,
    };
    tracing::info!(listen = %settings.listen, endpoint = ?settings.endpoint, "serving admission webhooks");
    let triggers = ctx.features.enabled(crate::features::Feature::Triggers);
    match (&settings.configuration, ca_bundle.as_deref()) {
        (Some(name), Some(ca)) => register::inject_ca_bundle(&ctx.client, name, ca, triggers).await?,
        // cert-manager's CA injector keeps the installer's configurations.
        (Some(_), None) => {}
        (None, ca) => register::register(&ctx.client, &settings.endpoint, ca, watched, triggers).await?,
    }
    Ok(running)
}

/// A serving certificate and what keeps it current (renewal or reload; stop it when done).
pub struct Kept {
    pub current: Arc<CurrentCertificate>,
    /// The CA that signed it, PEM, when Ferry's own CA did (none for files another issuer keeps).
    pub ca_pem: Option<String>,
    pub keeper: JoinHandle<()>,
}

/// The serving certificate for `hosts` that `certificates` says how to get: issued by Ferry's own
/// CA (shared through `ca_secret` when given) and renewed, or read from files and re-read when they
/// change. The webhooks and the secure metrics endpoint both serve with one.
pub async fn keep_certificate(
    client: &kube::Client,
    certificates: &Certificates,
    ca_secret: Option<&crate::shared_secret::SecretRef>,
    hosts: Vec<String>,
) -> Result<Kept, Error> {
    match certificates {
        Certificates::SelfSigned => {
            let authority = match ca_secret {
                Some(secret) => shared_ca::load_or_create(client, secret, today()).await?,
                None => Authority::new(today())?,
            };
            let issued = authority.issue(&hosts, today())?;
            let current = Arc::new(CurrentCertificate::new(issued.key));
            let ca_pem = Some(authority.ca_pem());
            let keeper = tokio::spawn(renew(
                authority,
                hosts,
                issued.issued,
                issued.expires,
                current.clone(),
            ));
            Ok(Kept {
                current,
                ca_pem,
                keeper,
            })
        }
        Certificates::Files(dir) => {
            let (key, fingerprint) = tls::load_files(dir)?;
            let current = Arc::new(CurrentCertificate::new(key));
            let keeper = tokio::spawn(reload(dir.clone(), fingerprint, current.clone()));
            Ok(Kept {
                current,
                ca_pem: None,
                keeper,
            })
        }
    }
}

async fn renew(
    authority: Authority,
    hosts: Vec<String>,
    mut issued: jiff::civil::Date,
    mut expires: jiff::civil::Date,
    current: Arc<CurrentCertificate>,
) {
    loop {
        tokio::time::sleep(CERTIFICATE_CHECK).await;
        if !tls::renewal_due(issued, expires, today()) {
            continue;
        }
        match authority.issue(&hosts, today()) {
            Ok(fresh) => {
                (issued, expires) = (fresh.issued, fresh.expires);
                current.replace(fresh.key);
                tracing::info!(%expires, hosts = ?hosts, "serving certificate renewed");
            }
            Err(error) => tracing::error!(%error, hosts = ?hosts, "cannot renew a serving certificate"),
        }
    }
}

async fn reload(dir: PathBuf, mut fingerprint: Vec<u8>, current: Arc<CurrentCertificate>) {
    loop {
        tokio::time::sleep(CERTIFICATE_CHECK).await;
        match tls::load_files(&dir) {
            Ok((key, seen)) if seen != fingerprint => {
                fingerprint = seen;
                current.replace(key);
                tracing::info!(dir = %dir.display(), "serving certificate reloaded");
            }
            Ok(_) => {}
            // Mid-rotation the files may be briefly inconsistent: keep serving the current one.
            Err(error) => tracing::warn!(%error, dir = %dir.display(), "cannot reload a serving certificate"),
        }
    }
}
