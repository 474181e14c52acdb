//! Cross-node copies between two mover processes over loopback: `serve` on the source, `pull`
//! on the target, mutual TLS with a per-resize authority. The tree is checked by the same
//! independent oracle as a local copy (find, getfattr, getfacl, sha256sum, stat).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test] fns

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;

use common::remote::*;
use common::*;
use ferry_mover::remote::tls::{PEER_NAME, TlsFiles};
use ferry_mover::remote::wire::{self, Reply, Request};
use rustls::pki_types::pem::PemObject;

#[test]
fn a_tree_crosses_between_two_movers_with_everything_kept_and_the_next_pass_fetches_what_changed() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
    rich_tree(&src);
    let authority = Authority::new("resize one");
    let server = Server::start(&src, &authority.issue(&tmp.path().join("source-tls")));
    let client = authority.issue(&tmp.path().join("target-tls"));

    let (code, first, err) = pull(&server, &client, &dst, &["--verify", "none"]);
    assert_eq!(code, 0, "stderr: {err}");
    assert_same_tree(&src, &dst);
    assert!(blocks(&dst.join("sparse.img")) < 1024, "sparse.img was filled");
    let copied = first["bytesCopied"].as_u64().unwrap();
    assert!(
        copied < first["bytes"].as_u64().unwrap() && copied > 70 << 20,
        "{first}"
    );
    assert_eq!(
        first["digest"],
        ferry_mover::digest(&dst).unwrap().metadata_digest.as_str()
    );

    // One file changed and one added: the next pass fetches those two, verifies and stops the server.
    let changed = rel_paths(&src)
        .into_iter()
        .find(|p| {
            src.join(p).is_file()
                && !src.join(p).is_symlink()
                && std::fs::metadata(src.join(p)).unwrap().len() > 0
        })
        .unwrap();
    append(&src.join(&changed), b"one more line\n");
    write(&src.join("added.txt"), b"new on the source\n");
    let (code, second, err) = pull(&server, &client, &dst, &["--stop-server", "--verify", "full"]);
    assert_eq!(code, 0, "stderr: {err}");
    assert_same_tree(&src, &dst);
    assert_eq!(second["verify"], "full");
    assert_eq!(second["filesCopied"], 2, "{second}");
    let (code, served, err) = server.end();
    assert_eq!(code, 0, "stderr: {err}");
    assert_eq!(served["refused"], 0, "{served}");
    assert!(served["connections"].as_u64().unwrap() >= 2, "{served}");
}

#[test]
fn a_mover_with_another_resizes_certificate_or_none_is_refused_and_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
    write(&src.join("secret.txt"), b"only for this resize\n");
    let ours = Authority::new("this resize");
    let server = Server::start(&src, &ours.issue(&tmp.path().join("source-tls")));

    // Another resize's certificate.
    let theirs = Authority::new("another resize").issue(&tmp.path().join("other-tls"));
    let (code, _, err) = pull(&server, &theirs, &dst, &[]);
    assert_eq!(code, 7, "stderr: {err}");
    assert!(!dst.exists(), "a refused pull made its target");

    // No certificate at all: a TLS client that trusts the server but shows nothing.
    let roots = {
        let mut roots = rustls::RootCertStore::empty();
        for cert in
            rustls::pki_types::CertificateDer::pem_file_iter(tmp.path().join("source-tls/ca.crt")).unwrap()
        {
            roots.add(cert.unwrap()).unwrap();
        }
        roots
    };
    let anonymous =
        rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
    let answer = ask_raw(&server.address, Arc::new(anonymous), &Request::Tree);
    assert!(
        answer.is_err(),
        "a client without a certificate was answered: {answer:?}"
    );

    // Not TLS at all: the server closes the connection once it counted it refused.
    let mut plain = TcpStream::connect(&server.address).unwrap();
    let _ = plain.write_all(b"GET / HTTP/1.1\r\n\r\n");
    let _ = std::io::Read::read_to_end(&mut plain, &mut Vec::new());

    // Our own certificate is still served, never a path outside the source, and stops the server.
    let own = TlsFiles::load(&ours.issue(&tmp.path().join("target-tls")))
        .unwrap()
        .client()
        .unwrap();
    let outside = ask_raw(
        &server.address,
        own.clone(),
        &Request::Read {
            rel: PathBuf::from("../src/secret.txt"),
        },
    );
    assert!(
        matches!(outside, Ok(Reply::Failed { vanished: false, .. })),
        "{outside:?}"
    );
    let inside = ask_raw(
        &server.address,
        own.clone(),
        &Request::Read {
            rel: PathBuf::from("secret.txt"),
        },
    );
    assert!(matches!(inside, Ok(Reply::Data { at: 0, len: 21 })), "{inside:?}");
    assert!(matches!(
        ask_raw(&server.address, own, &Request::Done),
        Ok(Reply::End { .. })
    ));
    let (code, served, err) = server.end();
    assert_eq!(code, 0, "stderr: {err}");
    // The two refused above are counted before they learn it; the pull with another resize's
    // certificate refused the server itself (its alert reaches the server as it exits).
    let refused = served["refused"].as_u64().unwrap();
    assert!((2..=3).contains(&refused), "{served}\n{err}");
    assert!(err.contains("refused"), "{err}");
}

/// One request on a fresh connection with `config`; its first reply, or why there is none.
fn ask_raw(address: &str, config: Arc<rustls::ClientConfig>, request: &Request) -> Result<Reply, String> {
    let tcp = TcpStream::connect(address).map_err(|e| e.to_string())?;
    let name = rustls::pki_types::ServerName::try_from(PEER_NAME).unwrap();
    let conn = rustls::ClientConnection::new(config, name).map_err(|e| e.to_string())?;
    let mut stream = rustls::StreamOwned::new(conn, tcp);
    wire::send(&mut stream, request).map_err(|e| e.to_string())?;
    stream.flush().map_err(|e| e.to_string())?;
    match wire::receive::<Reply>(&mut stream) {
        Ok(Some(reply)) => Ok(reply),
        Ok(None) => Err("closed".into()),
        Err(e) => Err(e.to_string()),
    }
}

#[test]
fn a_server_without_its_source_or_a_pull_with_no_server_fails_clearly() {
    let tmp = tempfile::tempdir().unwrap();
    let tls = Authority::new("bad input").issue(&tmp.path().join("tls"));
    let missing = tmp.path().join("missing");
    let (code, _, err) = run(
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--source",
            missing.to_str().unwrap(),
            "--tls",
            tls.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no such directory"), "{err}");

    // A port nothing listens on (bound, then let go).
    let free = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string();
    let dst = tmp.path().join("dst");
    let (code, _, err) = run(
        &[
            "pull",
            "--from",
            &free,
            "--tls",
            tls.to_str().unwrap(),
            "--target",
            dst.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 7, "{err}");
    assert!(err.contains(&format!("connecting to {free}")), "{err}");
    assert!(!dst.exists());

    let empty = tmp.path().join("no-certificates");
    std::fs::create_dir_all(&empty).unwrap();
    let (code, _, err) = run(
        &[
            "pull",
            "--from",
            &free,
            "--tls",
            empty.to_str().unwrap(),
            "--target",
            dst.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("ca.crt"), "{err}");
}

#[test]
fn a_large_file_changed_in_place_sends_only_the_pieces_that_differ() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
    let piece = ferry_mover::PIECE as usize;
    write(&src.join("segment"), &pattern(64 * piece, 3));
    let authority = Authority::new("delta");
    let server = Server::start(&src, &authority.issue(&tmp.path().join("source-tls")));
    let client = authority.issue(&tmp.path().join("target-tls"));
    let (code, first, err) = pull(&server, &client, &dst, &[]);
    assert_eq!(code, 0, "stderr: {err}");
    assert_eq!(first["bytesCopied"], 64 * piece, "{first}");
    let inode = ino(&dst.join("segment"));

    // Two pages rewritten in pieces 5 and 6 (adjacent) and one in piece 40, and the file grows by
    // half a piece, as a database's segment does.
    {
        use std::os::unix::fs::FileExt;
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(src.join("segment"))
            .unwrap();
        f.write_all_at(&[0xAB; 8192], (6 * piece - 4096) as u64).unwrap();
        f.write_all_at(&[0xCD; 8192], (40 * piece) as u64).unwrap();
        f.write_all_at(&[0xEF; 1], (64 * piece + piece / 2 - 1) as u64)
            .unwrap();
    }
    let (code, second, err) = pull(&server, &client, &dst, &["--stop-server"]);
    assert_eq!(code, 0, "stderr: {err}");
    assert_same_tree(&src, &dst);
    assert_eq!(
        ino(&dst.join("segment")),
        inode,
        "the file was rewritten, not updated in place"
    );
    // Written: the two rewritten pages' blocks, and the grown tail's data (its hole stays one).
    let written = second["bytesCopied"].as_u64().unwrap() as usize;
    assert!(
        (2 * 8192 + 1..=2 * 8192 + piece / 2).contains(&written),
        "{second}"
    );
    assert_eq!(second["filesCopied"], 1, "{second}");
    let (code, served, err) = server.end();
    assert_eq!(code, 0, "stderr: {err}");
    // Sent: the first pull's whole file, then the three pieces that differ and the tail's data.
    let sent = served["bytesSent"].as_u64().unwrap() as usize - 64 * piece;
    assert!(
        (3 * piece + 1..=3 * piece + piece / 2).contains(&sent),
        "{served}"
    );
}

#[test]
fn a_file_that_lands_otherwise_than_the_source_fails_the_pull_and_is_not_left_in_place() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
    write(&src.join("a/ok.txt"), b"fine\n");
    write(
        &src.join("a/bad.txt"),
        b"this one is corrupted after it is written\n",
    );
    let authority = Authority::new("verify");
    let server = Server::start(&src, &authority.issue(&tmp.path().join("source-tls")));
    let client = authority.issue(&tmp.path().join("target-tls"));
    let (code, out, err) = run(
        &[
            "pull",
            "--from",
            &server.address,
            "--tls",
            client.to_str().unwrap(),
            "--target",
            dst.to_str().unwrap(),
        ],
        &[("FERRY_MOVER_TEST_CORRUPT", "a/bad.txt")],
    );
    assert_eq!(code, 3, "stdout: {out}\nstderr: {err}");
    assert!(
        err.contains("a/bad.txt (content differs from the source's after the copy)"),
        "{err}"
    );
    assert!(
        !dst.join("a/bad.txt").exists(),
        "the corrupted copy was left in place"
    );
    assert_eq!(std::fs::read(dst.join("a/ok.txt")).unwrap(), b"fine\n");

    // The next pass copies it (and ok.txt again, written in the same second as its source: the
    // racy-file rule).
    let (code, _, err) = pull(&server, &client, &dst, &["--stop-server"]);
    assert_eq!(code, 0, "stderr: {err}");
    assert_same_tree(&src, &dst);
    assert_eq!(server.end().0, 0);
}

#[test]
fn a_standby_pull_begins_at_its_go_and_writes_progress_lines_then_its_result() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
    write(&src.join("data.bin"), &pattern(3 << 20, 9));
    let authority = Authority::new("standby");
    let server = Server::start(&src, &authority.issue(&tmp.path().join("source-tls")));
    let client = authority.issue(&tmp.path().join("target-tls"));
    let go = tmp.path().join("go");
    let mut command = Command::new(bin());
    command
        .args([
            "pull",
            "--from",
            &server.address,
            "--stop-server",
            "--progress",
            "json",
            "--tls",
        ])
        .arg(&client)
        .arg("--target")
        .arg(&dst)
        .arg("--wait-for")
        .arg(&go)
        .env_remove("FERRY_RESULT_FILE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let standby = start(&mut command);
    let given = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    write(&go, b"go");
    let out = standby.into_child().wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<serde_json::Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let (result, progress) = lines.split_last().unwrap();
    // The pass began at the go, which came by the file, not before it was written.
    assert_eq!(result["goBy"], "file", "{result}");
    assert!(result["goAtUnixMs"].as_u64().unwrap() >= given, "{result}");
    assert_eq!(result["filesCopied"], 1, "{result}");
    // The last progress line says everything is done.
    let last = progress.last().unwrap();
    assert_eq!(last["phase"], "done", "{last}");
    assert_eq!(last["bytesDone"], last["bytesTotal"], "{last}");
    assert_eq!(last["bytesTotal"], 3 << 20, "{last}");
    assert_same_tree(&src, &dst);
    assert_eq!(server.end().0, 0);
}

/// A pull started before its server (the operator starts it once the serving pod runs, which may
/// be before the mover in it listens) keeps trying for `--connect-wait` seconds, then copies.
#[test]
fn a_pull_waits_for_a_server_that_is_not_listening_yet() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
    write(&src.join("a.txt"), b"served late\n");
    let authority = Authority::new("late");
    let server_tls = authority.issue(&tmp.path().join("source-tls"));
    let client = authority.issue(&tmp.path().join("target-tls"));
    let address = {
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        free.local_addr().unwrap().to_string()
    };
    let started = std::time::Instant::now();
    let late = std::thread::spawn({
        let (address, src) = (address.clone(), src.clone());
        move || {
            std::thread::sleep(std::time::Duration::from_millis(1500));
            Server::start_at(&address, &src, &server_tls)
        }
    });
    let args = [
        "pull",
        "--from",
        &address,
        "--tls",
        client.to_str().unwrap(),
        "--target",
    ];
    let target = dst.to_str().unwrap();
    let (code, _, err) = run(
        &[&args[..], &[target, "--connect-wait", "30", "--stop-server"]].concat(),
        &[],
    );
    assert_eq!(code, 0, "stderr: {err}");
    assert!(started.elapsed() >= std::time::Duration::from_millis(1500));
    assert_same_tree(&src, &dst);
    let (code, _, err) = late.join().unwrap().end();
    assert_eq!(code, 0, "stderr: {err}");
    // Without it, nobody listening is an unreachable peer at once (exit 7), and nothing is made.
    let (code, _, err) = run(
        &[&args[..], &[tmp.path().join("none").to_str().unwrap()]].concat(),
        &[],
    );
    assert_eq!(code, 7, "stderr: {err}");
    assert!(!tmp.path().join("none").exists());
}

/// A file a writer appends to after the listing (a warm pass while the application runs): the pull
/// keeps what it read, warns, and does not hold the listing against it; a strict pass (the final
/// one, the application stopped) fails with exit 6 instead, and leaves the server running.
#[test]
fn a_file_that_grows_after_the_listing_is_a_warning_in_a_warm_pass_and_fails_a_strict_one() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
    write(&src.join("a.txt"), b"still\n");
    write(&src.join("records"), b"one\ntwo\n");
    let authority = Authority::new("growing");
    let server_tls = authority.issue(&tmp.path().join("source-tls"));
    let client = authority.issue(&tmp.path().join("target-tls"));
    let grow = [("FERRY_MOVER_TEST_GROW_ON_READ", "records")];
    let server = Server::start_with("127.0.0.1:0", &src, &server_tls, &grow);

    let (code, warm, err) = pull(&server, &client, &dst, &[]);
    assert_eq!(code, 0, "stderr: {err}");
    assert_eq!(warm["warnings"], 1, "{warm}");
    assert!(err.contains("changed while it was copied: records"), "{err}");
    // What was read, whole: the listing's two lines and the one written after it.
    let copied = std::fs::read_to_string(dst.join("records")).unwrap();
    assert_eq!(copied, "one\ntwo\nwritten after the listing\n");

    let (code, strict, err) = pull(&server, &client, &dst, &["--strict", "--stop-server"]);
    assert_eq!(code, 6, "{strict} stderr: {err}");
    assert!(
        err.contains("the source changed during a pass that needs it stopped"),
        "{err}"
    );
    // Still serving: the strict pass did not stop it.
    let (code, _, err) = pull(&server, &client, &dst, &["--stop-server", "--verify", "none"]);
    assert_eq!(code, 0, "stderr: {err}");
    let (code, _, err) = server.end();
    assert_eq!(code, 0, "stderr: {err}");
}
