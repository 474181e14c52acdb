//! The final pass after a clone (`--cloned-at`): a clone that rewrites files (CephFS snapshot
//! clones, NFS copy clones: new ctime, the old mtime kept) never leaves a file that differs from
//! the source, even one written again, at the same size, in the clock tick the clone copied it in.
//! (A block clone, which keeps the source's ctimes, cannot be made here: its rule is the planner's
//! unit test `a_clones_file_is_compared_only_if_modified_about_when_the_clone_was_made`.)

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test] fns

mod common;

use common::*;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

#[test]
fn a_same_tick_rewrite_after_a_file_rewriting_clone_is_copied() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let dst = tmp.path().join("dst");
    write(&src.join("db/page"), &pattern(8192, 1));
    write(&src.join("db/segment"), &pattern(3 << 20, 2));
    write(&src.join("db/old"), &pattern(100, 3));
    set_mtime(&src.join("db/old"), 1_600_000_000, 0);
    let cloned_at = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
    // The clone: every file written anew (new ctime), its mtime kept.
    let status = Command::new("cp").arg("-a").arg(&src).arg(&dst).status().unwrap();
    assert!(status.success());
    // Both files written again at the same size, their mtimes as the clone saw them (the same
    // tick): only their content tells.
    for (name, len, seed) in [("db/page", 8192, 9), ("db/segment", 3 << 20, 10)] {
        let path = src.join(name);
        let m = fs::metadata(&path).unwrap();
        fs::write(&path, pattern(len, seed)).unwrap();
        set_mtime(&path, m.mtime(), m.mtime_nsec());
    }
    let cloned_at = cloned_at.to_string();
    let (code, res, _, err) = sync_cli(&src, &dst, &["--delete", "--strict", "--cloned-at", &cloned_at]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(res["filesCopied"], 2, "{res}");
    assert_same_tree(&src, &dst);
}
