//! Pure decision logic: given the source and target trees, what to do with each entry.
//! No I/O here, so every rule is unit-tested.

use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::meta::{EntryMeta, Kind};
use crate::walk::{Tree, path_order};

/// Name prefix of the temporary files the mover writes before renaming into place.
pub const TEMP_PREFIX: &str = ".ferry-tmp-";

/// What to do with one source entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Target is already exact.
    Skip,
    /// Create the directory (its metadata is applied in the final directory pass).
    Mkdir,
    /// Write the file's data (temp + rename) and its metadata.
    CopyData,
    /// Same size: compare contents, then either copy the data or (if `fix`) fix metadata only
    /// (checksum-compare).
    Compare {
        /// Whether metadata differs.
        fix: bool,
    },
    /// Data is right; fix ownership, mode, xattrs or mtime in place.
    FixMeta,
    /// (Re)create the symlink.
    Symlink,
    /// (Re)create the fifo, device or socket node.
    Special,
    /// Make this path a hard link to the target of the source entry at this index.
    HardLink(usize),
    /// A large file whose target is its own inode: write only the pieces that differ, in place
    /// ([`crate::delta`]), then its metadata.
    UpdateInPlace {
        /// Whether metadata differs.
        fix: bool,
    },
}

impl Op {
    /// Whether the op replaces the target inode (so hard links to it must be redone).
    fn new_inode(&self) -> bool {
        matches!(
            self,
            Op::CopyData | Op::Compare { .. } | Op::Symlink | Op::Special
        )
    }
}

/// Why a target entry is removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoveReason {
    /// Not in the source (only with `delete`).
    Extraneous,
    /// In the source with another type.
    WrongType,
    /// A temp file left by an interrupted run.
    StaleTemp,
}

/// One target subtree (or single entry) to remove before copying.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Removal {
    /// Path relative to the target root.
    pub rel: PathBuf,
    /// Whether it is a directory (removed recursively).
    pub is_dir: bool,
    /// Why.
    pub reason: RemoveReason,
    /// How many target entries go away with it (itself and everything below).
    pub entries: u64,
}

/// Options that change decisions.
#[derive(Debug, Clone, Copy, Default)]
pub struct PlanOptions {
    /// Remove target entries that are not in the source.
    pub delete: bool,
    /// Compare contents of same-size files instead of trusting size + mtime.
    pub checksum_compare: bool,
    /// The target began as a clone of the source made no earlier than this (nanoseconds since
    /// the epoch); see [`EntryMeta::racy_against`].
    pub cloned_at: Option<i128>,
}

/// The full plan: removals first, then one op per source entry (same order as the source tree).
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// Target subtrees to remove, parents only (children go with them).
    pub removals: Vec<Removal>,
    /// One op per source entry.
    pub ops: Vec<Op>,
    /// For each source entry, the index of the target entry at its path (whatever its type).
    pub in_target: Vec<Option<usize>>,
}

impl Plan {
    /// Total number of target entries removed.
    #[cfg(test)]
    pub fn removed_entries(&self) -> u64 {
        self.removals.iter().map(|r| r.entries).sum()
    }

    /// Entries removed because they are not in the source.
    pub fn extraneous_entries(&self) -> u64 {
        self.removals
            .iter()
            .filter(|r| r.reason == RemoveReason::Extraneous)
            .map(|r| r.entries)
            .sum()
    }
}

/// Decides the op for one entry, ignoring hard links. `dst` of another type counts as absent
/// (the planner removes it first).
pub fn decide(src: &EntryMeta, dst: Option<&EntryMeta>, opts: PlanOptions) -> Op {
    let dst = dst.filter(|d| d.kind == src.kind);
    let Some(dst) = dst else {
        return match src.kind {
            Kind::Dir => Op::Mkdir,
            Kind::File => Op::CopyData,
            Kind::Symlink => Op::Symlink,
            _ => Op::Special,
        };
    };
    let attrs_ok = src.same_attrs(dst) && src.same_mtime(dst);
    match src.kind {
        // Directory metadata is applied after their contents, in the final pass.
        Kind::Dir => Op::Skip,
        Kind::File => {
            if src.size != dst.size {
                Op::CopyData
            } else if opts.checksum_compare || (src.same_mtime(dst) && src.racy_against(dst, opts.cloned_at))
            {
                Op::Compare { fix: !attrs_ok }
            } else if !src.same_mtime(dst) {
                Op::CopyData
            } else if !attrs_ok {
                Op::FixMeta
            } else {
                Op::Skip
            }
        }
        Kind::Symlink if src.link != dst.link => Op::Symlink,
        Kind::CharDev | Kind::BlockDev if src.rdev != dst.rdev => Op::Special,
        _ if !attrs_ok => Op::FixMeta,
        _ => Op::Skip,
    }
}

/// A data copy of a large file whose target copy is a regular file of its own (one link) becomes
/// an update in place: only the pieces that differ are written.
fn in_place(op: Op, src: &EntryMeta, dst: Option<&EntryMeta>) -> Op {
    let own_file = dst.is_some_and(|d| d.kind == Kind::File && d.nlink == 1);
    match op {
        Op::CopyData | Op::Compare { .. } if own_file && crate::record::recorded_size(src.size) => {
            let fix = dst.is_none_or(|d| !(src.same_attrs(d) && src.same_mtime(d)));
            Op::UpdateInPlace { fix }
        }
        op => op,
    }
}

fn is_temp_name(rel: &Path) -> bool {
    rel.file_name()
        .is_some_and(|n| n.as_bytes().starts_with(TEMP_PREFIX.as_bytes()))
}

/// Groups of hard links inside one tree: for each entry index, the index of the first entry
/// (in tree order) sharing its inode, when that is another entry.
pub fn link_leaders(tree: &Tree) -> Vec<Option<usize>> {
    let mut first: HashMap<(u64, u64), usize> = HashMap::new();
    tree.entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            if e.meta.kind == Kind::Dir || e.meta.nlink < 2 {
                return None;
            }
            let leader = *first.entry((e.meta.dev, e.meta.ino)).or_insert(i);
            (leader != i).then_some(leader)
        })
        .collect()
}

/// For each entry of `a`, the index of the entry of `b` with the same path. Both trees are in
/// walk order, so one merge finds every pair (hashing 100,000 paths cost more than the merge).
fn same_paths(a: &Tree, b: &Tree) -> Vec<Option<usize>> {
    let mut j = 0;
    a.entries
        .iter()
        .map(|e| {
            while j < b.entries.len() && path_order(&b.entries[j].rel, &e.rel).is_lt() {
                j += 1;
            }
            (j < b.entries.len() && path_order(&b.entries[j].rel, &e.rel).is_eq()).then_some(j)
        })
        .collect()
}

/// Builds the plan for making `target` equal to `source`.
pub fn plan(source: &Tree, target: &Tree, opts: PlanOptions) -> Plan {
    let in_target = same_paths(source, target);
    let in_source = same_paths(target, source);
    let src_leaders = link_leaders(source);
    let tgt_leaders = link_leaders(target);

    let removals = removals(source, target, &in_source, opts.delete);

    let mut ops: Vec<Op> = Vec::with_capacity(source.entries.len());
    for (i, e) in source.entries.iter().enumerate() {
        let dst_i = in_target[i];
        let dst = dst_i
            .map(|j| &target.entries[j].meta)
            .filter(|d| d.kind == e.meta.kind);
        // The path of the first target entry sharing this entry's inode (itself if none).
        let tgt_leader_rel = dst_i.map(|j| match tgt_leaders[j] {
            Some(l) => target.entries[l].rel.as_path(),
            None => target.entries[j].rel.as_path(),
        });
        let op = match src_leaders[i] {
            Some(l) => {
                let linked = dst.is_some()
                    && tgt_leader_rel == Some(source.entries[l].rel.as_path())
                    && !ops[l].new_inode();
                if linked { Op::Skip } else { Op::HardLink(l) }
            }
            None => {
                let op = decide(&e.meta, dst, opts);
                // A target inode shared with an earlier path that the source does not link
                // must not be modified in place: give this path its own inode.
                let shared = dst.is_some() && tgt_leader_rel != Some(e.rel.as_path());
                match (shared, e.meta.kind) {
                    (true, Kind::File) => Op::CopyData,
                    (true, Kind::Symlink) => Op::Symlink,
                    (true, k) if k.is_special() => Op::Special,
                    _ => in_place(op, &e.meta, dst),
                }
            }
        };
        ops.push(op);
    }
    Plan {
        removals,
        ops,
        in_target,
    }
}

fn removals(source: &Tree, target: &Tree, in_source: &[Option<usize>], delete: bool) -> Vec<Removal> {
    let mut out: Vec<Removal> = Vec::new();
    for (e, in_source) in target.entries.iter().zip(in_source) {
        if e.rel.as_os_str().is_empty() {
            continue;
        }
        // Target entries are sorted, so a removed subtree's entries follow it directly.
        if let Some(last) = out.last_mut()
            && last.is_dir
            && e.rel.starts_with(&last.rel)
        {
            last.entries += 1;
            continue;
        }
        let reason = match *in_source {
            Some(i) if source.entries[i].meta.kind != e.meta.kind => Some(RemoveReason::WrongType),
            Some(_) => None,
            None if is_temp_name(&e.rel) => Some(RemoveReason::StaleTemp),
            None if delete => Some(RemoveReason::Extraneous),
            None => None,
        };
        if let Some(reason) = reason {
            out.push(Removal {
                rel: e.rel.clone(),
                is_dir: e.meta.kind == Kind::Dir,
                reason,
                entries: 1,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::walk::Entry;

    fn m(kind: Kind) -> EntryMeta {
        EntryMeta {
            kind,
            perm: 0o644,
            uid: 0,
            gid: 0,
            size: if kind == Kind::File { 10 } else { 0 },
            mtime: 1000,
            mtime_nsec: 1,
            ctime: 5000,
            ctime_nsec: 0,
            atime: 0,
            atime_nsec: 0,
            rdev: 0,
            dev: 1,
            ino: 0,
            nlink: 1,
            blocks: 8,
            link: (kind == Kind::Symlink).then(|| PathBuf::from("t")),
            xattrs: vec![],
        }
    }

    fn compare(checksum_compare: bool) -> PlanOptions {
        PlanOptions {
            checksum_compare,
            ..PlanOptions::default()
        }
    }

    #[test]
    fn decide_table() {
        let file = m(Kind::File);
        let mut bigger = file.clone();
        bigger.size = 11;
        let mut newer = file.clone();
        newer.mtime_nsec = 2;
        let mut chmodded = file.clone();
        chmodded.perm = 0o4755;
        let mut chowned = file.clone();
        chowned.uid = 7;
        let mut xattred = file.clone();
        xattred.xattrs = vec![(b"user.a".to_vec(), b"1".to_vec())];
        let cases: Vec<(&EntryMeta, Option<&EntryMeta>, bool, Op)> = vec![
            (&file, None, false, Op::CopyData),
            (&file, Some(&file), false, Op::Skip),
            (&file, Some(&bigger), false, Op::CopyData),
            (&file, Some(&newer), false, Op::CopyData),
            (&file, Some(&chmodded), false, Op::FixMeta),
            (&file, Some(&chowned), false, Op::FixMeta),
            (&file, Some(&xattred), false, Op::FixMeta),
            (&file, Some(&file), true, Op::Compare { fix: false }),
            (&file, Some(&newer), true, Op::Compare { fix: true }),
            (&file, Some(&bigger), true, Op::CopyData),
        ];
        for (i, (src, dst, cc, want)) in cases.into_iter().enumerate() {
            assert_eq!(decide(src, dst, compare(cc)), want, "case {i}");
        }
    }

    #[test]
    fn decide_other_kinds() {
        let dir = m(Kind::Dir);
        let mut dir2 = dir.clone();
        dir2.perm = 0o700;
        assert_eq!(decide(&dir, None, compare(false)), Op::Mkdir);
        assert_eq!(
            decide(&dir, Some(&dir2), compare(false)),
            Op::Skip,
            "dir meta is the final pass' job"
        );
        let link = m(Kind::Symlink);
        let mut other = link.clone();
        other.link = Some(PathBuf::from("elsewhere"));
        assert_eq!(decide(&link, Some(&other), compare(false)), Op::Symlink);
        let mut touched = link.clone();
        touched.mtime = 5;
        assert_eq!(decide(&link, Some(&touched), compare(false)), Op::FixMeta);
        assert_eq!(decide(&link, Some(&link), compare(false)), Op::Skip);
        let dev = EntryMeta {
            rdev: 0x0103,
            ..m(Kind::CharDev)
        };
        let dev2 = EntryMeta {
            rdev: 0x0105,
            ..dev.clone()
        };
        assert_eq!(decide(&dev, Some(&dev2), compare(false)), Op::Special);
        let fifo = m(Kind::Fifo);
        assert_eq!(decide(&fifo, None, compare(false)), Op::Special);
        // Type change: a directory in the way of a file.
        assert_eq!(decide(&m(Kind::File), Some(&dir), compare(false)), Op::CopyData);
    }

    fn tree(entries: Vec<(&str, EntryMeta)>) -> Tree {
        let mut entries: Vec<Entry> = entries
            .into_iter()
            .map(|(p, meta)| Entry {
                rel: PathBuf::from(p),
                meta,
            })
            .collect();
        entries.sort_by(|a, b| a.rel.cmp(&b.rel));
        Tree { entries }
    }

    fn linked(ino: u64, nlink: u64) -> EntryMeta {
        EntryMeta {
            ino,
            nlink,
            ..m(Kind::File)
        }
    }

    #[test]
    fn removals_are_subtree_roots_and_respect_delete() {
        let src = tree(vec![
            ("", m(Kind::Dir)),
            ("a", m(Kind::File)),
            ("keep", m(Kind::File)),
        ]);
        let dst = tree(vec![
            ("", m(Kind::Dir)),
            ("a", m(Kind::Dir)),
            ("a/x", m(Kind::File)),
            ("a/y", m(Kind::Dir)),
            ("a/y/z", m(Kind::File)),
            ("extra", m(Kind::File)),
            (".ferry-tmp-0011", m(Kind::File)),
            ("keep", m(Kind::File)),
        ]);
        let p = plan(
            &src,
            &dst,
            PlanOptions {
                delete: false,
                ..PlanOptions::default()
            },
        );
        let got: Vec<_> = p
            .removals
            .iter()
            .map(|r| (r.rel.to_str().unwrap(), r.reason, r.entries))
            .collect();
        assert_eq!(
            got,
            [
                (".ferry-tmp-0011", RemoveReason::StaleTemp, 1),
                ("a", RemoveReason::WrongType, 4)
            ]
        );
        assert_eq!(p.ops, [Op::Skip, Op::CopyData, Op::Skip]);
        let p = plan(
            &src,
            &dst,
            PlanOptions {
                delete: true,
                ..PlanOptions::default()
            },
        );
        assert_eq!(p.extraneous_entries(), 1);
        assert_eq!(p.removed_entries(), 6);
    }

    #[test]
    fn hard_links_are_kept_and_repaired() {
        let src = tree(vec![("", m(Kind::Dir)), ("a", linked(5, 2)), ("b", linked(5, 2))]);
        // Fresh target: a is copied, b becomes a link to a.
        let empty = tree(vec![("", m(Kind::Dir))]);
        assert_eq!(
            plan(&src, &empty, PlanOptions::default()).ops,
            [Op::Skip, Op::CopyData, Op::HardLink(1)]
        );
        // Target already linked the same way: nothing to do.
        let same = tree(vec![("", m(Kind::Dir)), ("a", linked(9, 2)), ("b", linked(9, 2))]);
        assert_eq!(
            plan(&src, &same, PlanOptions::default()).ops,
            [Op::Skip, Op::Skip, Op::Skip]
        );
        // Target has two separate files: b must be relinked.
        let split = tree(vec![
            ("", m(Kind::Dir)),
            ("a", linked(9, 1)),
            ("b", linked(10, 1)),
        ]);
        assert_eq!(
            plan(&src, &split, PlanOptions::default()).ops,
            [Op::Skip, Op::Skip, Op::HardLink(1)]
        );
        // Leader's data changed: it gets a new inode, so the follower must be relinked.
        let mut changed = linked(9, 2);
        changed.size = 99;
        let stale = tree(vec![("", m(Kind::Dir)), ("a", changed.clone()), ("b", changed)]);
        assert_eq!(
            plan(&src, &stale, PlanOptions::default()).ops,
            [Op::Skip, Op::CopyData, Op::HardLink(1)]
        );
    }

    #[test]
    fn target_links_absent_in_source_are_broken() {
        let src = tree(vec![("", m(Kind::Dir)), ("a", linked(5, 1)), ("b", linked(6, 1))]);
        let dst = tree(vec![("", m(Kind::Dir)), ("a", linked(9, 2)), ("b", linked(9, 2))]);
        // a keeps the inode, b gets its own even though size and mtime match.
        assert_eq!(
            plan(&src, &dst, PlanOptions::default()).ops,
            [Op::Skip, Op::Skip, Op::CopyData]
        );
    }

    #[test]
    fn a_large_file_with_a_target_of_its_own_is_updated_in_place() {
        let big = |size: u64, nlink: u64| EntryMeta {
            size,
            nlink,
            ..m(Kind::File)
        };
        let large = crate::record::DELTA_MIN;
        let src = tree(vec![("", m(Kind::Dir)), ("db", big(large, 1))]);
        let ops = |dst: &Tree, checksum_compare: bool| {
            plan(
                &src,
                dst,
                PlanOptions {
                    checksum_compare,
                    ..PlanOptions::default()
                },
            )
            .ops
        };
        // Grown, shrunk or touched since the last pass: in place.
        for dst_size in [large - 1, large + 1] {
            let dst = tree(vec![("", m(Kind::Dir)), ("db", big(dst_size, 1))]);
            assert_eq!(ops(&dst, false), [Op::Skip, Op::UpdateInPlace { fix: false }]);
        }
        let mut touched = big(large, 1);
        touched.mtime += 1;
        let dst = tree(vec![("", m(Kind::Dir)), ("db", touched)]);
        assert_eq!(ops(&dst, false), [Op::Skip, Op::UpdateInPlace { fix: true }]);
        // A content comparison is an update in place that may write nothing.
        let same = tree(vec![("", m(Kind::Dir)), ("db", big(large, 1))]);
        assert_eq!(ops(&same, false), [Op::Skip, Op::Skip]);
        assert_eq!(ops(&same, true), [Op::Skip, Op::UpdateInPlace { fix: false }]);
        // A target inode with other links, a small file or no target: a new copy.
        let linked_elsewhere = tree(vec![("", m(Kind::Dir)), ("db", big(large + 1, 2))]);
        assert_eq!(ops(&linked_elsewhere, false), [Op::Skip, Op::CopyData]);
        let small_src = tree(vec![("", m(Kind::Dir)), ("db", big(large - 1, 1))]);
        let small_dst = tree(vec![("", m(Kind::Dir)), ("db", big(large, 1))]);
        assert_eq!(
            plan(&small_src, &small_dst, PlanOptions::default()).ops,
            [Op::Skip, Op::CopyData]
        );
        let empty = tree(vec![("", m(Kind::Dir))]);
        assert_eq!(ops(&empty, false), [Op::Skip, Op::CopyData]);
    }

    #[test]
    fn a_clones_file_is_compared_only_if_modified_about_when_the_clone_was_made() {
        const S: i128 = 1_000_000_000;
        // A clone's inode keeps the source's times: its ctime is the source's, long before the
        // clone; a file last written just before its ctime looks racy by that ctime alone.
        let src = EntryMeta {
            mtime: 1000,
            ctime: 1000,
            ..m(Kind::File)
        };
        let cloned = src.clone();
        let at = |secs: i128| PlanOptions {
            cloned_at: Some(secs * S),
            ..PlanOptions::default()
        };
        assert_eq!(
            decide(&src, Some(&cloned), compare(false)),
            Op::Compare { fix: false }
        );
        // Cloned an hour after the file's last write: the clone has its content.
        assert_eq!(decide(&src, Some(&cloned), at(4600)), Op::Skip);
        // Cloned within the clock-skew margin of its last write: compared.
        assert_eq!(decide(&src, Some(&cloned), at(1030)), Op::Compare { fix: false });
        // An inode a pass wrote after the clone is judged by its own ctime.
        let rewritten = EntryMeta {
            ctime: 5000,
            ..cloned.clone()
        };
        assert_eq!(decide(&src, Some(&rewritten), at(4600)), Op::Skip);
        let racy_rewrite = EntryMeta {
            ctime: 1000,
            ctime_nsec: 500,
            ..cloned
        };
        assert_eq!(
            decide(&src, Some(&racy_rewrite), at(900)),
            Op::Compare { fix: false }
        );
    }
}
