//! Triggers end to end, with the API server calling the operator's webhooks over TLS at a loopback
//! URL: an edit of the StatefulSet by `kubectl apply` (grow) and by server-side apply from another
//! field manager re-applied every second like Argo CD (shrink), annotations by name and by the
//! seed operator's index, drift after an orphan delete and re-apply, Ferry stopped, hostile
//! requests to the webhook, and VolumeResizes refused at admission. Data checked by checksum.
//! The re-apply loop also covers a GitOps tool re-creating the StatefulSet while Ferry replaces it:
//! that create is refused until Ferry's StatefulSet is back.

use crate::support;

use ferry_api::names::{
    ANNOTATION_REQUESTED_TEMPLATES, ANNOTATION_RESIZE_STATUS, ANNOTATION_SYNC_CLAIMS, LABEL_STATEFUL_SET,
};
use ferry_api::quantity::quantity_bytes;
use ferry_api::{Phase, VolumeResize};
use ferry_engine::trigger::template_edit::TemplateEdits;
use ferry_testenv::fixtures::{stateful_set, wait_ready};
use ferry_testenv::{CLASS_EXPANDABLE, CLASS_FIXED, kubectl, wait_until};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kube::ResourceExt;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use support::{Harness, OperatorOptions};

const MI: u64 = 1 << 20;

/// The StatefulSet as a manifest, its `data` template asking for `size`.
fn manifest(sts: &StatefulSet, size: &str) -> Value {
    let mut manifest = serde_json::to_value(sts).unwrap();
    manifest["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"] = size.into();
    manifest
}

/// Writes the manifest to a file of its own and runs `kubectl <verb…> -f <file>` in the namespace.
pub(crate) async fn kubectl_file(
    harness: &Harness,
    manifest: &Value,
    args: &[&str],
) -> (i32, String, String) {
    let path = std::env::temp_dir().join(format!(
        "{}-{}.json",
        harness.ns.name,
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::write(&path, serde_json::to_vec(manifest).unwrap()).unwrap();
    let mut full: Vec<&str> = args.to_vec();
    let path_text = path.display().to_string();
    full.extend(["-n", &harness.ns.name, "-f", &path_text]);
    let result = kubectl(&full).await.unwrap();
    std::fs::remove_file(&path).unwrap();
    result
}

fn template_size(sts: &StatefulSet) -> u64 {
    let value = serde_json::to_value(sts).unwrap();
    let size = value
        .pointer("/spec/volumeClaimTemplates/0/spec/resources/requests/storage")
        .and_then(Value::as_str)
        .unwrap()
        .to_string();
    quantity_bytes(&k8s_openapi::apimachinery::pkg::api::resource::Quantity(size)).unwrap()
}

/// The StatefulSet's `data` template and the claims of its `replicas` all ask for `size` bytes.
async fn assert_all_sized(harness: &Harness, sts: &StatefulSet, replicas: i32, size: u64) {
    assert_eq!(template_size(sts), size, "the template");
    for replica in 0..replicas {
        assert_eq!(
            claim_request(harness, &format!("data-web-{replica}")).await,
            size,
            "claim of replica {replica}"
        );
    }
}

async fn claim_request(harness: &Harness, claim: &str) -> u64 {
    let claim = harness
        .ns
        .api::<PersistentVolumeClaim>()
        .get(claim)
        .await
        .unwrap();
    quantity_bytes(
        claim
            .spec
            .unwrap()
            .resources
            .unwrap()
            .requests
            .unwrap()
            .get("storage")
            .unwrap(),
    )
    .unwrap()
}

/// The VolumeResizes Ferry made for StatefulSet `name` from a trigger.
async fn trigger_resizes(harness: &Harness, name: &str) -> Vec<VolumeResize> {
    harness
        .ns
        .api::<VolumeResize>()
        .list(&ListParams::default().labels(&format!("{LABEL_STATEFUL_SET}={name}")))
        .await
        .unwrap()
        .items
}

/// Waits until the StatefulSet says its request succeeded and carries no request any more.
pub(crate) async fn wait_request_done(harness: &Harness, name: &str, seconds: u64) -> StatefulSet {
    let api = harness.ns.api::<StatefulSet>();
    let done = wait_until(
        &format!("StatefulSet {name} to report its resize done"),
        seconds,
        || async {
            let sts = api.get_opt(name).await.ok().flatten()?;
            let annotations = sts.annotations();
            let requested = annotations.keys().any(|key| {
                key == ANNOTATION_REQUESTED_TEMPLATES
                    || key.starts_with("ferry.dev/resize.")
                    || key.starts_with("ferry.dev/storage-class.")
                    || key.starts_with("ferry.dev/attributes-class.")
                    || key.starts_with("resize-statefulset-operator/resize-")
            });
            let status = annotations.get(ANNOTATION_RESIZE_STATUS)?;
            (status.starts_with("Succeeded: ") && !requested).then_some(sts)
        },
    )
    .await;
    match done {
        Ok(sts) => sts,
        Err(error) => {
            let sts = api.get_opt(name).await.ok().flatten();
            let annotations = sts.map(|sts| sts.annotations().clone()).unwrap_or_default();
            panic!(
                "{error}\nannotations: {annotations:?}\n{}",
                harness.explain().await
            )
        }
    }
}

/// The VolumeResize name in Ferry's admission warning.
pub(crate) fn named_in_warning(stderr: &str) -> String {
    let line = stderr
        .lines()
        .find(|line| line.contains("Ferry: volumeClaimTemplates change"))
        .unwrap_or_else(|| panic!("no Ferry warning in {stderr:?}"));
    line.split("VolumeResize ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_apply_of_a_grown_template_is_accepted_and_resized_in_place() {
    let harness = Harness::start_with_webhook("trig-apply").await;
    let sts = stateful_set("web", 2, CLASS_EXPANDABLE, "1Gi");
    let seeded = harness.seeded(sts.clone(), &["data"], 40).await;

    let grown = manifest(&sts, "2Gi");
    let (code, _, stderr) = kubectl_file(&harness, &grown, &["apply"]).await;
    assert_eq!(code, 0, "kubectl apply is accepted: {stderr}");
    assert!(stderr.contains("data 1Gi → 2Gi"), "{stderr}");
    let name = named_in_warning(&stderr);

    let resize = harness
        .wait_resize(&name, "the VolumeResize from the edit to succeed", |r| {
            r.phase().is_terminal()
        })
        .await;
    assert_eq!(resize.phase(), Phase::Succeeded, "{:?}", resize.status);
    assert_eq!(
        resize.labels().get("ferry.dev/trigger").map(String::as_str),
        Some("template-edit")
    );
    let sts = wait_request_done(&harness, "web", 60).await;
    assert_all_sized(&harness, &sts, 2, 2 << 30).await;
    harness.assert_data_intact(&seeded).await;
    // The live object now is the manifest: a GitOps tool sees it in sync.
    let (code, diff, stderr) = kubectl_file(&harness, &grown, &["diff"]).await;
    assert_eq!(code, 0, "in sync after the resize: {diff}{stderr}");
    harness.wait_event("StatefulSet", "web", "ResizeSucceeded").await;
    assert_eq!(trigger_resizes(&harness, "web").await.len(), 1);
    // Finished, retaining nothing (in place): no finalizer is left for a deletion to wait on.
    harness
        .wait_resize(&name, "the finished resize to drop its finalizer", |r| {
            r.finalizers().is_empty()
        })
        .await;
    harness.finish().await;
}

/// With `--refuse-template-shrinks` (chart `webhook.refuseTemplateShrinks`), as the seed's
/// webhook did: an edit asking a smaller template is denied with the reason and changes nothing;
/// growth is still carried out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_shrinks_refused_a_smaller_template_is_denied_and_growth_still_resized() {
    let options = OperatorOptions {
        template_edits: TemplateEdits::ShrinksRefused,
        ..OperatorOptions::default()
    };
    let harness = Harness::start_with_webhook_and("trig-refuse", options).await;
    let sts = stateful_set("web", 1, CLASS_EXPANDABLE, "1Gi");
    let seeded = harness.seeded(sts.clone(), &["data"], 20).await;

    let (code, _, stderr) = kubectl_file(&harness, &manifest(&sts, "512Mi"), &["apply"]).await;
    assert_ne!(code, 0, "the shrink is denied: {stderr}");
    assert!(
        stderr.contains("refuses shrinking a volume claim template")
            && stderr.contains("--refuse-template-shrinks")
            && stderr.contains("data"),
        "{stderr}"
    );
    let live = harness.ns.api::<StatefulSet>().get("web").await.unwrap();
    assert_eq!(template_size(&live), 1 << 30, "the template is as it was");
    assert!(
        trigger_resizes(&harness, "web").await.is_empty(),
        "nothing was asked"
    );

    let (code, _, stderr) = kubectl_file(&harness, &manifest(&sts, "2Gi"), &["apply"]).await;
    assert_eq!(code, 0, "growth is accepted: {stderr}");
    let name = named_in_warning(&stderr);
    let resize = harness
        .wait_resize(&name, "the VolumeResize from the edit to finish", |r| {
            r.phase().is_terminal()
        })
        .await;
    assert_eq!(resize.phase(), Phase::Succeeded, "{:?}", resize.status);
    let sts = wait_request_done(&harness, "web", 60).await;
    assert_all_sized(&harness, &sts, 1, 2 << 30).await;
    harness.assert_data_intact(&seeded).await;
    harness.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_apply_reapplied_every_second_shrinks_once_by_copy() {
    let harness = Harness::start_with_webhook("trig-ssa").await;
    let sts = stateful_set("web", 2, CLASS_FIXED, "1Gi");
    let seeded = harness.seeded(sts.clone(), &["data"], 40).await;
    let shrunk = manifest(&sts, "512Mi");
    let apply = [
        "apply",
        "--server-side",
        "--field-manager=argocd-controller",
        "--force-conflicts",
    ];

    let (code, _, stderr) = kubectl_file(&harness, &shrunk, &apply).await;
    assert_eq!(code, 0, "{stderr}");
    let name = named_in_warning(&stderr);

    // Like Argo CD's self-heal: the same manifest again every second while the resize runs.
    let stop = Arc::new(AtomicBool::new(false));
    let failures = Arc::new(AtomicUsize::new(0));
    let reapply = {
        let (stop, failures) = (stop.clone(), failures.clone());
        let ns = harness.ns.name.clone();
        let shrunk = shrunk.clone();
        tokio::spawn(async move {
            let path = std::env::temp_dir().join(format!("{ns}-argo.json"));
            std::fs::write(&path, serde_json::to_vec(&shrunk).unwrap()).unwrap();
            let path_text = path.display().to_string();
            while !stop.load(Ordering::Relaxed) {
                let mut args = apply.to_vec();
                args.extend(["-n", &ns, "-f", &path_text]);
                let (code, _, stderr) = kubectl(&args).await.unwrap();
                // In the moment Ferry replaces the StatefulSet, a create is refused (the tool
                // retries, as Argo CD does); anything else is a failure.
                if code != 0 && !stderr.contains("Ferry is replacing StatefulSet web") {
                    eprintln!("re-apply failed: {stderr}");
                    failures.fetch_add(1, Ordering::Relaxed);
                }
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            }
            std::fs::remove_file(&path).unwrap();
        })
    };
    let resize = harness
        .wait_resize_for(&name, "the VolumeResize from the edit to finish", 300, |r| {
            r.phase().is_terminal()
        })
        .await;
    let sts = wait_request_done(&harness, "web", 60).await;
    stop.store(true, Ordering::Relaxed);
    reapply.await.unwrap();

    assert_eq!(resize.phase(), Phase::Succeeded, "{:?}", resize.status);
    assert_eq!(
        failures.load(Ordering::Relaxed),
        0,
        "every re-apply was accepted or told to wait"
    );
    assert_eq!(
        trigger_resizes(&harness, "web").await.len(),
        1,
        "one VolumeResize, however often applied"
    );
    assert_all_sized(&harness, &sts, 2, 512 * MI).await;
    harness.assert_data_intact(&seeded).await;
    // In sync: applying the manifest again changes nothing and asks for nothing.
    let (code, _, stderr) = kubectl_file(&harness, &shrunk, &apply).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("Ferry"), "{stderr}");
    assert_eq!(trigger_resizes(&harness, "web").await.len(), 1);
    harness.finish().await;
}

async fn annotate(harness: &Harness, name: &str, annotations: Value) {
    harness
        .ns
        .api::<StatefulSet>()
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(&json!({"metadata": {"annotations": annotations}})),
        )
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn annotations_by_name_and_by_the_seed_operators_index_resize_and_are_removed() {
    let harness = Harness::start_with_webhook("trig-annot").await;
    let seeded = harness
        .seeded(stateful_set("web", 2, CLASS_EXPANDABLE, "1Gi"), &["data"], 30)
        .await;

    annotate(&harness, "web", json!({"ferry.dev/resize.data": "2Gi"})).await;
    let sts = wait_request_done(&harness, "web", 120).await;
    assert_eq!(template_size(&sts), 2 << 30);
    let made = trigger_resizes(&harness, "web").await;
    assert_eq!(made.len(), 1);
    assert_eq!(
        made[0].labels().get("ferry.dev/trigger").map(String::as_str),
        Some("annotation")
    );

    annotate(
        &harness,
        "web",
        json!({"resize-statefulset-operator/resize-0": "3Gi"}),
    )
    .await;
    let sts = wait_until("the seed annotation to be carried out", 120, || async {
        let sts = harness
            .ns
            .api::<StatefulSet>()
            .get_opt("web")
            .await
            .ok()
            .flatten()?;
        (template_size(&sts) == 3 << 30).then_some(sts)
    })
    .await
    .unwrap();
    let sts = wait_request_done(&harness, &sts.name_any(), 60).await;
    assert!(sts.annotations()[ANNOTATION_RESIZE_STATUS].contains("3Gi"));
    harness
        .wait_event("StatefulSet", "web", "DeprecatedAnnotation")
        .await;
    assert_all_sized(&harness, &sts, 2, 3 << 30).await;
    harness.assert_data_intact(&seeded).await;
    assert_eq!(trigger_resizes(&harness, "web").await.len(), 2);
    harness.finish().await;
}

/// The way people work around immutable templates today: orphan delete, then apply anew with
/// `size` and `ferry.dev/sync-claims: "true"`.
async fn reapply_with_sync_claims(harness: &Harness, sts: &StatefulSet, size: &str) {
    let sets = harness.ns.api::<StatefulSet>();
    let name = sts.name_any();
    sets.delete(&name, &DeleteParams::orphan()).await.unwrap();
    wait_until("the StatefulSet to be gone", 30, || async {
        sets.get_opt(&name).await.ok().flatten().is_none().then_some(())
    })
    .await
    .unwrap();
    let mut again: StatefulSet = serde_json::from_value(manifest(sts, size)).unwrap();
    again
        .annotations_mut()
        .insert(ANNOTATION_SYNC_CLAIMS.into(), "true".into());
    sets.create(&PostParams::default(), &again).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_after_an_orphan_delete_and_reapply_brings_the_claims_to_the_template() {
    let harness = Harness::start_with_webhook("trig-drift").await;
    let sts = stateful_set("web", 2, CLASS_EXPANDABLE, "1Gi");
    let seeded = harness.seeded(sts.clone(), &["data"], 30).await;
    let sets = harness.ns.api::<StatefulSet>();

    reapply_with_sync_claims(&harness, &sts, "2Gi").await;

    let sts = wait_request_done(&harness, "web", 120).await;
    let made = trigger_resizes(&harness, "web").await;
    assert_eq!(made.len(), 1);
    assert_eq!(
        made[0].labels().get("ferry.dev/trigger").map(String::as_str),
        Some("drift")
    );
    assert_eq!(made[0].phase(), Phase::Succeeded);
    assert_all_sized(&harness, &sts, 2, 2 << 30).await;
    harness.assert_data_intact(&seeded).await;
    wait_ready(&sets, "web", 2, 60).await.unwrap();
    harness.finish().await;
}

/// A claim expanded by hand (3Gi) is larger than the template re-applied (2Gi): drift grows the
/// other claim and the template to 3Gi and never shrinks the larger one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_never_shrinks_a_claim_expanded_by_hand() {
    let harness = Harness::start_with_webhook("trig-drift-up").await;
    let sts = stateful_set("web", 2, CLASS_EXPANDABLE, "1Gi");
    let seeded = harness.seeded(sts.clone(), &["data"], 30).await;
    let claims = harness.ns.api::<PersistentVolumeClaim>();
    let grow = json!({"spec": {"resources": {"requests": {"storage": "3Gi"}}}});
    claims
        .patch("data-web-1", &PatchParams::default(), &Patch::Merge(grow))
        .await
        .unwrap();
    reapply_with_sync_claims(&harness, &sts, "2Gi").await;

    let sts = wait_request_done(&harness, "web", 120).await;
    let made = trigger_resizes(&harness, "web").await;
    assert_eq!(made.len(), 1);
    assert_eq!(
        made[0].spec.volumes[0].size, "3Gi",
        "never below the larger claim"
    );
    assert_eq!(made[0].phase(), Phase::Succeeded);
    assert_all_sized(&harness, &sts, 2, 3 << 30).await;
    harness.assert_data_intact(&seeded).await;
    harness.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_ferry_stopped_other_updates_still_succeed() {
    let mut harness = Harness::start_with_webhook("trig-down").await;
    let sts = stateful_set("web", 1, CLASS_EXPANDABLE, "1Gi");
    harness
        .ns
        .api::<StatefulSet>()
        .create(&PostParams::default(), &sts)
        .await
        .unwrap();
    harness.stop_operator().await;
    let port = harness
        .webhook_url
        .as_deref()
        .unwrap()
        .rsplit(':')
        .next()
        .unwrap()
        .to_string();
    wait_until("the webhook server to stop", 30, || async {
        std::net::TcpStream::connect(format!("127.0.0.1:{port}"))
            .is_err()
            .then_some(())
    })
    .await
    .unwrap();

    let mut scaled = manifest(&sts, "1Gi");
    scaled["spec"]["replicas"] = 2.into();
    scaled["metadata"]["labels"] = json!({"team": "db"});
    let (code, _, stderr) = kubectl_file(&harness, &scaled, &["apply"]).await;
    assert_eq!(
        code, 0,
        "an update without a template change needs no Ferry: {stderr}"
    );
    let live = harness.ns.api::<StatefulSet>().get("web").await.unwrap();
    assert_eq!(live.spec.unwrap().replicas, Some(2));
    // A template change with Ferry down fails as it would without Ferry; nothing else breaks.
    let (code, _, stderr) = kubectl_file(&harness, &manifest(&sts, "2Gi"), &["apply"]).await;
    assert_ne!(code, 0);
    // (v1.34 says "Forbidden: updates to statefulset spec ...", v1.37 "field is immutable".)
    assert!(
        stderr.contains("Forbidden") || stderr.contains("field is immutable"),
        "{stderr}"
    );
    harness.finish().await;
}

/// `curl` to the webhook: (HTTP status, body).
pub(crate) async fn post(url: &str, content_type: &str, body: Vec<u8>) -> (u16, String) {
    let dir = tempfile::tempdir().unwrap();
    let body_path = dir.path().join("body");
    std::fs::write(&body_path, body).unwrap();
    let output = tokio::process::Command::new("curl")
        // HTTP/1.1: a big body is announced and waits for `100 Continue`, so a refusal arrives
        // before the upload (over HTTP/2 curl would be cut off mid-upload and see no status).
        .args([
            "-sk",
            "--http1.1",
            "--max-time",
            "30",
            "-w",
            "\n%{http_code}",
            "-H",
        ])
        .arg(format!("Content-Type: {content_type}"))
        .arg("--data-binary")
        .arg(format!("@{}", body_path.display()))
        .arg(url)
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap();
    (code.parse().unwrap(), body.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_requests_get_a_4xx_and_the_webhook_keeps_serving() {
    let harness = Harness::start_with_webhook("trig-hostile").await;
    let url = format!("{}/mutate/statefulsets", harness.webhook_url.as_deref().unwrap());
    let review_without_old = serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": "1", "kind": {"group": "apps", "version": "v1", "kind": "StatefulSet"},
            "resource": {"group": "apps", "version": "v1", "resource": "statefulsets"},
            "operation": "UPDATE", "userInfo": {}, "object": {"metadata": {"name": "x"}},
        },
    }))
    .unwrap();
    let pod_review = String::from_utf8(review_without_old.clone())
        .unwrap()
        .replace("\"StatefulSet\"", "\"Pod\"");
    for (content_type, body, status, says) in [
        (
            "application/json",
            b"not json".to_vec(),
            400,
            "not an admission.k8s.io/v1 AdmissionReview",
        ),
        ("text/plain", b"{}".to_vec(), 415, "Content-Type"),
        ("application/json", review_without_old, 400, "oldObject"),
        ("application/json", pod_review.into_bytes(), 400, "not apps/Pod"),
        ("application/json", vec![b' '; 9 << 20], 413, "at most"),
    ] {
        let (code, text) = post(&url, content_type, body).await;
        assert_eq!(code, status, "{text}");
        assert!(text.contains(says), "{text} lacks {says:?}");
    }
    // A half-open TLS connection that never speaks does not block anyone else.
    let _silent =
        std::net::TcpStream::connect(url.trim_start_matches("https://").split('/').next().unwrap()).unwrap();
    let sts = stateful_set("web", 1, CLASS_EXPANDABLE, "1Gi");
    harness
        .ns
        .api::<StatefulSet>()
        .create(&PostParams::default(), &sts)
        .await
        .unwrap();
    let (code, _, stderr) = kubectl_file(&harness, &manifest(&sts, "2Gi"), &["apply"]).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("Ferry: volumeClaimTemplates change"), "{stderr}");
    harness.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_volume_resize_naming_what_does_not_exist_is_refused_at_admission() {
    let harness = Harness::start_with_webhook("trig-validate").await;
    let sts = stateful_set("web", 1, CLASS_EXPANDABLE, "1Gi");
    harness
        .ns
        .api::<StatefulSet>()
        .create(&PostParams::default(), &sts)
        .await
        .unwrap();
    for (name, spec, says) in [
        (
            "no-sts",
            json!({"statefulSetName": "nope", "volumes": [{"name": "data", "size": "2Gi"}]}),
            "StatefulSetNotFound: StatefulSet \"nope\" does not exist",
        ),
        (
            "no-template",
            json!({"statefulSetName": "web", "volumes": [{"name": "logs", "size": "2Gi"}]}),
            "VolumeTemplateNotFound: StatefulSet \"web\" has no volume claim template \"logs\" (it has: data)",
        ),
        (
            "no-class",
            json!({"statefulSetName": "web", "volumes": [{"name": "data", "size": "2Gi", "storageClassName": "gold"}]}),
            "StorageClassNotFound: StorageClass \"gold\" (volume \"data\") does not exist",
        ),
        (
            "no-attributes",
            json!({"statefulSetName": "web", "volumes": [{"name": "data", "size": "2Gi", "volumeAttributesClassName": "nope"}]}),
            "VolumeAttributesClassNotFound: VolumeAttributesClass \"nope\" (volume \"data\") does not exist",
        ),
        (
            "bad-image",
            json!({"statefulSetName": "web", "volumes": [{"name": "data", "size": "2Gi"}],
                "mover": {"image": "evil.example/miner:latest"}}),
            "MoverImageNotAllowed: spec.mover.image \"evil.example/miner:latest\" is not an image this operator runs movers from",
        ),
    ] {
        let error = harness.try_create_resize(name, spec).await.unwrap_err();
        let text = error.to_string();
        assert!(
            text.contains("volumeresizes.ferry.dev") && text.contains(says),
            "{text}"
        );
        assert!(
            harness
                .ns
                .api::<VolumeResize>()
                .get_opt(name)
                .await
                .unwrap()
                .is_none()
        );
    }
    // A good one passes.
    harness
        .create_resize(
            "fine",
            json!({"statefulSetName": "web", "volumes": [{"name": "data", "size": "2Gi"}], "dryRun": true}),
        )
        .await;
    harness.finish().await;
}

/// The control plane's helm (built by `scripts/k8s/build.sh` from the Go module proxy):
/// (exit code, stdout, stderr).
async fn helm(args: &[&str]) -> (i32, String, String) {
    let kubeconfig = ferry_testenv::cluster::kubeconfig_path().await.unwrap();
    let bin_dir = std::fs::read_to_string(ferry_testenv::paths::state_dir().join("bin-dir")).unwrap();
    let home = tempfile::tempdir().unwrap();
    let output = tokio::process::Command::new(std::path::Path::new(bin_dir.trim()).join("helm"))
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(args)
        // Helm keeps caches and config under these; a test's own keeps runs apart.
        .env("HELM_CACHE_HOME", home.path().join("cache"))
        .env("HELM_CONFIG_HOME", home.path().join("config"))
        .env("HELM_DATA_HOME", home.path().join("data"))
        .output()
        .await
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A chart with one StatefulSet whose `data` template size is the value `size`.
fn chart(dir: &std::path::Path, sts: &StatefulSet) {
    std::fs::create_dir_all(dir.join("templates")).unwrap();
    std::fs::write(
        dir.join("Chart.yaml"),
        "apiVersion: v2\nname: web\nversion: 0.1.0\n",
    )
    .unwrap();
    std::fs::write(dir.join("values.yaml"), "size: 1Gi\n").unwrap();
    let mut manifest = manifest(sts, "SIZE");
    manifest["metadata"]["annotations"] = json!({});
    let text = serde_json::to_string_pretty(&manifest)
        .unwrap()
        .replace("\"SIZE\"", "{{ .Values.size | quote }}");
    std::fs::write(dir.join("templates/statefulset.json"), text).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn helm_upgrade_with_a_new_size_resizes_and_a_repeat_upgrade_changes_nothing() {
    let harness = Harness::start_with_webhook("trig-helm").await;
    let sts = stateful_set("web", 2, CLASS_EXPANDABLE, "1Gi");
    let dir = tempfile::tempdir().unwrap();
    chart(dir.path(), &sts);
    let chart_dir = dir.path().display().to_string();
    let ns = harness.ns.name.clone();

    let (code, _, stderr) = helm(&[
        "install",
        "web",
        &chart_dir,
        "-n",
        &ns,
        "--wait",
        "--timeout",
        "120s",
    ])
    .await;
    assert_eq!(code, 0, "{stderr}");
    let sets = harness.ns.api::<StatefulSet>();
    wait_ready(&sets, "web", 2, 120).await.unwrap();
    let seeded = harness.seed_existing("web", 2, &["data"], 30).await;

    let (code, _, stderr) = helm(&["upgrade", "web", &chart_dir, "-n", &ns, "--set", "size=2Gi"]).await;
    assert_eq!(code, 0, "helm upgrade is accepted: {stderr}");
    let sts = wait_request_done(&harness, "web", 180).await;
    assert_all_sized(&harness, &sts, 2, 2 << 30).await;
    harness.assert_data_intact(&seeded).await;
    let made = trigger_resizes(&harness, "web").await;
    assert_eq!(made.len(), 1);
    assert_eq!(made[0].phase(), Phase::Succeeded);

    // The release and the cluster agree: upgrading again with the same value asks for nothing.
    let (code, _, stderr) = helm(&["upgrade", "web", &chart_dir, "-n", &ns, "--set", "size=2Gi"]).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(trigger_resizes(&harness, "web").await.len(), 1);
    let live = sets.get("web").await.unwrap();
    assert!(!live.annotations().contains_key(ANNOTATION_REQUESTED_TEMPLATES));
    let (code, _, stderr) = helm(&["uninstall", "web", "-n", &ns]).await;
    assert_eq!(code, 0, "{stderr}");
    harness.finish().await;
}

/// Finished VolumeResizes a trigger made pile up with every request; each new one prunes the
/// finished ones of the same StatefulSet and trigger past the newest five, oldest first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_request_prunes_the_oldest_finished_resizes_of_its_trigger() {
    let harness = Harness::start("trig-history").await;
    let seeded = harness
        .seeded(stateful_set("web", 1, CLASS_EXPANDABLE, "1Gi"), &["data"], 30)
        .await;
    let resizes = harness.ns.api::<VolumeResize>();
    // Six finished resizes the annotation trigger made for `web` earlier, a second apart (creation
    // times have a resolution of one second). They name a StatefulSet that does not exist, so none
    // ever touches `web` even before it is marked finished.
    for i in 0..6 {
        let name = format!("old-{i}");
        let resize: VolumeResize = serde_json::from_value(json!({
            "apiVersion": "ferry.dev/v1alpha1",
            "kind": "VolumeResize",
            "metadata": {"name": name, "labels": {
                "ferry.dev/trigger": "annotation",
                LABEL_STATEFUL_SET: "web",
                "app.kubernetes.io/managed-by": "ferry",
            }},
            "spec": {"statefulSetName": "ghost", "volumes": [{"name": "data", "size": "2Gi"}]},
        }))
        .unwrap();
        resizes.create(&PostParams::default(), &resize).await.unwrap();
        resizes
            .patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(&json!({"status": {"phase": "Succeeded"}})),
            )
            .await
            .unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    }

    annotate(&harness, "web", json!({"ferry.dev/resize.data": "2Gi"})).await;
    wait_request_done(&harness, "web", 120).await;
    let mut left: Vec<String> = trigger_resizes(&harness, "web")
        .await
        .iter()
        .map(ResourceExt::name_any)
        .filter(|name| name.starts_with("old-"))
        .collect();
    left.sort();
    assert_eq!(
        left,
        ["old-1", "old-2", "old-3", "old-4", "old-5"],
        "the oldest is pruned"
    );
    let made: Vec<VolumeResize> = trigger_resizes(&harness, "web")
        .await
        .into_iter()
        .filter(|resize| resize.spec.stateful_set_name == "web")
        .collect();
    assert_eq!(made.len(), 1, "the request's own resize is kept");
    assert_eq!(made[0].phase(), Phase::Succeeded);
    harness.assert_data_intact(&seeded).await;
    harness.finish().await;
}
