//! Large files updated in place: a pass after a warm one writes only the pieces of a large file
//! that changed, keeps its inode, and is redone correctly when killed half-way; files that grew,
//! shrank, gained or lost holes, or are hard links come out exact.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test] fns

mod common;

use common::*;
use ferry_mover::{PIECE, RECORD_NAME};
use std::fs;
use std::os::unix::fs::FileExt;
use std::path::Path;

const MIB: u64 = 1 << 20;

/// Overwrites `len` bytes at `off` of `p` with new bytes, in place (as a database writes a page).
fn rewrite(p: &Path, off: u64, len: usize, seed: u64) {
    let f = fs::OpenOptions::new().write(true).open(p).unwrap();
    f.write_all_at(&pattern(len, seed), off).unwrap();
}

/// A source of two large files and a small one, copied by a warm pass that keeps its record.
fn warm_copied() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let dst = tmp.path().join("dst");
    write(&src.join("base/1/16384"), &pattern(8 * MIB as usize, 1));
    write(&src.join("base/1/16385"), &pattern(6 * MIB as usize + 100, 2));
    write(&src.join("small"), b"small");
    // Not written in the second before its copy, so never compared by content ("racy").
    set_mtime(&src.join("small"), 1_600_000_000, 0);
    let (code, res, _, err) = sync_cli(&src, &dst, &["--delete", "--chunk-record"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(res["bytesCopied"], 14 * MIB + 100 + 5, "{res}");
    assert!(dst.join(RECORD_NAME).exists(), "the warm pass keeps a record");
    (tmp, src, dst)
}

fn final_pass(src: &Path, dst: &Path, env: &[(&str, &str)]) -> (i32, serde_json::Value, String) {
    let rf = dst.with_extension("result.json");
    let _ = fs::remove_file(&rf);
    let (code, _, err) = run(
        &[
            "sync",
            "--source",
            src.to_str().unwrap(),
            "--target",
            dst.to_str().unwrap(),
            "--delete",
            "--strict",
            "--progress",
            "none",
            "--threads",
            "2",
            "--result-file",
            rf.to_str().unwrap(),
        ],
        env,
    );
    let v = serde_json::from_str(&fs::read_to_string(&rf).unwrap_or_default()).unwrap_or_default();
    (code, v, err)
}

#[test]
fn pages_rewritten_in_a_large_file_cost_only_their_blocks_in_place() {
    let (_tmp, src, dst) = warm_copied();
    let db = src.join("base/1/16384");
    let inode = ino(&dst.join("base/1/16384"));
    // Three 8 KiB pages in three different pieces, one of them the file's last.
    for (n, off) in [0, 3 * MIB + 40960, 8 * MIB - 8192].into_iter().enumerate() {
        rewrite(&db, off, 8192, 100 + n as u64);
    }
    let (code, res, err) = final_pass(&src, &dst, &[]);
    assert_eq!(code, 0, "{err}");
    // Each page's own two 4 KiB blocks, not the pieces around them.
    assert_eq!(res["bytesCopied"], 3 * 8192, "{res}");
    assert_eq!(res["filesCopied"], 1, "{res}");
    // The record stood for the target's unchanged pieces: only the three that differ were read,
    // to find their changed blocks.
    assert_eq!(res["bytesCompared"], 3 * PIECE, "{res}");
    assert_eq!(
        ino(&dst.join("base/1/16384")),
        inode,
        "updated in place, not replaced"
    );
    assert!(!dst.join(RECORD_NAME).exists(), "a strict pass leaves no record");
    assert_same_tree(&src, &dst);
}

#[test]
fn a_pass_killed_in_the_middle_of_an_update_is_redone_by_the_next() {
    let (_tmp, src, dst) = warm_copied();
    let db = src.join("base/1/16384");
    // Every other piece of the 8 MiB file changes: 32 pieces.
    for piece in (0..64).step_by(2) {
        rewrite(&db, piece * PIECE + 100, 4096, 500 + piece);
    }
    let (code, _, _) = final_pass(&src, &dst, &[("FERRY_MOVER_TEST_ABORT_AFTER_PIECES", "5")]);
    assert_ne!(code, 0, "the hook aborts the pass after 5 pieces");
    // The torn file is never taken as done: its mtime is that of its last write.
    let (code, res, err) = final_pass(&src, &dst, &[]);
    assert_eq!(code, 0, "{err}");
    // Its record no longer holds (the killed pass changed the inode): every piece read to compare.
    assert_eq!(res["bytesCompared"], 8 * MIB, "{res}");
    // One thread compares this file's pieces in order: the killed pass wrote 5 of the 32, each
    // piece's change two 4 KiB blocks (4096 bytes from offset 100).
    assert_eq!(
        res["bytesCopied"],
        27 * 8192,
        "only the pieces the killed pass had not written are written again: {res}"
    );
    assert_same_tree(&src, &dst);
}

#[test]
fn a_file_truncated_or_extended_between_passes_comes_out_exact() {
    let (_tmp, src, dst) = warm_copied();
    let shrunk = src.join("base/1/16384");
    let grown = src.join("base/1/16385");
    let (shrunk_ino, grown_ino) = (ino(&dst.join("base/1/16384")), ino(&dst.join("base/1/16385")));
    fs::OpenOptions::new()
        .write(true)
        .open(&shrunk)
        .unwrap()
        .set_len(5 * MIB + 1000)
        .unwrap();
    let tail = pattern(3 * MIB as usize, 9);
    fs::OpenOptions::new()
        .write(true)
        .open(&grown)
        .unwrap()
        .write_all_at(&tail, 6 * MIB + 100)
        .unwrap();
    let (code, res, err) = final_pass(&src, &dst, &[]);
    assert_eq!(code, 0, "{err}");
    // The truncated file's last piece holds what it held; the grown one's old last piece changed
    // after its 100th byte, and 3 MiB were added after it.
    let want = (6 * MIB + 100 + 3 * MIB) - 6 * MIB;
    assert_eq!(res["bytesCopied"], want, "{res}");
    assert_eq!(ino(&dst.join("base/1/16384")), shrunk_ino);
    assert_eq!(ino(&dst.join("base/1/16385")), grown_ino);
    assert_same_tree(&src, &dst);
}

#[test]
fn holes_made_or_filled_between_passes_come_out_exact_and_sparse() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let dst = tmp.path().join("dst");
    fs::create_dir(&src).unwrap();
    let sparse = src.join("sparse");
    let f = fs::File::create(&sparse).unwrap();
    f.set_len(16 * MIB).unwrap();
    f.write_all_at(&pattern(MIB as usize, 3), 0).unwrap();
    f.write_all_at(&pattern(MIB as usize, 4), 8 * MIB).unwrap();
    drop(f);
    let (code, _, _, err) = sync_cli(&src, &dst, &["--chunk-record"]);
    assert_eq!(code, 0, "{err}");
    // Data lands in the middle of the hole, and a hole is punched where data was.
    rewrite(&sparse, 4 * MIB, 8192, 5);
    let f = fs::OpenOptions::new().write(true).open(&sparse).unwrap();
    let punch = rustix::fs::FallocateFlags::PUNCH_HOLE | rustix::fs::FallocateFlags::KEEP_SIZE;
    if let Err(e) = rustix::fs::fallocate(&f, punch, 8 * MIB, MIB) {
        println!("NOTE: this file system cannot punch holes ({e}); the hole is written as zeros");
        f.write_all_at(&vec![0; MIB as usize], 8 * MIB).unwrap();
    }
    drop(f);
    let inode = ino(&dst.join("sparse"));
    let (code, res, err) = final_pass(&src, &dst, &[]);
    assert_eq!(code, 0, "{err}");
    let written = res["bytesCopied"].as_u64().unwrap();
    assert!(
        (8192..=PIECE).contains(&written),
        "only the new page's piece is written, the new hole punched: {res}"
    );
    assert_eq!(ino(&dst.join("sparse")), inode);
    assert_same_tree(&src, &dst);
}

#[test]
fn a_large_file_with_hard_links_is_copied_whole_and_stays_linked() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let dst = tmp.path().join("dst");
    write(&src.join("a"), &pattern(3 * MIB as usize, 6));
    fs::hard_link(src.join("a"), src.join("b")).unwrap();
    let (code, _, _, err) = sync_cli(&src, &dst, &["--chunk-record"]);
    assert_eq!(code, 0, "{err}");
    rewrite(&src.join("a"), MIB, 8192, 7);
    let (code, res, err) = final_pass(&src, &dst, &[]);
    assert_eq!(code, 0, "{err}");
    // A target inode with two links is never changed in place: the file is written anew.
    assert_eq!(res["bytesCopied"], 3 * MIB, "{res}");
    assert_eq!(ino(&dst.join("a")), ino(&dst.join("b")));
    assert_same_tree(&src, &dst);
}

#[test]
fn a_piece_that_lands_wrong_fails_verification() {
    let (_tmp, src, dst) = warm_copied();
    rewrite(&src.join("base/1/16385"), 2 * MIB, 8192, 8);
    let (code, res, err) = final_pass(&src, &dst, &[("FERRY_MOVER_TEST_CORRUPT", "base/1/16385")]);
    assert_eq!(code, ferry_mover::EXIT_VERIFY_MISMATCH, "{err}");
    assert!(err.contains("base/1/16385"), "{err}");
    assert_eq!(res["mismatches"][0], "base/1/16385", "{res}");
    // The next pass repairs it.
    let (code, _, err) = final_pass(&src, &dst, &[]);
    assert_eq!(code, 0, "{err}");
    assert_same_tree(&src, &dst);
}

#[test]
fn a_pass_without_the_flag_uses_the_record_and_removes_it() {
    let (_tmp, src, dst) = warm_copied();
    rewrite(&src.join("base/1/16384"), 0, 8192, 9);
    let (code, res, _, err) = sync_cli(&src, &dst, &["--delete"]);
    assert_eq!(code, 0, "{err}");
    // The record found the one piece that differs; its blocks told which 8 KiB to write.
    assert_eq!(res["bytesCopied"], 8192, "{res}");
    assert_eq!(res["bytesCompared"], PIECE, "{res}");
    assert!(!dst.join(RECORD_NAME).exists());
    assert_same_tree(&src, &dst);
}

#[test]
fn a_source_file_under_the_records_name_is_copied_like_any_other() {
    let (_tmp, src, dst) = warm_copied();
    write(&src.join(RECORD_NAME), b"the user's own file");
    for extra in [&["--chunk-record"][..], &["--strict"][..]] {
        let mut args = vec!["--delete"];
        args.extend_from_slice(extra);
        let (code, _, _, err) = sync_cli(&src, &dst, &args);
        assert_eq!(code, 0, "{err}");
        assert_eq!(fs::read(dst.join(RECORD_NAME)).unwrap(), b"the user's own file");
    }
    assert_same_tree(&src, &dst);
}
