//! A mover run as the StatefulSet's own user, without capabilities (Pod Security "restricted"):
//! the copy keeps every owner or fails saying which it cannot, and leaves the volume root's
//! `lost+found` (mkfs's, root-owned) alone. The tests run as root; the mover runs as uid 999.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test] fns

mod common;

use std::fs;
use std::os::unix::fs::{MetadataExt, lchown, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::*;

const USER: u32 = 999;
/// The pod's fsGroup: the kubelet gives the volume roots this group, g+rwx and setgid.
const FS_GROUP: u32 = 2000;

/// The tests build the trees as root and drop to uid 999 through setpriv (util-linux): where they
/// cannot, they fail rather than pass without having run.
fn able() {
    assert!(
        rustix::process::geteuid().is_root(),
        "needs root to build the tree and drop to uid 999"
    );
    assert!(have("setpriv"), "needs setpriv (util-linux)");
}

/// A fixture dir uid 999 can reach (the tempdir is 0700) with a copy of the binary it can run
/// (the target dir may be under a home it cannot enter).
struct Place {
    _dir: tempfile::TempDir,
    base: PathBuf,
    bin: PathBuf,
}

fn place() -> Place {
    let dir = tempfile::Builder::new()
        .prefix("ferry-as-user")
        .tempdir_in("/tmp")
        .unwrap();
    let base = dir.path().to_path_buf();
    chmod(&base, 0o755);
    let copy = base.join("ferry-mover");
    fs::copy(bin(), &copy).unwrap();
    chmod(&copy, 0o755);
    Place {
        _dir: dir,
        base,
        bin: copy,
    }
}

fn own(p: &Path, uid: u32, gid: u32) {
    lchown(p, Some(uid), Some(gid)).unwrap();
}

fn dir(p: &Path, uid: u32, gid: u32, mode: u32) {
    fs::create_dir_all(p).unwrap();
    own(p, uid, gid);
    chmod(p, mode);
}

fn file(p: &Path, data: &[u8], uid: u32, gid: u32, mode: u32) {
    write(p, data);
    own(p, uid, gid);
    chmod(p, mode);
}

/// A volume root as the kubelet leaves it for a pod with fsGroup 2000: root dir 0:2000 2775 and
/// mkfs's `lost+found` 0:2000 2770, holding a file of its own.
fn volume_root(root: &Path, lost: &str) {
    dir(root, 0, FS_GROUP, 0o2775);
    dir(&root.join("lost+found"), 0, FS_GROUP, 0o2770);
    file(&root.join("lost+found").join(lost), lost.as_bytes(), 0, 0, 0o600);
}

/// The StatefulSet's data on a volume: all the user's, but for what mkfs made.
fn user_tree(root: &Path) {
    volume_root(root, "#12");
    dir(&root.join("data"), USER, FS_GROUP, 0o2775);
    file(&root.join("data/a.txt"), b"alpha", USER, FS_GROUP, 0o640);
    fs::hard_link(root.join("data/a.txt"), root.join("data/a-link")).unwrap();
    file(&root.join("data/b.bin"), &pattern(300_000, 7), USER, USER, 0o600);
    symlink("a.txt", root.join("data/to-a")).unwrap();
    own(&root.join("data/to-a"), USER, FS_GROUP);
    dir(&root.join("private"), USER, USER, 0o750);
    file(&root.join("private/key"), b"secret", USER, USER, 0o400);
    dir(&root.join("private/empty"), USER, FS_GROUP, 0o700);
    let mut t = 1_600_000_000;
    for p in [
        "data/a.txt",
        "data/b.bin",
        "data/to-a",
        "private/key",
        "private/empty",
    ] {
        t += 1000;
        set_mtime(&root.join(p), t, 123_456_789);
    }
    set_mtime(&root.join("private"), 1_600_100_000, 5);
    set_mtime(&root.join("data"), 1_600_200_000, 7);
}

/// Runs the binary as uid 999 with group 999 and the supplementary groups [999, 2000], no
/// capabilities (a setuid from root clears them), through setpriv (`CommandExt::groups` is
/// unstable, and the crates forbid the `unsafe` of a `pre_exec`).
fn run_as_user(place: &Place, args: &[&str]) -> (i32, String, String) {
    let mut c = Command::new("setpriv");
    c.arg(format!("--reuid={USER}"))
        .arg(format!("--regid={USER}"))
        .arg(format!("--groups={USER},{FS_GROUP}"))
        .arg("--inh-caps=-all")
        .arg("--")
        .arg(&place.bin)
        .args(args)
        .current_dir(&place.base)
        .env_remove("FERRY_RESULT_FILE")
        .env_remove("FERRY_MOVER_TEST_CORRUPT")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = start(&mut c).into_child().wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn sync_as_user(place: &Place, src: &Path, dst: &Path) -> (i32, String, String) {
    let args = [
        "sync",
        "--source",
        src.to_str().unwrap(),
        "--target",
        dst.to_str().unwrap(),
        "--delete",
        "--verify",
        "checksum",
        "--progress",
        "none",
    ];
    run_as_user(place, &args)
}

fn usage_as_user(place: &Place, dir: &Path) -> serde_json::Value {
    let (code, out, err) = run_as_user(place, &["usage", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "usage failed: {err}");
    serde_json::from_str(out.lines().last().unwrap()).unwrap()
}

/// (path, kind, mode, uid, gid, mtime, size, content) of every entry below `root`, `lost+found`
/// left out.
type Row = (String, u32, u32, u32, i64, i64, u64, Option<Vec<u8>>);

fn listing(root: &Path) -> Vec<Row> {
    let mut rows: Vec<Row> = walk(root)
        .into_iter()
        .filter(|p| !p.starts_with(root.join("lost+found")) && p != root)
        .map(|p| {
            let m = fs::symlink_metadata(&p).unwrap();
            let data = m.is_file().then(|| fs::read(&p).unwrap());
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            (
                rel,
                m.mode(),
                m.uid(),
                m.gid(),
                m.mtime(),
                m.mtime_nsec(),
                m.size(),
                data,
            )
        })
        .collect();
    rows.sort();
    rows
}

fn lost_found(root: &Path) -> Vec<(String, u32, u32, u32, Vec<u8>)> {
    let lf = root.join("lost+found");
    let mut rows: Vec<_> = walk(&lf)
        .into_iter()
        .map(|p| {
            let m = fs::symlink_metadata(&p).unwrap();
            let data = if m.is_file() {
                fs::read(&p).unwrap()
            } else {
                Vec::new()
            };
            (p.display().to_string(), m.mode(), m.uid(), m.gid(), data)
        })
        .collect();
    rows.sort();
    rows
}

#[test]
fn a_tree_of_the_users_own_is_copied_exactly_and_lost_found_is_left_alone() {
    able();
    let place = place();
    let (src, dst) = (place.base.join("src"), place.base.join("dst"));
    user_tree(&src);
    volume_root(&dst, "#99");
    // A leftover the copy must delete, and one whose owner and mode it must put right.
    file(&dst.join("stale"), b"old", USER, USER, 0o644);
    dir(&dst.join("private"), USER, FS_GROUP, 0o2775);
    let lost_before = lost_found(&dst);

    let (code, out, err) = sync_as_user(&place, &src, &dst);
    assert_eq!(code, 0, "stdout: {out}\nstderr: {err}");
    assert_eq!(listing(&src), listing(&dst));
    assert_eq!(
        ino(&dst.join("data/a.txt")),
        ino(&dst.join("data/a-link")),
        "hard link kept"
    );
    assert_eq!(
        lost_found(&dst),
        lost_before,
        "the target's lost+found is untouched"
    );
    let root = fs::metadata(&dst).unwrap();
    assert_eq!(
        (root.uid(), root.gid(), root.mode() & 0o7777),
        (0, FS_GROUP, 0o2775)
    );

    // A second pass finds nothing to do and verifies (the root's mtime differs, and is not ours).
    let (code, _, err) = sync_as_user(&place, &src, &dst);
    assert_eq!(code, 0, "second pass: {err}");

    let usage = usage_as_user(&place, &src);
    assert!(usage.get("notAsUser").is_none(), "{usage}");
}

#[test]
fn a_root_owned_file_fails_the_copy_naming_its_owner() {
    able();
    let place = place();
    let (src, dst) = (place.base.join("src"), place.base.join("dst"));
    user_tree(&src);
    file(&src.join("data/root-owned"), b"root's", 0, 0, 0o644);
    volume_root(&dst, "#99");

    let (code, out, err) = sync_as_user(&place, &src, &dst);
    assert_eq!(code, 5, "stdout: {out}\nstderr: {err}");
    assert!(
        err.contains("data/root-owned") && err.contains("the owner 0:0") && err.contains("uid 999"),
        "{err}"
    );
    assert!(err.contains("never drops owners"), "{err}");

    let usage = usage_as_user(&place, &src);
    let why = usage["notAsUser"].as_str().unwrap_or_default();
    assert!(why.contains("data/root-owned: owner 0:0"), "{usage}");
    assert!(!why.contains("lost+found"), "{usage}");
}

/// The cross-node copy: a serving mover that runs as root sends its `lost+found` too; a pull as
/// the user leaves it out, keeps every owner and verifies against the server's manifest.
#[test]
fn a_pull_as_the_user_copies_exactly_from_a_server_that_runs_as_root() {
    able();
    let place = place();
    let (src, dst) = (place.base.join("src"), place.base.join("dst"));
    user_tree(&src);
    volume_root(&dst, "#99");
    let lost_before = lost_found(&dst);
    let authority = remote::Authority::new("as a user");
    let server = remote::Server::start(&src, &authority.issue(&place.base.join("source-tls")));
    let client = authority.issue(&place.base.join("target-tls"));
    let args = [
        "pull",
        "--from",
        &server.address,
        "--tls",
        client.to_str().unwrap(),
        "--target",
        dst.to_str().unwrap(),
        "--delete",
        "--verify",
        "full",
        "--stop-server",
        "--progress",
        "none",
    ];
    let (code, out, err) = run_as_user(&place, &args);
    assert_eq!(code, 0, "stdout: {out}\nstderr: {err}");
    assert_eq!(listing(&src), listing(&dst));
    assert_eq!(
        lost_found(&dst),
        lost_before,
        "the target's lost+found is untouched"
    );
    let (code, _, err) = server.end();
    assert_eq!(code, 0, "server: {err}");
}
