//! Claims on the class being left that no selected StatefulSet's template made: a migration never
//! touches them, and the plan says why each one is left (who uses it, as far as the pods tell).

use super::{ClaimFacts, MigrateFacts, NotHandled, PodFacts, SetFacts, resolve};

/// Every claim on the `from` class (and selected by `-l`) that the migration leaves alone.
pub fn not_handled(facts: &MigrateFacts) -> Vec<NotHandled> {
    let on_from = |claim: &&ClaimFacts| {
        resolve(claim.storage_class.as_deref(), facts.default_class.as_deref())
            == Some(facts.from_class.as_str())
    };
    let mut out: Vec<NotHandled> = (facts.claims.iter())
        .filter(|claim| claim.selected)
        .filter(on_from)
        .filter_map(|claim| {
            let reason = match made_by(facts, claim) {
                Some(Made::Replica | Made::OtherSelection) => return None,
                Some(Made::TemplateOnOtherClass { set, template, class }) => format!(
                    "made from StatefulSet {set}'s template {template:?}, which now asks for {}: only claims whose template is on {} move",
                    class.map_or("no class".to_string(), |c| format!("class {c}")),
                    facts.from_class
                ),
                Some(Made::LeftByScaleDown { set, ordinal }) => format!(
                    "left by a scale-down: StatefulSet {set} has no replica {ordinal} any more"
                ),
                None => match &claim.ephemeral_of {
                    Some(pod) => format!(
                        "the generic ephemeral volume of pod {pod}: made and deleted with the pod"
                    ),
                    None => used_by(&facts.pods, claim),
                },
            };
            Some(NotHandled {
                namespace: claim.namespace.clone(),
                claim: claim.name.clone(),
                reason: format!("{reason}; never touched"),
            })
        })
        .collect();
    out.sort_by(|a, b| (&a.namespace, &a.claim).cmp(&(&b.namespace, &b.claim)));
    out
}

/// What made a claim named `<template>-<statefulset>-<ordinal>`.
enum Made<'a> {
    /// A replica's claim from a template on the class: the StatefulSet's plan covers it.
    Replica,
    /// A StatefulSet `-l` did not select: not this plan's business.
    OtherSelection,
    TemplateOnOtherClass {
        set: &'a str,
        template: &'a str,
        class: Option<&'a str>,
    },
    LeftByScaleDown {
        set: &'a str,
        ordinal: i32,
    },
}

fn made_by<'a>(facts: &'a MigrateFacts, claim: &ClaimFacts) -> Option<Made<'a>> {
    let sets = facts.sets.iter().filter(|set| set.namespace == claim.namespace);
    for set in sets {
        for template in &set.templates {
            let Some(ordinal) = ordinal_of(&claim.name, &template.name, set) else {
                continue;
            };
            if !set.selected {
                return Some(Made::OtherSelection);
            }
            if !set.ordinals.contains(&ordinal) {
                return Some(Made::LeftByScaleDown {
                    set: &set.name,
                    ordinal,
                });
            }
            let class = resolve(template.storage_class.as_deref(), facts.default_class.as_deref());
            if class == Some(facts.from_class.as_str()) {
                return Some(Made::Replica);
            }
            return Some(Made::TemplateOnOtherClass {
                set: &set.name,
                template: &template.name,
                class,
            });
        }
    }
    None
}

/// The ordinal in `<template>-<set>-<ordinal>`, the name a StatefulSet gives its claims.
fn ordinal_of(claim: &str, template: &str, set: &SetFacts) -> Option<i32> {
    let rest = claim.strip_prefix(template)?.strip_prefix('-')?;
    let digits = rest.strip_prefix(set.name.as_str())?.strip_prefix('-')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Who uses a claim no StatefulSet template made.
fn used_by(pods: &[PodFacts], claim: &ClaimFacts) -> String {
    let users: Vec<&PodFacts> = (pods.iter())
        .filter(|pod| pod.namespace == claim.namespace && pod.claims.contains(&claim.name))
        .collect();
    let Some(pod) = users.first() else {
        return "no StatefulSet owns it and no pod uses it".into();
    };
    let name = &pod.name;
    match &pod.controller {
        None => format!("used by pod {name}, which no controller owns (a bare pod)"),
        Some((kind, owner)) if kind == "ReplicaSet" => match deployment_of(owner, pod) {
            Some(deployment) => {
                format!(
                    "used by Deployment {deployment} (pod {name}): only StatefulSets' volume claim templates move"
                )
            }
            None => format!(
                "used by ReplicaSet {owner} (pod {name}): only StatefulSets' volume claim templates move"
            ),
        },
        Some((kind, owner)) if kind == "StatefulSet" => format!(
            "mounted by StatefulSet {owner}'s pod {name} as a plain volume, not made from a volume claim template"
        ),
        Some((kind, owner)) => {
            format!("used by {kind} {owner} (pod {name}): only StatefulSets' volume claim templates move")
        }
    }
}

/// The Deployment behind a ReplicaSet `<deployment>-<pod-template-hash>`.
fn deployment_of<'a>(replica_set: &'a str, pod: &PodFacts) -> Option<&'a str> {
    let hash = pod.template_hash.as_deref()?;
    replica_set.strip_suffix(hash)?.strip_suffix('-')
}
