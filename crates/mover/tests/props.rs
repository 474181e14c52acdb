//! Property test: random small trees sync to an identical copy (digests and oracle), also
//! after random changes with --delete.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test] fns

mod common;

use common::*;
use proptest::prelude::*;
use std::path::Path;

#[derive(Debug, Clone)]
enum Node {
    File {
        len: usize,
        seed: u64,
        mode: u32,
        sparse: bool,
    },
    Dir {
        mode: u32,
    },
    Symlink(String),
    HardLink(usize),
    Fifo,
}

fn node() -> impl Strategy<Value = Node> {
    prop_oneof![
        4 => (0usize..20_000, any::<u64>(), prop::sample::select(vec![0o644, 0o600, 0o755, 0o4755, 0o2711, 0o444]), any::<bool>())
            .prop_map(|(len, seed, mode, sparse)| Node::File { len, seed, mode, sparse }),
        2 => prop::sample::select(vec![0o755, 0o700, 0o1777, 0o555]).prop_map(|mode| Node::Dir { mode }),
        1 => "[a-z./]{1,12}".prop_map(Node::Symlink),
        1 => (0usize..30).prop_map(Node::HardLink),
        1 => Just(Node::Fifo),
    ]
}

/// Path components, node, mtime (s, ns), owner offsets.
type Spec = (Vec<String>, Node, (i64, i64), (u32, u32));

fn entries() -> impl Strategy<Value = Vec<Spec>> {
    prop::collection::vec(
        (
            prop::collection::vec("[a-c]{1,2}", 1..4),
            node(),
            (1_000_000_000i64..1_900_000_000, 0i64..1_000_000_000),
            (0u32..3, 0u32..3),
        ),
        1..30,
    )
}

fn build(root: &Path, spec: &[Spec]) {
    std::fs::create_dir_all(root).unwrap();
    let mut files: Vec<std::path::PathBuf> = Vec::new();
    let mut made: Vec<(std::path::PathBuf, (i64, i64))> = Vec::new();
    for (comps, node, mtime, (uid, gid)) in spec {
        let p = comps.iter().fold(root.to_path_buf(), |p, c| p.join(c));
        let parent = p.parent().unwrap();
        // Skip entries whose place is taken, whose parent cannot be a directory or lies outside.
        if std::fs::symlink_metadata(&p).is_ok()
            || through_symlink(root, comps)
            || std::fs::create_dir_all(parent).is_err()
        {
            continue;
        }
        let ok = match node {
            Node::File {
                len,
                seed,
                mode,
                sparse,
            } => {
                if *sparse {
                    let f = std::fs::File::create(&p).unwrap();
                    f.set_len(*len as u64 + (1 << 20)).unwrap();
                    use std::os::unix::fs::FileExt;
                    f.write_all_at(&pattern(*len, *seed), 1 << 19).unwrap();
                } else {
                    std::fs::write(&p, pattern(*len, *seed)).unwrap();
                }
                std::os::unix::fs::lchown(&p, Some(1000 + uid), Some(2000 + gid)).unwrap();
                chmod(&p, *mode);
                files.push(p.clone());
                true
            }
            Node::Dir { mode } => {
                std::fs::create_dir(&p).unwrap();
                chmod(&p, *mode);
                true
            }
            Node::Symlink(t) => {
                std::os::unix::fs::symlink(t, &p).unwrap();
                std::os::unix::fs::lchown(&p, Some(uid + 1), None).unwrap();
                true
            }
            Node::HardLink(i) if !files.is_empty() => {
                std::fs::hard_link(&files[i % files.len()], &p).unwrap();
                true
            }
            Node::HardLink(_) => false,
            Node::Fifo => {
                mknod(&p, rustix::fs::FileType::Fifo, 0o620, 0);
                true
            }
        };
        if ok {
            made.push((p, *mtime));
        }
    }
    // mtimes last, deepest first, so directory times survive.
    made.sort_by_key(|(p, _)| std::cmp::Reverse(p.components().count()));
    for (p, (s, ns)) in made {
        set_mtime(&p, s, ns);
    }
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(16)
}

/// Whether a path under `root` passes through a symlink (creating it would write outside the
/// tree, e.g. through `c -> ../`, and a hard link to such a file has its partner outside).
fn through_symlink(root: &Path, comps: &[String]) -> bool {
    let mut p = root.to_path_buf();
    comps[..comps.len() - 1].iter().any(|c| {
        p.push(c);
        std::fs::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_symlink())
    })
}

fn sync(src: &Path, dst: &Path) -> ferry_mover::SyncReport {
    let opts = ferry_mover::SyncOptions {
        source: src.to_path_buf(),
        target: dst.to_path_buf(),
        delete: true,
        threads: Some(3),
        ..Default::default()
    };
    ferry_mover::sync(&opts).unwrap()
}

proptest! {
    // 16 cases in CI; PROPTEST_CASES=3000 for a soak.
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn random_trees_sync_exactly(first in entries(), second in entries()) {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("src");
        let dst = tmp.path().join("dst");
        build(&src, &first);
        let report = sync(&src, &dst);
        let (ms, md) = (ferry_mover::digest(&src).unwrap(), ferry_mover::digest(&dst).unwrap());
        prop_assert_eq!(&ms, &md);
        prop_assert_eq!(&report.digest, &md.metadata_digest);
        assert_same_tree(&src, &dst);
        // Change the source (new entries on top, some removed) and resync.
        std::fs::remove_dir_all(src.join("a")).ok();
        build(&src, &second);
        set_mtime(&src, 1_234_567_890, 5);
        sync(&src, &dst);
        prop_assert_eq!(ferry_mover::digest(&src).unwrap(), ferry_mover::digest(&dst).unwrap());
        assert_same_tree(&src, &dst);
        let again = sync(&src, &dst);
        prop_assert_eq!(again.bytes_copied, 0);
        prop_assert_eq!(again.files_copied, 0);
    }
}
