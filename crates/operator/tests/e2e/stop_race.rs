//! A StatefulSet edited after the reconcile that stops it read it: the orphan delete must not go
//! through on the older read, or the re-create (which starts from the spec kept with the delete)
//! loses the edit. Seen once under CI load in `copy_budget`: an image upgrade pushed while the copy
//! waited for a disruption budget was gone after the copy.

use crate::support::Harness;
use ferry_testenv::CLASS_FIXED;
use ferry_testenv::fixtures::stateful_set;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;

fn image(sts: &StatefulSet) -> Option<String> {
    sts.spec.as_ref()?.template.spec.as_ref()?.containers[0]
        .image
        .clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateful_set_edited_after_it_was_read_is_not_deleted_on_that_read() {
    let harness = Harness::start_bare("stop-race").await;
    let sets: Api<StatefulSet> = harness.ns.api();
    let maps: Api<ConfigMap> = harness.ns.api();
    sets.create(
        &PostParams::default(),
        &stateful_set("db", 0, CLASS_FIXED, "64Mi"),
    )
    .await
    .unwrap();
    let backup: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "backup"}})).unwrap();
    maps.create(&PostParams::default(), &backup).await.unwrap();
    let read = sets.get("db").await.unwrap();
    let upgrade = json!({"spec": {"template": {"spec": {"containers": [
        {"name": "app", "image": "registry.k8s.io/pause:3.11"}
    ]}}}});
    sets.patch("db", &PatchParams::default(), &Patch::Strategic(upgrade))
        .await
        .unwrap();

    let client = harness.client.clone();
    let ns = harness.ns.name.clone();
    let stale = ferry_operator::resize::apply::stop::keep_live_and_orphan_delete(
        client.clone(),
        &ns,
        "backup",
        &read,
    )
    .await;
    let error = stale.expect_err("a delete on a read older than the edit must be refused");
    assert!(
        error.is_stale_read(),
        "a stale read, so the reconcile reads again: {error}"
    );
    let still = sets.get("db").await.unwrap();
    assert!(
        still.metadata.deletion_timestamp.is_none(),
        "the StatefulSet is not being deleted"
    );
    assert_eq!(image(&still).as_deref(), Some("registry.k8s.io/pause:3.11"));

    // Read again, as the next reconcile does: the delete goes through and keeps the edit. The
    // StatefulSet controller may still be writing the status for the edit, and each such write
    // is a newer read that refuses this one too, so read again until one is current: the
    // reconcile's requeue on a stale read, done here in a loop.
    let mut attempts = 0;
    let deleted = loop {
        let current = sets.get("db").await.unwrap();
        match ferry_operator::resize::apply::stop::keep_live_and_orphan_delete(
            client.clone(),
            &ns,
            "backup",
            &current,
        )
        .await
        {
            Ok(()) => break current,
            Err(error) if error.is_stale_read() && attempts < 20 => {
                attempts += 1;
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            Err(error) => panic!("the delete on a current read goes through: {error}"),
        }
    };
    assert_eq!(deleted.uid(), still.uid());
    let kept = maps.get("backup").await.unwrap().data.unwrap_or_default();
    let live: StatefulSet = serde_json::from_str(&kept["live.json"]).unwrap();
    assert_eq!(
        image(&live).as_deref(),
        Some("registry.k8s.io/pause:3.11"),
        "the edit is kept"
    );
    let gone = sets.get_opt("db").await.unwrap();
    assert!(
        gone.is_none_or(|sts| sts.metadata.deletion_timestamp.is_some() && sts.uid() == still.uid()),
        "the StatefulSet is deleted"
    );
    harness.finish().await;
}
