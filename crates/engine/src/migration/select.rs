//! Which StatefulSets a migration moves, and the claims on the class it leaves that it does not.

use super::observed::{Observed, SetView};
use crate::names::ordinal_after;
use ferry_api::{MigratedVolume, MigrationItem, NotHandledClaim, VolumeMigrationSpec, format_bytes};

/// The first pass's choice, kept in status from then on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Selection {
    pub items: Vec<MigrationItem>,
    pub not_handled: Vec<NotHandledClaim>,
}

/// Every selected StatefulSet with a template on the class left, by name; and every claim on that
/// class none of their moving templates owns.
pub fn select(spec: &VolumeMigrationSpec, observed: &Observed) -> Selection {
    let from = spec.from_storage_class_name.as_str();
    let mut sets: Vec<&SetView> = observed.stateful_sets.iter().collect();
    sets.sort_by(|a, b| a.name.cmp(&b.name));
    let mut items = Vec::new();
    let mut owned = Vec::new();
    for set in sets {
        let moving: Vec<MigratedVolume> = (set.templates.iter())
            .filter(|t| observed.resolved(t.class.as_deref()) == Some(from))
            .map(|t| {
                let prefix = format!("{}-{}", t.name, set.name);
                let claims = (observed.claims.iter()).filter(|c| ordinal_after(&c.name, &prefix).is_some());
                owned.extend(claims.clone().map(|c| c.name.clone()));
                let largest = claims.map(|c| c.bytes).max().unwrap_or(0);
                MigratedVolume {
                    name: t.name.clone(),
                    size: format_bytes(t.request_bytes.max(largest)),
                }
            })
            .collect();
        if moving.is_empty() {
            continue;
        }
        items.push(MigrationItem {
            stateful_set: set.name.clone(),
            volumes: moving,
            ..MigrationItem::default()
        });
    }
    // A StatefulSet the migration already began to move (a pass killed before it recorded the
    // selection) may be on the new class by now: it stays in.
    for resize in observed.resizes.values() {
        if !items.iter().any(|i| i.stateful_set == resize.stateful_set) {
            items.push(MigrationItem {
                stateful_set: resize.stateful_set.clone(),
                ..MigrationItem::default()
            });
        }
    }
    let not_handled = (observed.claims.iter())
        .filter(|c| observed.resolved(c.class.as_deref()) == Some(from) && !owned.contains(&c.name))
        .map(|c| NotHandledClaim {
            name: c.name.clone(),
            reason: "no StatefulSet this migration selects has it as a replica's claim (a \
                     Deployment's, a bare pod's, or a StatefulSet not selected): not touched"
                .to_string(),
        })
        .collect();
    Selection { items, not_handled }
}
