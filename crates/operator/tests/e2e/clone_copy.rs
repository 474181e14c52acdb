//! With `warmCopyMethod: Clone`, a copy within one CSI driver starts from a clone of the old
//! volume, made by the real node's
//! driver through the upstream external-provisioner while the replica serves: no warm mover runs,
//! and the final pass (after the stop) copies only what the replica wrote since the clone.

use crate::real_node::{assert_nothing_lost, follow_final_results, resize_succeeds, writer_with};
use crate::support::Harness;
use ferry_testenv::disruption::Allowed;
use ferry_testenv::{CLASS_BLOCK, CLASS_BLOCK_FIXED};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grow_by_copy_within_one_driver_starts_from_a_clone_and_moves_only_the_changes() {
    let harness = Harness::start("clone-copy").await;
    // 16 MiB of seed data: a warm pass would move all of it, the final pass only the records.
    let seeds = writer_with(&harness, 1, CLASS_BLOCK, "300Mi", 16 << 10, 0).await;
    // Two copies, one after the other: the replica goes down once for each.
    harness.allow_disruption(Allowed { at_once: 1, each: 2 });
    let results = follow_final_results(&harness);
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
    // Printed, not asserted: told when the clone was made (`--cloned-at`), the final pass compares
    // by content only files modified in the minute before it (the clock margin) or since. The
    // seed here was written seconds before the clone, so all of it is compared; the rule itself
    // is the planner's unit test.
    let results = results.lock().unwrap().clone();
    let compared: Vec<_> = results
        .values()
        .map(|result| result["bytesCompared"].clone())
        .collect();
    eprintln!("clone copy: the final pass read {compared:?} bytes of the clone to compare");
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

/// A clone the driver refuses (the real node's driver clones ext4 only at the source's size, and
/// says so with OUT_OF_RANGE, which the external-provisioner reports as `ProvisioningFailed` on the
/// claim) is given up at once for the mover's warm copy, with the driver's words, before any stop;
/// not after the 120 s a silent driver gets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clone_the_driver_refuses_is_given_up_at_once_for_the_mover() {
    let harness = Harness::start("clone-refused").await;
    let seeds = writer_with(&harness, 1, CLASS_BLOCK_FIXED, "300Mi", 4 << 10, 0).await;
    let started = std::time::Instant::now();
    let status = resize_succeeds(
        &harness,
        "grow",
        json!({"statefulSetName": "db", "retainOldVolumes": "1h", "warmCopyMethod": "Clone",
               "volumes": [{"name": "data", "size": "320Mi"}]}),
        240,
    )
    .await;
    let took = started.elapsed();
    let row = &status.plan[0];
    assert_eq!(row.cloned, Some(false), "{row:?}");
    let why = row.clone_refused.as_deref().unwrap_or_default();
    assert!(
        why.contains("did not make the clone of data-db-0") && why.contains("ext4"),
        "the driver's words: {why}"
    );
    assert!(
        took < std::time::Duration::from_secs(100),
        "given up on the provisioner's failure, not after the 120 s timeout: {took:?}"
    );
    assert_nothing_lost(&harness, 1, &seeds).await;
    harness.finish().await;
}
