//! Incremental runs: nothing copied when nothing changed, deletes, metadata-only fixes,
//! content comparison and type changes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test] fns

mod common;

use common::*;
use std::fs;

fn synced() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let dst = tmp.path().join("dst");
    rich_tree(&src);
    let (code, _, _, err) = sync_cli(&src, &dst, &[]);
    assert_eq!(code, 0, "{err}");
    (tmp, src, dst)
}

#[test]
fn second_run_copies_nothing() {
    let (_tmp, src, dst) = synced();
    let (code, res, _, err) = sync_cli(&src, &dst, &["--delete"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(res["bytesCopied"], 0, "{res}");
    assert_eq!(res["filesCopied"], 0, "{res}");
    assert_eq!(res["deleted"], 0, "{res}");
    assert_same_tree(&src, &dst);
}

#[test]
fn delete_removes_extraneous_entries_only_when_asked() {
    let (_tmp, src, dst) = synced();
    write(&dst.join("extra-file"), b"x");
    write(&dst.join("extra-dir/a/b"), b"y");
    std::os::unix::fs::symlink("nowhere", dst.join("dir/extra-link")).unwrap();
    let (code, res, _, _) = sync_cli(&src, &dst, &[]);
    assert_eq!(code, 0);
    assert_eq!(res["deleted"], 0);
    assert!(dst.join("extra-file").exists());
    let (code, res, _, err) = sync_cli(&src, &dst, &["--delete"]);
    assert_eq!(code, 0, "{err}");
    // extra-file, extra-dir, extra-dir/a, extra-dir/a/b, dir/extra-link
    assert_eq!(res["deleted"], 5, "{res}");
    assert_eq!(res["bytesCopied"], 0);
    assert_same_tree(&src, &dst);
}

#[test]
fn metadata_only_changes_do_not_rewrite_data() {
    let (_tmp, src, dst) = synced();
    let before = ino(&dst.join("dir/bin.dat"));
    let before_owned = ino(&dst.join("owned"));
    chmod(&src.join("dir/bin.dat"), 0o600);
    std::os::unix::fs::lchown(src.join("owned"), Some(555), Some(556)).unwrap();
    xattr::set(src.join("plain.txt"), "user.new", b"v").unwrap();
    std::os::unix::fs::lchown(src.join("link-rel"), Some(9), Some(9)).unwrap();
    set_mtime(&src.join("dir/sub"), 1_700_000_000, 1);
    let (code, res, _, err) = sync_cli(&src, &dst, &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(res["bytesCopied"], 0, "{res}");
    assert!(res["metadataFixed"].as_u64().unwrap() >= 4, "{res}");
    assert_eq!(ino(&dst.join("dir/bin.dat")), before, "data was rewritten");
    assert_eq!(ino(&dst.join("owned")), before_owned, "data was rewritten");
    assert_same_tree(&src, &dst);
}

#[test]
fn changed_contents_are_copied_and_checksum_compare_catches_same_size_same_mtime() {
    let (_tmp, src, dst) = synced();
    append(&src.join("plain.txt"), b"more");
    let (code, res, _, _) = sync_cli(&src, &dst, &[]);
    assert_eq!(code, 0);
    assert_eq!(res["bytesCopied"], 16, "{res}");
    assert_same_tree(&src, &dst);
    // Same size, mtime restored: the quick check cannot see it, content comparison can.
    let leaf = src.join("dir/sub/deeper/leaf");
    let m = fs::symlink_metadata(&leaf).unwrap();
    use std::os::unix::fs::MetadataExt;
    fs::write(&leaf, b"LEAF").unwrap();
    set_mtime(&leaf, m.mtime(), m.mtime_nsec());
    let (code, res, _, _) = sync_cli(&src, &dst, &[]);
    assert_eq!((code, res["bytesCopied"].as_u64()), (0, Some(0)));
    assert_eq!(fs::read(dst.join("dir/sub/deeper/leaf")).unwrap(), b"leaf");
    let (code, res, _, _) = sync_cli(&src, &dst, &["--checksum-compare"]);
    assert_eq!(code, 0);
    assert_eq!(res["bytesCopied"], 4, "{res}");
    assert_same_tree(&src, &dst);
}

#[test]
fn type_changes_are_handled() {
    let (_tmp, src, dst) = synced();
    // file -> dir, dir -> file, symlink -> file, fifo -> symlink
    fs::remove_file(src.join("plain.txt")).unwrap();
    write(&src.join("plain.txt/inner"), b"now a dir");
    fs::remove_dir_all(src.join("dir/sub")).unwrap();
    write(&src.join("dir/sub"), b"now a file");
    fs::remove_file(src.join("link-dir")).unwrap();
    write(&src.join("link-dir"), b"was a link");
    fs::remove_file(src.join("fifo")).unwrap();
    std::os::unix::fs::symlink("x", src.join("fifo")).unwrap();
    // The hard-link group loses a member and one member changes.
    fs::remove_file(src.join("hl/b")).unwrap();
    let (code, _, _, err) = sync_cli(&src, &dst, &["--delete"]);
    assert_eq!(code, 0, "{err}");
    assert_same_tree(&src, &dst);
}

#[test]
fn hard_link_group_changes_are_followed() {
    let (_tmp, src, dst) = synced();
    // Rewrite the group's data (new inode for all three names).
    fs::remove_file(src.join("hl/a")).unwrap();
    write(&src.join("hl/a"), b"new data");
    fs::remove_file(src.join("hl/b")).unwrap();
    fs::hard_link(src.join("hl/a"), src.join("hl/b")).unwrap();
    // hl/other/c becomes a separate file with the old data.
    let (code, _, _, err) = sync_cli(&src, &dst, &["--delete"]);
    assert_eq!(code, 0, "{err}");
    assert_same_tree(&src, &dst);
}

/// A file rewritten in the same clock tick as the copy of it keeps its size and mtime (file times
/// are coarse): a quick check would keep the stale copy. Files modified no earlier than just before
/// their copy was made are compared by content (git's racy-file rule).
#[test]
fn a_file_changed_within_the_tick_of_its_copy_is_recopied() {
    use std::os::unix::fs::MetadataExt;
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
    write(&src.join("page.db"), b"page version 1");
    write(&src.join("old.db"), b"old contents 1");
    // A file last modified long ago is not racy: it is trusted by size and mtime.
    set_mtime(&src.join("old.db"), 1_600_000_000, 0);
    let (code, _, _, err) = sync_cli(&src, &dst, &[]);
    assert_eq!(code, 0, "{err}");

    // Same size, same mtime (as when the write lands in the same tick): only the content differs.
    let md = fs::metadata(src.join("page.db")).unwrap();
    write(&src.join("page.db"), b"page version 2");
    set_mtime(&src.join("page.db"), md.mtime(), md.mtime_nsec());
    let (code, res, _, err) = sync_cli(&src, &dst, &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(fs::read(dst.join("page.db")).unwrap(), b"page version 2", "{res}");
    assert_eq!(res["filesCopied"], 1, "only the racy file: {res}");
}
