//! Deleting a VolumeResize in the middle of a copy stops it at a safe point: the StatefulSet is
//! whole, every replica runs on a volume with its data (new or old), and nothing is leaked.

use crate::support;

use ferry_api::names::FINALIZER;
use ferry_testenv::fixtures::{stateful_set, wait_ready};
use ferry_testenv::{CLASS_FIXED, wait_until};
use k8s_openapi::api::apps::v1::StatefulSet;
use kube::ResourceExt;
use kube::api::DeleteParams;
use serde_json::json;
use support::Harness;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_running_copy_stops_at_a_safe_point() {
    let harness = Harness::start("copy-deleted").await;
    let seeded = harness
        .seeded(stateful_set("db", 3, CLASS_FIXED, "256Mi"), &["data"], 40)
        .await;

    harness
        .create_resize(
            "copy",
            json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "512Mi"}]}),
        )
        .await;
    let api = harness.ns.api::<ferry_api::VolumeResize>();
    // Delete once the second replica's copy is under way.
    let running = wait_until("replica 1's copy to start", 120, || async {
        let resize = api.get_opt("copy").await.ok().flatten()?;
        let started = resize
            .status
            .as_ref()?
            .plan
            .iter()
            .any(|row| row.replica == 1 && row.step.is_some());
        started.then_some(resize)
    })
    .await
    .unwrap();
    assert!(
        running.finalizers().iter().any(|f| f == FINALIZER),
        "a running resize holds a finalizer"
    );
    api.delete("copy", &DeleteParams::default()).await.unwrap();
    wait_until("the VolumeResize to be gone", 120, || async {
        api.get_opt("copy").await.ok()?.is_none().then_some(())
    })
    .await
    .unwrap();

    wait_ready(&harness.ns.api::<StatefulSet>(), "db", 3, 60)
        .await
        .unwrap();
    harness.assert_data_intact(&seeded).await;
    harness.assert_nothing_leaked(3).await;
    harness.finish().await;
}

/// Two replicas seeded with data, a copy to 512Mi started, and the moment Ferry has orphan-deleted
/// the StatefulSet to stop replica 0: what someone else may do in that window is what the tests
/// below do.
/// Returns the seeded data, the VolumeResize and the original StatefulSet's UID.
async fn copy_until_orphaned(harness: &Harness) -> (Vec<support::Seeded>, ferry_api::VolumeResize, String) {
    let seeded = harness
        .seeded(stateful_set("db", 2, CLASS_FIXED, "256Mi"), &["data"], 40)
        .await;
    let sets = harness.ns.api::<StatefulSet>();
    let original_uid = sets.get("db").await.unwrap().uid().unwrap();
    let resize = harness
        .create_resize(
            "copy",
            json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "512Mi"}]}),
        )
        .await;
    wait_until("Ferry to orphan-delete the StatefulSet", 120, || async {
        sets.get_opt("db").await.ok()?.is_none().then_some(())
    })
    .await
    .unwrap();
    (seeded, resize, original_uid)
}

/// A GitOps tool's self-heal (or a parent operator) creates the StatefulSet again from its old
/// manifest while Ferry has it orphan-deleted. Ferry tells it apart by UID: the resize never ends
/// Succeeded with the old template, every claim keeps its data, and nothing is leaked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateful_set_re_created_by_someone_else_mid_copy_is_never_taken_for_ferrys() {
    use ferry_api::Phase;
    use ferry_api::names::ANNOTATION_RECREATED_BY;
    use kube::api::PostParams;

    let harness = Harness::start("copy-foreign").await;
    let (seeded, resize, original_uid) = copy_until_orphaned(&harness).await;
    // As soon as Ferry has orphan-deleted it, the "GitOps tool" puts the manifest back.
    let sets = harness.ns.api::<StatefulSet>();
    let manifest = stateful_set("db", 2, CLASS_FIXED, "256Mi");
    let foreign = sets.create(&PostParams::default(), &manifest).await.unwrap();
    assert_ne!(foreign.uid().unwrap(), original_uid);

    let done = harness
        .wait_resize("copy", "the resize to end", |r| r.phase().is_terminal())
        .await;
    let status = done.status.clone().unwrap();
    let message = status.message.clone().unwrap_or_default();
    let live = sets.get("db").await.unwrap();
    let template_size = live
        .spec
        .as_ref()
        .unwrap()
        .volume_claim_templates
        .as_ref()
        .unwrap()[0]
        .spec
        .as_ref()
        .unwrap()
        .resources
        .as_ref()
        .unwrap()
        .requests
        .as_ref()
        .unwrap()["storage"]
        .0
        .clone();
    match done.phase() {
        // Re-created before the swap began: the replica in flight is rolled back and the foreign
        // StatefulSet, with its old template, is left to its owner.
        Phase::Failed => {
            assert!(message.contains("re-created by someone else"), "{message}");
            assert_eq!(template_size, "256Mi");
        }
        // Re-created after the swap began: Ferry replaced it, so the template is the new one and
        // the StatefulSet is Ferry's own.
        Phase::Succeeded => {
            assert_eq!(template_size, "512Mi", "{message}");
            assert_eq!(
                live.annotations().get(ANNOTATION_RECREATED_BY),
                resize.uid().as_ref(),
                "{message}"
            );
        }
        other => panic!("ended {other:?}: {message}"),
    }
    wait_ready(&sets, "db", 2, 60).await.unwrap();
    harness.assert_data_intact(&seeded).await;
    harness.assert_nothing_leaked(2).await;
    harness.finish().await;
}

/// Editing the spec of a running resize (here while its StatefulSet is orphan-deleted) never sends
/// it back to its prechecks: the run goes on with the spec it started with and says the edit waits;
/// once the run has ended the new generation is prechecked (and finds nothing left to do).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spec_edited_mid_run_waits_for_the_run_to_end() {
    use ferry_api::Phase;
    use ferry_api::condition::SPEC_CHANGE_DEFERRED;
    use kube::api::{Patch, PatchParams};

    let harness = Harness::start("copy-edited").await;
    let (seeded, _, _) = copy_until_orphaned(&harness).await;
    let sets = harness.ns.api::<StatefulSet>();
    let api = harness.ns.api::<ferry_api::VolumeResize>();
    api.patch(
        "copy",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"retainOldVolumes": "1h"}})),
    )
    .await
    .unwrap();
    let deferred = harness
        .wait_resize("copy", "the edit to be deferred", |r| {
            r.condition(SPEC_CHANGE_DEFERRED).is_some() || r.phase().is_terminal()
        })
        .await;
    assert_eq!(deferred.phase(), Phase::Running, "{:?}", deferred.status);
    let done = harness
        .wait_resize("copy", "the new generation to be prechecked", |r| {
            r.phase().is_terminal()
                && r.status.as_ref().and_then(|s| s.observed_generation) == r.metadata.generation
        })
        .await;
    let status = done.status.clone().unwrap();
    assert_eq!(done.phase(), Phase::Succeeded, "{:?}", status.message);
    assert!(done.condition(SPEC_CHANGE_DEFERRED).is_none());
    // The run it finished copied every claim: the new generation found nothing left to do.
    assert!(
        status
            .message
            .as_deref()
            .unwrap_or_default()
            .contains("already has the requested size"),
        "{:?}",
        status.message
    );
    let claims = harness
        .ns
        .api::<k8s_openapi::api::core::v1::PersistentVolumeClaim>();
    for replica in 0..2 {
        let claim = claims.get(&format!("data-db-{replica}")).await.unwrap();
        let request = claim.spec.unwrap().resources.unwrap().requests.unwrap()["storage"]
            .0
            .clone();
        assert_eq!(request, "512Mi", "data-db-{replica} on its new volume");
    }
    wait_ready(&sets, "db", 2, 60).await.unwrap();
    harness.assert_data_intact(&seeded).await;
    harness.assert_nothing_leaked(2).await;
    harness.finish().await;
}
