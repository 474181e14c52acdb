//! With `warmCopyMethod: Clone`, a copy within one CSI driver starts from a clone of the old
//! volume, made by the real node's
//! driver through the upstream external-provisioner while the replica serves: no warm mover runs,
//! and the final pass (after the stop) copies only what the replica wrote since the clone.

use crate::real_node::{assert_nothing_lost, resize_succeeds, writer_with};
use crate::support::Harness;
use ferry_testenv::CLASS_BLOCK;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grow_by_copy_within_one_driver_starts_from_a_clone_and_moves_only_the_changes() {
    let harness = Harness::start("clone-copy").await;
    // 16 MiB of seed data: a warm pass would move all of it, the final pass only the records.
    let seeds = writer_with(&harness, 1, CLASS_BLOCK, "300Mi", 16 << 10, 0).await;
    let status = resize_succeeds(
        &harness,
        "grow",
        json!({"statefulSetName": "db", "strategy": "Copy", "retainOldVolumes": "1h",
               "warmCopyMethod": "Clone", "volumes": [{"name": "data", "size": "320Mi"}]}),
        240,
    )
    .await;
    let row = &status.plan[0];
    assert_eq!(row.cloned, Some(true), "{row:?}");
    assert_eq!(row.clone_refused, None);
    let copied = row.bytes_copied.unwrap_or(u64::MAX);
    eprintln!(
        "clone copy: the final pass moved {copied} bytes; the replica was down {:?} ms",
        row.downtime_milliseconds
    );
    assert!(
        copied < 4 << 20,
        "the final pass moved {copied} bytes: only the changes since the clone"
    );
    let events = harness.events_for("VolumeResize", "grow").await;
    assert!(
        events
            .iter()
            .any(|(_, _, note)| note.contains("as a clone of data-db-0")),
        "{events:?}"
    );
    assert!(
        !events.iter().any(|(_, _, note)| note.contains("Warm copy")),
        "no warm mover: {events:?}"
    );
    assert_nothing_lost(&harness, 1, &seeds).await;

    // The same copy by the mover's warm pass, for the figures beside it (printed, not asserted).
    let status = resize_succeeds(
        &harness,
        "grow-again",
        json!({"statefulSetName": "db", "strategy": "Copy", "retainOldVolumes": "1h",
               "volumes": [{"name": "data", "size": "340Mi"}]}),
        240,
    )
    .await;
    let row = &status.plan[0];
    assert_eq!(row.cloned, None, "the default method is the mover");
    eprintln!(
        "mover copy: both passes moved {:?} bytes; the replica was down {:?} ms",
        row.bytes_copied, row.downtime_milliseconds
    );
    assert_nothing_lost(&harness, 1, &seeds).await;
    harness.finish().await;
}
