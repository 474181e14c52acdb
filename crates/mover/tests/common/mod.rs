//! Shared helpers for the mover's integration tests: fixture trees and an oracle that uses
//! only standard tools (find, getfattr, getfacl, sha256sum, stat), independent of the mover.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::os::unix::fs::{PermissionsExt, lchown, symlink};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{PoisonError, RwLock, RwLockReadGuard};

use rustix::fs::{AtFlags, CWD, FileType, Mode, Timespec, Timestamps};

pub mod remote;

/// Path of the binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_ferry-mover")
}

/// Held shared while a test has a file open for writing, exclusive while one starts a process.
/// A child started by another test thread holds every file open at that moment until it execs,
/// and a file's close event comes when its last holder lets go: a file written before a standby
/// began watching would otherwise reach its record as a change, now and then, under load.
static STARTING: RwLock<()> = RwLock::new(());

/// While the guard lives, no test starts a process (see [`STARTING`]).
pub fn writing() -> RwLockReadGuard<'static, ()> {
    STARTING.read().unwrap_or_else(PoisonError::into_inner)
}

/// A started process, killed (and reaped) when dropped: a failed test leaves none behind holding
/// the test runner's output open (the run would hang instead of failing).
pub struct Started(Option<Child>);

impl Started {
    /// The process, no longer killed on drop.
    pub fn into_child(mut self) -> Child {
        self.0.take().unwrap()
    }
}

impl std::ops::Deref for Started {
    type Target = Child;
    fn deref(&self) -> &Child {
        self.0.as_ref().unwrap()
    }
}

impl std::ops::DerefMut for Started {
    fn deref_mut(&mut self) -> &mut Child {
        self.0.as_mut().unwrap()
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        if let Some(child) = &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Starts `command` while no file of this process is open for writing (see [`STARTING`]).
pub fn start(command: &mut Command) -> Started {
    let _alone = STARTING.write().unwrap_or_else(PoisonError::into_inner);
    Started(Some(command.spawn().unwrap()))
}

/// Runs the binary; returns (exit code, stdout, stderr).
pub fn run(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut c = Command::new(bin());
    c.args(args)
        .env_remove("FERRY_RESULT_FILE")
        .env_remove("FERRY_MOVER_TEST_CORRUPT")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    let out = start(&mut c)
        .into_child()
        .wait_with_output()
        .expect("run ferry-mover");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `ferry-mover sync` with a result file and returns (code, parsed result, stdout, stderr).
pub fn sync_cli(src: &Path, dst: &Path, extra: &[&str]) -> (i32, serde_json::Value, String, String) {
    let rf = dst.with_file_name(format!(
        "{}.result.json",
        dst.file_name().unwrap().to_string_lossy()
    ));
    let _ = fs::remove_file(&rf);
    let mut args = vec![
        "sync",
        "--source",
        src.to_str().unwrap(),
        "--target",
        dst.to_str().unwrap(),
        "--progress",
        "none",
        "--result-file",
        rf.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let (code, out, err) = run(&args, &[]);
    let text = fs::read_to_string(&rf).unwrap_or_default();
    let v = serde_json::from_str(&text).unwrap_or(serde_json::Value::Null);
    (code, v, out, err)
}

/// Whether a tool is installed; prints why a sub-check is skipped otherwise.
pub fn have(tool: &str) -> bool {
    let ok = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        println!("SKIP sub-check: `{tool}` not installed (Debian packages: attr acl coreutils findutils)");
    }
    ok
}

fn ok(out: Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf8")
}

/// Sets atime/mtime with nanoseconds without following symlinks.
pub fn set_mtime(p: &Path, sec: i64, nsec: i64) {
    let t = Timespec {
        tv_sec: sec,
        tv_nsec: nsec,
    };
    rustix::fs::utimensat(
        CWD,
        p,
        &Timestamps {
            last_access: t,
            last_modification: t,
        },
        AtFlags::SYMLINK_NOFOLLOW,
    )
    .expect("utimensat");
}

pub fn write(p: &Path, data: &[u8]) {
    if let Some(d) = p.parent() {
        fs::create_dir_all(d).unwrap();
    }
    let _writing = writing();
    fs::write(p, data).unwrap();
}

pub fn chmod(p: &Path, mode: u32) {
    fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
}

/// Deterministic non-compressible-ish bytes.
pub fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut v = Vec::with_capacity(len);
    while v.len() < len {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.truncate(len);
    v
}

pub fn mknod(p: &Path, ft: FileType, mode: u32, dev: u64) {
    rustix::fs::mknodat(CWD, p, ft, Mode::from_raw_mode(mode), dev).expect("mknod");
}

fn setfacl(args: &[&str], p: &Path) {
    let out = Command::new("setfacl")
        .args(args)
        .arg(p)
        .output()
        .expect("setfacl");
    assert!(
        out.status.success(),
        "setfacl: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Builds a tree with every kind of entry the mover must preserve.
pub fn rich_tree(root: &Path) {
    fs::create_dir_all(root).unwrap();
    let p = |s: &str| root.join(s);
    write(&p("plain.txt"), b"hello world\n");
    write(&p("empty"), b"");
    write(&p("dir/bin.dat"), &pattern(1 << 20, 1));
    write(&p("dir/sub/deeper/leaf"), b"leaf");
    fs::create_dir_all(p("emptydir")).unwrap();
    fs::create_dir_all(p("sticky")).unwrap();
    chmod(&p("sticky"), 0o1777);
    write(&p("setuid"), b"#!/bin/sh\n");
    chmod(&p("setuid"), 0o4755);
    write(&p("setgid"), b"x");
    chmod(&p("setgid"), 0o2750);
    write(&p("noperm"), b"secret");
    chmod(&p("noperm"), 0o000);
    write(&p("owned"), b"owned by 1234:4321");
    lchown(p("owned"), Some(1234), Some(4321)).unwrap();
    lchown(p("dir/sub"), Some(1000), Some(1000)).unwrap();
    // A setgid file owned by another group: chown after chmod would clear the bit.
    write(&p("setgid-owned"), b"y");
    lchown(p("setgid-owned"), Some(77), Some(88)).unwrap();
    chmod(&p("setgid-owned"), 0o6711);
    write(&p("unicode ünïcödé name.txt"), "ça va".as_bytes());
    // Sparse: 64 MiB with two small data islands and a trailing hole.
    let f = fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .open(p("sparse.img"))
        .unwrap();
    f.set_len(64 << 20).unwrap();
    use std::os::unix::fs::FileExt;
    f.write_all_at(&pattern(8192, 2), 0).unwrap();
    f.write_all_at(&pattern(4096, 3), 20 << 20).unwrap();
    drop(f);
    // Big enough to be split across threads (chunks of 32 MiB).
    write(&p("big.bin"), &pattern(70 << 20, 4));
    // Symlinks: relative, absolute dangling, to a directory, owned by someone else.
    symlink("plain.txt", p("link-rel")).unwrap();
    symlink("/nonexistent/target", p("link-dangling")).unwrap();
    symlink("dir/sub", p("link-dir")).unwrap();
    symlink("../plain.txt", p("dir/link-owned")).unwrap();
    lchown(p("dir/link-owned"), Some(42), Some(43)).unwrap();
    // Hard links across directories, and a hard link to a symlink.
    write(&p("hl/a"), b"linked data");
    fs::create_dir_all(p("hl/other")).unwrap();
    fs::hard_link(p("hl/a"), p("hl/b")).unwrap();
    fs::hard_link(p("hl/a"), p("hl/other/c")).unwrap();
    fs::hard_link(p("link-rel"), p("hl/link-hardlinked")).unwrap();
    // Special files.
    mknod(&p("fifo"), FileType::Fifo, 0o640, 0);
    mknod(
        &p("null-dev"),
        FileType::CharacterDevice,
        0o666,
        rustix::fs::makedev(1, 3),
    );
    mknod(
        &p("blk-dev"),
        FileType::BlockDevice,
        0o660,
        rustix::fs::makedev(7, 200),
    );
    lchown(p("null-dev"), Some(5), Some(6)).unwrap();
    // Xattrs (user and trusted namespaces; trusted needs root, which the suite has).
    xattr::set(p("plain.txt"), "user.comment", b"a comment").unwrap();
    xattr::set(p("dir/bin.dat"), "user.binary", &[0, 1, 2, 255]).unwrap();
    xattr::set(p("dir"), "user.on-dir", b"d").unwrap();
    xattr::set(p("link-rel"), "trusted.on-link", b"l").unwrap();
    xattr::set(p("fifo"), "trusted.on-fifo", b"f").unwrap();
    // POSIX ACLs (access on a file and a dir, default on a dir).
    if have("setfacl") {
        setfacl(&["-m", "u:1000:rw,g:2000:r"], &p("plain.txt"));
        setfacl(&["-m", "u:1001:rx"], &p("dir/sub"));
        setfacl(&["-d", "-m", "u:1002:r,g:2002:rx"], &p("dir"));
    }
    // Nanosecond mtimes everywhere, directories last (their contents bump them).
    let mut all = walk(root);
    all.sort_by_key(|x| std::cmp::Reverse(x.components().count()));
    for (i, e) in all.iter().enumerate() {
        set_mtime(e, 1_600_000_000 + i as i64 * 1000, 123_456_789 + i as i64);
    }
    set_mtime(root, 1_500_000_000, 987_654_321);
}

/// All paths under root (not following symlinks), root excluded.
pub fn walk(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                stack.push(p.clone());
            }
            out.push(p);
        }
    }
    out
}

/// One line per entry from `find -printf`: path, type, mode, uid, gid, size (not for dirs),
/// mtime with ns, link target, link count; plus the hard-link groups by inode.
pub fn find_listing(root: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let out = Command::new("find")
        .arg(root)
        .args(["-printf", "%P\\t%y\\t%m\\t%U\\t%G\\t%s\\t%T@\\t%l\\t%n\\t%i\\0"])
        .output()
        .expect("find");
    let text = ok(out, "find");
    let mut lines = Vec::new();
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for rec in text.split('\0').filter(|r| !r.is_empty()) {
        let mut f: Vec<String> = rec.split('\t').map(String::from).collect();
        assert_eq!(f.len(), 10, "unexpected find record {rec:?}");
        let ino = f.pop().unwrap();
        if f[1] == "d" {
            f[5] = "-".into(); // directory sizes depend on the filesystem's history
        }
        if f[1] != "d" && f[8] != "1" {
            groups.entry(ino).or_default().push(f[0].clone());
        }
        lines.push(f.join("\t"));
    }
    lines.sort();
    let mut groups: Vec<Vec<String>> = groups
        .into_values()
        .map(|mut g| {
            g.sort();
            g
        })
        .collect();
    groups.sort();
    (lines, groups)
}

pub fn rel_paths(root: &Path) -> Vec<String> {
    let (lines, _) = find_listing(root);
    lines
        .iter()
        .map(|l| l.split('\t').next().unwrap().to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

fn listing_with_types(root: &Path) -> Vec<(String, String)> {
    let (lines, _) = find_listing(root);
    lines
        .iter()
        .map(|l| {
            let mut it = l.split('\t');
            (it.next().unwrap().to_string(), it.next().unwrap().to_string())
        })
        .filter(|(p, _)| !p.is_empty())
        .collect()
}

fn in_dir(root: &Path, cmd: &str, args: &[&str], paths: &[String]) -> String {
    if paths.is_empty() {
        return String::new();
    }
    let out = Command::new(cmd)
        .current_dir(root)
        .args(args)
        .arg("--")
        .args(paths)
        .output()
        .expect(cmd);
    ok(out, cmd)
}

/// Asserts that two trees are identical according to the independent oracle.
pub fn assert_same_tree(src: &Path, dst: &Path) {
    let (a, ga) = find_listing(src);
    let (b, gb) = find_listing(dst);
    if a != b {
        let only_a: Vec<_> = a.iter().filter(|l| !b.contains(l)).collect();
        let only_b: Vec<_> = b.iter().filter(|l| !a.contains(l)).collect();
        panic!("find listings differ\nsource only: {only_a:#?}\ntarget only: {only_b:#?}");
    }
    assert_eq!(ga, gb, "hard-link groups differ");
    let paths = rel_paths(src);
    let mut with_root = vec![".".to_string()];
    with_root.extend(paths.iter().cloned());
    if have("getfattr") {
        let args = ["-d", "-m", "-", "-h", "-e", "hex", "--absolute-names"];
        assert_eq!(
            in_dir(src, "getfattr", &args, &with_root),
            in_dir(dst, "getfattr", &args, &with_root),
            "getfattr dumps differ"
        );
    }
    let typed = listing_with_types(src);
    if have("getfacl") {
        let mut non_links: Vec<String> = typed
            .iter()
            .filter(|(_, t)| t != "l")
            .map(|(p, _)| p.clone())
            .collect();
        non_links.insert(0, ".".into());
        let args = ["-n", "-P", "--absolute-names"];
        assert_eq!(
            in_dir(src, "getfacl", &args, &non_links),
            in_dir(dst, "getfacl", &args, &non_links),
            "getfacl dumps differ"
        );
    }
    let files: Vec<String> = typed
        .iter()
        .filter(|(_, t)| t == "f")
        .map(|(p, _)| p.clone())
        .collect();
    if have("sha256sum") {
        assert_eq!(
            in_dir(src, "sha256sum", &[], &files),
            in_dir(dst, "sha256sum", &[], &files),
            "contents differ"
        );
    }
    if have("stat") {
        let s = in_dir(src, "stat", &["-c", "%b %s %n"], &files);
        let d = in_dir(dst, "stat", &["-c", "%b %s %n"], &files);
        for (ls, ld) in s.lines().zip(d.lines()) {
            let bs: u64 = ls.split(' ').next().unwrap().parse().unwrap();
            let bd: u64 = ld.split(' ').next().unwrap().parse().unwrap();
            let size: u64 = ls.split(' ').nth(1).unwrap().parse().unwrap();
            if bs * 512 < size {
                // Sparse in the source: the copy must keep its holes (small slack for metadata blocks).
                assert!(bd <= bs + 16, "holes not kept: source {ls:?} target {ld:?}");
            }
        }
    }
}

/// Blocks allocated (512 B units) per `stat`.
pub fn blocks(p: &Path) -> u64 {
    let out = Command::new("stat").args(["-c", "%b"]).arg(p).output().unwrap();
    ok(out, "stat").trim().parse().unwrap()
}

/// Inode number.
pub fn ino(p: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    fs::symlink_metadata(p).unwrap().ino()
}

/// Appends to a file.
pub fn append(p: &Path, data: &[u8]) {
    let _writing = writing();
    fs::OpenOptions::new()
        .append(true)
        .open(p)
        .unwrap()
        .write_all(data)
        .unwrap();
}

/// The target equals the source: the independent oracle and the mover's own content digest.
pub fn assert_exact(src: &Path, dst: &Path) {
    assert_same_tree(src, dst);
    let (a, b) = (
        ferry_mover::digest(src).unwrap(),
        ferry_mover::digest(dst).unwrap(),
    );
    assert_eq!(a.digest, b.digest, "content digests differ");
}

/// A source of `n` unchanged files in 10 directories, besides what each test changes.
pub fn filler(src: &Path, n: u64) {
    for i in 0..n {
        write(&src.join(format!("fill/d{}/f{i}", i % 10)), &pattern(100, i));
    }
}
