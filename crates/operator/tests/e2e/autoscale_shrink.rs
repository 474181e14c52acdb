//! The shrink policy on the real node: a real XFS volume that a writer keeps nearly empty is
//! shrunk by copy once its streak below `shrink.below` has lasted `shrink.for`, to the floor
//! `minSize`, with every acknowledged write kept; then nothing shrinks again (the floor, and
//! `shrink.every`); outside its maintenance window it waits. The operator here polls every 2 s.

use crate::autoscale::{
    autoscale_resizes, claim_size, create_autoscaler, event_counts, state_of, wait_status,
};
use crate::real_node::{assert_nothing_lost, wait_phase, writer_with};
use crate::support::Harness;
use ferry_api::{Phase, Strategy};
use ferry_testenv::CLASS_BLOCK;
use kube::ResourceExt;
use kube::api::{Patch, PatchParams};
use serde_json::json;

/// The UTC wall clock `offset` seconds from now, `HH:MM`: a window's start.
fn utc_clock(offset: i64) -> String {
    let at = k8s_openapi::jiff::Timestamp::now() + k8s_openapi::jiff::SignedDuration::from_secs(offset);
    at.strftime("%H:%M").to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nearly_empty_volume_is_shrunk_by_copy_after_its_streak_and_only_once() {
    let harness = Harness::start("vas-shrink").await;
    // 20 MiB of data on 640Mi: well below 30 % however long the writer appends.
    let seeds = writer_with(&harness, 1, CLASS_BLOCK, "640Mi", 20 << 10, 0).await;
    create_autoscaler(
        &harness,
        "db",
        json!({"statefulSetName": "db", "volumes": [{
            "name": "data", "maxSize": "2Gi",
            "shrink": {"below": 30, "for": "6s", "target": 50, "minSize": "320Mi", "every": "7d"},
        }], "maintenanceWindows": [{"start": utc_clock(3 * 3600), "duration": "1h"}]}),
    )
    .await;

    // The streak is counted first, and status says when it will shrink and to what.
    let pending = wait_status(&harness, "db", "the shrink to wait for its streak", 60, |s| {
        state_of(s) == Some("ShrinkPending")
    })
    .await;
    let volume = &pending.volumes[0];
    let streak_from = volume.below_shrink_since.clone().unwrap().0.as_second();
    let message = volume.message.clone().unwrap_or_default();
    assert!(message.contains("shrinks to 320Mi at"), "{message}");

    // Due, but the only window opens in three hours: it waits, and says so.
    let waiting = wait_status(&harness, "db", "the shrink to wait for the window", 60, |s| {
        state_of(s) == Some("OutsideWindow")
    })
    .await;
    let message = waiting.volumes[0].message.clone().unwrap_or_default();
    assert!(message.contains("maintenance window opening at"), "{message}");
    assert!(
        autoscale_resizes(&harness).await.is_empty(),
        "nothing outside the window"
    );
    // The window moved to now (the test's clock): it shrinks.
    let open = json!({"spec": {"maintenanceWindows": [{"start": utc_clock(-60), "duration": "2h"}]}});
    harness
        .ns
        .api::<ferry_api::VolumeAutoscaler>()
        .patch("db", &PatchParams::default(), &Patch::Merge(&open))
        .await
        .unwrap();
    let made = ferry_testenv::wait_until("the autoscaler to make the shrink", 60, || async {
        autoscale_resizes(&harness).await.into_iter().next()
    })
    .await
    .unwrap();
    let made_at = made.metadata.creation_timestamp.clone().unwrap().0.as_second();
    assert!(
        made_at >= streak_from + 6,
        "shrunk {}s into the streak",
        made_at - streak_from
    );
    let shrink = wait_phase(&harness, &made.name_any(), 240).await;
    let status = shrink.status.clone().unwrap();
    assert_eq!(status.phase, Some(Phase::Succeeded), "{:?}", status.message);
    assert_eq!(
        shrink.spec.volumes[0].size, "320Mi",
        "the floor: 20 MiB at 50 % is less"
    );
    assert_eq!(shrink.spec.strategy, Strategy::Copy);
    assert_eq!(claim_size(&harness, "data-db-0").await, "320Mi");
    assert_nothing_lost(&harness, 1, &seeds).await;

    let recorded = wait_status(&harness, "db", "the shrink recorded in status", 60, |s| {
        s.volumes.first().is_some_and(|v| {
            v.last_shrink_at.is_some()
                && v.capacity.as_deref() == Some("320Mi")
                && v.state.as_deref() != Some("Shrinking")
        })
    })
    .await;
    let volume = &recorded.volumes[0];
    let last = volume.last_resize.as_ref().unwrap();
    assert_eq!(
        (last.from.as_str(), last.to.as_str(), last.reason.as_str()),
        ("640Mi", "320Mi", "shrink")
    );
    assert!(
        volume.history.is_empty(),
        "a shrink is no grow: {:?}",
        volume.history
    );
    // At the floor nothing shrinks again: several more polls, still one resize and one Event.
    let polled = recorded.last_polled_at.clone();
    wait_status(&harness, "db", "three more polls", 60, |s| {
        s.last_polled_at
            .as_ref()
            .zip(polled.as_ref())
            .is_some_and(|(now, then)| now.0.as_second() >= then.0.as_second() + 6)
    })
    .await;
    assert_eq!(autoscale_resizes(&harness).await.len(), 1);
    assert_eq!(event_counts(&harness, "db", "AutoShrink").await, vec![1]);
    let metrics = harness.metrics().await;
    assert!(
        metrics.contains("ferry_autoscale_resizes_total{reason=\"shrink\"} 1"),
        "{metrics}"
    );
    harness.finish().await;
}
