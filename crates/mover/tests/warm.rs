//! Warm copies of a live source: entries that vanish or change during the copy are warnings,
//! and a final run on a quiet source ends exact. A strict (final) pass fails instead.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test] fns

mod common;

use common::*;
use ferry_mover::{Hook, SyncOptions, VerifyMode};
use std::sync::Arc;

#[test]
fn vanishing_and_changing_files_are_warnings_then_final_sync_is_exact() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let dst = tmp.path().join("dst");
    for i in 0..200u64 {
        write(&src.join(format!("d{}/f{i}", i % 7)), &pattern(5000, i));
    }
    write(&src.join("grows.log"), b"line\n");
    write(&src.join("hl/a"), b"linked");
    std::fs::hard_link(src.join("hl/a"), src.join("hl/b")).unwrap();
    let s = src.clone();
    // Runs after the scan and before the copy, like a writer racing the mover.
    let hook = Hook(Arc::new(move || {
        for i in (0..200u64).step_by(3) {
            let _ = std::fs::remove_file(s.join(format!("d{}/f{i}", i % 7)));
        }
        std::fs::remove_dir_all(s.join("d6")).unwrap();
        append(&s.join("grows.log"), b"another line\n");
        std::fs::remove_file(s.join("hl/a")).unwrap();
    }));
    std::fs::create_dir_all(&dst).unwrap();
    for verify in [VerifyMode::Checksum, VerifyMode::Metadata] {
        let target = dst.join(verify.name());
        let opts = SyncOptions {
            source: src.clone(),
            target: target.clone(),
            delete: true,
            verify,
            after_scan: Some(hook.clone()),
            ..Default::default()
        };
        if verify == VerifyMode::Metadata {
            // The source is already mutated; make it live again for the second round.
            for i in (0..200u64).step_by(3) {
                write(&src.join(format!("d{}/f{i}", i % 7)), &pattern(5000, i));
            }
            write(&src.join("hl/a"), b"linked");
        }
        let report = ferry_mover::sync(&opts).unwrap();
        assert!(report.warnings > 0, "{report:?}");
        // Final sync, source quiet: exact, no warnings.
        let final_opts = SyncOptions {
            after_scan: None,
            ..opts
        };
        let report = ferry_mover::sync(&final_opts).unwrap();
        assert_eq!(report.warnings, 0, "{report:?}");
        assert_same_tree(&src, &target);
        assert_eq!(
            report.digest,
            ferry_mover::digest(&target).unwrap().metadata_digest
        );
    }
}

#[test]
fn a_strict_pass_fails_when_its_source_changes_under_it() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let dst = tmp.path().join("dst");
    write(&src.join("db/page"), &pattern(8192, 1));
    write(&src.join("db/wal"), b"record 1\n");
    let s = src.clone();
    // A writer that was not stopped: it appends after the scan.
    let hook = Hook(Arc::new(move || append(&s.join("db/wal"), b"record 2\n")));
    let strict = SyncOptions {
        source: src.clone(),
        target: dst.clone(),
        delete: true,
        verify: VerifyMode::Checksum,
        strict: true,
        after_scan: Some(hook),
        ..Default::default()
    };
    let error = ferry_mover::sync(&strict).unwrap_err();
    assert_eq!(error.exit_code(), ferry_mover::EXIT_SOURCE_CHANGED, "{error}");
    assert!(error.to_string().contains("source changed"), "{error}");
    // Quiet again, the same strict pass succeeds and is exact.
    let quiet = SyncOptions {
        after_scan: None,
        ..strict
    };
    let report = ferry_mover::sync(&quiet).unwrap();
    assert_eq!(report.warnings, 0);
    assert_same_tree(&src, &dst);
}

#[test]
fn a_file_replaced_by_a_fifo_after_the_scan_is_a_warning_not_a_hang() {
    // Opening a FIFO for reading blocks until a writer comes, and none will: the mover must
    // see that it is no longer a regular file instead of waiting forever.
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let dst = tmp.path().join("dst");
    write(&src.join("d/socketish"), b"a regular file at scan time");
    write(&src.join("d/other"), b"stays");
    let s = src.clone();
    let hook = Hook(Arc::new(move || {
        std::fs::remove_file(s.join("d/socketish")).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(s.join("d/socketish"))
            .status()
            .unwrap();
        assert!(made.success());
    }));
    let opts = SyncOptions {
        source: src.clone(),
        target: dst.clone(),
        delete: true,
        verify: VerifyMode::Checksum,
        after_scan: Some(hook),
        ..Default::default()
    };
    let (done, result) = std::sync::mpsc::channel();
    std::thread::spawn(move || done.send(ferry_mover::sync(&opts).map(|r| r.warnings)));
    let warnings = result
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("the pass ends (it hung on the FIFO)")
        .unwrap();
    assert!(warnings > 0, "the replaced file is a warning");
    assert_eq!(std::fs::read(dst.join("d/other")).unwrap(), b"stays");
}
