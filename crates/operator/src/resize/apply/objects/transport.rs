//! A copy to another node: the pod serving the old volume on its node, the command of the movers
//! pulling from it on the new volume's node, and the key made for that copy alone.
//!
//! The key: a new authority per copy signs one certificate (server and client, name
//! `ferry-mover`) that both sides present; the authority's own key is dropped as soon as it
//! signed, so nothing can ever issue another. The Secret holding them is owned by the serving pod,
//! so it goes (garbage-collected) when that pod goes: at the row's swap, its rollback, or the
//! resize's deletion.

use super::{CopyJob, Owner, Placement, claim_volume, container_security, ferry_pod, go_signal, mount};
use super::{SIGNAL_DIR, SIGNAL_FILE};
use crate::Error;
use ferry_api::Verify;
use ferry_engine::resize::action::Pass;
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, Pod, Secret, SecretVolumeSource, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::{Resource, ResourceExt};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use std::collections::BTreeMap;

/// The `ferry.dev/mover-pass` label of a serving mover.
pub const SERVING_PASS: &str = "serve";
/// Where both sides find the copy's key.
const TLS_DIR: &str = "/tls";
/// The name both sides' certificate carries and check.
const PEER_NAME: &str = "ferry-mover";
/// How long a pulling mover retries a serving mover that does not answer yet (it has just started).
const CONNECT_WAIT_SECONDS: u32 = 60;

/// The volume of the copy's key: Secret `secret`, readable by the mover alone.
fn key_volume(secret: &str) -> (Volume, VolumeMount) {
    let volume = Volume {
        name: "tls".to_string(),
        secret: Some(SecretVolumeSource {
            secret_name: Some(secret.to_string()),
            default_mode: Some(0o400),
            ..SecretVolumeSource::default()
        }),
        ..Volume::default()
    };
    (volume, mount("tls", true))
}

/// What a serving mover serves: its claim, and the Secret with its copy's key.
pub struct Served<'a> {
    pub claim: &'a str,
    pub key: &'a str,
    /// Records what changes in the source from its start (`--track-changes`).
    pub track_changes: bool,
}

/// The pod serving `served.claim` (read only) to the movers on another node, on the node its
/// volume is attached to (its PV's node affinity places it there), even once that node is cordoned.
pub fn serving_pod(
    owner: &Owner,
    name: &str,
    placement: &Placement,
    served: Served,
    capabilities: &[String],
) -> Pod {
    let (key, key_mount) = key_volume(served.key);
    let command = [
        "ferry-mover",
        "serve",
        "--source",
        "/source",
        "--tls",
        TLS_DIR,
        "--listen",
    ]
    .into_iter()
    .map(String::from)
    .chain([format!("0.0.0.0:{}", ferry_engine::names::SERVING_PORT)])
    .chain(served.track_changes.then(|| "--track-changes".to_string()))
    .collect();
    let container = Container {
        name: super::MOVER_CONTAINER.to_string(),
        command: Some(command),
        ports: Some(vec![ContainerPort {
            name: Some("copy".to_string()),
            container_port: i32::from(ferry_engine::names::SERVING_PORT),
            ..ContainerPort::default()
        }]),
        resources: placement.resources.clone(),
        security_context: Some(container_security(capabilities)),
        volume_mounts: Some(vec![mount("source", true), key_mount]),
        ..Container::default()
    };
    ferry_pod(
        owner,
        name,
        SERVING_PASS,
        &placement.tolerating_cordon(),
        container,
        vec![claim_volume("source", served.claim, true), key],
    )
}

/// What a mover pulling from another node mounts: the new volume, the copy's key (Secret
/// `secret`, the serving mover's), and, for the final pass, its go.
pub fn pulling_volumes(copy: &CopyJob, secret: &str) -> (Vec<VolumeMount>, Vec<Volume>) {
    let (key, key_mount) = key_volume(secret);
    let mut mounts = vec![mount("target", false), key_mount];
    let mut volumes = vec![claim_volume("target", copy.target, false), key];
    go_signal(copy, &mut mounts, &mut volumes);
    (mounts, volumes)
}

/// The command of a mover pulling `copy` from the serving mover at `from`.
pub fn pull_command(copy: &CopyJob, from: &str) -> Vec<String> {
    // Each file written is read back and checked against the hash of the source's content as the
    // serving mover read it, and every entry's metadata; `Metadata` gets that too (no cheaper
    // check exists across the network).
    let verify = match copy.verify {
        Verify::None => "none",
        Verify::Metadata | Verify::Checksum => "checksum",
    };
    let mut command: Vec<String> = ["ferry-mover", "pull", "--from", from, "--tls", TLS_DIR]
        .into_iter()
        .chain([
            "--target",
            "/target",
            "--delete",
            "--verify",
            verify,
            "--progress",
            "json",
        ])
        .map(String::from)
        .collect();
    command.extend(["--connect-wait".to_string(), CONNECT_WAIT_SECONDS.to_string()]);
    if let Some(limit) = copy.bandwidth_limit {
        command.extend(["--bwlimit".to_string(), limit.max(1).to_string()]);
    }
    // Each pass marks its start on a tracking serving mover; the final one reads only what
    // changed since the last that passed (or walks whole, saying why).
    let tracked = copy.pull.as_ref().is_some_and(|pull| pull.tracked);
    if tracked {
        command.push("--track-changes".to_string());
        if copy.pass == Pass::Final {
            command.push("--changes".to_string());
        }
    }
    // The final pass begins on its go, fails if something still writes to the source (as a local
    // one does), and tells the serving mover to stop once it succeeded.
    if copy.pass == Pass::Final {
        command.push("--strict".to_string());
        command.push("--stop-server".to_string());
        command.extend(["--wait-for".to_string(), format!("{SIGNAL_DIR}/{SIGNAL_FILE}")]);
    }
    command
}

/// A new authority's certificate, and one certificate and key it signed for both movers of one
/// copy (`ca.crt`, `tls.crt`, `tls.key`); the authority's key is dropped here.
pub fn copy_key() -> Result<BTreeMap<String, String>, Error> {
    let failed = |e: rcgen::Error| Error::Tls(format!("making a copy's key: {e}"));
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(failed)?;
    params.distinguished_name.push(DnType::CommonName, "ferry copy");
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
    let authority =
        CertifiedIssuer::self_signed(params, KeyPair::generate().map_err(failed)?).map_err(failed)?;
    let mut leaf = CertificateParams::new(vec![PEER_NAME.to_string()]).map_err(failed)?;
    leaf.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    let key = KeyPair::generate().map_err(failed)?;
    let cert = leaf.signed_by(&key, &authority).map_err(failed)?;
    Ok([
        ("ca.crt".to_string(), authority.pem()),
        ("tls.crt".to_string(), cert.pem()),
        ("tls.key".to_string(), key.serialize_pem()),
    ]
    .into())
}

/// The Secret `name` holding `key` for the copy served by `serving` (owned by it, so it is deleted
/// with it).
pub fn key_secret(serving: &Pod, name: &str, key: BTreeMap<String, String>) -> Result<Secret, Error> {
    let owner: OwnerReference = serving
        .controller_owner_ref(&())
        .map(|mut owner| {
            // Not its controller: the resize controls its objects; the pod only takes it along
            // (and blocks nothing: that would need the pod's finalizers).
            owner.controller = None;
            owner.block_owner_deletion = None;
            owner
        })
        .ok_or_else(|| Error::Invariant(format!("serving mover {} has no UID yet", serving.name_any())))?;
    Ok(Secret {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: serving.metadata.labels.clone(),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        string_data: Some(key),
        type_: Some("kubernetes.io/tls".to_string()),
        ..Secret::default()
    })
}
