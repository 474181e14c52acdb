//! The chunk record saves the final pass a read of the target: a large file changed in a few
//! pages is compared with the digests the warm pass recorded. Alone in its binary, because it
//! counts the bytes the whole process reads (`rchar` of /proc/self/io).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test] fns

mod common;

use common::*;
use ferry_mover::{ProgressMode, RECORD_NAME, SyncOptions, VerifyMode};
use std::fs;
use std::os::unix::fs::FileExt;
use std::path::Path;

const SIZE: u64 = 32 << 20;

/// Bytes this process has read through system calls so far.
fn bytes_read() -> u64 {
    let io = fs::read_to_string("/proc/self/io").unwrap();
    let line = io.lines().find(|l| l.starts_with("rchar:")).unwrap();
    line["rchar:".len()..].trim().parse().unwrap()
}

fn pass(src: &Path, dst: &Path, chunk_record: bool, strict: bool) -> (u64, u64) {
    let opts = SyncOptions {
        source: src.to_path_buf(),
        target: dst.to_path_buf(),
        delete: true,
        verify: VerifyMode::Checksum,
        progress: ProgressMode::None,
        threads: Some(2),
        chunk_record,
        strict,
        ..SyncOptions::default()
    };
    let before = bytes_read();
    let report = ferry_mover::sync(&opts).unwrap();
    (report.bytes_copied, bytes_read() - before)
}

fn change_a_page(src: &Path, seed: u64) {
    let f = fs::OpenOptions::new()
        .write(true)
        .open(src.join("segment"))
        .unwrap();
    f.write_all_at(&pattern(8192, seed), SIZE / 2).unwrap();
}

#[test]
fn the_final_pass_reads_the_source_once_and_the_target_only_where_it_wrote() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let dst = tmp.path().join("dst");
    write(&src.join("segment"), &pattern(SIZE as usize, 1));
    pass(&src, &dst, true, false);
    assert!(dst.join(RECORD_NAME).exists());

    change_a_page(&src, 2);
    let (written, read) = pass(&src, &dst, true, false);
    // The changed page's blocks, found in the one piece whose digest differs.
    assert_eq!(written, 8192);
    // The source once, the differing piece's target, the written piece read back, the record
    // itself: far from two reads.
    assert!(
        read < SIZE + SIZE / 4,
        "with the record: {read} bytes read for {SIZE}"
    );

    // The same change without a record: the target's pieces are read to compare.
    change_a_page(&src, 3);
    fs::remove_file(dst.join(RECORD_NAME)).unwrap();
    let (written, read) = pass(&src, &dst, false, true);
    assert_eq!(written, 8192);
    assert!(
        read > 2 * SIZE - SIZE / 8,
        "without the record: {read} bytes read for {SIZE}"
    );
    assert_same_tree(&src, &dst);
}
