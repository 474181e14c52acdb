//! A PodDisruptionBudget that allows no disruption holds a copy before it takes a replica down; the
//! copy goes on by itself once the budget allows one. Edits made to the StatefulSet while the copy
//! waits survive its re-creation, and so do its owner references.

use crate::support;

use ferry_api::Phase;
use ferry_testenv::fixtures::{stateful_set, wait_ready};
use ferry_testenv::{CLASS_FIXED, wait_until};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use std::collections::BTreeMap;
use support::Harness;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_waits_while_the_budget_allows_no_disruption() {
    let harness = Harness::start("copy-budget").await;
    let sets: Api<StatefulSet> = harness.ns.api();
    // A parent owns the StatefulSet (a GitOps tool or an operator would).
    let parents: Api<ConfigMap> = harness.ns.api();
    let parent = parents
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "parent"}})).unwrap(),
        )
        .await
        .unwrap();
    let owner =
        json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "parent", "uid": parent.uid().unwrap()}]);
    let mut set = stateful_set("db", 2, CLASS_FIXED, "256Mi");
    set.metadata.owner_references = Some(serde_json::from_value(owner.clone()).unwrap());
    sets.create(&PostParams::default(), &set).await.unwrap();
    wait_ready(&sets, "db", 2, 120).await.unwrap();
    let budgets: Api<PodDisruptionBudget> = harness.ns.api();
    let budget = serde_json::from_value(json!({
        "metadata": {"name": "db"},
        "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "db"}}},
    }))
    .unwrap();
    budgets.create(&PostParams::default(), &budget).await.unwrap();
    wait_until("the budget to count the pods", 60, || async {
        let status = budgets.get_opt("db").await.ok().flatten()?.status?;
        (status.current_healthy == 2 && status.disruptions_allowed == 0).then_some(())
    })
    .await
    .unwrap();
    let pods: Api<Pod> = harness.ns.api();
    let uids = |list: Vec<Pod>| {
        list.iter()
            .map(|p| (p.name_any(), p.uid().unwrap()))
            .collect::<BTreeMap<_, _>>()
    };
    let before = uids(
        pods.list(&ListParams::default().labels("app=db"))
            .await
            .unwrap()
            .items,
    );

    harness
        .create_resize(
            "copy",
            json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "512Mi"}]}),
        )
        .await;
    let api = harness.ns.api::<ferry_api::VolumeResize>();
    let held = wait_until("the copy to wait for the budget", 90, || async {
        let resize = api.get_opt("copy").await.ok().flatten()?;
        let message = resize.status.as_ref()?.message.clone()?;
        message.contains("PodDisruptionBudget").then_some(message)
    })
    .await
    .unwrap();
    assert!(held.contains("replica 0"), "{held}");
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    let now = uids(
        pods.list(&ListParams::default().labels("app=db"))
            .await
            .unwrap()
            .items,
    );
    assert_eq!(
        now, before,
        "no replica was taken down while the budget allowed none"
    );
    assert!(
        sets.get_opt("db").await.unwrap().is_some(),
        "the StatefulSet was not touched"
    );

    // An edit made while the copy waits (an image upgrade) must survive the re-create.
    let upgrade = json!({"spec": {"template": {"spec": {"containers": [
        {"name": "app", "image": "registry.k8s.io/pause:3.11"}
    ]}}}});
    sets.patch("db", &PatchParams::default(), &Patch::Strategic(upgrade))
        .await
        .unwrap();

    let relax = json!({"spec": {"minAvailable": 1}});
    budgets
        .patch("db", &PatchParams::default(), &Patch::Merge(relax))
        .await
        .unwrap();
    let done = harness
        .wait_terminal("copy", "the copy to finish once allowed", 180)
        .await;
    assert_eq!(
        done.phase(),
        Phase::Succeeded,
        "{:?}",
        done.status.and_then(|s| s.message)
    );
    let sts = sets.get("db").await.unwrap();
    let image = sts
        .spec
        .as_ref()
        .unwrap()
        .template
        .spec
        .as_ref()
        .unwrap()
        .containers[0]
        .image
        .clone();
    assert_eq!(
        image.as_deref(),
        Some("registry.k8s.io/pause:3.11"),
        "the edit made during the copy is kept"
    );
    assert_eq!(
        serde_json::to_value(&sts.metadata.owner_references).unwrap(),
        owner,
        "owner references kept"
    );
    harness.finish().await;
}
