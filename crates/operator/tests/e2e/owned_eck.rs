//! StatefulSets ECK's real operator owns (#58): the second real owner, whose table entry is not
//! Prometheus-shaped (a list of node sets picked by name, each with a list of templates picked by
//! name; an annotation that pauses it). Its Elasticsearch is a stand-in (`ferry_testenv::eck`): ECK
//! does what it does for an unreachable cluster, which is all it does to StatefulSets and claims.

use crate::owned::{claim_bytes, succeeds_through_owner, template_bytes};
use crate::support::Harness;
use ferry_api::{OwnerStep, Phase};
use ferry_testenv::eck::{DATA_TEMPLATE, EckOperator, SEED_FILE, running_elasticsearch};
use ferry_testenv::{CLASS_BLOCK, CLASS_BLOCK_FIXED};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

const CLUSTER: &str = "logs";
const NODE_SET: &str = "hot";
const STS: &str = "logs-es-hot";
const POD: &str = "logs-es-hot-0";
const CLAIM: &str = "elasticsearch-data-logs-es-hot-0";
const MANAGED: &str = "eck.k8s.elastic.co/managed";

async fn running(harness: &Harness, class: &str, size: &str) -> (EckOperator, Api<DynamicObject>) {
    running_elasticsearch(
        &harness.client,
        &harness.ns.name,
        (CLUSTER, NODE_SET),
        (class, size),
    )
    .await
    .unwrap()
}

/// The node set's data template in the resource.
fn written_template(elasticsearch: &DynamicObject) -> &Value {
    &elasticsearch.data["spec"]["nodeSets"][0]["volumeClaimTemplates"][0]["spec"]
}

/// What the stand-in wrote to its data volume when it first started.
async fn seed(harness: &Harness) -> String {
    let (code, out, err) = ferry_testenv::kubectl(&[
        "-n",
        &harness.ns.name,
        "exec",
        POD,
        "-c",
        "elasticsearch",
        "--",
        "cat",
        SEED_FILE,
    ])
    .await
    .unwrap();
    assert_eq!(code, 0, "{err}");
    out.trim().to_string()
}

/// ECK's log says it re-made the node set's StatefulSet to resize its claims, or deleted a claim
/// (its own messages at v3.5.0; the test's namespace has this one Elasticsearch).
fn eck_remade_it(operator: &EckOperator) -> bool {
    let log = std::fs::read_to_string(operator.log()).unwrap_or_default();
    [
        "Preparing StatefulSet re-creation to account for PVC resize",
        "Deleting StatefulSet to account for resized PVCs",
        "Re-creating StatefulSet to account for resized PVCs",
        "Deleting PVC",
    ]
    .iter()
    .any(|message| log.contains(message))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_elasticsearch_node_set_grows_in_place_through_the_real_eck_operator() {
    let harness = Harness::start("own-eck").await;
    let (operator, elasticsearches) = running(&harness, CLASS_BLOCK, "320Mi").await;
    let sets = harness.ns.api::<StatefulSet>();
    let before = seed(&harness).await;

    let spec = json!({"statefulSetName": STS, "volumes": [{"name": DATA_TEMPLATE, "size": "640Mi"}]});
    let (resize, took) =
        succeeds_through_owner(&harness, ("grow", spec), "Elasticsearch", operator.log()).await;
    eprintln!("grown through the Elasticsearch in {:.1} s", took.as_secs_f64());
    let owner = resize.status.clone().unwrap().owner.unwrap();
    // The plan said which annotation pauses it and which field of which node set is written.
    assert_eq!(
        owner.pause_switch.map(|switch| (switch.path, switch.value)),
        Some((
            "/metadata/annotations/eck.k8s.elastic.co~1managed".into(),
            "\"false\"".into()
        ))
    );
    assert_eq!(
        owner
            .writes
            .iter()
            .map(|field| field.path.as_str())
            .collect::<Vec<_>>(),
        [
            "/spec/nodeSets/[name=hot]/volumeClaimTemplates/[metadata.name=elasticsearch-data]/spec/resources/requests/storage"
        ]
    );

    // The node set says the new size, ECK manages it again, and acted on it; the StatefulSet is
    // the one Ferry made, never re-made by ECK; the pod kept running on its grown volume.
    let now = elasticsearches.get(CLUSTER).await.unwrap();
    assert_eq!(
        written_template(&now)["resources"]["requests"]["storage"],
        json!("640Mi")
    );
    assert_eq!(now.annotations().get(MANAGED), None, "let go");
    assert!(
        now.data["status"]["observedGeneration"].as_i64() >= now.metadata.generation,
        "{:?}",
        now.data["status"]
    );
    let sts = sets.get(STS).await.unwrap();
    assert_eq!(
        sts.annotations().get(ferry_api::names::ANNOTATION_RECREATED_BY),
        resize.metadata.uid.as_ref(),
        "the StatefulSet Ferry made is the one left"
    );
    assert_eq!(template_bytes(&sts), Some(640 << 20));
    assert_eq!(claim_bytes(&harness, CLAIM).await, Some(640 << 20));
    assert!(!eck_remade_it(&operator), "{}", operator.log().display());
    ferry_testenv::fixtures::wait_ready(&sets, STS, 1, 60)
        .await
        .unwrap();
    assert_eq!(seed(&harness).await, before);
    operator.kill().await.unwrap();
    drop(operator);
    harness.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_elasticsearch_node_set_shrinks_onto_another_class_with_eck_and_ferry_killed_mid_way() {
    let mut harness = Harness::start("own-eck-copy").await;
    let (operator, elasticsearches) = running(&harness, CLASS_BLOCK, "320Mi").await;
    let sets = harness.ns.api::<StatefulSet>();
    let before = seed(&harness).await;

    harness
        .create_resize(
            "move",
            json!({"statefulSetName": STS, "volumes": [
                {"name": DATA_TEMPLATE, "size": "288Mi", "storageClassName": CLASS_BLOCK_FIXED}
            ]}),
        )
        .await;
    // Once ECK is told to keep off, it dies, and comes back while the copy runs; Ferry's operator
    // is killed at each step of the copy.
    harness
        .wait_resize("move", "the Elasticsearch to be paused", |r| {
            r.status
                .as_ref()
                .and_then(|s| s.owner.as_ref())
                .and_then(|o| o.step)
                == Some(OwnerStep::Paused)
        })
        .await;
    let paused = elasticsearches.get(CLUSTER).await.unwrap();
    assert_eq!(
        paused.annotations().get(MANAGED).map(String::as_str),
        Some("false")
    );
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
        "{:?} (killed at {killed_at:?}; ECK's log: {})",
        status.message,
        operator.log().display()
    );
    assert!(killed_at.len() >= 4, "killed at {killed_at:?}");
    assert_eq!(status.owner.as_ref().unwrap().step, Some(OwnerStep::Confirmed));

    let now = elasticsearches.get(CLUSTER).await.unwrap();
    let written = written_template(&now);
    assert_eq!(
        (
            &written["storageClassName"],
            &written["resources"]["requests"]["storage"]
        ),
        (&json!(CLASS_BLOCK_FIXED), &json!("288Mi"))
    );
    assert_eq!(now.annotations().get(MANAGED), None, "let go");
    let claim = harness
        .ns
        .api::<PersistentVolumeClaim>()
        .get(CLAIM)
        .await
        .unwrap();
    assert_eq!(
        claim.spec.unwrap().storage_class_name.as_deref(),
        Some(CLASS_BLOCK_FIXED)
    );
    let sts = sets.get(STS).await.unwrap();
    assert_eq!(
        sts.annotations().get(ferry_api::names::ANNOTATION_RECREATED_BY),
        resize.metadata.uid.as_ref()
    );
    assert!(!eck_remade_it(&operator), "{}", operator.log().display());
    // What the stand-in wrote at its first start is on the new volume.
    ferry_testenv::fixtures::wait_ready(&sets, STS, 1, 120)
        .await
        .unwrap();
    assert_eq!(seed(&harness).await, before);
    operator.kill().await.unwrap();
    drop(operator);
    harness.finish().await;
}

/// The built-in Elasticsearch entry fits ECK's CRD as the API server serves it at the pinned
/// version: the paths Ferry reads name the node set's template, and the patch it makes (the
/// annotation, size, class, attributes class) is accepted with the values it writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_elasticsearch_entry_fits_ecks_crd_as_served() {
    use ferry_engine::owners::{TemplateWrite, built_in, read_owner};
    let client = ferry_testenv::client().await.unwrap();
    ferry_testenv::eck::install_crds(&client).await.unwrap();
    let ns = ferry_testenv::TestNamespace::create(&client, "own-eck-crd")
        .await
        .unwrap();
    let api = ferry_testenv::eck::elasticsearches(&client, &ns.name);
    let mut resource = ferry_testenv::eck::elasticsearch_resource("x", "warm", CLASS_BLOCK, "1Gi");
    // A second node set, and a second template in the first, which Ferry must not pick.
    let cold = json!({"name": "cold", "count": 1, "volumeClaimTemplates": [
        {"metadata": {"name": DATA_TEMPLATE}, "spec": {"resources": {"requests": {"storage": "5Gi"}}}}]});
    resource["spec"]["nodeSets"]
        .as_array_mut()
        .unwrap()
        .insert(0, cold);
    resource["spec"]["nodeSets"][1]["volumeClaimTemplates"]
        .as_array_mut()
        .unwrap()
        .insert(
            0,
            json!({"metadata": {"name": "logs"}, "spec": {"resources": {"requests": {"storage": "3Gi"}}}}),
        );
    let object: DynamicObject = serde_json::from_value(resource).unwrap();
    let created = serde_json::to_value(api.create(&PostParams::default(), &object).await.unwrap()).unwrap();
    let entry = built_in()
        .into_iter()
        .find(|entry| entry.kind == "Elasticsearch")
        .unwrap();
    let reading = read_owner(&entry, &created, "x-es-warm", &["logs", DATA_TEMPLATE]).unwrap();
    assert_eq!(reading.volumes[DATA_TEMPLATE].size_now.as_deref(), Some("1Gi"));
    let write = TemplateWrite {
        template: DATA_TEMPLATE.into(),
        size: "2Gi".into(),
        storage_class: Some("fast".into()),
        attributes_class: Some("gold".into()),
    };
    let mut ops = reading.pause_ops(&created, Some(&json!("false"))).unwrap();
    ops.extend(reading.write_ops(&created, &[write]).unwrap().into_iter().skip(1));
    let patch: json_patch::Patch = serde_json::from_value(Value::Array(ops)).unwrap();
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
        .unwrap();
    assert_eq!(
        patched.annotations().get(MANAGED).map(String::as_str),
        Some("false")
    );
    let node_sets = &patched.data["spec"]["nodeSets"];
    let claim = &node_sets[1]["volumeClaimTemplates"][1]["spec"];
    assert_eq!(
        (
            &claim["resources"]["requests"]["storage"],
            &claim["storageClassName"],
            &claim["volumeAttributesClassName"]
        ),
        (&json!("2Gi"), &json!("fast"), &json!("gold"))
    );
    // The other node set and the other template are as they were.
    assert_eq!(
        node_sets[0]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"],
        json!("5Gi")
    );
    assert_eq!(
        node_sets[1]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"],
        json!("3Gi")
    );
    ns.cleanup().await.unwrap();
}
