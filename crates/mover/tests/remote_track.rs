//! Change tracking across nodes: `serve --track-changes` watches its source from the start, each
//! `pull --track-changes` marks its pass on the server's record and reports it passed, and a
//! `pull --changes` (the final pass) visits only what changed since the last pass that passed;
//! wherever the record may be incomplete it walks both trees whole and says why. Each test runs
//! both movers as the operator does and checks the target against the source by content.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test] fns

mod common;

use std::path::{Path, PathBuf};

use common::remote::*;
use common::*;

/// The flags of the operator's final pull.
const FINAL: &[&str] = &[
    "--track-changes",
    "--changes",
    "--strict",
    "--delete",
    "--stop-server",
];

/// A source of filler and a few named files, a tracking server, and a target a warm tracked
/// pull has copied it to.
struct Moved {
    _tmp: tempfile::TempDir,
    src: PathBuf,
    dst: PathBuf,
    client: PathBuf,
    server: Server,
}

fn warm(server_env: &[(&str, &str)]) -> Moved {
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
    filler(&src, 300);
    write(&src.join("a/edit.txt"), b"before");
    write(&src.join("a/gone.txt"), b"bye");
    write(&src.join("a/sized.bin"), &pattern(5000, 1));
    write(&src.join("a/grows.bin"), &pattern(5000, 2));
    write(&src.join("a/moving.txt"), b"moving");
    write(&src.join("tree/x/y/deep.txt"), b"deep");
    write(&src.join("tree/z.txt"), b"z");
    write(&src.join("subdir/inner/f.txt"), b"inner");
    std::fs::create_dir_all(src.join("b")).unwrap();
    let authority = Authority::new("tracked move");
    let server = Server::tracking(&src, &authority.issue(&tmp.path().join("source-tls")), server_env);
    let client = authority.issue(&tmp.path().join("target-tls"));
    let (code, first, err) = pull(&server, &client, &dst, &["--track-changes", "--delete"]);
    assert_eq!(code, 0, "stderr: {err}");
    assert!(first.get("changeTracking").is_none(), "{first}");
    assert_exact(&src, &dst);
    Moved {
        _tmp: tmp,
        src,
        dst,
        client,
        server,
    }
}

impl Moved {
    /// The final pull: its result and the source's entries, after checking it succeeded, the
    /// server stopped and the target is the source.
    fn final_pull(self) -> (serde_json::Value, u64) {
        let (code, result, err) = pull(&self.server, &self.client, &self.dst, FINAL);
        assert_eq!(code, 0, "{result} stderr: {err}");
        assert_exact(&self.src, &self.dst);
        let (code, served, err) = self.server.end();
        assert_eq!(code, 0, "stderr: {err}");
        assert_eq!(served["changeTracking"], "on", "{served}");
        (result, all_entries(&self.src))
    }
}

fn tracked(result: &serde_json::Value) -> (String, u64) {
    (
        result["changeTracking"].as_str().unwrap_or("absent").to_string(),
        result["entriesVisited"].as_u64().unwrap(),
    )
}

/// Every entry of the source, its root included.
fn all_entries(src: &Path) -> u64 {
    rel_paths(src).len() as u64 + 1
}

#[test]
fn a_tracked_final_pull_visits_only_what_changed() {
    let moved = warm(&[]);
    let src = moved.src.clone();
    write(&src.join("a/edit.txt"), b"after, and longer");
    std::fs::remove_file(src.join("a/gone.txt")).unwrap();
    write(&src.join("b/new/added.txt"), b"new");
    chmod(&src.join("tree/z.txt"), 0o600);
    let (result, entries) = moved.final_pull();
    let (tracking, visited) = tracked(&result);
    assert_eq!(tracking, "used", "{result}");
    // The root, a, a/edit.txt, b, b/new, b/new/added.txt, tree, tree/z.txt.
    assert!(visited <= 10, "{result}");
    // edit.txt and added.txt copied; z.txt's mode fixed, or the file fetched again when it was
    // written in the same second as the warm pull's copy of it (the racy-file rule).
    let copied = result["filesCopied"].as_u64().unwrap();
    let fixed = result["metadataFixed"].as_u64().unwrap();
    assert!(copied >= 2 && copied + fixed == 3, "{result}");
    assert_eq!(result["deleted"], 1, "{result}");
    assert_eq!(result["files"], entries - 1, "{result}");
    assert!(result["digest"].as_str().unwrap().is_empty(), "{result}");
}

#[test]
fn a_rename_across_directories_and_a_deleted_tree_are_followed() {
    let moved = warm(&[]);
    let src = moved.src.clone();
    std::fs::rename(src.join("a/moving.txt"), src.join("b/moved.txt")).unwrap();
    std::fs::rename(src.join("subdir/inner"), src.join("b/inner-moved")).unwrap();
    // Written in the directory moved: its watch reports under the old name, visited whole.
    write(&src.join("b/inner-moved/later.txt"), b"later");
    std::fs::remove_dir_all(src.join("tree")).unwrap();
    let (result, _) = moved.final_pull();
    let (tracking, visited) = tracked(&result);
    assert_eq!(tracking, "used", "{result}");
    assert!(visited <= 12, "{result}");
}

#[test]
fn a_file_truncated_and_one_extended_are_copied() {
    let moved = warm(&[]);
    let src = moved.src.clone();
    {
        let _writing = writing();
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(src.join("a/sized.bin"))
            .unwrap();
        f.set_len(100).unwrap();
    }
    append(&src.join("a/grows.bin"), &pattern(70_000, 3));
    let (result, _) = moved.final_pull();
    let (tracking, visited) = tracked(&result);
    assert_eq!(tracking, "used", "{result}");
    assert!(visited <= 4, "{result}");
    assert_eq!(result["filesCopied"], 2, "{result}");
}

#[test]
fn a_lost_record_falls_back_to_a_whole_walk_that_still_copies_right() {
    let moved = warm(&[("FERRY_MOVER_TEST_LOSE_EVENTS", "1")]);
    let src = moved.src.clone();
    write(&src.join("a/edit.txt"), b"after the loss");
    std::fs::rename(src.join("tree"), src.join("b/tree")).unwrap();
    let (result, entries) = moved.final_pull();
    let (tracking, visited) = tracked(&result);
    assert!(
        tracking.starts_with("fell back:") && tracking.contains("events were lost"),
        "{result}"
    );
    assert_eq!(visited, entries, "{result}");
}

#[test]
fn a_final_pull_with_no_pass_before_it_walks_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
    filler(&src, 50);
    let authority = Authority::new("first pass final");
    let server = Server::tracking(&src, &authority.issue(&tmp.path().join("source-tls")), &[]);
    let client = authority.issue(&tmp.path().join("target-tls"));
    let (code, result, err) = pull(&server, &client, &dst, FINAL);
    assert_eq!(code, 0, "stderr: {err}");
    assert_exact(&src, &dst);
    let (tracking, visited) = tracked(&result);
    assert!(tracking.contains("no pass has succeeded"), "{result}");
    assert_eq!(visited, all_entries(&src), "{result}");
    assert_eq!(server.end().0, 0);
}

#[test]
fn a_restarted_server_and_one_without_tracking_make_the_final_pull_walk_whole() {
    let moved = warm(&[]);
    let Moved {
        _tmp,
        src,
        dst,
        client,
        server,
    } = moved;
    drop(server);
    write(&src.join("a/edit.txt"), b"while no server watched");
    let tls = _tmp.path().join("source-tls");
    let restarted = Server::tracking(&src, &tls, &[]);
    let (code, result, err) = pull(&restarted, &client, &dst, FINAL);
    assert_eq!(code, 0, "stderr: {err}");
    assert_exact(&src, &dst);
    let (tracking, visited) = tracked(&result);
    assert!(tracking.contains("no pass has succeeded"), "{result}");
    assert_eq!(visited, all_entries(&src), "{result}");
    assert_eq!(restarted.end().0, 0);

    // A server without --track-changes: pulls that ask for it work, and walk whole.
    write(&src.join("a/edit.txt"), b"untracked");
    let untracked = Server::start(&src, &tls);
    let (code, result, err) = pull(&untracked, &client, &dst, FINAL);
    assert_eq!(code, 0, "stderr: {err}");
    assert_exact(&src, &dst);
    let (tracking, _) = tracked(&result);
    assert!(tracking.contains("not tracking changes"), "{result}");
    assert_eq!(untracked.end().0, 0);
}

/// The final pass reads only what changed; a write elsewhere while it runs (the application not
/// stopped after all) is in the record of its own mark, and fails it (exit 6).
#[test]
fn a_change_during_a_tracked_strict_pull_fails_it() {
    let moved = warm(&[]);
    let src = moved.src.clone();
    // 2 MiB at 1 MiB/s: the pass lasts about two seconds.
    write(&src.join("a/edit.txt"), &pattern(2 << 20, 7));
    let elsewhere = src.join("fill/d3/f3");
    // Written once the pass fetches edit.txt (a temp file beside it, or the file itself no longer
    // the 6 bytes the warm pull left): after the pass's mark and listing, however slowly the pull
    // starts.
    let fetching = moved.dst.join("a");
    let writer = std::thread::spawn(move || {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let started = || {
            let temp = std::fs::read_dir(&fetching).is_ok_and(|entries| {
                entries.flatten().any(|entry| {
                    entry
                        .file_name()
                        .to_string_lossy()
                        .starts_with(ferry_mover::TEMP_PREFIX)
                })
            });
            let in_place = std::fs::metadata(fetching.join("edit.txt")).is_ok_and(|m| m.len() != 6);
            temp || in_place
        };
        while !started() {
            assert!(
                std::time::Instant::now() < deadline,
                "the final pull never fetched edit.txt"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        append(&elsewhere, b"written during the final pass");
    });
    let flags = [FINAL, &["--bwlimit", "1048576"]].concat();
    let (code, result, err) = pull(&moved.server, &moved.client, &moved.dst, &flags);
    writer.join().unwrap();
    assert_eq!(code, 6, "{result} stderr: {err}");
    assert!(err.contains("changed during the final pass"), "{err}");
    // Still serving: the next final pass copies what changed since the last one that passed.
    let (result, _) = moved.final_pull();
    assert_eq!(tracked(&result).0, "used", "{result}");
}

/// A directory made between two warm pulls is watched from the second one's mark on: what is
/// written in it later is in the final pull's record.
#[test]
fn a_directory_made_between_warm_pulls_is_watched_for_the_final_one() {
    let moved = warm(&[]);
    let src = moved.src.clone();
    write(&src.join("made/later/first.txt"), b"first");
    std::fs::rename(src.join("subdir"), src.join("renamed")).unwrap();
    let (code, second, err) = pull(
        &moved.server,
        &moved.client,
        &moved.dst,
        &["--track-changes", "--delete"],
    );
    assert_eq!(code, 0, "{second} stderr: {err}");
    write(&src.join("made/later/second.txt"), b"second");
    write(&src.join("renamed/inner/f.txt"), b"rewritten under the new name");
    let (result, _) = moved.final_pull();
    let (tracking, visited) = tracked(&result);
    assert_eq!(tracking, "used", "{result}");
    assert!(visited <= 8, "{result}");
}

/// The operator's final pull, started on standby (`--wait-for`) while the replica still serves.
struct StandbyPull {
    process: Started,
    go: PathBuf,
    moved: Moved,
}

impl Moved {
    /// Starts the final pull on standby; `env` sets its test hooks.
    fn standby_pull(self, env: &[(&str, &str)]) -> StandbyPull {
        let go = self._tmp.path().join("go");
        let mut command = std::process::Command::new(bin());
        command
            .args([
                "pull",
                "--from",
                &self.server.address,
                "--progress",
                "json",
                "--tls",
            ])
            .arg(&self.client)
            .arg("--target")
            .arg(&self.dst)
            .args(FINAL)
            .arg("--wait-for")
            .arg(&go)
            .env_remove("FERRY_RESULT_FILE")
            .envs(env.iter().copied())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        StandbyPull {
            process: start(&mut command),
            go,
            moved: self,
        }
    }
}

impl StandbyPull {
    /// Gives the go: the final pull's result, after checking it succeeded, the server stopped
    /// and the target is the source.
    fn go(self) -> serde_json::Value {
        write(&self.go, b"go");
        let out = self.process.into_child().wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
        let result: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
        assert_eq!(result["goBy"], "file", "{result}");
        assert_exact(&self.moved.src, &self.moved.dst);
        let (code, _, err) = self.moved.server.end();
        assert_eq!(code, 0, "stderr: {err}");
        result
    }
}

fn interim(result: &serde_json::Value) -> (u64, u64) {
    (
        result["interimPasses"].as_u64().unwrap(),
        result["interimBytesCopied"].as_u64().unwrap(),
    )
}

/// Polls `done` every 10 ms for at most 60 s (a bound on a failure, not a pace).
fn eventually(what: &str, done: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !done() {
        assert!(std::time::Instant::now() < deadline, "never happened: {what}");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Writes `data` at `rel` in `src` whole at once (written beside the tree, then renamed in), so
/// an interim pull never reads it half written.
fn put_whole(src: &Path, rel: &str, data: &[u8]) {
    let staged = src.parent().unwrap().join("staged");
    write(&staged, data);
    std::fs::rename(&staged, src.join(rel)).unwrap();
}

#[test]
fn what_is_written_while_a_standby_pull_waits_is_pulled_before_the_go() {
    let moved = warm(&[]);
    let (src, dst) = (moved.src.clone(), moved.dst.clone());
    let standby = moved.standby_pull(&[("FERRY_MOVER_TEST_INTERIM_MS", "50")]);
    let big = pattern(4 << 20, 5);
    put_whole(&src, "b/wal-000001", &big);
    put_whole(&src, "a/edit.txt", b"edited while the replica served");
    eventually("an interim pull copied the new and the edited file", || {
        std::fs::read(dst.join("b/wal-000001")).is_ok_and(|b| b == big)
            && std::fs::read(dst.join("a/edit.txt")).is_ok_and(|b| b == b"edited while the replica served")
    });
    let result = standby.go();
    assert_eq!(tracked(&result).0, "used", "{result}");
    assert_eq!(result["bytesCopied"], 0, "the final pull copied again: {result}");
    let (passes, bytes) = interim(&result);
    assert!(passes >= 1, "{result}");
    assert!(bytes >= big.len() as u64 + 31, "{result}");
}

#[test]
fn what_changes_after_the_last_interim_pull_is_the_final_pulls() {
    let moved = warm(&[]);
    let (src, dst) = (moved.src.clone(), moved.dst.clone());
    // Written before the standby starts, so its one interim pull takes it; what is written after
    // that pull is the final pull's however slowly this runs.
    put_whole(&src, "b/first.txt", b"before the interim pull");
    let standby = moved.standby_pull(&[
        ("FERRY_MOVER_TEST_INTERIM_MS", "50"),
        ("FERRY_MOVER_TEST_INTERIM_PASSES", "1"),
    ]);
    eventually("the interim pull copied the first file", || {
        dst.join("b/first.txt").is_file()
    });
    write(&src.join("tree/x/y/deep.txt"), b"after the interim pull");
    std::fs::remove_file(src.join("a/gone.txt")).unwrap();
    let result = standby.go();
    let (tracking, visited) = tracked(&result);
    assert_eq!(tracking, "used", "{result}");
    // The root, tree, tree/x, tree/x/y, deep.txt, a, gone.txt: not the 300 files of filler.
    assert!(visited <= 10, "{result}");
    assert_eq!(result["filesCopied"], 1, "{result}");
    assert_eq!(result["deleted"], 1, "{result}");
    assert_eq!(interim(&result).0, 1, "{result}");
}

/// Against a server that does not track changes each interim pull would walk both trees whole,
/// every second: after the first finds that out, none follow.
#[test]
fn a_standby_pull_from_a_server_without_tracking_stops_pulling_after_one() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
    filler(&src, 50);
    let authority = Authority::new("untracked standby");
    let server = Server::start(&src, &authority.issue(&tmp.path().join("source-tls")));
    let client = authority.issue(&tmp.path().join("target-tls"));
    let (code, _, err) = pull(&server, &client, &dst, &["--track-changes", "--delete"]);
    assert_eq!(code, 0, "stderr: {err}");
    let moved = Moved {
        _tmp: tmp,
        src: src.clone(),
        dst: dst.clone(),
        client,
        server,
    };
    // Written before the standby starts: its first interim pull takes it.
    put_whole(&src, "fill/added.txt", b"added while waiting");
    let standby = moved.standby_pull(&[("FERRY_MOVER_TEST_INTERIM_MS", "20")]);
    eventually("the interim pull copied the new file", || {
        dst.join("fill/added.txt").is_file()
    });
    // Time for many more pulls at one per 20 ms, were they run.
    std::thread::sleep(std::time::Duration::from_millis(400));
    let result = standby.go();
    assert_eq!(interim(&result).0, 1, "{result}");
    assert!(tracked(&result).0.contains("not tracking changes"), "{result}");
}
