//! `kubectl ferry migrate --from-class A --to-class B --plan`: what a fleet migration from one
//! StorageClass to another would move, decided from plain facts (pure; `migrate/run.rs` reads
//! them, `migrate/render.rs` prints the plan). Without `--plan`, `migrate/carry.rs` makes a
//! VolumeMigration in each namespace where something moves, which the operator carries out.
//!
//! A StatefulSet is selected when one of its volume claim templates asks for class A (no class
//! named: the cluster's default). Its claims made from those templates move, replica by replica;
//! templates on another class stay. Claims on A that no selected StatefulSet's template made are
//! listed as not handled, with the reason (`migrate/unowned.rs`), and never touched.

use std::collections::BTreeMap;

pub mod carry;
mod facts;
pub mod render;
mod report;
pub mod run;
mod unowned;

pub use facts::{ClaimFacts, MigrateFacts, PodFacts, SetFacts, TemplateFacts};
pub use report::{ClaimMove, Estimate, MigrationPlan, NotHandled, Refusal, SetMove, StayingTemplate, Totals};

const MIB: u64 = 1 << 20;

/// The copy throughput estimates assume unless `--rate` says otherwise: a resize's cold copy by
/// the mover, 1,078.7 MiB checksum-verified from disk in 2.84 s (median), about 380 MiB/s
/// (docs/benchmarks.md, "Resize", run of 2026-11-22T20:02Z; a 2-core dev machine's virtual disk,
/// so real disks and networks may well be slower).
pub const MEASURED_COPY_BYTES_PER_SECOND: u64 = 380 * MIB;

/// Why A to B cannot be planned at all, before anything is read.
pub fn check_classes(from: &str, to: &str) -> Result<(), String> {
    if from.is_empty() || to.is_empty() {
        return Err("--from-class and --to-class must name a StorageClass".into());
    }
    if from == to {
        return Err(format!(
            "--from-class and --to-class are both {from:?}: nothing would move"
        ));
    }
    Ok(())
}

/// The class a claim or template is on (the engine's rule: `None` gets the default, `""` is none).
pub use ferry_engine::storage_classes::class_of as resolve;

/// The plan: what moves, what is refused and why, what is left alone and why.
pub fn plan(facts: &MigrateFacts) -> MigrationPlan {
    let mut plan = MigrationPlan {
        from_class: facts.from_class.clone(),
        to_class: facts.to_class.clone(),
        bytes_per_second: facts.bytes_per_second,
        ..MigrationPlan::default()
    };
    if !facts.from_class_exists {
        plan.notes.push(format!(
            "StorageClass {:?} does not exist (any volumes still on it are planned all the same)",
            facts.from_class
        ));
    }
    let claims: BTreeMap<(&str, &str), &ClaimFacts> = (facts.claims.iter())
        .map(|claim| ((claim.namespace.as_str(), claim.name.as_str()), claim))
        .collect();
    for set in facts.sets.iter().filter(|set| set.selected) {
        let (moving, staying): (Vec<&TemplateFacts>, Vec<&TemplateFacts>) =
            set.templates.iter().partition(|t| on_from_class(facts, t));
        if moving.is_empty() {
            continue;
        }
        let reasons = refusals(facts, set, &moving);
        if reasons.is_empty() {
            plan.stateful_sets
                .push(set_move(facts, set, (&moving, &staying), &claims));
        } else {
            plan.refused.push(Refusal {
                namespace: set.namespace.clone(),
                name: set.name.clone(),
                reasons,
            });
        }
    }
    plan.not_handled = unowned::not_handled(facts);
    plan.totals = totals(&plan.stateful_sets);
    plan
}

fn on_from_class(facts: &MigrateFacts, template: &TemplateFacts) -> bool {
    resolve(template.storage_class.as_deref(), facts.default_class.as_deref())
        == Some(facts.from_class.as_str())
}

/// Why `set` cannot be moved.
fn refusals(facts: &MigrateFacts, set: &SetFacts, moving: &[&TemplateFacts]) -> Vec<String> {
    let mut reasons = Vec::new();
    for template in moving {
        if template.raw_block {
            reasons.push(format!(
                "volume claim template {:?} uses volumeMode Block: a raw device has no file system for the mover to copy",
                template.name
            ));
        }
        if template.read_write_once_pod {
            reasons.push(format!(
                "volume claim template {:?} is ReadWriteOncePod: no second pod may mount it while the replica runs, so it cannot be copied",
                template.name
            ));
        }
    }
    let key = (set.namespace.clone(), set.name.clone());
    if let Some(resize) = facts.resizes_at_work.get(&key) {
        reasons.push(format!(
            "VolumeResize {resize} is at work on it: one resize per StatefulSet at a time (plan again once it has ended)"
        ));
    }
    reasons
}

fn set_move(
    facts: &MigrateFacts,
    set: &SetFacts,
    (moving, staying): (&[&TemplateFacts], &[&TemplateFacts]),
    claims: &BTreeMap<(&str, &str), &ClaimFacts>,
) -> SetMove {
    let replicas = set.ordinals.len() as i32;
    let mut warnings = Vec::new();
    if set.ready_replicas < replicas {
        warnings.push(format!(
            "{} of {replicas} replicas Ready: its resize will wait until all are",
            set.ready_replicas
        ));
    }
    let mut moves = Vec::new();
    for ordinal in set.ordinals.clone() {
        for template in moving {
            let name = format!("{}-{}-{ordinal}", template.name, set.name);
            let claim = claims.get(&(set.namespace.as_str(), name.as_str())).copied();
            moves.push(claim_move(facts, ordinal, template, name, claim));
        }
    }
    SetMove {
        namespace: set.namespace.clone(),
        name: set.name.clone(),
        replicas,
        moving_templates: moving.iter().map(|t| t.name.clone()).collect(),
        staying_templates: (staying.iter())
            .map(|t| StayingTemplate {
                name: t.name.clone(),
                storage_class: resolve(t.storage_class.as_deref(), facts.default_class.as_deref())
                    .map(str::to_string),
            })
            .collect(),
        estimate: (moves.iter()).fold(Estimate::exact(0), |sum, one| sum.plus(one.estimate)),
        claims: moves,
        warnings,
    }
}

/// One replica's claim of a moving template: what copying it takes.
fn claim_move(
    facts: &MigrateFacts,
    replica: i32,
    template: &TemplateFacts,
    name: String,
    claim: Option<&ClaimFacts>,
) -> ClaimMove {
    let nothing = |size_bytes, note: String| ClaimMove {
        replica,
        template: template.name.clone(),
        claim: name.clone(),
        size_bytes,
        bytes_in_use: None,
        estimate: Estimate::exact(0),
        note: Some(note),
    };
    let Some(claim) = claim else {
        return nothing(
            template.requested_bytes,
            "not made yet: the replica's claim will be made on the new class".into(),
        );
    };
    let class = resolve(claim.storage_class.as_deref(), facts.default_class.as_deref());
    if class == Some(facts.to_class.as_str()) {
        return nothing(
            claim.size_bytes,
            format!("already on {}: nothing to copy", facts.to_class),
        );
    }
    ClaimMove {
        replica,
        template: template.name.clone(),
        claim: name,
        size_bytes: claim.size_bytes,
        bytes_in_use: claim.bytes_in_use,
        estimate: copy_estimate(claim.bytes_in_use, claim.size_bytes, facts.bytes_per_second),
        note: None,
    }
}

/// The time to copy a claim: its data in use at the rate, else its whole size (an upper bound),
/// else unknown.
pub fn copy_estimate(in_use: Option<u64>, size: Option<u64>, bytes_per_second: u64) -> Estimate {
    let seconds = |bytes: u64| bytes.div_ceil(bytes_per_second.max(1));
    match (in_use, size) {
        (Some(bytes), _) => Estimate::exact(seconds(bytes)),
        (None, Some(bytes)) => Estimate {
            seconds: Some(seconds(bytes)),
            upper_bound: true,
        },
        (None, None) => Estimate::default(),
    }
}

fn totals(sets: &[SetMove]) -> Totals {
    let claims = || sets.iter().flat_map(|set| set.claims.iter());
    let copied = || claims().filter(|claim| claim.note.is_none());
    Totals {
        stateful_sets: sets.len(),
        claims: claims().count(),
        bytes_in_use: copied().filter_map(|claim| claim.bytes_in_use).sum(),
        claims_in_use_unknown: copied().filter(|claim| claim.bytes_in_use.is_none()).count(),
        estimate: (sets.iter()).fold(Estimate::exact(0), |sum, set| sum.plus(set.estimate)),
    }
}

#[cfg(test)]
mod tests;
