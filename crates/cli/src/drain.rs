//! `kubectl ferry drain NODE`: which replicas' volumes must leave a node, decided from plain facts
//! (pure; `drain/run.rs` reads them and acts). A replica must move when one of its volumes is bound
//! to NODE and to no other node its pod could run on (a node-bound volume, a zone-bound one in a
//! zone of one usable node): the node's cordon alone would leave that replica unschedulable. One
//! VolumeResize per StatefulSet moves them (`spec.placement`: those replicas, away from NODE), one
//! replica at a time while the others serve.

use ferry_engine::resize::NodeView;
use ferry_engine::resize::precheck::placement::refuses_replica;
use k8s_openapi::api::core::v1::{NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Toleration};
use std::collections::BTreeMap;

pub mod run;

/// A StatefulSet as the drain sees it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SetFacts {
    pub namespace: String,
    pub name: String,
    pub ordinals: std::ops::Range<i32>,
    pub ready_replicas: i32,
    pub node_selector: BTreeMap<String, String>,
    pub tolerations: Vec<Toleration>,
    pub templates: Vec<TemplateFacts>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct TemplateFacts {
    pub name: String,
    /// `volumeMode: Block` or `ReadWriteOncePod`: no mover can copy it while the replica runs.
    pub uncopyable: Option<&'static str>,
}

/// A claim: its volume's node affinity (`None`: not bound, or bound anywhere), its size, its class.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClaimFacts {
    pub affinity: Option<NodeSelector>,
    pub capacity_bytes: u64,
    pub storage_class: Option<String>,
}

/// What the drain reads: the nodes, the StatefulSets, their claims by (namespace, name), and
/// whether each StorageClass binds on first use.
#[derive(Debug, Clone, Default)]
pub struct DrainFacts {
    pub nodes: Vec<NodeView>,
    pub sets: Vec<SetFacts>,
    pub claims: BTreeMap<(String, String), ClaimFacts>,
    pub first_use_classes: BTreeMap<String, bool>,
}

/// One StatefulSet's replicas to move, and the sizes its VolumeResize asks for (each template's
/// largest claim: nothing shrinks, a replica whose claim is smaller grows).
#[derive(Debug, Clone, PartialEq)]
pub struct Move {
    pub namespace: String,
    pub stateful_set: String,
    pub replicas: Vec<i32>,
    pub volumes: Vec<(String, u64)>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct DrainPlan {
    pub moves: Vec<Move>,
    /// Volumes on the node that need no move (their pods may run on another node), said once each.
    pub notes: Vec<String>,
    /// Why the drain cannot be done: it changes nothing then.
    pub refusals: Vec<String>,
}

/// What draining `node` takes.
pub fn plan(node: &str, facts: &DrainFacts) -> DrainPlan {
    let mut plan = DrainPlan::default();
    for set in &facts.sets {
        let replicas = bound_here(node, facts, set, &mut plan.notes);
        if replicas.is_empty() {
            continue;
        }
        let refusals = refusals(node, facts, set, &replicas);
        if !refusals.is_empty() {
            plan.refusals.extend(refusals);
            continue;
        }
        plan.moves.push(Move {
            namespace: set.namespace.clone(),
            stateful_set: set.name.clone(),
            replicas,
            volumes: sizes(facts, set),
        });
    }
    plan
}

/// The replicas of `set` with a volume that only `node` (of the nodes their pods may use) holds.
fn bound_here(node: &str, facts: &DrainFacts, set: &SetFacts, notes: &mut Vec<String>) -> Vec<i32> {
    let mut replicas = Vec::new();
    for ordinal in set.ordinals.clone() {
        for template in &set.templates {
            let claim = format!("{}-{}-{ordinal}", template.name, set.name);
            let Some(affinity) =
                (facts.claims.get(&(set.namespace.clone(), claim.clone()))).and_then(|c| c.affinity.as_ref())
            else {
                continue;
            };
            let holders: Vec<&NodeView> = facts.nodes.iter().filter(|n| selects(affinity, n)).collect();
            if !holders.iter().any(|n| n.name == node) {
                continue;
            }
            let elsewhere: Vec<&str> = (holders.iter())
                .filter(|n| {
                    n.name != node && refuses_replica(n, &set.node_selector, &set.tolerations).is_none()
                })
                .map(|n| n.name.as_str())
                .collect();
            if elsewhere.is_empty() {
                if !replicas.contains(&ordinal) {
                    replicas.push(ordinal);
                }
            } else {
                notes.push(format!(
                    "{}/{claim}: its volume is reachable from {} too; its pod moves there by itself",
                    set.namespace,
                    elsewhere.join(", ")
                ));
            }
        }
    }
    replicas
}

/// Why `set`'s `replicas` cannot be moved off `node`.
fn refusals(node: &str, facts: &DrainFacts, set: &SetFacts, replicas: &[i32]) -> Vec<String> {
    let who = format!("StatefulSet {}/{}", set.namespace, set.name);
    let mut out = Vec::new();
    let members = set.ordinals.len() as i32;
    if set.ready_replicas < members {
        out.push(format!(
            "{who}: {} of {members} replicas Ready; moving replica {} would take another one down (wait until all are Ready)",
            set.ready_replicas,
            listed(replicas)
        ));
    }
    for template in &set.templates {
        if let Some(why) = template.uncopyable {
            out.push(format!(
                "{who}: volume claim template {:?} {why}: Ferry cannot copy it to another node",
                template.name
            ));
        }
    }
    let classes = replicas.iter().flat_map(|ordinal| {
        (set.templates.iter()).filter_map(move |t| {
            let claim = format!("{}-{}-{ordinal}", t.name, set.name);
            facts
                .claims
                .get(&(set.namespace.clone(), claim))?
                .storage_class
                .clone()
        })
    });
    let mut immediate: Vec<String> = classes
        .filter(|class| facts.first_use_classes.get(class) == Some(&false))
        .collect();
    immediate.dedup();
    for class in immediate {
        out.push(format!(
            "{who}: StorageClass {class:?} binds volumes at once (volumeBindingMode Immediate): Ferry cannot choose the node a new volume is made on"
        ));
    }
    let usable: Vec<&NodeView> = (facts.nodes.iter())
        .filter(|n| n.name != node && refuses_replica(n, &set.node_selector, &set.tolerations).is_none())
        .collect();
    if usable.is_empty() {
        out.push(format!("{who}: no other node can run its replicas"));
    }
    out
}

/// Each template's largest claim among the replicas.
fn sizes(facts: &DrainFacts, set: &SetFacts) -> Vec<(String, u64)> {
    (set.templates.iter())
        .map(|template| {
            let largest = (set.ordinals.clone())
                .filter_map(|ordinal| {
                    let claim = format!("{}-{}-{ordinal}", template.name, set.name);
                    facts
                        .claims
                        .get(&(set.namespace.clone(), claim))
                        .map(|c| c.capacity_bytes)
                })
                .max()
                .unwrap_or(0);
            (template.name.clone(), largest)
        })
        .collect()
}

pub fn listed(replicas: &[i32]) -> String {
    replicas.iter().map(i32::to_string).collect::<Vec<_>>().join(", ")
}

/// Whether a volume's node affinity allows `node` (any term; within one, every requirement).
pub fn selects(affinity: &NodeSelector, node: &NodeView) -> bool {
    affinity
        .node_selector_terms
        .iter()
        .any(|term| term_selects(term, node))
}

fn term_selects(term: &NodeSelectorTerm, node: &NodeView) -> bool {
    let labels = term
        .match_expressions
        .iter()
        .flatten()
        .all(|r| requirement(r, node.labels.get(&r.key)));
    let name = Some(&node.name);
    let fields =
        (term.match_fields.iter().flatten()).all(|r| r.key == "metadata.name" && requirement(r, name));
    labels && fields
}

fn requirement(requirement: &NodeSelectorRequirement, value: Option<&String>) -> bool {
    let values = requirement.values.as_deref().unwrap_or_default();
    let number = |v: &String| v.parse::<i64>().ok();
    match requirement.operator.as_str() {
        "In" => value.is_some_and(|v| values.contains(v)),
        "NotIn" => value.is_none_or(|v| !values.contains(v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" => {
            matches!((value.and_then(number), values.first().and_then(number)), (Some(v), Some(bound)) if v > bound)
        }
        "Lt" => {
            matches!((value.and_then(number), values.first().and_then(number)), (Some(v), Some(bound)) if v < bound)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests;
