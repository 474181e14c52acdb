//! A partial tree: the entries of a tree at the paths a change record names, the subtrees of
//! those visited whole, and every directory above them. Both trees read at the same paths give
//! the plan what a full scan would give it for those paths, and nothing else to do.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::changes::Visit;
use crate::error::MoverError;
use crate::meta::{self, Kind};
use crate::progress::{Progress, Warnings};
use crate::walk::{self, Entry, Tree, path_order};

/// Reads the entries of `root` at `visits` (in walk order, none below one visited whole), and
/// the directories above them. A directory visited alone is read whole where `whole_dir` says
/// so (its counterpart in the other tree is no directory: all it holds is new there).
pub fn scan(
    root: &Path,
    visits: &[Visit],
    whole_dir: &(dyn Fn(&Path) -> bool + Sync),
    warnings: &Warnings,
    progress: Option<&Progress>,
) -> Result<Tree, MoverError> {
    let above = directories_above(root, visits)?;
    let reachable = |rel: &Path| rel.ancestors().skip(1).all(|a| above.get(a) == Some(&true));
    let found: Vec<Vec<Entry>> = visits
        .par_iter()
        .filter(|v| reachable(&v.rel))
        .map(|v| read_visit(root, v, whole_dir, warnings, progress))
        .collect::<Result<_, _>>()?;
    let mut seen: HashSet<PathBuf> = HashSet::new();
    let mut entries: Vec<Entry> = Vec::new();
    for rel in above
        .iter()
        .filter(|(rel, is_dir)| **is_dir && reachable(rel))
        .map(|(rel, _)| rel)
    {
        if let Some(meta) = meta::read(&root.join(rel), true)? {
            seen.insert(rel.clone());
            entries.push(Entry {
                rel: rel.clone(),
                meta,
            });
        }
    }
    for entry in found.into_iter().flatten() {
        if seen.insert(entry.rel.clone()) {
            entries.push(entry);
        }
    }
    // A change in the root's `lost+found` is its file system's own (`as_user::left_alone`).
    entries.retain(|e| !crate::as_user::left_alone(&e.rel));
    entries.par_sort_unstable_by(|a, b| path_order(&a.rel, &b.rel));
    if let Some(p) = progress {
        p.files_total
            .store(entries.len() as u64, std::sync::atomic::Ordering::Relaxed);
    }
    Ok(Tree { entries })
}

/// Every directory above a visited path (the root included) → whether it is a directory in
/// this tree (one that is not, or is missing, has nothing below it here).
fn directories_above(root: &Path, visits: &[Visit]) -> Result<HashMap<PathBuf, bool>, MoverError> {
    // The root always: a pass's tree begins with it.
    let mut above: HashMap<PathBuf, bool> = HashMap::from([(PathBuf::new(), false)]);
    for v in visits {
        for a in v.rel.ancestors().skip(1) {
            above.entry(a.to_path_buf()).or_insert(false);
        }
    }
    let names: Vec<PathBuf> = above.keys().cloned().collect();
    let kinds: Vec<bool> = names
        .par_iter()
        .map(|rel| {
            let is_dir = std::fs::symlink_metadata(root.join(rel)).is_ok_and(|m| m.is_dir());
            Ok::<bool, MoverError>(is_dir)
        })
        .collect::<Result<_, _>>()?;
    for (rel, is_dir) in names.into_iter().zip(kinds) {
        above.insert(rel, is_dir);
    }
    Ok(above)
}

/// The entries one visit gives: the entry alone, or its subtree.
fn read_visit(
    root: &Path,
    visit: &Visit,
    whole_dir: &(dyn Fn(&Path) -> bool + Sync),
    warnings: &Warnings,
    progress: Option<&Progress>,
) -> Result<Vec<Entry>, MoverError> {
    let abs = root.join(&visit.rel);
    let Some(meta) = meta::read(&abs, true)? else {
        return Ok(Vec::new());
    };
    if meta.kind != Kind::Dir || !(visit.whole || whole_dir(&visit.rel)) {
        return Ok(vec![Entry {
            rel: visit.rel.clone(),
            meta,
        }]);
    }
    let subtree = walk::scan_below(&abs, true, warnings, progress)?;
    Ok(subtree
        .entries
        .into_iter()
        .map(|e| Entry {
            rel: if e.rel.as_os_str().is_empty() {
                visit.rel.clone()
            } else {
                visit.rel.join(&e.rel)
            },
            meta: e.meta,
        })
        .collect())
}

/// The first file of `tree` that has links the tree does not hold (a partial tree of the
/// paths that changed lacks the others, which the plan must see to keep the inode shared).
pub fn unplaced_link(tree: &Tree) -> Option<&Path> {
    let mut held: HashMap<(u64, u64), u64> = HashMap::new();
    for e in tree
        .entries
        .iter()
        .filter(|e| e.meta.kind != Kind::Dir && e.meta.nlink > 1)
    {
        *held.entry((e.meta.dev, e.meta.ino)).or_insert(0) += 1;
    }
    tree.entries
        .iter()
        .filter(|e| e.meta.kind != Kind::Dir && e.meta.nlink > 1)
        .find(|e| held.get(&(e.meta.dev, e.meta.ino)).copied().unwrap_or(0) < e.meta.nlink)
        .map(|e| e.rel.as_path())
}

/// The hard links of a tree as a pass saw it: for each path of a file with more than one link,
/// every path of its inode.
#[derive(Debug, Default)]
pub struct LinkGroups {
    groups: Vec<Vec<PathBuf>>,
    of: HashMap<PathBuf, usize>,
}

impl LinkGroups {
    /// The groups of `tree`'s hard links.
    pub fn of_tree(tree: &Tree) -> Self {
        let mut by_inode: HashMap<(u64, u64), usize> = HashMap::new();
        let mut links = LinkGroups::default();
        for e in tree
            .entries
            .iter()
            .filter(|e| e.meta.kind != Kind::Dir && e.meta.nlink > 1)
        {
            let next = links.groups.len();
            let group = *by_inode.entry((e.meta.dev, e.meta.ino)).or_insert(next);
            if group == next {
                links.groups.push(Vec::new());
            }
            links.groups[group].push(e.rel.clone());
            links.of.insert(e.rel.clone(), group);
        }
        links
    }

    /// `visits` with every other link of each linked file they cover, so that a file written
    /// through one of its names is seen with all of them.
    pub fn widen(&self, visits: Vec<Visit>) -> Vec<Visit> {
        let whole: Vec<&Path> = visits
            .iter()
            .filter(|v| v.whole)
            .map(|v| v.rel.as_path())
            .collect();
        let named: HashSet<&Path> = visits.iter().map(|v| v.rel.as_path()).collect();
        let covered = |p: &Path| named.contains(p) || whole.iter().any(|w| p.starts_with(w));
        let mut extra: Vec<Visit> = Vec::new();
        for group in &self.groups {
            if group.iter().any(|p| covered(p)) {
                extra.extend(group.iter().filter(|p| !covered(p)).map(|p| Visit {
                    rel: p.clone(),
                    whole: false,
                }));
            }
        }
        if extra.is_empty() {
            return visits;
        }
        let mut all = visits;
        all.extend(extra);
        all.sort_by(|a, b| path_order(&a.rel, &b.rel));
        all.dedup_by(|b, a| a.rel == b.rel);
        all
    }

    /// Whether there are any.
    pub fn is_empty(&self) -> bool {
        self.of.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn visit(rel: &str, whole: bool) -> Visit {
        Visit {
            rel: rel.into(),
            whole,
        }
    }

    #[test]
    fn a_partial_tree_holds_the_visited_paths_and_the_directories_above() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        for d in ["a", "a/b", "c", "c/d", "e"] {
            std::fs::create_dir(root.join(d)).unwrap();
        }
        for f in ["a/b/f", "a/g", "c/d/h", "e/i", "top"] {
            std::fs::write(root.join(f), b"x").unwrap();
        }
        let visits = [
            visit("a/b/f", false),
            visit("c", true),
            visit("e", false),
            visit("gone/x", false),
        ];
        let tree = scan(root, &visits, &|_| false, &Warnings::default(), None).unwrap();
        let got: Vec<String> = tree.entries.iter().map(|e| e.rel.display().to_string()).collect();
        assert_eq!(got, ["", "a", "a/b", "a/b/f", "c", "c/d", "c/d/h", "e"]);
        // A directory visited alone is read whole where the other tree has no directory there.
        let tree = scan(
            root,
            &[visit("e", false)],
            &|rel| rel == Path::new("e"),
            &Warnings::default(),
            None,
        )
        .unwrap();
        let got: Vec<String> = tree.entries.iter().map(|e| e.rel.display().to_string()).collect();
        assert_eq!(got, ["", "e", "e/i"]);
    }

    #[test]
    fn links_of_a_visited_file_are_visited_with_it() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir(root.join("d")).unwrap();
        std::fs::write(root.join("a"), b"x").unwrap();
        std::fs::hard_link(root.join("a"), root.join("d/b")).unwrap();
        std::fs::write(root.join("lone"), b"y").unwrap();
        let full = walk::scan(root, false, &Warnings::default(), None).unwrap();
        let links = LinkGroups::of_tree(&full);
        let widened = links.widen(vec![visit("a", false), visit("lone", false)]);
        let rels: Vec<String> = widened.iter().map(|v| v.rel.display().to_string()).collect();
        assert_eq!(rels, ["a", "d/b", "lone"]);
        let partial = scan(root, &[visit("a", false)], &|_| false, &Warnings::default(), None).unwrap();
        assert_eq!(unplaced_link(&partial), Some(Path::new("a")));
        let partial = scan(root, &widened, &|_| false, &Warnings::default(), None).unwrap();
        assert_eq!(unplaced_link(&partial), None);
    }
}
