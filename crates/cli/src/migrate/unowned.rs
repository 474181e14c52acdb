//! Claims on the class being left that no selected StatefulSet's template made: a migration never
//! touches them, and the plan says why each one is left (who uses it, as far as the pods tell).

use super::{ClaimFacts, MigrateFacts, NotHandled, PodFacts, resolve};
use ferry_engine::migration::origin::{ClaimOrigin, SetShape, claim_origin};

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
            let shapes = shapes(facts, &claim.namespace);
            let reason = match claim_origin(&claim.name, &shapes, &facts.from_class) {
                Some(ClaimOrigin::Replica { .. } | ClaimOrigin::NotSelected { .. }) => return None,
                Some(origin) => origin.left_alone_because(&facts.from_class)?,
                None => match &claim.ephemeral_of {
                    Some(pod) => {
                        format!("the generic ephemeral volume of pod {pod}: made and deleted with the pod")
                    }
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

/// The StatefulSets of `namespace`, as the engine's rule of what made a claim reads them.
fn shapes<'a>(facts: &'a MigrateFacts, namespace: &str) -> Vec<SetShape<'a>> {
    (facts.sets.iter())
        .filter(|set| set.namespace == namespace)
        .map(|set| SetShape {
            name: &set.name,
            ordinals: set.ordinals.clone(),
            selected: set.selected,
            templates: (set.templates.iter())
                .map(|t| {
                    let class = resolve(t.storage_class.as_deref(), facts.default_class.as_deref());
                    (t.name.as_str(), class)
                })
                .collect(),
        })
        .collect()
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
