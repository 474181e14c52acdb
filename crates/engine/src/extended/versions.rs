//! Blue/green: the StatefulSets of one zone, one per version (`<base>-v<N>`), and which ordinals
//! each holds. The replicas of a zone are split: ordinals below the split run on the old version's
//! StatefulSet, the rest on the new one's; a StatefulSet's range is its `ordinals.start` and
//! `replicas`. A move hands one ordinal at the split from one to the other (see `handover`).

use super::desired::ANNOTATION_VERSION;
use super::observed::LiveSet;
use ferry_api::ExtendedStatefulSet;
use k8s_openapi::api::apps::v1::StatefulSet;
use std::collections::BTreeMap;

/// Pod and selector label of a version's StatefulSet: its version.
pub const LABEL_VERSION: &str = "ferry.dev/version";

/// The StatefulSet of version `version` in the zone whose StatefulSets are named after `base`.
pub fn version_set_name(base: &str, version: i64) -> String {
    format!("{base}-v{version}")
}

/// Whether `name` is one of `base`'s StatefulSets: `base` itself (made before blue/green) or
/// `base-v<digits>`.
pub fn belongs_to(base: &str, name: &str) -> bool {
    name == base
        || name
            .strip_prefix(base)
            .and_then(|rest| rest.strip_prefix("-v"))
            .is_some_and(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
}

/// The version a StatefulSet runs, from the annotation Ferry sets.
pub fn annotated_version(sts: &StatefulSet) -> Option<i64> {
    sts.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ANNOTATION_VERSION))
        .and_then(|v| v.parse().ok())
}

/// The ordinals a StatefulSet runs: `start..end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub start: i32,
    pub end: i32,
}

impl Range {
    pub fn of(sts: &StatefulSet) -> Range {
        let spec = sts.spec.as_ref();
        let start = spec
            .and_then(|s| s.ordinals.as_ref())
            .and_then(|o| o.start)
            .unwrap_or(0);
        let replicas = spec.and_then(|s| s.replicas).unwrap_or(1).max(0);
        Range {
            start,
            end: start.saturating_add(replicas),
        }
    }

    pub fn replicas(self) -> i32 {
        (self.end - self.start).max(0)
    }

    pub fn holds(self, ordinal: i32) -> bool {
        (self.start..self.end).contains(&ordinal)
    }

    /// Without `ordinal`, which must be at an edge (an ordinal inside stays: `None`).
    pub fn without(self, ordinal: i32) -> Option<Range> {
        if !self.holds(ordinal) {
            Some(self)
        } else if ordinal == self.end - 1 {
            Some(Range { end: ordinal, ..self })
        } else if ordinal == self.start {
            Some(Range {
                start: ordinal + 1,
                ..self
            })
        } else {
            None
        }
    }

    /// With `ordinal`, which must be next to it (or it empty).
    pub fn with(self, ordinal: i32) -> Option<Range> {
        if self.holds(ordinal) {
            Some(self)
        } else if self.replicas() == 0 {
            Some(Range {
                start: ordinal,
                end: ordinal + 1,
            })
        } else if ordinal == self.end {
            Some(Range {
                end: ordinal + 1,
                ..self
            })
        } else if ordinal + 1 == self.start {
            Some(Range {
                start: ordinal,
                ..self
            })
        } else {
            None
        }
    }
}

/// One zone's StatefulSets under blue/green.
#[derive(Debug, Clone)]
pub struct Zone<'a> {
    /// `<name>` or `<name>-z<i>`.
    pub base: String,
    /// The replicas the zone should run.
    pub replicas: i32,
    /// The name of the StatefulSet of the version being run (it may not exist yet).
    pub new_name: String,
    pub new: Option<&'a LiveSet>,
    /// The older version's StatefulSet the replicas come from (or go back to).
    pub old: Option<&'a LiveSet>,
    /// Older StatefulSets holding no replica and no pod: deleted.
    pub leftovers: Vec<String>,
    /// Older StatefulSets still holding replicas besides `old` (not expected: refused).
    pub extra: Vec<String>,
}

impl Zone<'_> {
    /// The first ordinal on the new version: what the new StatefulSet starts at when it runs
    /// replicas, else where the old one ends.
    pub fn split(&self) -> i32 {
        if let Some(new) = self.new {
            let range = Range::of(&new.object);
            if range.replicas() > 0 {
                return range.start;
            }
        }
        self.old.map_or(0, |old| Range::of(&old.object).end)
    }
}

fn owned_by(sts: &StatefulSet, ests: &ExtendedStatefulSet) -> bool {
    sts.metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| Some(&o.uid) == ests.metadata.uid.as_ref())
}

/// The zone of `base` at `version`: the StatefulSet annotated with that version (one made before
/// blue/green keeps its name `base`), else `base-v<version>`; the old one is the highest other
/// version that holds replicas, or the one a recorded move names, or (`keep_old`: while an update
/// may still move replicas back) the highest older version.
pub fn zone<'a>(
    ests: &ExtendedStatefulSet,
    base: &str,
    replicas: i32,
    version: i64,
    live: &'a BTreeMap<String, LiveSet>,
    moving: &[&str],
    keep_old: bool,
) -> Zone<'a> {
    let members: Vec<&LiveSet> = live
        .values()
        .filter(|set| {
            let name = set.object.metadata.name.as_deref().unwrap_or_default();
            belongs_to(base, name) && owned_by(&set.object, ests)
        })
        .collect();
    let name_of = |set: &LiveSet| set.object.metadata.name.clone().unwrap_or_default();
    let new = members
        .iter()
        .copied()
        .find(|set| annotated_version(&set.object) == Some(version))
        .or_else(|| {
            members
                .iter()
                .copied()
                .find(|set| name_of(set) == version_set_name(base, version))
        });
    let new_name = new.map_or_else(|| version_set_name(base, version), name_of);
    let mut older: Vec<&LiveSet> = members
        .into_iter()
        .filter(|set| name_of(set) != new_name)
        .collect();
    older.sort_by_key(|set| annotated_version(&set.object).unwrap_or(0));
    let holding =
        |set: &&LiveSet| Range::of(&set.object).replicas() > 0 || moving.contains(&name_of(set).as_str());
    let old = older.iter().rev().copied().find(holding).or_else(|| {
        keep_old
            .then(|| {
                older
                    .iter()
                    .rev()
                    .copied()
                    .find(|set| annotated_version(&set.object).unwrap_or(0) < version)
            })
            .flatten()
    });
    let mut leftovers = Vec::new();
    let mut extra = Vec::new();
    for set in older {
        if old.is_some_and(|old| std::ptr::eq(old, set)) {
            continue;
        }
        let pods = set.object.status.as_ref().map_or(0, |s| s.replicas);
        if Range::of(&set.object).replicas() > 0 {
            extra.push(name_of(set));
        } else if pods == 0 {
            leftovers.push(name_of(set));
        }
    }
    Zone {
        base: base.to_string(),
        replicas,
        new_name,
        new,
        old,
        leftovers,
        extra,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_sets_belong_to_their_base_only() {
        assert!(belongs_to("db", "db"));
        assert!(belongs_to("db", "db-v12"));
        assert!(!belongs_to("db", "db-v"));
        assert!(!belongs_to("db", "db-v1x"));
        assert!(!belongs_to("db", "db-z0"));
        assert!(!belongs_to("db", "dbx-v1"));
        assert!(belongs_to("db-z0", "db-z0-v3"));
        assert_eq!(version_set_name("db-z1", 4), "db-z1-v4");
    }

    #[test]
    fn ranges_lose_and_gain_ordinals_only_at_their_edges() {
        let range = Range { start: 0, end: 3 };
        assert_eq!(range.without(2), Some(Range { start: 0, end: 2 }));
        assert_eq!(range.without(0), Some(Range { start: 1, end: 3 }));
        assert_eq!(range.without(1), None);
        assert_eq!(range.without(5), Some(range));
        let upper = Range { start: 2, end: 3 };
        assert_eq!(upper.with(1), Some(Range { start: 1, end: 3 }));
        assert_eq!(upper.with(3), Some(Range { start: 2, end: 4 }));
        assert_eq!(upper.with(0), None);
        let empty = Range { start: 3, end: 3 };
        assert_eq!(empty.with(1), Some(Range { start: 1, end: 2 }));
    }
}
