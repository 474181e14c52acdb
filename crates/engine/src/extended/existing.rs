//! A start with no version recorded: a new ExtendedStatefulSet, or one deleted and applied again
//! (helm uninstall and install, `kubectl replace --force`, an Argo CD replace, a restore without
//! status). Its StatefulSets went with the old object, but their claims stay, so the replicas'
//! data may already be here. Ferry runs on those claims where its StatefulSets pick them up by
//! name (the same layout; for blue/green, the version they are in), and otherwise refuses, naming
//! them: it never starts replicas on new, empty claims beside them, nor pins a zone's replicas
//! away from the zone their volumes are in. The webhook fails open, so this is the guard.

use super::desired::ZONE_KEY;
use super::handover::{Cluster, bound_volume};
use ferry_api::ExtendedStatefulSet;
use k8s_openapi::api::core::v1::PersistentVolume;
use std::collections::{BTreeMap, BTreeSet};

/// The older zone key some volumes still carry.
const LEGACY_ZONE_KEY: &str = "failure-domain.beta.kubernetes.io/zone";
/// At most this many claims are named in a refusal.
const NAMED: usize = 8;

/// The StatefulSet a claim was made for, read from its name
/// `<template>-<name>[-z<zone>][-v<version>]-<ordinal>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimOf {
    pub claim: String,
    pub zone: Option<usize>,
    pub version: Option<i64>,
    pub ordinal: i32,
}

/// How the ExtendedStatefulSet starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Start {
    /// No claim of its replicas is here, or its StatefulSets pick them up as they are.
    Fresh,
    /// Blue/green: every claim here is of this version; its StatefulSets start on them.
    AtVersion(i64),
    /// Starting would put replicas beside their data or away from its zone (why).
    Refused(String),
}

/// The claim `claim`, if its name is one `ests`'s StatefulSets give their claims.
pub fn claim_of(ests: &ExtendedStatefulSet, claim: &str) -> Option<ClaimOf> {
    let name = ests.metadata.name.as_deref()?;
    templates(ests).find_map(|template| {
        let rest = claim
            .strip_prefix(template)?
            .strip_prefix('-')?
            .strip_prefix(name)?;
        parse_rest(claim, rest)
    })
}

fn templates(ests: &ExtendedStatefulSet) -> impl Iterator<Item = &str> {
    ests.spec
        .template
        .spec
        .volume_claim_templates
        .iter()
        .flatten()
        .filter_map(|template| template.metadata.name.as_deref())
}

/// `[-z<zone>][-v<version>]-<ordinal>`, each number plain digits.
fn parse_rest(claim: &str, rest: &str) -> Option<ClaimOf> {
    let parts: Vec<&str> = rest.strip_prefix('-')?.split('-').collect();
    let (ordinal, marked) = parts.split_last()?;
    let ordinal = number(ordinal)?;
    let mut of = ClaimOf {
        claim: claim.to_string(),
        zone: None,
        version: None,
        ordinal,
    };
    match marked {
        [] => {}
        [one] => {
            if let Some(zone) = one.strip_prefix('z') {
                of.zone = Some(number(zone)?);
            } else {
                of.version = Some(number(one.strip_prefix('v')?)?);
            }
        }
        [zone, version] => {
            of.zone = Some(number(zone.strip_prefix('z')?)?);
            of.version = Some(number(version.strip_prefix('v')?)?);
        }
        _ => return None,
    }
    Some(of)
}

/// A plain decimal number (no sign, no spaces).
fn number<T: std::str::FromStr>(text: &str) -> Option<T> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// How `ests` starts, from the namespace's claims named like its replicas' and their volumes.
pub fn start(ests: &ExtendedStatefulSet, existing: &Cluster) -> Start {
    let zones = &ests.spec.zones;
    let blue_green = ests
        .spec
        .update_strategy
        .as_ref()
        .is_some_and(|strategy| strategy.blue_green());
    // Claims of zones past the end of the list are a dropped zone's (kept, as after an edit).
    let found: Vec<ClaimOf> = existing
        .claims
        .keys()
        .filter_map(|claim| claim_of(ests, claim))
        .filter(|of| zones.is_empty() || of.zone.is_none_or(|zone| zone < zones.len()))
        .collect();
    if found.is_empty() {
        return Start::Fresh;
    }
    let beside = |what: &str, which: Vec<&ClaimOf>| {
        Start::Refused(format!(
            "claims of this ExtendedStatefulSet's replicas are here ({}), made {what}: its StatefulSets would start on new, empty claims beside them. Apply it as it was, or move the data and delete those claims",
            named(&which)
        ))
    };
    let zoned: Vec<&ClaimOf> = found
        .iter()
        .filter(|of| of.zone.is_some() == zones.is_empty())
        .collect();
    if !zoned.is_empty() {
        return beside(
            if zones.is_empty() {
                "with zones (this one has none)"
            } else {
                "without zones (this one has zones)"
            },
            zoned,
        );
    }
    let versioned: Vec<&ClaimOf> = found
        .iter()
        .filter(|of| of.version.is_some() != blue_green)
        .collect();
    if !versioned.is_empty() {
        return beside(
            if blue_green {
                "by a StatefulSet without a version (a RollingUpdate one; this one is BlueGreen)"
            } else {
                "by a blue/green version's StatefulSet (this one updates in place)"
            },
            versioned,
        );
    }
    if let Some(refusal) = away_from_their_zone(&found, zones, &existing.claims_volumes()) {
        return Start::Refused(refusal);
    }
    let versions: BTreeMap<i64, Vec<&ClaimOf>> = found.iter().fold(BTreeMap::new(), |mut by, of| {
        if let Some(version) = of.version {
            by.entry(version).or_insert_with(Vec::new).push(of);
        }
        by
    });
    match versions.len() {
        0 => Start::Fresh,
        1 => versions
            .keys()
            .next()
            .map_or(Start::Fresh, |version| Start::AtVersion(*version)),
        _ => Start::Refused(format!(
            "claims of this ExtendedStatefulSet's replicas are here in more than one version ({}): an update was cut short, and Ferry cannot tell which version holds each replica's data. Delete (or move) the claims of the versions not wanted; it then starts on the others",
            versions
                .iter()
                .map(|(version, claims)| format!("version {version}: {}", named(claims)))
                .collect::<Vec<_>>()
                .join("; ")
        )),
    }
}

/// A refusal naming each claim whose volume is in another zone than its zone's StatefulSet is now
/// pinned to (its replica could not attach it).
fn away_from_their_zone(
    found: &[ClaimOf],
    zones: &[String],
    volumes: &BTreeMap<&str, &PersistentVolume>,
) -> Option<String> {
    let away: Vec<String> = found
        .iter()
        .filter_map(|of| {
            let wanted = zones.get(of.zone?)?;
            let placed = volume_zones(volumes.get(of.claim.as_str())?);
            (!placed.is_empty() && !placed.contains(wanted.as_str())).then(|| {
                format!(
                    "{}'s volume is in {}, zone {} is now {wanted}",
                    of.claim,
                    placed.into_iter().collect::<Vec<_>>().join(" or "),
                    of.zone.unwrap_or_default()
                )
            })
        })
        .collect();
    (!away.is_empty()).then(|| {
        format!(
            "spec.zones differs from where this ExtendedStatefulSet's replicas' volumes are ({}{}): each zone's StatefulSet is named and pinned by its position (<name>-z<i>), and its replicas could not attach them. Apply it with its zones in their old order",
            away.iter().take(NAMED).cloned().collect::<Vec<_>>().join("; "),
            more(away.len())
        )
    })
}

/// The zones a volume's node affinity allows.
fn volume_zones(volume: &PersistentVolume) -> BTreeSet<&str> {
    volume
        .spec
        .as_ref()
        .and_then(|spec| spec.node_affinity.as_ref())
        .and_then(|affinity| affinity.required.as_ref())
        .map(|required| required.node_selector_terms.iter())
        .into_iter()
        .flatten()
        .flat_map(|term| term.match_expressions.iter().flatten())
        .filter(|expression| {
            expression.operator == "In" && (expression.key == ZONE_KEY || expression.key == LEGACY_ZONE_KEY)
        })
        .flat_map(|expression| expression.values.iter().flatten().map(String::as_str))
        .collect()
}

fn named(claims: &[&ClaimOf]) -> String {
    let names: Vec<&str> = claims.iter().take(NAMED).map(|of| of.claim.as_str()).collect();
    format!("{}{}", names.join(", "), more(claims.len()))
}

fn more(count: usize) -> String {
    if count > NAMED {
        format!(" and {} more", count - NAMED)
    } else {
        String::new()
    }
}

impl Cluster {
    /// Each claim's bound volume, by claim name, where it was read.
    fn claims_volumes(&self) -> BTreeMap<&str, &PersistentVolume> {
        self.claims
            .iter()
            .filter_map(|(name, claim)| Some((name.as_str(), self.volumes.get(bound_volume(claim)?)?)))
            .collect()
    }
}

#[cfg(test)]
#[path = "existing_tests.rs"]
mod tests;
