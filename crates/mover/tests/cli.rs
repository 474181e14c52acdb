//! The command-line contract: progress lines, result JSON, usage and digest output, help.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test] fns

mod common;

use common::*;

const PROGRESS_KEYS: [&str; 7] = [
    "bytesDone",
    "bytesPerSecond",
    "bytesTotal",
    "elapsedSeconds",
    "filesDone",
    "filesTotal",
    "phase",
];
const RESULT_KEYS: [&str; 12] = [
    "bytes",
    "bytesCompared",
    "bytesCopied",
    "deleted",
    "digest",
    "entriesVisited",
    "files",
    "filesCopied",
    "metadataFixed",
    "seconds",
    "verify",
    "warnings",
];

fn keys(v: &serde_json::Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
    k.sort();
    k
}

#[test]
fn json_progress_and_result() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let dst = tmp.path().join("dst");
    for i in 0..50u64 {
        write(&src.join(format!("d/{i}")), &pattern(10_000, i));
    }
    let rf = tmp.path().join("env-result.json");
    let args = [
        "sync",
        "--source",
        src.to_str().unwrap(),
        "--target",
        dst.to_str().unwrap(),
        "--progress",
        "json",
    ];
    let (code, out, err) = run(&args, &[("FERRY_RESULT_FILE", rf.to_str().unwrap())]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(lines.len() >= 2, "{out}");
    let (result, progress) = lines.split_last().unwrap();
    for p in progress {
        assert_eq!(keys(p), PROGRESS_KEYS, "{p}");
    }
    let last = progress.last().unwrap();
    assert_eq!(last["phase"], "done");
    assert_eq!(last["filesTotal"], 51);
    assert_eq!(last["bytesDone"], last["bytesTotal"]);
    assert_eq!(keys(result), RESULT_KEYS);
    assert_eq!(result["files"], 51);
    assert_eq!(
        result["entriesVisited"], 52,
        "a full walk reads every entry, the root too"
    );
    assert_eq!(result["bytes"], 500_000);
    assert_eq!(result["bytesCopied"], 500_000);
    assert_eq!(result["verify"], "checksum");
    assert_eq!(result["digest"].as_str().unwrap().len(), 32);
    let file: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&rf).unwrap()).unwrap();
    assert_eq!(&file, result);
    assert!(std::fs::metadata(&rf).unwrap().len() < 4096);
}

#[test]
fn human_progress_and_none_keep_stdout_clean() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    write(&src.join("f"), b"x");
    for mode in ["human", "none"] {
        let dst = tmp.path().join(mode);
        let args = [
            "sync",
            "--source",
            src.to_str().unwrap(),
            "--target",
            dst.to_str().unwrap(),
            "--progress",
            mode,
        ];
        let (code, out, err) = run(&args, &[]);
        assert_eq!(code, 0, "{err}");
        // Only the result line on stdout.
        assert_eq!(out.lines().count(), 1, "{out}");
    }
}

#[test]
fn usage_counts_allocated_bytes_and_inodes_once_per_hard_link() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("d");
    write(&d.join("a"), &pattern(100_000, 1));
    std::fs::hard_link(d.join("a"), d.join("b")).unwrap();
    let f = std::fs::File::create(d.join("sparse")).unwrap();
    f.set_len(1 << 30).unwrap();
    let (code, out, _) = run(&["usage", d.to_str().unwrap()], &[]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(keys(&v), ["bytes", "fileSystem", "inodes", "needs"]);
    // Root's plain files, a hard link and a sparse file: a copy needs no capability beyond reading.
    assert_eq!(
        v["needs"],
        serde_json::json!({"otherOwners": false, "setId": false, "deviceNodes": false, "fileCapabilities": false})
    );
    assert_eq!(v["inodes"], 3, "root, a (=b), sparse");
    let bytes = v["bytes"].as_u64().unwrap();
    assert!((100_000..200_000).contains(&bytes), "{bytes}");
    let lib = ferry_mover::usage(&d).unwrap();
    assert_eq!(lib.bytes, bytes);
}

#[test]
fn digest_output_and_help() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("d");
    rich_tree(&d);
    let (code, out, _) = run(&["digest", d.to_str().unwrap(), "--json"], &[]);
    assert_eq!(code, 0);
    let m: ferry_mover::Manifest = serde_json::from_str(&out).unwrap();
    let by_path = |p: &str| m.entries.iter().find(|e| e.path == p).unwrap();
    assert_eq!(by_path("setuid").mode, "4755");
    assert_eq!(by_path("hl/b").hard_link.as_deref(), Some("hl/a"));
    assert_eq!(by_path("link-rel").link_target.as_deref(), Some("plain.txt"));
    assert_eq!(by_path("plain.txt").xattrs["user.comment"], "a comment");
    if have("setfacl") {
        assert!(
            by_path("plain.txt")
                .acl
                .as_deref()
                .unwrap()
                .contains("user:1000:rw-")
        );
        assert!(
            by_path("dir")
                .default_acl
                .as_deref()
                .unwrap()
                .contains("user:1002:r--")
        );
    }
    assert_eq!(by_path("null-dev").kind, "char");
    assert_eq!(by_path(".").mtime_ns, 1_500_000_000_987_654_321);
    let (code, text, _) = run(&["digest", d.to_str().unwrap()], &[]);
    assert_eq!(code, 0);
    assert!(text.contains(&format!("digest {}", m.digest)));
    let (code, help, _) = run(&["sync", "--help"], &[]);
    assert_eq!(code, 0);
    for s in [
        "--delete",
        "--verify",
        "--threads",
        "--progress",
        "--result-file",
        "Exit codes",
        "ENOSPC",
    ] {
        assert!(help.contains(s), "help lacks {s}: {help}");
    }
}

#[test]
fn bandwidth_limit_paces_the_copy_and_keeps_it_exact() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let dst = tmp.path().join("dst");
    for i in 0..6u64 {
        write(&src.join(format!("f{i}")), &pattern(512 << 10, i));
    }
    let started = std::time::Instant::now();
    let args = [
        "sync",
        "--source",
        src.to_str().unwrap(),
        "--target",
        dst.to_str().unwrap(),
        "--progress",
        "json",
        "--bwlimit",
        "1048576",
    ];
    let (code, out, err) = run(&args, &[]);
    assert_eq!(code, 0, "{err}");
    // 3 MiB at 1 MiB/s: the limit holds the copy to about three seconds.
    assert!(
        started.elapsed() >= std::time::Duration::from_millis(2500),
        "{:?}",
        started.elapsed()
    );
    // Progress reported while paced shows the copy part-way.
    let partial = out
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["phase"] == "copy")
        .any(|v| {
            let done = v["bytesDone"].as_u64().unwrap();
            done > 0 && done < v["bytesTotal"].as_u64().unwrap()
        });
    assert!(partial, "{out}");
    assert_same_tree(&src, &dst);

    let (code, _, err) = run(&["sync", "--source", "a", "--target", "b", "--bwlimit", "0"], &[]);
    assert_eq!(code, 2, "a zero limit is refused as bad input: {err}");
}
