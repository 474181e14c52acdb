//! StatefulSets that another controller owns (#58), on the real control plane: an owner Ferry does
//! not know is refused by name (and resized as a plain StatefulSet when the request says so); one
//! the admin teaches Ferry in the owners' ConfigMap is paused, written into and let go, and the
//! resize ends only once the owner has acted on its new spec.

use crate::prechecks::assert_rejected;
use crate::support::{Harness, OperatorOptions};
use ferry_api::condition::REASON_OWNER_UNKNOWN;
use ferry_api::quantity::quantity_bytes;
use ferry_api::{OwnerStep, Phase};
use ferry_testenv::fixtures::stateful_set;
use ferry_testenv::{CLASS_BLOCK, CLASS_EXPANDABLE};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::{Api, ResourceExt};
use serde_json::json;

const GI: u64 = 1 << 30;

/// `sts` owned by `owner` (its controller reference).
fn owned_by(mut sts: StatefulSet, api_version: &str, kind: &str, name: &str, uid: &str) -> StatefulSet {
    sts.metadata.owner_references = Some(vec![OwnerReference {
        api_version: api_version.into(),
        kind: kind.into(),
        name: name.into(),
        uid: uid.into(),
        controller: Some(true),
        block_owner_deletion: None,
    }]);
    sts
}

/// The size the first volume claim template of `templates` asks for.
fn first_template_bytes(templates: &[PersistentVolumeClaim]) -> Option<u64> {
    quantity_bytes(ferry_api::quantity::requested_storage(
        templates.first()?.spec.as_ref(),
    )?)
}

/// The size the StatefulSet's first volume claim template asks for.
pub(crate) fn template_bytes(sts: &StatefulSet) -> Option<u64> {
    first_template_bytes(sts.spec.as_ref()?.volume_claim_templates.as_deref()?)
}

pub(crate) async fn claim_bytes(harness: &Harness, claim: &str) -> Option<u64> {
    let claim = harness
        .ns
        .api::<PersistentVolumeClaim>()
        .get(claim)
        .await
        .unwrap();
    quantity_bytes(claim.status?.capacity?.get("storage")?)
}

/// Creates the VolumeResize `name` of `spec` and waits for its end, which must be Succeeded with
/// the owner `kind` Confirmed (the owner's operator log, `log`, named on failure); returns it and
/// how long it took.
pub(crate) async fn succeeds_through_owner(
    harness: &Harness,
    (name, spec): (&str, serde_json::Value),
    kind: &str,
    log: &std::path::Path,
) -> (ferry_api::VolumeResize, std::time::Duration) {
    let started = std::time::Instant::now();
    harness.create_resize(name, spec).await;
    // An in-place grow ends when the kubelet has grown the file system, at its next sync of the
    // pod: 60 s in a loaded run (the resizer's 25 s, then the kubelet's 35 s) timed out before.
    let resize = harness
        .wait_resize_for(name, "the resize to end", 180, |r| r.phase().is_terminal())
        .await;
    let took = started.elapsed();
    let status = resize.status.clone().unwrap();
    assert_eq!(
        resize.phase(),
        Phase::Succeeded,
        "{:?} (the owner's operator's log: {})",
        status.message,
        log.display()
    );
    let owner = status.owner.unwrap();
    assert_eq!(
        (owner.kind.as_str(), owner.step),
        (kind, Some(OwnerStep::Confirmed))
    );
    (resize, took)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_ferry_does_not_know_is_refused_by_name_and_ignored_only_when_asked() {
    let harness = Harness::start("own-unknown").await;
    let parent = harness
        .ns
        .api::<ConfigMap>()
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "parent"}})).unwrap(),
        )
        .await
        .unwrap();
    let sts = owned_by(
        stateful_set("db", 1, CLASS_EXPANDABLE, "1Gi"),
        "v1",
        "ConfigMap",
        "parent",
        &parent.uid().unwrap(),
    );
    harness.healthy_stateful_set(sts).await;

    let grow = json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "2Gi"}]});
    assert_rejected(
        &harness,
        "grow",
        grow.clone(),
        REASON_OWNER_UNKNOWN,
        "controlled by ConfigMap \"parent\" (v1), an owner Ferry does not know",
    )
    .await;

    let mut anyway = grow;
    anyway["ownerPolicy"] = json!("Ignore");
    harness.create_resize("grow-anyway", anyway).await;
    let resize = harness
        .wait_resize("grow-anyway", "the resize to end", |r| r.phase().is_terminal())
        .await;
    let status = resize.status.clone().unwrap();
    assert_eq!(resize.phase(), Phase::Succeeded, "{:?}", status.message);
    let owner = status.owner.expect("the owner is recorded");
    assert!(owner.ignored && owner.step.is_none(), "{owner:?}");
    assert_eq!(claim_bytes(&harness, "data-db-0").await, Some(2 * GI));
    let kept = harness.ns.api::<StatefulSet>().get("db").await.unwrap();
    assert_eq!(
        kept.owner_references()
            .iter()
            .map(|o| o.name.as_str())
            .collect::<Vec<_>>(),
        ["parent"],
        "the re-created StatefulSet keeps its owner"
    );
    harness.finish().await;
}

/// A kind of owner no operator serves here: the test plays its operator.
fn widget_crd() -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "metadata": {"name": "widgets.test.ferry.dev"},
        "spec": {
            "group": "test.ferry.dev",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
            }]
        }
    }))
    .unwrap()
}

fn widgets(harness: &Harness) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("test.ferry.dev", "v1", "Widget"),
        "widgets",
    );
    Api::namespaced_with(harness.client.clone(), &harness.ns.name, &resource)
}

/// A test whose operator may get and patch Widgets, which the admin taught it in the owners'
/// ConfigMap: paused by `spec.paused`, acted on as `status.observedGeneration` says.
async fn widget_harness(prefix: &str) -> Harness {
    let options = OperatorOptions {
        chart_values: [
            "owners.rules[0].apiGroups[0]=test.ferry.dev",
            "owners.rules[0].resources[0]=widgets",
            "owners.rules[0].verbs[0]=get",
            "owners.rules[0].verbs[1]=patch",
        ]
        .map(String::from)
        .to_vec(),
        ..OperatorOptions::default()
    };
    let harness = Harness::start_without_and(prefix, &[], options).await;
    ferry_testenv::cluster::install_crd(&harness.client, &widget_crd())
        .await
        .unwrap();
    let identity = harness.identity.as_ref().unwrap();
    let entry = "- group: test.ferry.dev\n  kind: Widget\n  statefulSets: ['{owner}']\n  volumes:\n  - claimTemplate: data\n    size: /spec/storage/size\n    storageClass: /spec/storage/class\n  pause: {path: /spec/paused, value: true}\n  observedGeneration: /status/observedGeneration\n";
    harness
        .ns
        .api::<ConfigMap>()
        .patch(
            &identity.owners_config_map,
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"owners.yaml": entry}})),
        )
        .await
        .unwrap();
    harness
}

/// The Widget `db` and its Ready StatefulSet `db` (one replica, template `data` of `size` on
/// `class`).
async fn owned_widget_stateful_set(harness: &Harness, class: &str, size: &str) {
    let widget: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "test.ferry.dev/v1", "kind": "Widget",
        "metadata": {"name": "db"},
        "spec": {"paused": false, "storage": {"size": size, "class": class}}
    }))
    .unwrap();
    let widget = widgets(harness)
        .create(&PostParams::default(), &widget)
        .await
        .unwrap();
    let sts = owned_by(
        stateful_set("db", 1, class, size),
        "test.ferry.dev/v1",
        "Widget",
        "db",
        &widget.uid().unwrap(),
    );
    harness.healthy_stateful_set(sts).await;
}

/// What the Widgets' operator saw, in order: whether it was paused, and the size it said.
type Seen = std::sync::Arc<std::sync::Mutex<Vec<(bool, serde_json::Value)>>>;

/// Plays the Widgets' operator: acts on every unpaused generation at once (`observedGeneration`),
/// and records what it saw.
fn play_widget_operator(harness: &Harness) -> (tokio::task::JoinHandle<()>, Seen) {
    use futures::StreamExt;
    use kube::runtime::watcher;
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let api = widgets(harness);
    let record = seen.clone();
    let task = tokio::spawn(async move {
        let mut events = watcher::watcher(api.clone(), watcher::Config::default()).boxed();
        while let Some(event) = events.next().await {
            let Ok(watcher::Event::Apply(widget) | watcher::Event::InitApply(widget)) = event else {
                continue;
            };
            let generation = widget.metadata.generation.unwrap_or_default();
            let paused = widget.data["spec"]["paused"] == json!(true);
            record
                .lock()
                .unwrap()
                .push((paused, widget.data["spec"]["storage"]["size"].clone()));
            let acted = widget.data["status"]["observedGeneration"].as_i64() == Some(generation);
            if !paused && !acted {
                let status = json!({"status": {"observedGeneration": generation}});
                let _ = api
                    .patch_status("db", &PatchParams::default(), &Patch::Merge(status))
                    .await;
            }
        }
    });
    (task, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_the_admin_teaches_is_paused_written_and_let_go_and_the_run_waits_for_it_to_act() {
    let harness = widget_harness("own-taught").await;
    owned_widget_stateful_set(&harness, CLASS_EXPANDABLE, "1Gi").await;

    harness
        .create_resize(
            "grow",
            json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "2Gi"}]}),
        )
        .await;
    // The run ends on the owner's side: written, let go, waiting for it to act.
    let waiting = harness
        .wait_resize("grow", "the resize to wait for the Widget", |r| {
            r.status
                .as_ref()
                .and_then(|s| s.owner.as_ref())
                .and_then(|o| o.step)
                == Some(OwnerStep::Confirming)
        })
        .await;
    let status = waiting.status.clone().unwrap();
    assert_eq!(
        status.phase,
        Some(Phase::Running),
        "held while the owner has not acted"
    );
    assert!(
        status
            .message
            .as_deref()
            .unwrap_or_default()
            .contains("waiting for Widget/db to act"),
        "{:?}",
        status.message
    );
    assert_eq!(
        status.owner.as_ref().unwrap().pause_before.as_deref(),
        Some("false")
    );
    let now = widgets(&harness).get("db").await.unwrap();
    assert_eq!(
        now.data["spec"]["storage"]["size"],
        json!("2Gi"),
        "the new size written into the owner"
    );
    assert_eq!(
        now.data["spec"]["paused"],
        json!(false),
        "its pause switch put back as it was"
    );
    // Paused (2), written (3), let go (4): three writes of its spec, nothing else.
    assert_eq!(now.metadata.generation, Some(4));
    assert_eq!(claim_bytes(&harness, "data-db-0").await, Some(2 * GI));

    // The owner acts on its new spec: the resize ends.
    widgets(&harness)
        .patch_status(
            "db",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"observedGeneration": 4}})),
        )
        .await
        .unwrap();
    let done = harness
        .wait_resize("grow", "the resize to end", |r| r.phase().is_terminal())
        .await;
    let phase = done.phase();
    let status = done.status.unwrap();
    assert_eq!(phase, Phase::Succeeded, "{:?}", status.message);
    assert_eq!(status.owner.unwrap().step, Some(OwnerStep::Confirmed));
    assert!(
        status
            .message
            .unwrap()
            .contains("Widget/db took the new volume sizes")
    );

    // An owner that never acts on its new spec: the resize fails once its timeout is up, saying
    // so, with the volumes grown and the owner saying the new size, let go.
    harness
        .create_resize(
            "grow-again",
            json!({"statefulSetName": "db", "timeoutSeconds": 3, "volumes": [{"name": "data", "size": "3Gi"}]}),
        )
        .await;
    let failed = harness
        .wait_resize("grow-again", "the resize to end", |r| r.phase().is_terminal())
        .await;
    let phase = failed.phase();
    let status = failed.status.unwrap();
    assert_eq!(phase, Phase::Failed, "{:?}", status.message);
    let message = status.message.unwrap_or_default();
    assert!(
        message.contains("Widget/db did not act on its new spec"),
        "{message}"
    );
    let timed_out = status
        .conditions
        .iter()
        .find(|c| c.type_ == ferry_api::condition::TIMED_OUT);
    assert_eq!(
        timed_out.map(|c| c.reason.as_str()),
        Some(ferry_api::condition::REASON_OWNER_DID_NOT_ACT)
    );
    let now = widgets(&harness).get("db").await.unwrap();
    assert_eq!(
        (&now.data["spec"]["storage"]["size"], &now.data["spec"]["paused"]),
        (&json!("3Gi"), &json!(false))
    );
    assert_eq!(claim_bytes(&harness, "data-db-0").await, Some(3 * GI));
    harness.finish().await;
}

/// Plays a Widgets' operator that builds its StatefulSet from a field Ferry's entry does not name
/// (`spec.storage.realSize`): on each unpaused generation it re-makes the StatefulSet `db` with
/// that size (orphaning its pods) when the template differs, then says it acted.
fn play_widget_operator_that_remakes(harness: &Harness, class: &'static str) -> tokio::task::JoinHandle<()> {
    use futures::StreamExt;
    use kube::api::DeleteParams;
    use kube::runtime::watcher;
    let api = widgets(harness);
    let sets = harness.ns.api::<StatefulSet>();
    tokio::spawn(async move {
        let mut events = watcher::watcher(api.clone(), watcher::Config::default()).boxed();
        while let Some(event) = events.next().await {
            let Ok(watcher::Event::Apply(widget) | watcher::Event::InitApply(widget)) = event else {
                continue;
            };
            let generation = widget.metadata.generation.unwrap_or_default();
            let acted = widget.data["status"]["observedGeneration"].as_i64() == Some(generation);
            if widget.data["spec"]["paused"] == json!(true) || acted {
                continue;
            }
            let real = widget.data["spec"]["storage"]["realSize"]
                .as_str()
                .unwrap()
                .to_string();
            let current = sets.get("db").await.ok();
            if current.as_ref().and_then(template_bytes) != ferry_api::parse_bytes(&real).ok() {
                sets.delete("db", &DeleteParams::orphan()).await.unwrap();
                ferry_testenv::wait_until("the StatefulSet to go", 30, || async {
                    sets.get_opt("db").await.ok()?.is_none().then_some(())
                })
                .await
                .unwrap();
                let remade = owned_by(
                    stateful_set("db", 1, class, &real),
                    "test.ferry.dev/v1",
                    "Widget",
                    "db",
                    &widget.uid().unwrap(),
                );
                sets.create(&PostParams::default(), &remade).await.unwrap();
            }
            let status = json!({"status": {"observedGeneration": generation}});
            let _ = api
                .patch_status("db", &PatchParams::default(), &Patch::Merge(status))
                .await;
        }
    })
}

/// An owner whose entry names a field its operator does not read: once let go, the operator
/// re-makes the StatefulSet with the old size. The run fails saying so (status and a Warning
/// Event), the owner is let go, the volumes keep their new size and the replica its data.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_that_remakes_its_stateful_set_with_the_old_size_fails_the_run_and_is_let_go() {
    let harness = widget_harness("own-undo").await;
    owned_widget_stateful_set(&harness, CLASS_EXPANDABLE, "1Gi").await;
    widgets(&harness)
        .patch(
            "db",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"storage": {"realSize": "1Gi"}}})),
        )
        .await
        .unwrap();
    let owner_operator = play_widget_operator_that_remakes(&harness, CLASS_EXPANDABLE);
    let pod_before = harness
        .ns
        .api::<k8s_openapi::api::core::v1::Pod>()
        .get("db-0")
        .await
        .unwrap()
        .uid();

    harness
        .create_resize(
            "grow",
            json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "2Gi"}]}),
        )
        .await;
    let failed = harness
        .wait_resize("grow", "the resize to end", |r| r.phase().is_terminal())
        .await;
    let status = failed.status.clone().unwrap();
    assert_eq!(failed.phase(), Phase::Failed, "{:?}", status.message);
    let message = status.message.clone().unwrap_or_default();
    assert!(
        message.contains("Widget/db changed the StatefulSet's volume claim templates back"),
        "{message}"
    );
    let events = ferry_testenv::wait_until("a Warning Event on the VolumeResize", 30, || async {
        let events = harness.events_for("VolumeResize", "grow").await;
        events
            .iter()
            .any(|(type_, _, note)| {
                type_ == "Warning" && note.contains("changed the StatefulSet's volume claim templates back")
            })
            .then_some(events)
    })
    .await;
    assert!(
        events.is_ok(),
        "{:?}",
        harness.events_for("VolumeResize", "grow").await
    );

    // Let go, the new size written (the entry's field); the StatefulSet is the owner's again, at the
    // old size; the claim keeps its new size, and the replica never went down.
    let now = widgets(&harness).get("db").await.unwrap();
    assert_eq!(
        (&now.data["spec"]["paused"], &now.data["spec"]["storage"]["size"]),
        (&json!(false), &json!("2Gi"))
    );
    let sts = harness.ns.api::<StatefulSet>().get("db").await.unwrap();
    assert_eq!(template_bytes(&sts), Some(GI));
    assert_eq!(
        sts.annotations().get(ferry_api::names::ANNOTATION_RECREATED_BY),
        None,
        "re-made by its owner"
    );
    assert_eq!(claim_bytes(&harness, "data-db-0").await, Some(2 * GI));
    let pod_after = harness
        .ns
        .api::<k8s_openapi::api::core::v1::Pod>()
        .get("db-0")
        .await
        .unwrap()
        .uid();
    assert_eq!(pod_after, pod_before, "the replica kept running");
    owner_operator.abort();
    harness.finish().await;
}

/// The real prometheus-operator watching the test's namespace (running until the test kills
/// it), and its Prometheus `metrics` Ready on its StatefulSet `prometheus-metrics`, its TSDB on a
/// claim of `class` and `size`; scraping itself every second when `self_scrape`.
async fn running_prometheus(
    harness: &Harness,
    class: &str,
    size: &str,
    self_scrape: bool,
) -> (
    ferry_testenv::prometheus_operator::PrometheusOperator,
    Api<DynamicObject>,
) {
    use ferry_testenv::prometheus_operator::MetricsPrometheus;
    let prometheus = MetricsPrometheus {
        class,
        size,
        self_scrape,
    };
    ferry_testenv::prometheus_operator::running_prometheus(&harness.client, &harness.ns.name, prometheus)
        .await
        .unwrap()
}

async fn self_samples_at(harness: &Harness, pod: &str, time: u64) -> Option<usize> {
    ferry_testenv::prometheus_operator::self_samples_at(&harness.client, &harness.ns.name, pod, time).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prometheus_grows_in_place_through_the_real_prometheus_operator_and_neither_undoes_the_other() {
    let harness = Harness::start("own-prom").await;
    let (operator, prometheuses) = running_prometheus(&harness, CLASS_BLOCK, "320Mi", false).await;
    let sets = harness.ns.api::<StatefulSet>();

    let spec = json!({"statefulSetName": "prometheus-metrics", "volumes": [{"name": "prometheus-metrics-db", "size": "640Mi"}]});
    let (resize, took) = succeeds_through_owner(&harness, ("grow", spec), "Prometheus", operator.log()).await;
    eprintln!("grown through the Prometheus in {:.1} s", took.as_secs_f64());
    let owner = resize.status.clone().unwrap().owner.unwrap();
    assert_eq!(owner.pause_before, None, "it was not paused before");

    // The Prometheus says the new size and is not paused; its StatefulSet is the one Ferry made,
    // with the new template, and its operator neither re-created nor deleted it since.
    let now = prometheuses.get("metrics").await.unwrap();
    assert_eq!(
        now.data["spec"]["storage"]["volumeClaimTemplate"]["spec"]["resources"]["requests"]["storage"],
        json!("640Mi")
    );
    assert_eq!(now.data["spec"].get("paused"), None);
    let sts = sets.get("prometheus-metrics").await.unwrap();
    assert_eq!(
        sts.annotations().get(ferry_api::names::ANNOTATION_RECREATED_BY),
        resize.metadata.uid.as_ref(),
        "the StatefulSet Ferry made is the one left"
    );
    assert_eq!(template_bytes(&sts), Some(640 << 20));
    assert_eq!(
        claim_bytes(&harness, "prometheus-metrics-db-prometheus-metrics-0").await,
        Some(640 << 20)
    );
    let log = std::fs::read_to_string(operator.log()).unwrap_or_default();
    assert!(
        !log.contains("recreating StatefulSet"),
        "the prometheus-operator re-created the StatefulSet: {}",
        operator.log().display()
    );
    ferry_testenv::fixtures::wait_ready(&sets, "prometheus-metrics", 1, 60)
        .await
        .unwrap();
    operator.kill().await.unwrap();
    drop(operator);
    harness.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prometheus_shrinks_onto_another_class_by_copy_with_both_operators_killed_mid_way_and_keeps_its_samples()
 {
    use ferry_testenv::CLASS_BLOCK_FIXED;
    let mut harness = Harness::start("own-prom-copy").await;
    let (operator, prometheuses) = running_prometheus(&harness, CLASS_BLOCK, "320Mi", true).await;
    let sets = harness.ns.api::<StatefulSet>();
    // A sample in its TSDB before the move.
    let before = ferry_testenv::prometheus_operator::a_scraped_moment(
        &harness.client,
        &harness.ns.name,
        "prometheus-metrics-0",
    )
    .await
    .unwrap();

    harness
        .create_resize(
            "move",
            json!({"statefulSetName": "prometheus-metrics", "volumes": [
                {"name": "prometheus-metrics-db", "size": "288Mi", "storageClassName": CLASS_BLOCK_FIXED}
            ]}),
        )
        .await;
    // Once the Prometheus is paused its operator dies, and comes back while the copy runs; Ferry's
    // operator is killed at each step of the copy.
    harness
        .wait_resize("move", "the Prometheus to be paused", |r| {
            r.status
                .as_ref()
                .and_then(|s| s.owner.as_ref())
                .and_then(|o| o.step)
                == Some(OwnerStep::Paused)
        })
        .await;
    operator.kill().await.unwrap();
    let back = async {
        tokio::time::sleep(std::time::Duration::from_secs(3)).await;
        operator.start_again().await.unwrap();
    };
    let ((resize, killed_at), ()) = tokio::join!(
        harness.finish_killing_at_each_step("move", &Harness::COPY_STEPS, 400),
        back
    );
    let status = resize.status.clone().unwrap();
    assert_eq!(
        resize.phase(),
        Phase::Succeeded,
        "{:?} (killed at {killed_at:?})",
        status.message
    );
    assert!(killed_at.len() >= 4, "killed at {killed_at:?}");
    assert_eq!(status.owner.as_ref().unwrap().step, Some(OwnerStep::Confirmed));

    let now = prometheuses.get("metrics").await.unwrap();
    let written = &now.data["spec"]["storage"]["volumeClaimTemplate"]["spec"];
    assert_eq!(
        (
            &written["storageClassName"],
            &written["resources"]["requests"]["storage"]
        ),
        (&json!(CLASS_BLOCK_FIXED), &json!("288Mi"))
    );
    assert_eq!(now.data["spec"].get("paused"), None);
    let claim = harness
        .ns
        .api::<PersistentVolumeClaim>()
        .get("prometheus-metrics-db-prometheus-metrics-0")
        .await
        .unwrap();
    assert_eq!(
        claim.spec.unwrap().storage_class_name.as_deref(),
        Some(CLASS_BLOCK_FIXED)
    );
    let sts = sets.get("prometheus-metrics").await.unwrap();
    assert_eq!(
        sts.annotations().get(ferry_api::names::ANNOTATION_RECREATED_BY),
        resize.metadata.uid.as_ref()
    );
    let log = std::fs::read_to_string(operator.log()).unwrap_or_default();
    assert!(
        !log.contains("recreating StatefulSet"),
        "{}",
        operator.log().display()
    );
    // Its samples from before the move are on the new volume.
    ferry_testenv::fixtures::wait_ready(&sets, "prometheus-metrics", 1, 120)
        .await
        .unwrap();
    let kept = ferry_testenv::wait_until("Prometheus to answer on its new volume", 60, || async {
        self_samples_at(&harness, "prometheus-metrics-0", before).await
    })
    .await
    .unwrap();
    assert_eq!(kept, 1, "the sample scraped before the move");
    operator.kill().await.unwrap();
    drop(operator);
    harness.finish().await;
}

/// A Prometheus whose TSDB is on a node-bound volume (a local PV) moves to another node through
/// its owner: paused while its volume is served from the old node and pulled on the new one, then
/// let go with its resource unchanged; its pod runs on the new node with the samples of before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prometheus_on_a_node_bound_volume_moves_to_another_node_and_keeps_its_samples() {
    use ferry_testenv::CLASS_BLOCK_NODE;
    let harness = Harness::start("own-prom-move").await;
    let (operator, prometheuses) = running_prometheus(&harness, CLASS_BLOCK_NODE, "320Mi", true).await;
    let pod = "prometheus-metrics-0";
    let old_node = crate::move_node::node_of(&harness, pod).await;
    let before = ferry_testenv::prometheus_operator::a_scraped_moment(&harness.client, &harness.ns.name, pod)
        .await
        .unwrap();

    let started = std::time::Instant::now();
    let spec = json!({"statefulSetName": "prometheus-metrics",
                      "volumes": [{"name": "prometheus-metrics-db", "size": "320Mi"}],
                      "placement": {}});
    let status = crate::real_node::resize_succeeds(&harness, "move", spec, 300).await;
    let row = status.plan.iter().find(|row| row.replica == 0).unwrap();
    let new_node = row.target_node.clone().unwrap();
    eprintln!(
        "moved from {old_node} to {new_node} through the Prometheus in {:.1} s, down {:?} ms",
        started.elapsed().as_secs_f64(),
        row.downtime_milliseconds
    );
    assert_ne!(new_node, old_node);
    assert_eq!(status.owner.as_ref().unwrap().step, Some(OwnerStep::Confirmed));

    // Its resource is as it was and not paused; the StatefulSet is Ferry's, not re-made by its
    // operator; the pod runs on the new node and answers for the samples scraped before.
    let now = prometheuses.get("metrics").await.unwrap();
    let written = &now.data["spec"]["storage"]["volumeClaimTemplate"]["spec"];
    assert_eq!(
        (
            &written["storageClassName"],
            &written["resources"]["requests"]["storage"]
        ),
        (&json!(CLASS_BLOCK_NODE), &json!("320Mi"))
    );
    assert_eq!(now.data["spec"].get("paused"), None);
    let log = std::fs::read_to_string(operator.log()).unwrap_or_default();
    assert!(
        !log.contains("recreating StatefulSet"),
        "{}",
        operator.log().display()
    );
    let sets = harness.ns.api::<StatefulSet>();
    ferry_testenv::fixtures::wait_ready(&sets, "prometheus-metrics", 1, 120)
        .await
        .unwrap();
    assert_eq!(crate::move_node::node_of(&harness, pod).await, new_node);
    let kept = ferry_testenv::wait_until("Prometheus to answer on its new node", 60, || async {
        self_samples_at(&harness, pod, before).await
    })
    .await
    .unwrap();
    assert_eq!(kept, 1, "the sample scraped before the move");
    operator.kill().await.unwrap();
    drop(operator);
    harness.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owned_copy_rolled_back_on_request_puts_the_owners_resource_back_too() {
    use ferry_testenv::CLASS_FIXED;
    let mut harness = widget_harness("own-revert").await;
    owned_widget_stateful_set(&harness, CLASS_FIXED, "256Mi").await;
    let (owner_operator, seen) = play_widget_operator(&harness);
    harness
        .create_resize(
            "copy",
            json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "512Mi"}]}),
        )
        .await;
    // Ferry's operator is killed the first time the resize shows each of the owner's steps.
    let owner_shows = |resize: &ferry_api::VolumeResize| -> Vec<OwnerStep> {
        resize
            .status
            .iter()
            .filter_map(|s| s.owner.as_ref()?.step)
            .collect()
    };
    let every_step = [
        OwnerStep::Pausing,
        OwnerStep::Paused,
        OwnerStep::Writing,
        OwnerStep::Releasing,
        OwnerStep::Confirming,
    ];
    let (done, killed_at) = harness
        .finish_killing_at_first_sight("copy", &every_step, owner_shows, 180)
        .await;
    // Each step that carries a write shows (Confirming may pass within one reconcile).
    for step in [OwnerStep::Pausing, OwnerStep::Writing, OwnerStep::Releasing] {
        assert!(killed_at.contains(&step), "killed at {killed_at:?}");
    }
    let status = done.status.clone().unwrap();
    assert_eq!(done.phase(), Phase::Succeeded, "{:?}", status.message);
    assert_eq!(status.owner.unwrap().step, Some(OwnerStep::Confirmed));
    let widget = widgets(&harness).get("db").await.unwrap();
    assert_eq!(widget.data["spec"]["storage"]["size"], json!("512Mi"));
    assert!(
        seen.lock().unwrap().iter().any(|(paused, _)| *paused),
        "paused for the copy"
    );

    let request =
        json!({"metadata": {"annotations": {ferry_api::names::ANNOTATION_ROLLBACK_REQUESTED: "true"}}});
    harness
        .ns
        .api::<ferry_api::VolumeResize>()
        .patch("copy", &PatchParams::default(), &Patch::Merge(request))
        .await
        .unwrap();
    let reverted = harness
        .wait_resize("copy", "the rollback to end", |r| {
            r.status
                .as_ref()
                .and_then(|s| s.message.as_deref())
                .is_some_and(|m| m.starts_with("rolled back on request"))
                && r.status
                    .as_ref()
                    .and_then(|s| s.owner.as_ref())
                    .and_then(|o| o.step)
                    == Some(OwnerStep::Confirmed)
        })
        .await;
    assert_eq!(reverted.phase(), Phase::Failed);
    // The Widget says the old size again, and was paused while its StatefulSet went back.
    let widget = widgets(&harness).get("db").await.unwrap();
    assert_eq!(
        (
            &widget.data["spec"]["storage"]["size"],
            &widget.data["spec"]["paused"]
        ),
        (&json!("256Mi"), &json!(false))
    );
    let seen = seen.lock().unwrap().clone();
    let let_go_at_new_size = seen
        .iter()
        .position(|(paused, size)| !paused && size == &json!("512Mi"))
        .unwrap_or_else(|| panic!("never let go at 512Mi: {seen:?}"));
    assert!(
        seen[let_go_at_new_size..].iter().any(|(paused, _)| *paused),
        "paused again for the rollback: {seen:?}"
    );
    let sts = harness.ns.api::<StatefulSet>().get("db").await.unwrap();
    assert_eq!(template_bytes(&sts), Some(256 << 20));
    owner_operator.abort();
    harness.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_autoscaler_targeting_a_prometheus_grows_it_through_its_owner() {
    let harness = Harness::start("own-prom-auto").await;
    let (operator, prometheuses) = running_prometheus(&harness, CLASS_BLOCK, "320Mi", true).await;
    // The file system's own use and the TSDB's first files (it scrapes itself every second) are
    // past 1 %: one grow of 20 %, to the most it may have.
    crate::autoscale::create_autoscaler(
        &harness,
        "metrics",
        json!({"owner": {"kind": "Prometheus", "name": "metrics"}, "volumes": [
            {"name": "prometheus-metrics-db", "threshold": 1, "maxSize": "384Mi"},
        ]}),
    )
    .await;
    let grown = ferry_testenv::wait_until("the autoscaler's resize to end", 180, || async {
        let resizes = harness
            .ns
            .api::<ferry_api::VolumeResize>()
            .list(&Default::default())
            .await
            .ok()?;
        resizes
            .items
            .into_iter()
            .find(|resize| resize.phase().is_terminal())
    })
    .await
    .unwrap();
    let status = grown.status.clone().unwrap();
    assert_eq!(grown.phase(), Phase::Succeeded, "{:?}", status.message);
    assert_eq!(grown.spec.stateful_set_name, "prometheus-metrics");
    assert_eq!(status.owner.unwrap().step, Some(OwnerStep::Confirmed));
    let now = prometheuses.get("metrics").await.unwrap();
    assert_eq!(
        now.data["spec"]["storage"]["volumeClaimTemplate"]["spec"]["resources"]["requests"]["storage"],
        json!("384Mi")
    );
    assert_eq!(now.data["spec"].get("paused"), None);
    assert_eq!(
        claim_bytes(&harness, "prometheus-metrics-db-prometheus-metrics-0").await,
        Some(384 << 20)
    );
    operator.kill().await.unwrap();
    drop(operator);
    harness.finish().await;
}

/// Each built-in entry of prometheus-operator's kinds fits its CRD as the API server serves it at
/// the pinned version: the paths Ferry reads name the template, and the patches it makes (pause,
/// size, class, attributes class) are accepted with the values it writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_prometheus_operator_entries_fit_its_crds_as_served() {
    use ferry_engine::owners::{TemplateWrite, built_in, read_owner};
    let client = ferry_testenv::client().await.unwrap();
    ferry_testenv::prometheus_operator::install_crds(&client)
        .await
        .unwrap();
    let ns = ferry_testenv::TestNamespace::create(&client, "own-crds")
        .await
        .unwrap();
    for (kind, plural, stateful_set, template) in [
        ("Prometheus", "prometheuses", "prometheus-x", "prometheus-x-db"),
        (
            "Alertmanager",
            "alertmanagers",
            "alertmanager-x",
            "alertmanager-x-db",
        ),
        (
            "ThanosRuler",
            "thanosrulers",
            "thanos-ruler-x",
            "thanos-ruler-x-data",
        ),
    ] {
        let gvk = GroupVersionKind::gvk("monitoring.coreos.com", "v1", kind);
        let api: Api<DynamicObject> = Api::namespaced_with(
            client.clone(),
            &ns.name,
            &ApiResource::from_gvk_with_plural(&gvk, plural),
        );
        let object: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "monitoring.coreos.com/v1", "kind": kind,
            "metadata": {"name": "x"},
            "spec": {"storage": {"volumeClaimTemplate": {"spec": {"resources": {"requests": {"storage": "1Gi"}}}}}},
        }))
        .unwrap();
        let created =
            serde_json::to_value(api.create(&PostParams::default(), &object).await.unwrap()).unwrap();
        let entry = built_in().into_iter().find(|entry| entry.kind == kind).unwrap();
        let reading = read_owner(&entry, &created, stateful_set, &[template]).unwrap();
        assert_eq!(
            reading.volumes[template].size_now.as_deref(),
            Some("1Gi"),
            "{kind}"
        );
        let write = TemplateWrite {
            template: template.into(),
            size: "2Gi".into(),
            storage_class: Some("fast".into()),
            attributes_class: Some("gold".into()),
        };
        let mut ops = reading.pause_ops(&created, Some(&json!(true))).unwrap();
        ops.extend(reading.write_ops(&created, &[write]).unwrap().into_iter().skip(1));
        let patch: json_patch::Patch = serde_json::from_value(serde_json::Value::Array(ops)).unwrap();
        let patched = api
            .patch(
                "x",
                &PatchParams {
                    dry_run: true,
                    ..PatchParams::default()
                },
                &Patch::<()>::Json(patch),
            )
            .await
            .unwrap_or_else(|error| panic!("{kind}: {error}"));
        let spec = &patched.data["spec"];
        let claim = &spec["storage"]["volumeClaimTemplate"]["spec"];
        assert_eq!(
            (
                &spec["paused"],
                &claim["resources"]["requests"]["storage"],
                &claim["storageClassName"],
                &claim["volumeAttributesClassName"]
            ),
            (&json!(true), &json!("2Gi"), &json!("fast"), &json!("gold")),
            "{kind}"
        );
    }
    ns.cleanup().await.unwrap();
}

/// A resize made outside an ExtendedStatefulSet of its one StatefulSet goes through it like any
/// owner: the new size is written into its template, so its controller has nothing to undo.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resize_of_an_extended_stateful_sets_own_stateful_set_is_written_into_its_template() {
    use ferry_api::ExtendedStatefulSet;
    let harness = Harness::start("own-ests").await;
    crate::extended::create(&harness, &crate::extended::extended("db", 1, json!({}))).await;
    let sets = harness.ns.api::<StatefulSet>();
    ferry_testenv::wait::wait_for_object(&sets, "db", "the ExtendedStatefulSet's StatefulSet", 60, |_| true)
        .await
        .unwrap();
    ferry_testenv::fixtures::wait_ready(&sets, "db", 1, 120)
        .await
        .unwrap();
    harness
        .create_resize(
            "grow",
            json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "2Gi"}]}),
        )
        .await;
    let done = harness.wait_terminal("grow", "the resize to end", 120).await;
    let status = done.status.clone().unwrap();
    assert_eq!(done.phase(), Phase::Succeeded, "{:?}", status.message);
    let owner = status.owner.unwrap();
    assert_eq!(
        (owner.kind.as_str(), owner.step),
        ("ExtendedStatefulSet", Some(OwnerStep::Confirmed))
    );
    let ests = harness.ns.api::<ExtendedStatefulSet>().get("db").await.unwrap();
    let templates = ests
        .spec
        .template
        .spec
        .volume_claim_templates
        .as_deref()
        .unwrap_or_default();
    assert_eq!(first_template_bytes(templates), Some(2 * GI));
    // Its controller, having seen its new generation, starts no resize of its own.
    let generation = ests.metadata.generation;
    crate::extended::wait_status(&harness, "db", "the new generation seen", 60, |s| {
        s.observed_generation == generation
    })
    .await;
    let resizes = harness
        .ns
        .api::<ferry_api::VolumeResize>()
        .list(&Default::default())
        .await
        .unwrap();
    let names: Vec<String> = resizes.items.iter().map(|r| r.name_any()).collect();
    assert_eq!(names, ["grow"]);
    assert_eq!(claim_bytes(&harness, "data-db-0").await, Some(2 * GI));
    harness.finish().await;
}
