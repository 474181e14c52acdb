//! Which StatefulSets a migration moves, and the claims on the class it leaves that it does not.

use super::observed::{ClaimView, Observed, SetView};
use super::origin::{ClaimOrigin, SetShape, claim_origin};
use ferry_api::{MigratedVolume, MigrationItem, NotHandledClaim, VolumeMigrationSpec, format_bytes};

/// The first pass's choice, kept in status from then on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Selection {
    pub items: Vec<MigrationItem>,
    pub not_handled: Vec<NotHandledClaim>,
}

/// Every selected StatefulSet with a template on the class left, by name; and every claim on that
/// class none of their moving templates made for a replica they run, with why.
pub fn select(spec: &VolumeMigrationSpec, observed: &Observed) -> Selection {
    let from = spec.from_storage_class_name.as_str();
    let mut sets: Vec<&SetView> = observed.stateful_sets.iter().collect();
    sets.sort_by(|a, b| a.name.cmp(&b.name));
    let shapes: Vec<SetShape> = (sets.iter())
        .map(|set| SetShape {
            name: &set.name,
            ordinals: set.first_ordinal..set.first_ordinal.saturating_add(set.replicas.max(0)),
            selected: true,
            templates: (set.templates.iter())
                .map(|t| (t.name.as_str(), observed.resolved(t.class.as_deref())))
                .collect(),
        })
        .collect();
    // Every claim (a replica's claim may already be on another class: it still sizes the move).
    let origins: Vec<(&ClaimView, Option<ClaimOrigin>)> = (observed.claims.iter())
        .map(|c| (c, claim_origin(&c.name, &shapes, from)))
        .collect();
    let mut items = Vec::new();
    for set in sets {
        let moving: Vec<MigratedVolume> = (set.templates.iter())
            .filter(|t| observed.resolved(t.class.as_deref()) == Some(from))
            .map(|t| {
                let largest = (origins.iter())
                    .filter(|(_, origin)| {
                        *origin
                            == Some(ClaimOrigin::Replica {
                                set: &set.name,
                                template: &t.name,
                            })
                    })
                    .map(|(c, _)| c.bytes)
                    .max()
                    .unwrap_or(0);
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
    let mut not_handled: Vec<NotHandledClaim> = (origins.iter())
        .filter(|(claim, _)| observed.resolved(claim.class.as_deref()) == Some(from))
        .filter_map(|(claim, origin)| {
            let why = match origin {
                Some(origin) => origin.left_alone_because(from)?,
                None => "no StatefulSet this migration selects made it for a replica (a \
                         Deployment's, a bare pod's, or a StatefulSet not selected)"
                    .to_string(),
            };
            Some(NotHandledClaim {
                name: claim.name.clone(),
                reason: format!("{why}: not touched"),
            })
        })
        .collect();
    not_handled.sort_by(|a, b| a.name.cmp(&b.name));
    Selection { items, not_handled }
}
