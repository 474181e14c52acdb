use super::*;
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::sync::Arc;

/// No VolumeResize in the cache.
const NO_RESIZES: &[&VolumeResize] = &[];
use serde_json::{Value, json};

fn stateful_set(size: &str, annotations: Option<Value>) -> Value {
    let mut metadata = json!({"name": "web", "namespace": "apps", "uid": "uid-1"});
    if let Some(annotations) = annotations {
        metadata["annotations"] = annotations;
    }
    json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": metadata,
        "spec": {
            "replicas": 2, "serviceName": "web", "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "i:2"}]}},
            "volumeClaimTemplates": [{
                "metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}},
            }],
        },
    })
}

fn review(kind: Value, operation: &str, object: Option<Value>, old: Option<Value>) -> Vec<u8> {
    let mut request = json!({
        "uid": "req-1", "kind": kind,
        "resource": {"group": "apps", "version": "v1", "resource": "statefulsets"},
        "name": "web", "namespace": "apps", "operation": operation,
        "userInfo": {"username": "alice"},
    });
    if let Some(object) = object {
        request["object"] = object;
    }
    if let Some(old) = old {
        request["oldObject"] = old;
    }
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request,
    }))
    .unwrap()
}

fn sts_kind() -> Value {
    json!({"group": "apps", "version": "v1", "kind": "StatefulSet"})
}

fn mutate(body: &[u8]) -> Result<AdmissionResponse, BadReview> {
    review_stateful_set(
        &parse(body)?,
        NO_RESIZES,
        &Governed::Known(BTreeMap::new()),
        TemplateEdits::CarriedOut,
    )
}

/// The update as the API server stores it after applying the response's patch.
fn patched(update: &Value, response: &AdmissionResponse) -> Value {
    let mut object = update.clone();
    let patch: json_patch::Patch = serde_json::from_slice(response.patch.as_ref().unwrap()).unwrap();
    json_patch::patch(&mut object, &patch).unwrap();
    object
}

#[test]
fn a_grow_keeps_the_stored_template_and_records_the_request() {
    for annotations in [None, Some(json!({"team": "db"}))] {
        let stored = stateful_set("1Gi", annotations.clone());
        let mut update = stateful_set("2Gi", annotations.clone());
        update["spec"]["template"]["spec"]["containers"][0]["image"] = "i:3".into();
        let response = mutate(&review(
            sts_kind(),
            "UPDATE",
            Some(update.clone()),
            Some(stored.clone()),
        ))
        .unwrap();
        assert!(response.allowed);
        let result = patched(&update, &response);
        assert_eq!(
            result["spec"]["volumeClaimTemplates"],
            stored["spec"]["volumeClaimTemplates"]
        );
        // Everything else in the update stays as the user wrote it.
        assert_eq!(
            result["spec"]["template"]["spec"]["containers"][0]["image"],
            "i:3"
        );
        let recorded: Vec<ferry_api::VolumeChange> = serde_json::from_str(
            result["metadata"]["annotations"][ANNOTATION_REQUESTED_TEMPLATES]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(recorded[0].size, "2Gi");
        if annotations.is_some() {
            assert_eq!(result["metadata"]["annotations"]["team"], "db");
        }
        let warning = &response.warnings.unwrap()[0];
        let name = resize_name("web", "uid-1", &recorded);
        assert!(
            warning.contains(&name) && warning.contains("data 1Gi → 2Gi"),
            "{warning}"
        );
    }
}

#[test]
fn the_manifest_size_below_an_autoscaled_template_is_kept_aside_without_a_request() {
    let stored = stateful_set("384Mi", None);
    let mut update = stateful_set("320Mi", None);
    update["spec"]["template"]["spec"]["containers"][0]["image"] = "i:3".into();
    let autoscaled = Governed::Known(BTreeMap::from([("data".to_string(), "db".to_string())]));
    let body = review(sts_kind(), "UPDATE", Some(update.clone()), Some(stored.clone()));
    let response = review_stateful_set(
        &parse(&body).unwrap(),
        NO_RESIZES,
        &autoscaled,
        TemplateEdits::CarriedOut,
    )
    .unwrap();
    assert!(response.allowed);
    let result = patched(&update, &response);
    assert_eq!(
        result["spec"]["volumeClaimTemplates"],
        stored["spec"]["volumeClaimTemplates"]
    );
    assert_eq!(
        result["spec"]["template"]["spec"]["containers"][0]["image"],
        "i:3"
    );
    assert!(
        result["metadata"]["annotations"].is_null(),
        "no request: {result}"
    );
    let warnings = response.warnings.unwrap();
    assert!(
        warnings[0].contains("autoscaled by VolumeAutoscaler db") && warnings[0].contains("320Mi"),
        "{warnings:?}"
    );
    // Growing past the autoscaler is a request like any other.
    let body = review(
        sts_kind(),
        "UPDATE",
        Some(stateful_set("1Gi", None)),
        Some(stored),
    );
    let response = review_stateful_set(
        &parse(&body).unwrap(),
        NO_RESIZES,
        &autoscaled,
        TemplateEdits::CarriedOut,
    )
    .unwrap();
    let result = patched(&stateful_set("1Gi", None), &response);
    assert!(result["metadata"]["annotations"][ANNOTATION_REQUESTED_TEMPLATES].is_string());
}

/// The VolumeAutoscalers could not be read: a smaller template is kept aside (fail closed) with a
/// warning that says why, never turned into a shrink.
#[test]
fn a_smaller_template_is_kept_aside_when_the_autoscalers_cannot_be_read() {
    let stored = stateful_set("384Mi", None);
    let update = stateful_set("320Mi", None);
    let unknown = Governed::Unknown("not read within 2 s".into());
    let body = review(sts_kind(), "UPDATE", Some(update.clone()), Some(stored.clone()));
    let response = review_stateful_set(
        &parse(&body).unwrap(),
        NO_RESIZES,
        &unknown,
        TemplateEdits::CarriedOut,
    )
    .unwrap();
    assert!(response.allowed);
    let result = patched(&update, &response);
    assert_eq!(
        result["spec"]["volumeClaimTemplates"],
        stored["spec"]["volumeClaimTemplates"]
    );
    assert!(
        result["metadata"]["annotations"].is_null(),
        "no request: {result}"
    );
    let warnings = response.warnings.unwrap();
    assert!(
        warnings[0].contains("could not read the VolumeAutoscalers: not read within 2 s"),
        "{warnings:?}"
    );
}

#[test]
fn updates_without_a_template_change_pass_untouched() {
    let stored = stateful_set("1Gi", None);
    let mut update = stateful_set("1024Mi", None);
    update["spec"]["replicas"] = 3.into();
    let response = mutate(&review(sts_kind(), "UPDATE", Some(update), Some(stored.clone()))).unwrap();
    assert!(response.allowed && response.patch.is_none() && response.warnings.is_none());
    let create = mutate(&review(sts_kind(), "CREATE", Some(stored), None)).unwrap();
    assert!(create.allowed && create.patch.is_none());
}

#[test]
fn a_change_nobody_can_make_is_denied_with_the_reason() {
    let stored = stateful_set("1Gi", None);
    let mut update = stateful_set("2Gi", None);
    update["spec"]["volumeClaimTemplates"][0]["spec"]["accessModes"] = json!(["ReadWriteMany"]);
    let response = mutate(&review(sts_kind(), "UPDATE", Some(update), Some(stored))).unwrap();
    assert!(!response.allowed);
    assert!(
        response.result.message.contains("only its storage size"),
        "{:?}",
        response.result
    );
}

#[test]
fn malformed_reviews_are_bad_requests_with_a_reason() {
    let stored = stateful_set("1Gi", None);
    let pod = json!({"group": "", "version": "v1", "kind": "Pod"});
    let mut not_a_review: Value = serde_json::from_slice(&review(sts_kind(), "UPDATE", None, None)).unwrap();
    not_a_review["kind"] = "Pod".into();
    for (body, expected) in [
        (b"not json".to_vec(), "not an admission.k8s.io/v1 AdmissionReview"),
        (b"{}".to_vec(), "AdmissionReview"),
        (
            serde_json::to_vec(&not_a_review).unwrap(),
            "expected kind AdmissionReview",
        ),
        (
            serde_json::to_vec(&json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}))
                .unwrap(),
            "carries no request",
        ),
        (
            review(pod, "UPDATE", Some(stored.clone()), Some(stored.clone())),
            "not /Pod",
        ),
        (
            review(sts_kind(), "UPDATE", Some(stored.clone()), None),
            "needs both object and oldObject",
        ),
        (
            review(
                sts_kind(),
                "UPDATE",
                Some(json!({"spec": {"replicas": "many"}})),
                Some(stored),
            ),
            "object is not a valid object",
        ),
    ] {
        match mutate(&body) {
            Err(BadReview(message)) => assert!(message.contains(expected), "{message} lacks {expected:?}"),
            Ok(response) => panic!("expected a bad request ({expected}), got {response:?}"),
        }
    }
}

proptest! {
    /// Garbage of any shape is answered, never a panic.
    #[test]
    fn garbage_never_panics(body in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = mutate(&body);
    }

    /// Reviews with arbitrary sizes and annotations either pass untouched, are denied, or are
    /// patched into an object whose templates are exactly the stored ones.
    #[test]
    fn a_patched_update_always_carries_the_stored_templates(
        size in "[0-9]{1,5}(Mi|Gi|k)?|[a-z]{1,3}",
        annotated in any::<bool>(),
    ) {
        let annotations = annotated.then(|| json!({"a/b~c": "x"}));
        let stored = stateful_set("1Gi", annotations.clone());
        let update = stateful_set(&size, annotations);
        if let Ok(response) = mutate(&review(sts_kind(), "UPDATE", Some(update.clone()), Some(stored.clone())))
            && response.patch.is_some()
        {
            let result = patched(&update, &response);
            prop_assert_eq!(&result["spec"]["volumeClaimTemplates"], &stored["spec"]["volumeClaimTemplates"]);
            if annotated {
                prop_assert_eq!(&result["metadata"]["annotations"]["a/b~c"], "x");
            }
        }
    }
}

fn resize(name: &str, uid: &str, phase: Option<ferry_api::Phase>) -> Arc<VolumeResize> {
    let mut resize: VolumeResize = serde_json::from_value(json!({
        "apiVersion": "ferry.dev/v1alpha1", "kind": "VolumeResize",
        "metadata": {"name": name, "namespace": "apps", "uid": uid},
        "spec": {"statefulSetName": "web", "volumes": [{"name": "data", "size": "2Gi"}]},
    }))
    .unwrap();
    resize.status = phase.map(|phase| ferry_api::VolumeResizeStatus {
        phase: Some(phase),
        ..Default::default()
    });
    Arc::new(resize)
}

#[test]
fn a_create_in_the_orphan_window_is_refused_unless_it_is_ferrys_own() {
    let running = resize("grow", "vr-uid", Some(ferry_api::Phase::Running));
    let create = |annotations: Option<Value>| {
        let body = review(sts_kind(), "CREATE", Some(stateful_set("2Gi", annotations)), None);
        review_stateful_set_create(&parse(&body).unwrap(), std::slice::from_ref(&running)).unwrap()
    };
    let foreign = create(None);
    assert!(!foreign.allowed);
    assert!(
        foreign
            .result
            .message
            .contains("Ferry is replacing StatefulSet web"),
        "{:?}",
        foreign.result
    );
    assert!(create(Some(json!({"ferry.dev/recreated-by": "vr-uid"}))).allowed);
    assert!(!create(Some(json!({"ferry.dev/recreated-by": "another"}))).allowed);
    // No resize under way: any create passes.
    let done = resize("grow", "vr-uid", Some(ferry_api::Phase::Succeeded));
    let body = review(sts_kind(), "CREATE", Some(stateful_set("2Gi", None)), None);
    assert!(
        review_stateful_set_create(&parse(&body).unwrap(), &[done])
            .unwrap()
            .allowed
    );
}

/// The seed's behaviour, for teams that relied on it: a smaller template is refused with the
/// reason; a larger one is still carried out, and an autoscaled one is still only kept aside.
#[test]
fn with_shrinks_refused_a_smaller_template_is_denied_and_growth_still_goes_through() {
    let refuse = |stored: &str, update: &str, governed: &Governed| {
        let body = review(
            sts_kind(),
            "UPDATE",
            Some(stateful_set(update, None)),
            Some(stateful_set(stored, None)),
        );
        review_stateful_set(
            &parse(&body).unwrap(),
            NO_RESIZES,
            governed,
            TemplateEdits::ShrinksRefused,
        )
        .unwrap()
    };
    let none = Governed::Known(BTreeMap::new());
    let denied = refuse("2Gi", "1Gi", &none);
    assert!(!denied.allowed);
    assert!(
        denied.result.message.contains("data 2Gi → 1Gi")
            && denied.result.message.contains("--refuse-template-shrinks"),
        "{}",
        denied.result.message
    );
    let grown = refuse("1Gi", "2Gi", &none);
    assert!(grown.allowed);
    assert!(
        patched(&stateful_set("2Gi", None), &grown)["metadata"]["annotations"]
            [ANNOTATION_REQUESTED_TEMPLATES]
            .is_string()
    );
    let autoscaled = Governed::Known(BTreeMap::from([("data".to_string(), "db".to_string())]));
    assert!(
        refuse("384Mi", "320Mi", &autoscaled).allowed,
        "kept aside, not refused"
    );
}
