//! How many finished VolumeResizes a trigger keeps per StatefulSet. Autoscalers and requests
//! make one per grow or change, forever; like a CronJob's Jobs, only the newest few are kept
//! (they show what happened last, and the autoscaler reads whether its last grow failed). The
//! grow times an autoscaler's limits count are kept in its own status, not in these.

use ferry_api::VolumeResize;

/// Finished VolumeResizes kept per StatefulSet and trigger.
pub const KEEP_FINISHED: usize = 5;

/// The VolumeResizes of one StatefulSet and trigger to delete: the finished ones past the newest
/// `keep`. One still holding something (a retained old volume, a temporary claim, a backup)
/// is never deleted, nor counted: its retention has yet to run its course.
pub fn to_prune<'a>(resizes: &[&'a VolumeResize], keep: usize) -> Vec<&'a VolumeResize> {
    let mut finished: Vec<&VolumeResize> = resizes
        .iter()
        .copied()
        .filter(|resize| resize.metadata.deletion_timestamp.is_none())
        .filter(|resize| resize.phase().is_terminal())
        .filter(|resize| {
            resize
                .status
                .as_ref()
                .is_none_or(|status| status.created_objects.is_empty())
        })
        .collect();
    // Newest first; the name breaks ties of the same second the same way every time.
    finished.sort_by(|a, b| {
        let made = |r: &VolumeResize| r.metadata.creation_timestamp.as_ref().map(|t| t.0);
        made(b)
            .cmp(&made(a))
            .then_with(|| a.metadata.name.cmp(&b.metadata.name))
    });
    finished.into_iter().skip(keep).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferry_api::{Phase, VolumeResizeSpec, VolumeResizeStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;

    fn resize(name: &str, made_at: i64, phase: Phase) -> VolumeResize {
        let mut r = VolumeResize::new(name, VolumeResizeSpec::for_volumes("db", vec![]));
        r.metadata.creation_timestamp = Some(Time(Timestamp::from_second(made_at).unwrap()));
        r.status = Some(VolumeResizeStatus {
            phase: Some(phase),
            ..Default::default()
        });
        r
    }

    fn names(pruned: Vec<&VolumeResize>) -> Vec<String> {
        pruned
            .into_iter()
            .filter_map(|r| r.metadata.name.clone())
            .collect()
    }

    #[test]
    fn the_newest_finished_are_kept_and_the_older_pruned() {
        let all: Vec<VolumeResize> = (0..8)
            .map(|i| {
                resize(
                    &format!("r{i}"),
                    1_000 + i,
                    if i % 3 == 0 {
                        Phase::Failed
                    } else {
                        Phase::Succeeded
                    },
                )
            })
            .collect();
        let refs: Vec<&VolumeResize> = all.iter().collect();
        assert_eq!(names(to_prune(&refs, 5)), vec!["r2", "r1", "r0"]);
        assert!(to_prune(&refs, 8).is_empty());
    }

    #[test]
    fn running_held_and_deleting_resizes_are_never_pruned_nor_counted() {
        let mut all = [
            resize("running", 1, Phase::Running),
            resize("old", 2, Phase::Succeeded),
            resize("holding", 3, Phase::Succeeded),
            resize("deleting", 4, Phase::Failed),
            resize("new", 5, Phase::Succeeded),
        ];
        if let Some(status) = all[2].status.as_mut() {
            status.created_objects.retained_volumes = vec!["pv-old".into()];
        }
        all[3].metadata.deletion_timestamp = all[3].metadata.creation_timestamp.clone();
        let refs: Vec<&VolumeResize> = all.iter().collect();
        assert_eq!(names(to_prune(&refs, 1)), vec!["old"]);
        assert!(to_prune(&refs, 2).is_empty());
    }
}
