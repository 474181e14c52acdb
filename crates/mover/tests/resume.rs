//! Resumability: a run killed with SIGKILL mid-copy is finished by the next run, and stale
//! temp files are cleaned up.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test] fns

mod common;

use common::*;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn temps(root: &std::path::Path) -> Vec<std::path::PathBuf> {
    walk(root)
        .into_iter()
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(ferry_mover::TEMP_PREFIX)
        })
        .collect()
}

#[test]
fn killed_run_is_finished_by_the_next_one() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let dst = tmp.path().join("dst");
    for i in 0..12 {
        write(&src.join(format!("big/{i:02}.bin")), &pattern(24 << 20, i));
    }
    for i in 0..3000u64 {
        write(
            &src.join(format!("small/{}/{i}.txt", i % 30)),
            &pattern(1000 + i as usize, i),
        );
    }
    let mut child = Command::new(bin())
        .args([
            "sync",
            "--source",
            src.to_str().unwrap(),
            "--target",
            dst.to_str().unwrap(),
        ])
        .args(["--progress", "json", "--threads", "2", "--verify", "checksum"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let start = Instant::now();
    let mut killed_mid_copy = false;
    for line in BufReader::new(stdout).lines() {
        let v: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
        if v["phase"] == "copy" && v["bytesDone"].as_u64().unwrap() > 0 {
            child.kill().unwrap(); // SIGKILL
            killed_mid_copy = v["bytesDone"] != v["bytesTotal"];
            break;
        }
        if start.elapsed() > Duration::from_secs(60) {
            break;
        }
    }
    let _ = child.kill();
    let status = child.wait().unwrap();
    println!("first run: {status:?}, killed mid-copy: {killed_mid_copy}");
    if !killed_mid_copy {
        println!("NOTE: the first run finished before it could be killed; resume path not exercised");
    }
    let (code, res, _, err) = sync_cli(&src, &dst, &["--delete"]);
    assert_eq!(code, 0, "{err}");
    assert_same_tree(&src, &dst);
    assert!(temps(&dst).is_empty(), "temp files left: {:?}", temps(&dst));
    // Files completed by the killed run were not copied again.
    if killed_mid_copy {
        assert!(
            res["bytesCopied"].as_u64().unwrap() < res["bytes"].as_u64().unwrap(),
            "{res}"
        );
    }
}

#[test]
fn stale_temps_and_half_written_files_are_repaired() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let dst = tmp.path().join("dst");
    write(&src.join("d/a.bin"), &pattern(300_000, 1));
    write(&src.join("d/b.bin"), &pattern(300_000, 2));
    write(&src.join("d/c.bin"), &pattern(300_000, 3));
    let (code, _, _, _) = sync_cli(&src, &dst, &[]);
    assert_eq!(code, 0);
    // What a killed run leaves: a temp file, and (in a directory it made, where files are
    // written under their real names) a file under its real name with a fresh mtime, truncated
    // or of full length with its times not yet set.
    write(
        &dst.join(format!("d/{}0123456789abcdef", ferry_mover::TEMP_PREFIX)),
        b"partial",
    );
    std::fs::write(dst.join("d/b.bin"), pattern(1000, 2)).unwrap();
    std::fs::write(dst.join("d/c.bin"), pattern(300_000, 4)).unwrap();
    let (code, res, _, err) = sync_cli(&src, &dst, &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(res["bytesCopied"], 600_000, "{res}");
    assert!(temps(&dst).is_empty());
    assert_same_tree(&src, &dst);
}
