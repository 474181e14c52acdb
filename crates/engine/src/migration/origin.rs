//! What made a claim on the class a migration leaves, by its name `<template>-<set>-<ordinal>`:
//! the one rule the operator's migration and `kubectl ferry migrate --plan` share, so both leave
//! the same claims alone for the same reasons.

use std::ops::Range;

/// A StatefulSet, as far as the rule needs it.
#[derive(Debug, Clone)]
pub struct SetShape<'a> {
    pub name: &'a str,
    /// Its replicas' ordinals (`spec.ordinals.start` onwards).
    pub ordinals: Range<i32>,
    /// Whether the migration selects it.
    pub selected: bool,
    /// Its volume claim templates: (name, the class its claims get, the default resolved).
    pub templates: Vec<(&'a str, Option<&'a str>)>,
}

/// What made a claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimOrigin<'a> {
    /// A replica's claim from a template on the class left: its StatefulSet's move carries it.
    Replica { set: &'a str, template: &'a str },
    /// A claim of a StatefulSet the migration does not select.
    NotSelected { set: &'a str },
    /// Made from a template that now asks for another class: only claims whose template is on
    /// the class left move.
    TemplateOnOtherClass {
        set: &'a str,
        template: &'a str,
        class: Option<&'a str>,
    },
    /// An ordinal the StatefulSet no longer runs: no pod uses it, no resize moves it.
    LeftByScaleDown { set: &'a str, ordinal: i32 },
}

impl ClaimOrigin<'_> {
    /// Why the migration leaves the claim alone, if it does (`from`: the class left).
    pub fn left_alone_because(&self, from: &str) -> Option<String> {
        match self {
            ClaimOrigin::Replica { .. } => None,
            ClaimOrigin::NotSelected { set } => Some(format!(
                "a claim of StatefulSet {set}, which this migration does not select"
            )),
            ClaimOrigin::TemplateOnOtherClass { set, template, class } => Some(format!(
                "made from StatefulSet {set}'s template {template:?}, which now asks for {}: only claims whose template is on {from} move",
                class.map_or("no class".to_string(), |c| format!("class {c}")),
            )),
            ClaimOrigin::LeftByScaleDown { set, ordinal } => Some(format!(
                "left by a scale-down: StatefulSet {set} has no replica {ordinal} any more"
            )),
        }
    }
}

/// What made `claim`, among `sets` (of its namespace); `None` if no StatefulSet's template did.
pub fn claim_origin<'a>(claim: &str, sets: &[SetShape<'a>], from: &str) -> Option<ClaimOrigin<'a>> {
    for set in sets {
        for &(template, class) in &set.templates {
            let Some(ordinal) = ordinal_of(claim, template, set.name) else {
                continue;
            };
            if !set.selected {
                return Some(ClaimOrigin::NotSelected { set: set.name });
            }
            if !set.ordinals.contains(&ordinal) {
                return Some(ClaimOrigin::LeftByScaleDown {
                    set: set.name,
                    ordinal,
                });
            }
            if class == Some(from) {
                return Some(ClaimOrigin::Replica {
                    set: set.name,
                    template,
                });
            }
            return Some(ClaimOrigin::TemplateOnOtherClass {
                set: set.name,
                template,
                class,
            });
        }
    }
    None
}

/// The ordinal in `<template>-<set>-<ordinal>`, the name a StatefulSet gives its claims.
fn ordinal_of(claim: &str, template: &str, set: &str) -> Option<i32> {
    let rest = claim.strip_prefix(template)?.strip_prefix('-')?;
    let digits = rest.strip_prefix(set)?.strip_prefix('-')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db(selected: bool) -> SetShape<'static> {
        SetShape {
            name: "db",
            ordinals: 0..2,
            selected,
            templates: vec![("data", Some("old")), ("logs", Some("new"))],
        }
    }

    #[test]
    fn each_claim_is_told_by_its_template_ordinal_and_selection() {
        let sets = [db(true)];
        let replica = ClaimOrigin::Replica {
            set: "db",
            template: "data",
        };
        assert_eq!(claim_origin("data-db-1", &sets, "old"), Some(replica.clone()));
        assert_eq!(
            claim_origin("data-db-2", &sets, "old"),
            Some(ClaimOrigin::LeftByScaleDown {
                set: "db",
                ordinal: 2
            })
        );
        let other = claim_origin("logs-db-0", &sets, "old").unwrap();
        assert!(matches!(
            other,
            ClaimOrigin::TemplateOnOtherClass {
                class: Some("new"),
                ..
            }
        ));
        assert!(
            other
                .left_alone_because("old")
                .unwrap()
                .contains("asks for class new")
        );
        assert_eq!(claim_origin("scratch", &sets, "old"), None);
        // Not `<template>-<set>-<digits>`: a set named like a prefix of another's claims.
        assert_eq!(claim_origin("data-db-x", &sets, "old"), None);
        assert_eq!(claim_origin("data-dbx-0", &sets, "old"), None);
        assert_eq!(
            claim_origin("data-db-0", &[db(false)], "old"),
            Some(ClaimOrigin::NotSelected { set: "db" })
        );
        assert_eq!(replica.left_alone_because("old"), None);
    }
}
