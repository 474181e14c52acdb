//! Change tracking (`--track-changes`): a standby final pass watches its source, catches up, and
//! after its go visits only what changed; wherever the record may be incomplete it walks whole.
//! Each test runs the binary as the operator does, changes the source while it waits (no sleep:
//! an event is queued before the change's system call returns), gives the go, and checks the
//! target against the source by content.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test] fns

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::*;

/// A standby mover waiting for its go (killed if the test fails first).
struct Standby {
    child: Started,
    go: PathBuf,
    result: PathBuf,
    /// Its ready line.
    ready: serde_json::Value,
}

/// Starts `ferry-mover sync --strict --delete --wait-for GO --track-changes` from `src` to `dst`
/// and waits for its ready line (the catch-up pass is over then). It runs no interim passes: the
/// final pass is left with every change the test makes, whatever its timing.
fn standby(src: &Path, dst: &Path, env: &[(&str, &str)]) -> Standby {
    let mut env = env.to_vec();
    env.push(("FERRY_MOVER_TEST_INTERIM_MS", "0"));
    converging(src, dst, &env)
}

/// A standby that runs its interim passes while it waits (about once a second unless `env`
/// says otherwise).
fn converging(src: &Path, dst: &Path, env: &[(&str, &str)]) -> Standby {
    let dir = dst.parent().unwrap();
    let (go, result) = (dir.join("go"), dir.join("result.json"));
    let mut command = Command::new(bin());
    command
        .args([
            "sync",
            "--strict",
            "--delete",
            "--track-changes",
            "--progress",
            "none",
        ])
        .arg("--source")
        .arg(src)
        .arg("--target")
        .arg(dst)
        .arg("--wait-for")
        .arg(&go)
        .arg("--result-file")
        .arg(&result)
        .stdout(Stdio::piped())
        .env_remove("FERRY_RESULT_FILE");
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = start(&mut command);
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    let ready: serde_json::Value =
        serde_json::from_str(&line).unwrap_or_else(|_| panic!("ready line: {line:?}"));
    assert_eq!(ready["standby"], "ready", "{line}");
    Standby {
        child,
        go,
        result,
        ready,
    }
}

impl Standby {
    /// Gives the go and returns the final pass's result.
    fn go(mut self) -> serde_json::Value {
        std::fs::write(&self.go, "go").unwrap();
        let status = self.child.wait().unwrap();
        let text = std::fs::read_to_string(&self.result).unwrap();
        assert!(status.success(), "final pass failed: {text}");
        serde_json::from_str(&text).unwrap()
    }
}

fn tracked(result: &serde_json::Value) -> (String, u64) {
    (
        result["changeTracking"].as_str().unwrap_or("absent").to_string(),
        result["entriesVisited"].as_u64().unwrap(),
    )
}

#[test]
fn a_tracked_final_pass_copies_exactly_what_changed() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
    filler(&src, 300);
    write(&src.join("a/edit.txt"), b"before");
    write(&src.join("a/gone.txt"), b"bye");
    write(&src.join("a/moves.txt"), b"moving file");
    write(&src.join("tree/x/y/z.txt"), b"deep");
    write(&src.join("tree/x/w.txt"), b"wide");
    write(&src.join("olddir/sub/in.txt"), b"inside a renamed directory");
    write(&src.join("mode.txt"), b"mode");
    write(&src.join("attr.txt"), b"attr");
    write(&src.join("becomes-dir"), b"a file now");
    std::fs::create_dir_all(src.join("b")).unwrap();
    let s = standby(&src, &dst, &[]);
    assert_eq!(s.ready["changeTracking"], "on");

    write(&src.join("a/edit.txt"), b"after, longer");
    write(&src.join("new/dir/fresh.txt"), b"fresh");
    std::fs::remove_file(src.join("a/gone.txt")).unwrap();
    std::fs::rename(src.join("a/moves.txt"), src.join("b/moved.txt")).unwrap();
    std::fs::remove_dir_all(src.join("tree")).unwrap();
    std::fs::rename(src.join("olddir"), src.join("b/newdir")).unwrap();
    chmod(&src.join("mode.txt"), 0o600);
    xattr::set(src.join("attr.txt"), "user.ferry", b"1").unwrap();
    std::fs::remove_file(src.join("becomes-dir")).unwrap();
    write(&src.join("becomes-dir/inner.txt"), b"a directory now");
    let result = s.go();

    assert_exact(&src, &dst);
    let (tracking, visited) = tracked(&result);
    assert_eq!(tracking, "used");
    assert!(visited < 30, "visited {visited} entries of {}", result["files"]);
    // Written: the edited, new and moved files, and the renamed directory's file.
    let written = [
        "after, longer",
        "fresh",
        "moving file",
        "a directory now",
        "inside a renamed directory",
    ];
    let bytes: usize = written.iter().map(|t| t.len()).sum();
    assert_eq!(result["bytesCopied"].as_u64().unwrap(), bytes as u64, "{result}");
    assert_eq!(result["files"].as_u64().unwrap(), rel_paths(&src).len() as u64);
    assert!(
        !dst.join(ferry_mover::RECORD_NAME).exists(),
        "the chunk record is left behind"
    );
}

#[test]
fn links_of_a_file_written_through_one_name_stay_links() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
    filler(&src, 50);
    write(&src.join("a/linked"), b"shared inode");
    std::fs::create_dir_all(src.join("b")).unwrap();
    std::fs::hard_link(src.join("a/linked"), src.join("b/other-name")).unwrap();
    let s = standby(&src, &dst, &[]);
    append(&src.join("a/linked"), b", appended");
    let result = s.go();
    assert_exact(&src, &dst);
    assert_eq!(tracked(&result).0, "used");
    assert_eq!(ino(&dst.join("a/linked")), ino(&dst.join("b/other-name")));
}

#[test]
fn a_new_link_to_a_file_the_record_does_not_name_walks_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
    filler(&src, 50);
    write(&src.join("single"), b"one link so far");
    let s = standby(&src, &dst, &[]);
    std::fs::hard_link(src.join("single"), src.join("second")).unwrap();
    let result = s.go();
    assert_exact(&src, &dst);
    let (tracking, visited) = tracked(&result);
    assert!(
        tracking.starts_with("fell back: ") && tracking.contains("hard links"),
        "{tracking}"
    );
    assert_eq!(visited, rel_paths(&src).len() as u64 + 1);
    assert_eq!(ino(&dst.join("single")), ino(&dst.join("second")));
}

#[test]
fn lost_events_fall_back_to_a_full_walk() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
    filler(&src, 50);
    let s = standby(&src, &dst, &[("FERRY_MOVER_TEST_LOSE_EVENTS", "1")]);
    write(&src.join("fill/d3/f3"), b"changed");
    write(&src.join("added"), b"added");
    let result = s.go();
    assert_exact(&src, &dst);
    let (tracking, visited) = tracked(&result);
    assert!(tracking.starts_with("fell back: events were lost"), "{tracking}");
    assert_eq!(visited, rel_paths(&src).len() as u64 + 1);
    assert!(
        !result["digest"].as_str().unwrap().is_empty(),
        "a full walk has its digest"
    );
}

#[test]
fn tracking_unavailable_walks_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
    filler(&src, 50);
    let s = standby(&src, &dst, &[("FERRY_MOVER_TEST_MOST_WATCHES", "3")]);
    let off = s.ready["changeTracking"].as_str().unwrap().to_string();
    assert!(off.starts_with("off: ") && off.contains("watch"), "{off}");
    write(&src.join("fill/d1/f1"), b"changed");
    let result = s.go();
    assert_exact(&src, &dst);
    let (tracking, visited) = tracked(&result);
    assert!(tracking.starts_with("fell back: "), "{tracking}");
    assert_eq!(visited, rel_paths(&src).len() as u64 + 1);
}

#[test]
fn nothing_changed_visits_only_the_root() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
    filler(&src, 50);
    let result = standby(&src, &dst, &[]).go();
    assert_exact(&src, &dst);
    assert_eq!(tracked(&result), ("used".to_string(), 1));
    assert_eq!(result["bytesCopied"], 0);
}

#[test]
fn track_changes_needs_a_go_to_wait_for() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
    std::fs::create_dir(&src).unwrap();
    let (code, _, err) = run(
        &[
            "sync",
            "--source",
            src.to_str().unwrap(),
            "--target",
            dst.to_str().unwrap(),
            "--track-changes",
        ],
        &[],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--wait-for"), "{err}");
}

#[test]
fn a_write_during_a_tracked_strict_pass_fails_it_even_where_the_pass_did_not_read() {
    use ferry_mover::{Hook, MoverError, ProgressMode, SyncOptions, TrackOptions};
    use std::sync::Arc;
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
    filler(&src, 50);
    write(&src.join("changes.txt"), b"before");
    let late = src.join("fill/d1/f1");
    let opts = SyncOptions {
        source: src.clone(),
        target: dst.clone(),
        delete: true,
        strict: true,
        progress: ProgressMode::None,
        // A writer still at work: it writes a file the record does not name, during the pass.
        after_scan: Some(Hook(Arc::new(move || append(&late, b" still written")))),
        ..SyncOptions::default()
    };
    let mut ready = None;
    let (_, outcome) = ferry_mover::standby(
        &opts,
        &TrackOptions::default(),
        |r| ready = Some(r.clone()),
        |_| {
            write(&src.join("changes.txt"), b"after");
            Some(())
        },
    );
    assert_eq!(ready.unwrap().tracking, "on");
    match outcome {
        Err(MoverError::SourceChanged { count }) => assert_eq!(count, 1),
        other => panic!("expected the source to count as changed: {other:?}"),
    }
}

#[test]
fn trees_moved_in_and_out_and_entries_that_change_type_are_copied_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
    let outside = tmp.path().join("outside");
    filler(&src, 50);
    write(
        &outside.join("incoming/a/b.txt"),
        b"made outside the source, moved in",
    );
    write(&src.join("leaving/c/d.txt"), b"moved out of the source");
    write(&src.join("dir-to-file/e.txt"), b"a directory, then a file");
    write(&src.join("dir-to-link/f.txt"), b"a directory, then a symlink");
    write(
        &src.join("nested/g/h/i.txt"),
        b"written deep inside a directory renamed later",
    );
    let s = standby(&src, &dst, &[]);
    std::fs::rename(outside.join("incoming"), src.join("fill/incoming")).unwrap();
    std::fs::rename(src.join("leaving"), outside.join("left")).unwrap();
    std::fs::remove_dir_all(src.join("dir-to-file")).unwrap();
    write(&src.join("dir-to-file"), b"a file now");
    std::fs::remove_dir_all(src.join("dir-to-link")).unwrap();
    std::os::unix::fs::symlink("fill", src.join("dir-to-link")).unwrap();
    // A write in a watched directory, which is then renamed: the event names the old path.
    append(&src.join("nested/g/h/i.txt"), b", and appended");
    std::fs::rename(src.join("nested/g"), src.join("nested/renamed")).unwrap();
    let result = s.go();
    assert_exact(&src, &dst);
    let (tracking, visited) = tracked(&result);
    assert_eq!(tracking, "used");
    assert!(visited < 30, "visited {visited}");
    assert!(!dst.join("leaving").exists() && dst.join("fill/incoming/a/b.txt").exists());
}

#[test]
fn a_large_file_written_in_place_is_updated_piece_by_piece_from_the_catch_up_record() {
    use std::io::{Seek, SeekFrom, Write};
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
    filler(&src, 20);
    let segment = src.join("db/segment");
    write(&segment, &pattern(4 * 1024 * 1024, 9));
    let s = standby(&src, &dst, &[]);
    let mut f = std::fs::OpenOptions::new().write(true).open(&segment).unwrap();
    f.seek(SeekFrom::Start(3 * 1024 * 1024 + 100)).unwrap();
    f.write_all(&[0xAB; 8192]).unwrap();
    drop(f);
    let result = s.go();
    assert_exact(&src, &dst);
    assert_eq!(tracked(&result).0, "used");
    // One piece holds the rewritten page, written as the three 4 KiB blocks it spans (8192 bytes
    // from offset 100); the rest of the file is neither read again nor written.
    assert_eq!(result["bytesCopied"].as_u64().unwrap(), 3 * 4096);
    assert_eq!(
        result["bytesCompared"],
        ferry_mover::PIECE,
        "the catch-up pass's record stands for the target's other pieces"
    );
}

/// Polls `done` every 10 ms for at most 60 s (a bound on a failure, not a pace: the tests never
/// wait for a time to pass, only for what the standby did).
fn eventually(what: &str, done: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !done() {
        assert!(std::time::Instant::now() < deadline, "never happened: {what}");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

fn interim(result: &serde_json::Value) -> (u64, u64) {
    (
        result["interimPasses"].as_u64().unwrap(),
        result["interimBytesCopied"].as_u64().unwrap(),
    )
}

/// Waits until an interim pass (not the catch-up pass, whose chunk record has inode `catch_up`)
/// wrote its chunk record: it renames the record into place once it wrote the files.
fn an_interim_pass_ended(dst: &Path, catch_up: u64) {
    let record = dst.join(ferry_mover::RECORD_NAME);
    eventually("an interim pass kept its chunk record", || {
        std::fs::symlink_metadata(&record).is_ok_and(|m| std::os::unix::fs::MetadataExt::ino(&m) != catch_up)
    });
}

/// Writes `data` at `rel` in `src` whole at once: written beside the tree, then renamed in (a
/// pass never reads it half written, so what the passes copy is exact to the byte).
fn put_whole(src: &Path, rel: &str, data: &[u8]) {
    let staged = src.parent().unwrap().join("staged");
    write(&staged, data);
    let to = src.join(rel);
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::rename(&staged, &to).unwrap();
}

/// Writes `len` bytes of 0xAB at `at` in an existing file.
fn write_at(path: &Path, at: u64, len: usize) {
    use std::io::{Seek, SeekFrom, Write};
    let _writing = writing();
    let mut f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.seek(SeekFrom::Start(at)).unwrap();
    f.write_all(&vec![0xAB; len]).unwrap();
}

#[test]
fn what_is_written_while_the_standby_waits_is_copied_before_the_go() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
    filler(&src, 50);
    let s = converging(&src, &dst, &[]);
    let big = pattern(8 * 1024 * 1024, 3);
    put_whole(&src, "wal/000001", &big);
    put_whole(&src, "fill/d2/new.txt", b"small");
    eventually("the interim pass copied the new files", || {
        std::fs::read(dst.join("wal/000001")).is_ok_and(|b| b == big)
            && std::fs::read(dst.join("fill/d2/new.txt")).is_ok_and(|b| b == b"small")
    });
    let result = s.go();
    assert_exact(&src, &dst);
    assert_eq!(tracked(&result).0, "used");
    assert_eq!(result["bytesCopied"], 0, "the final pass copied again: {result}");
    let (passes, bytes) = interim(&result);
    assert!(passes >= 1, "{result}");
    assert_eq!(bytes, big.len() as u64 + 5, "{result}");
}

#[test]
fn files_rewritten_during_and_after_interim_passes_are_exact_after_the_final_pass() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
    filler(&src, 50);
    write(&src.join("hot/page"), &pattern(2 * 1024 * 1024, 1));
    write(&src.join("hot/note"), b"first");
    let s = converging(&src, &dst, &[("FERRY_MOVER_TEST_INTERIM_MS", "50")]);
    let catch_up_record = ino(&dst.join(ferry_mover::RECORD_NAME));
    for round in 0..30u64 {
        write_at(
            &src.join("hot/page"),
            round * 70_001 % (2 * 1024 * 1024 - 9000),
            9000,
        );
        write(&src.join("hot/note"), &pattern(10 + round as usize * 37, round));
        write(
            &src.join(format!("hot/new{}", round % 4)),
            &pattern(round as usize, round),
        );
        std::thread::sleep(std::time::Duration::from_millis(5 + round % 3 * 20));
    }
    an_interim_pass_ended(&dst, catch_up_record);
    write_at(&src.join("hot/page"), 12_345, 100);
    write(&src.join("hot/note"), b"last");
    let result = s.go();
    assert_exact(&src, &dst);
    assert_eq!(tracked(&result).0, "used");
    assert!(interim(&result).0 >= 1, "{result}");
}

#[test]
fn a_large_file_written_before_and_after_an_interim_pass_costs_the_final_pass_its_later_pages() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
    filler(&src, 20);
    let (a, b) = (src.join("db/a"), src.join("db/b"));
    write(&a, &pattern(4 * 1024 * 1024, 9));
    write(&b, &pattern(4 * 1024 * 1024, 10));
    // One interim pass: the writes after it are the final pass's however slowly this runs.
    let s = converging(&src, &dst, &[("FERRY_MOVER_TEST_INTERIM_PASSES", "1")]);
    let catch_up_record = ino(&dst.join(ferry_mover::RECORD_NAME));
    write_at(&a, 1024 * 1024 + 100, 8192);
    an_interim_pass_ended(&dst, catch_up_record);
    write_at(&a, 3 * 1024 * 1024 + 100, 8192);
    write_at(&b, 2 * 1024 * 1024 + 100, 8192);
    let result = s.go();
    assert_exact(&src, &dst);
    assert_eq!(tracked(&result).0, "used");
    // Each rewritten page spans three 4 KiB blocks of one piece.
    assert_eq!(interim(&result), (1, 3 * 4096), "{result}");
    assert_eq!(result["bytesCopied"].as_u64().unwrap(), 2 * 3 * 4096, "{result}");
    assert_eq!(
        result["bytesCompared"],
        2 * ferry_mover::PIECE,
        "the interim pass's record stands for a's other pieces, the catch-up's it kept for b's"
    );
}

#[test]
fn a_record_lost_while_waiting_makes_the_final_pass_walk_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
    filler(&src, 50);
    let env = [
        ("FERRY_MOVER_TEST_LOSE_EVENTS", "interim"),
        ("FERRY_MOVER_TEST_INTERIM_MS", "50"),
    ];
    let s = converging(&src, &dst, &env);
    write(&src.join("fill/d3/f3"), b"changed while waiting, its record lost");
    // The first record an interim pass takes holds the write above and is lost; a later one,
    // whole again, copies what is written after it.
    eventually("a pass after the lost record copied a later write", || {
        write(&src.join("added"), b"added later");
        std::fs::read(dst.join("added")).is_ok_and(|b| b == b"added later")
    });
    let result = s.go();
    assert_exact(&src, &dst);
    let (tracking, visited) = tracked(&result);
    assert!(
        tracking.starts_with("fell back: events were lost (test hook, while waiting)"),
        "{tracking}"
    );
    assert_eq!(visited, rel_paths(&src).len() as u64 + 1);
}

/// A directory made while the standby waits is copied by an interim pass; what is written in it
/// after that pass is still the final pass's to copy (the new directory is watched too).
#[test]
fn a_file_written_in_a_directory_made_after_the_catch_up_reaches_the_target() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
    filler(&src, 20);
    let s = converging(&src, &dst, &[("FERRY_MOVER_TEST_INTERIM_MS", "50")]);
    std::fs::create_dir_all(src.join("base/16384/sub")).unwrap();
    eventually("an interim pass made the new directories", || {
        dst.join("base/16384/sub").is_dir()
    });
    write(&src.join("base/16384/1259"), b"written after the interim pass");
    write(&src.join("base/16384/sub/deeper"), b"and below it");
    let result = s.go();
    assert_exact(&src, &dst);
    assert_eq!(tracked(&result).0, "used");
}

/// A directory renamed while the standby waits is copied under its new name by an interim pass;
/// what is written in it after that pass reaches the target under the new name.
#[test]
fn a_file_written_in_a_directory_renamed_after_the_catch_up_reaches_the_target() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
    filler(&src, 20);
    write(&src.join("old/inner/kept"), b"here before the catch-up");
    let s = converging(&src, &dst, &[("FERRY_MOVER_TEST_INTERIM_MS", "50")]);
    std::fs::rename(src.join("old"), src.join("new")).unwrap();
    eventually("an interim pass copied the renamed directory", || {
        dst.join("new/inner/kept").is_file() && !dst.join("old").exists()
    });
    write(&src.join("new/inner/kept"), b"rewritten under the new name");
    write(&src.join("new/inner/added"), b"added under the new name");
    let result = s.go();
    assert_exact(&src, &dst);
    assert_eq!(tracked(&result).0, "used");
}
