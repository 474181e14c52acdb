//! What a migration's pass tells in Events: each StatefulSet's move started, done or failed, and
//! the migration's end, from the status before and after the pass.

use ferry_api::{MigrationItemPhase, MigrationPhase, VolumeMigrationStatus};

/// One Event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrationNotice {
    pub warning: bool,
    pub reason: &'static str,
    pub message: String,
}

/// The changes from `before` to `after` worth an Event.
pub fn notices(
    before: Option<&VolumeMigrationStatus>,
    after: &VolumeMigrationStatus,
) -> Vec<MigrationNotice> {
    let was = |name: &str| {
        before
            .and_then(|s| s.items.iter().find(|i| i.stateful_set == name))
            .map(|i| i.phase)
    };
    let mut notices = Vec::new();
    for item in &after.items {
        if was(&item.stateful_set) == Some(item.phase) {
            continue;
        }
        let resize = item.volume_resize.as_deref().unwrap_or("-");
        let (warning, reason, message) = match item.phase {
            MigrationItemPhase::Running => (
                false,
                "MoveStarted",
                format!("StatefulSet {} moves (VolumeResize {resize})", item.stateful_set),
            ),
            MigrationItemPhase::Succeeded => (
                false,
                "Moved",
                format!("StatefulSet {} moved (VolumeResize {resize})", item.stateful_set),
            ),
            MigrationItemPhase::Failed => (
                true,
                "MoveFailed",
                format!(
                    "StatefulSet {} did not move: {}",
                    item.stateful_set,
                    item.message.as_deref().unwrap_or("its VolumeResize failed")
                ),
            ),
            MigrationItemPhase::Waiting | MigrationItemPhase::Skipped => continue,
        };
        notices.push(MigrationNotice {
            warning,
            reason,
            message,
        });
    }
    let ended = |phase| matches!(phase, MigrationPhase::Succeeded | MigrationPhase::Failed);
    if ended(after.phase) && before.is_none_or(|s| !ended(s.phase)) {
        notices.push(MigrationNotice {
            warning: after.phase == MigrationPhase::Failed,
            reason: match after.phase {
                MigrationPhase::Succeeded => "MigrationSucceeded",
                _ => "MigrationFailed",
            },
            message: after.message.clone().unwrap_or_default(),
        });
    }
    notices
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferry_api::MigrationItem;

    fn status(phase: MigrationPhase, items: &[(&str, MigrationItemPhase)]) -> VolumeMigrationStatus {
        VolumeMigrationStatus {
            phase,
            message: Some("1 of 2 moved, 1 failed, 0 not started".into()),
            items: (items.iter())
                .map(|(name, phase)| MigrationItem {
                    stateful_set: (*name).into(),
                    phase: *phase,
                    message: Some("precheck failed".into()),
                    ..MigrationItem::default()
                })
                .collect(),
            ..VolumeMigrationStatus::default()
        }
    }

    #[test]
    fn each_change_of_a_move_and_the_end_are_told_once() {
        use MigrationItemPhase::*;
        let first = status(MigrationPhase::Running, &[("a", Running), ("b", Waiting)]);
        let told = notices(None, &first);
        assert_eq!(told.len(), 1);
        assert_eq!(told[0].reason, "MoveStarted");
        assert!(notices(Some(&first), &first).is_empty());
        let last = status(MigrationPhase::Failed, &[("a", Succeeded), ("b", Failed)]);
        let told: Vec<_> = notices(Some(&first), &last)
            .into_iter()
            .map(|n| (n.reason, n.warning))
            .collect();
        assert_eq!(
            told,
            vec![("Moved", false), ("MoveFailed", true), ("MigrationFailed", true)]
        );
        assert!(notices(Some(&last), &last).is_empty());
    }
}
