//! A standby says it is armed with a file (`sync --ready-file`) that a readiness probe checks with
//! `ferry-mover ready FILE`: created once the standby waits for its go (with `--track-changes`,
//! once its catch-up pass ended), never before.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test] fns

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// `ferry-mover ready PATH`'s exit code.
fn ready(path: &Path) -> i32 {
    run(&["ready", path.to_str().unwrap()], &[]).0
}

/// Starts a standby final pass from `src` to `dst` with `--ready-file ready` beside them.
fn standby(src: &Path, dst: &Path, extra: &[&str]) -> Started {
    let dir = dst.parent().unwrap();
    start(
        Command::new(bin())
            .args(["sync", "--strict", "--delete", "--progress", "none"])
            .arg("--source")
            .arg(src)
            .arg("--target")
            .arg(dst)
            .arg("--wait-for")
            .arg(dir.join("go"))
            .arg("--ready-file")
            .arg(dir.join("ready"))
            .arg("--result-file")
            .arg(dir.join("result.json"))
            .args(extra)
            .stdout(Stdio::piped())
            .env_remove("FERRY_RESULT_FILE"),
    )
}

/// Gives the go and checks the final pass copied the source exactly.
fn go(mut child: Started, src: &Path, dst: &Path) {
    let dir = dst.parent().unwrap();
    std::fs::write(dir.join("go"), "go").unwrap();
    let status = child.wait().unwrap();
    let result = std::fs::read_to_string(dir.join("result.json")).unwrap();
    assert!(status.success(), "final pass failed: {result}");
    assert_same_tree(src, dst);
}

#[test]
fn ready_exits_0_only_when_the_file_exists() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("ready");
    assert_eq!(ready(&path), 1);
    std::fs::write(&path, "").unwrap();
    assert_eq!(ready(&path), 0);
}

#[test]
fn a_tracking_standby_is_armed_once_its_catch_up_pass_ended() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
    write(&src.join("a/file"), b"data");
    // Left from an earlier run: it must not arm this standby early.
    std::fs::write(tmp.path().join("ready"), "").unwrap();
    let mut child = standby(&src, &dst, &["--track-changes"]);
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.contains(r#""standby":"ready""#), "{line}");
    // The catch-up pass has copied the source by the time the standby says it is armed.
    assert_eq!(ready(&tmp.path().join("ready")), 0);
    assert_same_tree(&src, &dst);
    write(&src.join("a/later"), b"after the catch-up");
    go(child, &src, &dst);
}

#[test]
fn a_standby_without_tracking_is_armed_while_it_waits() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
    write(&src.join("file"), b"data");
    let child = standby(&src, &dst, &[]);
    let deadline = Instant::now() + Duration::from_secs(20);
    while ready(&tmp.path().join("ready")) != 0 {
        assert!(Instant::now() < deadline, "never armed");
        std::thread::sleep(Duration::from_millis(20));
    }
    go(child, &src, &dst);
}

#[test]
fn a_ready_file_that_cannot_be_made_fails_the_standby_before_it_waits() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
    write(&src.join("file"), b"data");
    let missing = tmp.path().join("no-such-dir/ready");
    let (code, _, err) = run(
        &[
            "sync",
            "--source",
            src.to_str().unwrap(),
            "--target",
            dst.to_str().unwrap(),
            "--wait-for",
            tmp.path().join("go").to_str().unwrap(),
            "--ready-file",
            missing.to_str().unwrap(),
        ],
        &[],
    );
    assert_ne!(code, 0, "{err}");
    assert!(err.contains("no-such-dir"), "{err}");
}

#[test]
fn a_ready_file_needs_a_go_to_wait_for() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    std::fs::create_dir(&src).unwrap();
    let (code, _, err) = run(
        &[
            "sync",
            "--source",
            src.to_str().unwrap(),
            "--target",
            tmp.path().join("dst").to_str().unwrap(),
            "--ready-file",
            tmp.path().join("ready").to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--wait-for"), "{err}");
}
