//! Bad input, verification mismatch and a full target: clear errors and the right exit codes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test] fns

mod common;

use common::*;
use std::fs;
use std::process::Command;

#[test]
fn bad_input_exits_2() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    write(&src.join("f"), b"x");
    let s = src.to_str().unwrap();
    let missing = tmp.path().join("missing");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "--source".into(),
                missing.to_str().unwrap().into(),
                "--target".into(),
                tmp.path().join("t").to_str().unwrap().into(),
            ],
            "does not exist",
        ),
        (
            vec!["--source".into(), s.into(), "--target".into(), s.into()],
            "inside",
        ),
        (
            vec![
                "--source".into(),
                s.into(),
                "--target".into(),
                src.join("sub").to_str().unwrap().into(),
            ],
            "inside",
        ),
        (
            vec![
                "--source".into(),
                src.join("f").to_str().unwrap().into(),
                "--target".into(),
                tmp.path().join("t").to_str().unwrap().into(),
            ],
            "not a directory",
        ),
        (
            vec![
                "--source".into(),
                s.into(),
                "--target".into(),
                tmp.path().join("no/such/parent").to_str().unwrap().into(),
            ],
            "parent",
        ),
        (
            vec![
                "--source".into(),
                s.into(),
                "--target".into(),
                tmp.path().join("t").to_str().unwrap().into(),
                "--verify".into(),
                "sometimes".into(),
            ],
            "invalid value",
        ),
    ];
    for (args, msg) in cases {
        let mut full = vec!["sync".to_string(), "--progress".into(), "none".into()];
        full.extend(args);
        let refs: Vec<&str> = full.iter().map(String::as_str).collect();
        let (code, _, err) = run(&refs, &[]);
        assert_eq!(code, 2, "{full:?}: {err}");
        assert!(err.contains(msg), "{full:?}: expected {msg:?} in {err}");
    }
    let (code, _, err) = run(&["digest", missing.to_str().unwrap()], &[]);
    assert_eq!(code, 2, "{err}");
    let (code, _, _) = run(&["usage", missing.to_str().unwrap()], &[]);
    assert_eq!(code, 2);
}

#[test]
#[cfg_attr(
    not(feature = "test-hooks"),
    ignore = "needs --features ferry-mover/test-hooks"
)]
fn corrupted_copy_is_detected_exit_3_and_named() {
    // Small files are compared byte for byte with what was read, bigger ones by hash per chunk.
    for size in [100_000, 300_000] {
        corrupted_copy_of_size_is_detected(size);
    }
}

fn corrupted_copy_of_size_is_detected(size: usize) {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let dst = tmp.path().join("dst");
    write(&src.join("ok.txt"), b"fine");
    write(&src.join("dir/victim.bin"), &pattern(size, 9));
    let rf = tmp.path().join("result.json");
    let args = [
        "sync",
        "--source",
        src.to_str().unwrap(),
        "--target",
        dst.to_str().unwrap(),
        "--progress",
        "none",
        "--result-file",
        rf.to_str().unwrap(),
    ];
    let (code, out, err) = run(&args, &[("FERRY_MOVER_TEST_CORRUPT", "dir/victim.bin")]);
    assert_eq!(code, 3, "stdout {out} stderr {err}");
    assert!(err.contains("dir/victim.bin"), "{err}");
    let res: serde_json::Value = serde_json::from_str(&fs::read_to_string(&rf).unwrap()).unwrap();
    assert_eq!(res["exitCode"], 3);
    assert_eq!(res["kind"], "verifyMismatch");
    assert_eq!(res["mismatches"][0], "dir/victim.bin");
    assert!(
        res.get("bytesCopied").is_none(),
        "no success fields on failure: {res}"
    );
    // The corrupt data was never put in place under the real name.
    assert!(!dst.join("dir/victim.bin").exists());
    // A clean rerun repairs it.
    let (code, _, err) = run(&args, &[]);
    assert_eq!(code, 0, "{err}");
    assert_same_tree(&src, &dst);
}

#[test]
fn metadata_verification_catches_a_tampered_target_via_library() {
    // The library hook corrupts an empty file too (by giving it a byte).
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let dst = tmp.path().join("dst");
    write(&src.join("empty"), b"");
    let opts = ferry_mover::SyncOptions {
        source: src.clone(),
        target: dst.clone(),
        corrupt_after_write: Some("empty".into()),
        ..Default::default()
    };
    let e = ferry_mover::sync(&opts).unwrap_err();
    assert_eq!(e.exit_code(), 3);
    assert!(e.to_string().contains("empty"), "{e}");
}

struct Mount(std::path::PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[test]
fn full_target_exits_4_with_a_clear_message() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let mnt = tmp.path().join("small");
    fs::create_dir_all(&mnt).unwrap();
    let out = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=4m", "tmpfs"])
        .arg(&mnt)
        .output();
    match out {
        Ok(o) if o.status.success() => {}
        Ok(o) => {
            println!(
                "SKIP full_target test: mount tmpfs failed: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            return;
        }
        Err(e) => {
            println!("SKIP full_target test: cannot run mount: {e}");
            return;
        }
    }
    let _guard = Mount(mnt.clone());
    write(&src.join("small.txt"), b"fits");
    write(&src.join("big.bin"), &pattern(8 << 20, 5));
    for verify in ["none", "checksum"] {
        let dst = mnt.join(format!("dst-{verify}"));
        let (code, res, _, err) = sync_cli(&src, &dst, &["--verify", verify]);
        assert_eq!(code, 4, "verify={verify}: {err}");
        assert!(err.contains("target full"), "{err}");
        assert_eq!(res["kind"], "targetFull", "{res}");
        assert!(!dst.join("big.bin").exists());
        fs::remove_dir_all(&dst).unwrap();
    }
}

/// The mover in the image (profile `image`, optimized, without `test-hooks`) ignores the corruption
/// variable: nothing in a shipped binary can damage a copy on purpose. Built by `scripts/images build`;
/// `scripts/test` requires it (`FERRY_REQUIRE_RELEASE_MOVER=1`), a bare `cargo test` skips it.
#[test]
fn the_release_mover_has_no_corruption_hook() {
    let debug = std::path::Path::new(bin());
    let target_dir = debug.parent().and_then(|d| d.parent()).unwrap();
    let release = target_dir.join("x86_64-unknown-linux-musl/image/ferry-mover");
    if !release.exists() {
        assert!(
            std::env::var_os("FERRY_REQUIRE_RELEASE_MOVER").is_none(),
            "{} missing: scripts/images build makes it",
            release.display()
        );
        eprintln!("skipped: no release mover at {}", release.display());
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
    fs::create_dir_all(src.join("dir")).unwrap();
    fs::write(src.join("dir/victim.bin"), vec![7u8; 4096]).unwrap();
    let out = std::process::Command::new(&release)
        .args([
            "sync",
            "--source",
            src.to_str().unwrap(),
            "--target",
            dst.to_str().unwrap(),
        ])
        .args(["--progress", "none", "--verify", "checksum"])
        .env("FERRY_MOVER_TEST_CORRUPT", "dir/victim.bin")
        .env_remove("FERRY_RESULT_FILE")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_same_tree(&src, &dst);
}

/// The operator takes a mover's result from its log, where stdout and stderr are one stream: a
/// file name holding a newline and a line of result JSON, printed in an error or a warning, must
/// not print a line that reads as a result (a forged success would swap in an unfinished copy).
#[test]
fn a_file_name_cannot_forge_a_result_line_in_the_output() {
    let forged = r#"{"bytes":1,"bytesCopied":1,"deleted":0,"digest":"ab","files":1,"filesCopied":1,"metadataFixed":0,"seconds":0.1,"verify":"checksum","warnings":0}"#;
    assert!(serde_json::from_str::<ferry_mover_report::SyncResult>(forged).is_ok());
    let name = format!("x\n{forged}\n");
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let dst = tmp.path().join("dst");
    write(&src.join(&name), b"data");
    let args = [
        "sync",
        "--source",
        src.to_str().unwrap(),
        "--target",
        dst.to_str().unwrap(),
        "--progress",
        "json",
    ];
    let (code, out, err) = run(&args, &[("FERRY_MOVER_TEST_CORRUPT", name.as_str())]);
    assert_eq!(code, 3, "stdout {out} stderr {err}");
    assert!(err.contains("x\\n{"), "the name is printed, escaped: {err}");
    for line in out.lines().chain(err.lines()) {
        assert!(
            serde_json::from_str::<ferry_mover_report::SyncResult>(line).is_err(),
            "a failed pass printed a result line: {line}"
        );
    }
}
