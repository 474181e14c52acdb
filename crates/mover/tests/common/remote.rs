//! Helpers of the cross-node tests: a resize's certificate authority, a `serve` process, and
//! `pull` runs against it.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};

use super::{Started, bin, run, start};
use ferry_mover::remote::tls::PEER_NAME;

/// One resize's authority: it issues both movers' certificates.
pub struct Authority(CertifiedIssuer<'static, KeyPair>);

impl Authority {
    pub fn new(name: &str) -> Authority {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
        Authority(CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap())
    }

    /// A directory with `ca.crt`, `tls.crt` and `tls.key` for one mover.
    pub fn issue(&self, dir: &Path) -> PathBuf {
        let mut params = CertificateParams::new(vec![PEER_NAME.to_string()]).unwrap();
        params.distinguished_name.push(DnType::CommonName, PEER_NAME);
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.0).unwrap();
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("ca.crt"), self.0.pem()).unwrap();
        std::fs::write(dir.join("tls.crt"), cert.pem()).unwrap();
        std::fs::write(dir.join("tls.key"), key.serialize_pem()).unwrap();
        dir.to_path_buf()
    }
}

/// A `serve` process and the address it listens on.
pub struct Server {
    pub process: Started,
    pub address: String,
}

impl Server {
    pub fn start(source: &Path, tls: &Path) -> Server {
        Server::start_at("127.0.0.1:0", source, tls)
    }

    pub fn start_at(listen: &str, source: &Path, tls: &Path) -> Server {
        Server::start_with(listen, source, tls, &[])
    }

    pub fn start_with(listen: &str, source: &Path, tls: &Path, env: &[(&str, &str)]) -> Server {
        Server::start_args(listen, source, tls, &[], env)
    }

    /// A server that tracks changes (`--track-changes`), with the test hooks `env` sets.
    pub fn tracking(source: &Path, tls: &Path, env: &[(&str, &str)]) -> Server {
        Server::start_args("127.0.0.1:0", source, tls, &["--track-changes"], env)
    }

    pub fn start_args(
        listen: &str,
        source: &Path,
        tls: &Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Server {
        let mut command = Command::new(bin());
        command.envs(env.iter().copied());
        command
            .args(["serve", "--listen", listen, "--source"])
            .arg(source)
            .arg("--tls")
            .arg(tls)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut process = start(&mut command);
        let mut line = String::new();
        BufReader::new(process.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        let listening: serde_json::Value = serde_json::from_str(&line).unwrap_or_else(|_| panic!("{line:?}"));
        let address = listening["listening"].as_str().unwrap().to_string();
        Server { process, address }
    }

    /// Waits for the server's end: its exit code, its report and its stderr.
    pub fn end(self) -> (i32, serde_json::Value, String) {
        let out = self.process.into_child().wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let report = serde_json::from_str(stdout.trim()).unwrap_or(serde_json::Value::Null);
        (
            out.status.code().unwrap_or(-1),
            report,
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

/// Runs `ferry-mover pull`: (exit code, parsed result, stderr).
pub fn pull(server: &Server, tls: &Path, target: &Path, extra: &[&str]) -> (i32, serde_json::Value, String) {
    let mut args = vec![
        "pull",
        "--from",
        &server.address,
        "--tls",
        tls.to_str().unwrap(),
        "--target",
        target.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let (code, out, err) = run(&args, &[]);
    // Progress lines, then the result.
    let last = out.lines().last().unwrap_or_default();
    let result = serde_json::from_str(last).unwrap_or(serde_json::Value::Null);
    (code, result, err)
}
