//! Full-fidelity copy of a tree with every kind of entry, checked by an independent oracle.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test] fns

mod common;

use common::*;

#[test]
fn cold_copy_preserves_everything() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let dst = tmp.path().join("dst");
    rich_tree(&src);
    let (code, res, _out, err) = sync_cli(&src, &dst, &["--verify", "checksum"]);
    assert_eq!(code, 0, "stderr: {err}");
    assert_same_tree(&src, &dst);
    // The sparse file keeps its holes (64 MiB apparent, a few blocks allocated).
    assert!(blocks(&dst.join("sparse.img")) < 1024, "sparse.img was filled");
    assert_eq!(res["warnings"], 0);
    assert_eq!(res["verify"], "checksum");
    // The reported digest is the metadata digest of the target, computed independently.
    let m = ferry_mover::digest(&dst).unwrap();
    assert_eq!(res["digest"], m.metadata_digest.as_str());
    assert_eq!(ferry_mover::digest(&src).unwrap(), m);
    // Data bytes written: everything except holes.
    let bytes = res["bytes"].as_u64().unwrap();
    let copied = res["bytesCopied"].as_u64().unwrap();
    assert!(copied < bytes && copied > 70 << 20, "copied {copied} of {bytes}");
}

#[test]
fn cold_copy_without_verification_and_single_thread() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let dst = tmp.path().join("dst");
    rich_tree(&src);
    let (code, res, _, err) = sync_cli(&src, &dst, &["--verify", "none", "--threads", "1"]);
    assert_eq!(code, 0, "stderr: {err}");
    assert_eq!(res["verify"], "none");
    assert_same_tree(&src, &dst);
}

#[test]
fn target_with_default_acl_does_not_leak_into_copies() {
    if !have("setfacl") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let dst = tmp.path().join("dst");
    write(&src.join("d/f"), b"no acl here");
    std::fs::create_dir_all(dst.join("d")).unwrap();
    let st = std::process::Command::new("setfacl")
        .args(["-d", "-m", "u:1000:rwx"])
        .arg(dst.join("d"))
        .status()
        .unwrap();
    assert!(st.success());
    let (code, _, _, err) = sync_cli(&src, &dst, &[]);
    assert_eq!(code, 0, "{err}");
    assert_same_tree(&src, &dst);
}

#[test]
fn a_default_acl_inherited_by_a_new_directory_does_not_leak_into_its_files() {
    // The target root exists and has a default ACL, so a directory the run makes under it
    // inherits one, and so would the files made there: those take the general path (listed and
    // cleared), even with nothing verifying afterwards.
    if !have("setfacl") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let dst = tmp.path().join("dst");
    write(&src.join("new/f"), b"no acl here");
    write(&src.join("new/deeper/g"), b"nor here");
    std::fs::create_dir_all(&dst).unwrap();
    let st = std::process::Command::new("setfacl")
        .args(["-d", "-m", "u:1000:rwx"])
        .arg(&dst)
        .status()
        .unwrap();
    assert!(st.success());
    let (code, _, _, err) = sync_cli(&src, &dst, &["--verify", "none"]);
    assert_eq!(code, 0, "{err}");
    assert_same_tree(&src, &dst);
}

#[test]
#[should_panic(expected = "find listings differ")]
fn oracle_detects_a_mode_difference() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let dst = tmp.path().join("dst");
    write(&src.join("f"), b"x");
    let (code, _, _, _) = sync_cli(&src, &dst, &[]);
    assert_eq!(code, 0);
    chmod(&dst.join("f"), 0o600);
    assert_same_tree(&src, &dst);
}

#[test]
#[should_panic(expected = "getfattr dumps differ")]
fn oracle_detects_an_xattr_difference() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let dst = tmp.path().join("dst");
    write(&src.join("f"), b"x");
    let (code, _, _, _) = sync_cli(&src, &dst, &[]);
    assert_eq!(code, 0);
    xattr::set(dst.join("f"), "user.x", b"1").unwrap();
    assert_same_tree(&src, &dst);
}
