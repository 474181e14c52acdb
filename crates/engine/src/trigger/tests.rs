use super::template_edit::{Governed, SetAside, TemplateEdit, template_edit, without_autoscaled_shrinks};
use super::*;
use ferry_api::names::*;
use k8s_openapi::api::apps::v1::StatefulSet;
use proptest::prelude::*;

fn template(name: &str, size: &str, class: Option<&str>) -> request::Template {
    request::Template {
        name: name.into(),
        size: Some(size.into()),
        storage_class: class.map(Into::into),
        attributes_class: None,
    }
}

fn claim(template: &str, ordinal: i32, size: &str, class: Option<&str>) -> request::Claim {
    request::Claim {
        template: template.into(),
        ordinal,
        size: Some(size.into()),
        storage_class: class.map(Into::into),
        attributes_class: None,
    }
}

/// `web` with templates data (1Gi, standard) and logs (1Gi, standard), two replicas, claims as
/// the templates say.
fn web() -> Subject {
    Subject {
        name: "web".into(),
        uid: "uid-1".into(),
        annotations: Default::default(),
        templates: vec![
            template("data", "1Gi", Some("standard")),
            template("logs", "1Gi", Some("standard")),
        ],
        claims: (0..2)
            .flat_map(|i| {
                [
                    claim("data", i, "1Gi", Some("standard")),
                    claim("logs", i, "1Gi", Some("standard")),
                ]
            })
            .collect(),
        replicas: 2,
        first_ordinal: 0,
    }
}

fn change(name: &str, size: &str, class: Option<&str>) -> VolumeChange {
    VolumeChange {
        name: name.into(),
        size: size.into(),
        storage_class_name: class.map(Into::into),
        volume_attributes_class_name: None,
    }
}

fn with(mut subject: Subject, key: &str, value: &str) -> Subject {
    subject.annotations.insert(key.into(), value.into());
    subject
}

fn summary(name: &str, phase: Phase, volumes: Vec<VolumeChange>) -> ResizeSummary {
    ResizeSummary {
        name: name.into(),
        phase,
        volumes,
        message: Some("it broke".into()),
        progress: Some("1/2".into()),
    }
}

/// The subject after the decision's annotation writes.
fn apply(mut subject: Subject, decision: &Decision) -> Subject {
    for (key, value) in &decision.annotations {
        match value {
            Some(value) => subject.annotations.insert(key.clone(), value.clone()),
            None => subject.annotations.remove(key),
        };
    }
    subject
}

fn edited() -> Subject {
    with(
        web(),
        ANNOTATION_REQUESTED_TEMPLATES,
        r#"[{"name":"data","size":"2Gi"}]"#,
    )
}

fn status(decision: &Decision) -> Option<&str> {
    decision
        .annotations
        .get(ANNOTATION_RESIZE_STATUS)
        .and_then(|v| v.as_deref())
}

#[test]
fn an_edit_kept_aside_becomes_one_resize_named_by_uid_and_changes() {
    let decision = decide(&edited(), &[]);
    let created = decision.create.clone().unwrap();
    assert_eq!(
        created.name,
        resize_name("web", "uid-1", &[change("data", "2Gi", None)])
    );
    assert!(created.name.starts_with("web-resize-") && created.name.len() <= 63);
    assert_eq!(created.trigger, "template-edit");
    assert_eq!(created.spec.volumes, vec![change("data", "2Gi", None)]);
    assert_eq!(created.spec.stateful_set_name, "web");
    assert_eq!(
        decision.annotations.get(ANNOTATION_RESIZE_BY),
        Some(&Some(created.name.clone()))
    );
    assert!(status(&decision).unwrap().starts_with("Running: "));
    assert_eq!(decision.notices[0].reason, REASON_REQUESTED);
}

#[test]
fn the_same_request_again_while_it_runs_changes_nothing() {
    let first = decide(&edited(), &[]);
    let name = first.create.clone().unwrap().name;
    let after = apply(edited(), &first);
    let running = summary(&name, Phase::Pending, vec![change("data", "2048Mi", None)]);
    let again = decide(&after, std::slice::from_ref(&running));
    assert_eq!(again.create, None);
    // Progress shows; no new Event for the same state.
    assert!(again.notices.is_empty(), "{again:?}");
    let settled = apply(after, &again);
    assert_eq!(decide(&settled, &[running]), Decision::default());
}

#[test]
fn success_removes_the_request_and_says_so_once() {
    let first = decide(&edited(), &[]);
    let name = first.create.clone().unwrap().name;
    let after = apply(edited(), &first);
    let done = summary(&name, Phase::Succeeded, vec![change("data", "2Gi", None)]);
    let decision = decide(&after, std::slice::from_ref(&done));
    assert_eq!(
        decision.annotations.get(ANNOTATION_REQUESTED_TEMPLATES),
        Some(&None)
    );
    assert_eq!(decision.annotations.get(ANNOTATION_RESIZE_BY), Some(&None));
    assert!(status(&decision).unwrap().starts_with("Succeeded: "));
    assert_eq!(decision.notices[0].reason, REASON_SUCCEEDED);
    let finished = apply(after, &decision);
    assert_eq!(decide(&finished, &[done]), Decision::default());
}

#[test]
fn a_failure_keeps_the_request_and_makes_no_second_resize_until_deleted() {
    let first = decide(&edited(), &[]);
    let name = first.create.clone().unwrap().name;
    let after = apply(edited(), &first);
    let failed = summary(&name, Phase::Failed, vec![change("data", "2Gi", None)]);
    let decision = decide(&after, std::slice::from_ref(&failed));
    assert_eq!(decision.create, None);
    assert!(!decision.annotations.contains_key(ANNOTATION_REQUESTED_TEMPLATES));
    let text = status(&decision).unwrap();
    assert!(text.starts_with("Failed: ") && text.contains("it broke") && text.contains("delete it"));
    assert!(decision.notices[0].warning);
    let after = apply(after, &decision);
    assert_eq!(decide(&after, std::slice::from_ref(&failed)), Decision::default());
    // Deleting the failed VolumeResize is the retry.
    assert_eq!(decide(&after, &[]).create.unwrap().name, name);
}

#[test]
fn a_crash_between_recording_the_name_and_creating_is_finished_by_the_next_pass() {
    let first = decide(&edited(), &[]);
    let after = apply(edited(), &first);
    assert_eq!(decide(&after, &[]).create, first.create);
}

#[test]
fn a_new_request_waits_for_the_running_resize() {
    let running = summary("web-by-hand", Phase::Running, vec![change("logs", "5Gi", None)]);
    let decision = decide(&edited(), std::slice::from_ref(&running));
    assert_eq!(decision.create, None);
    assert!(
        status(&decision)
            .unwrap()
            .starts_with("Waiting: VolumeResize web-by-hand")
    );
    // When it is done, the waiting request starts.
    let after = apply(edited(), &decision);
    let done = summary("web-by-hand", Phase::Succeeded, vec![change("logs", "5Gi", None)]);
    assert!(decide(&after, &[done]).create.is_some());
}

#[test]
fn a_running_resize_for_the_same_change_is_adopted() {
    let by_hand = summary("mine", Phase::Running, vec![change("data", "2Gi", None)]);
    let decision = decide(&edited(), &[by_hand]);
    assert_eq!(decision.create, None);
    assert_eq!(
        decision.annotations.get(ANNOTATION_RESIZE_BY),
        Some(&Some("mine".into()))
    );
}

#[test]
fn an_annotation_already_satisfied_is_removed_without_a_resize() {
    let subject = with(web(), "ferry.dev/resize.data", "1024Mi");
    let decision = decide(&subject, &[]);
    assert_eq!(decision.create, None);
    assert_eq!(decision.annotations.get("ferry.dev/resize.data"), Some(&None));
    assert!(status(&decision).unwrap().starts_with("Unchanged: "));
}

#[test]
fn annotations_by_name_combine_size_and_class() {
    let subject = with(
        with(web(), "ferry.dev/resize.data", "3Gi"),
        "ferry.dev/storage-class.logs",
        "fast",
    );
    let created = decide(&subject, &[]).create.unwrap();
    assert_eq!(
        created.spec.volumes,
        vec![change("data", "3Gi", None), change("logs", "1Gi", Some("fast"))]
    );
    assert_eq!(created.trigger, "annotation");
}

/// `ferry.dev/attributes-class.<template>` asks for the class at the template's size; once the
/// template and every running claim name it, the request is satisfied.
#[test]
fn an_attributes_class_annotation_is_a_change_of_class_at_the_same_size() {
    let subject = with(web(), "ferry.dev/attributes-class.data", "gold");
    let created = decide(&subject, &[]).create.unwrap();
    let mut expected = change("data", "1Gi", None);
    expected.volume_attributes_class_name = Some("gold".into());
    assert_eq!(created.spec.volumes, vec![expected]);
    assert_eq!(created.trigger, "annotation");

    let mut done = subject.clone();
    for template in done.templates.iter_mut().filter(|t| t.name == "data") {
        template.attributes_class = Some("gold".into());
    }
    for claim in done.claims.iter_mut().filter(|c| c.template == "data") {
        claim.attributes_class = Some("gold".into());
    }
    let decision = decide(&done, &[]);
    assert_eq!(decision.create, None);
    assert_eq!(
        decision.annotations.get("ferry.dev/attributes-class.data"),
        Some(&None)
    );
    let empty = with(web(), "ferry.dev/attributes-class.data", "");
    assert!(decide(&empty, &[]).create.is_none());
}

#[test]
fn the_seed_annotation_names_the_template_by_index_and_is_deprecated() {
    let subject = with(web(), "resize-statefulset-operator/resize-1", "4Gi");
    let decision = decide(&subject, &[]);
    let created = decision.create.clone().unwrap();
    assert_eq!(created.spec.volumes, vec![change("logs", "4Gi", None)]);
    assert_eq!(created.trigger, "seed-annotation");
    let deprecated = decision
        .notices
        .iter()
        .find(|n| n.reason == REASON_DEPRECATED)
        .unwrap();
    assert!(
        deprecated.message.contains("ferry.dev/resize.logs"),
        "{deprecated:?}"
    );
}

#[test]
fn bad_requests_are_reported_and_create_nothing() {
    for (key, value, expected) in [
        (
            "resize-statefulset-operator/resize-7",
            "4Gi",
            "no volume claim template at index",
        ),
        (
            "ferry.dev/resize.nope",
            "4Gi",
            "has no volume claim template \"nope\" (it has: data, logs)",
        ),
        ("ferry.dev/resize.data", "lots", "lots"),
        ("ferry.dev/resize.data", "0", "greater than zero"),
        (ANNOTATION_REQUESTED_TEMPLATES, "{not json", "not a list"),
    ] {
        let decision = decide(&with(web(), key, value), &[]);
        assert_eq!(decision.create, None, "{key}");
        let text = status(&decision).unwrap();
        assert!(
            text.starts_with("Invalid: ") && text.contains(expected),
            "{key}: {text}"
        );
        assert_eq!(decision.notices[0].reason, REASON_INVALID);
    }
}

#[test]
fn two_annotations_that_disagree_are_refused() {
    let subject = with(
        with(web(), "ferry.dev/resize.data", "3Gi"),
        "resize-statefulset-operator/resize-0",
        "5Gi",
    );
    let text = status(&decide(&subject, &[])).unwrap().to_string();
    assert!(text.contains("keep one"), "{text}");
}

#[test]
fn drift_resizes_running_claims_to_the_template_once() {
    let mut subject = with(web(), ANNOTATION_SYNC_CLAIMS, "true");
    subject.templates[0] = template("data", "2Gi", Some("standard"));
    // Ordinal 2 is scaled down: no pod uses it, so it is not resized now.
    subject.claims.push(claim("data", 2, "1Gi", Some("standard")));
    let decision = decide(&subject, &[]);
    let created = decision.create.clone().unwrap();
    assert_eq!(created.trigger, "drift");
    assert_eq!(created.spec.volumes, vec![change("data", "2Gi", None)]);
    // Done, yet a claim still differs (say the engine left it): never a second resize.
    let after = apply(subject, &decision);
    let done = summary(&created.name, Phase::Succeeded, created.spec.volumes.clone());
    let next = decide(&after, std::slice::from_ref(&done));
    assert_eq!(next.create, None);
    assert!(!next.annotations.contains_key(ANNOTATION_RESIZE_BY));
    assert_eq!(decide(&apply(after, &next), &[done]), Decision::default());
}

/// A claim expanded by hand beyond its template is never shrunk by drift: alone it is no drift, and
/// when another claim must grow, everything grows to the larger size.
#[test]
fn drift_never_shrinks_a_claim_larger_than_the_template() {
    let mut subject = with(web(), ANNOTATION_SYNC_CLAIMS, "true");
    subject.claims[2] = claim("data", 1, "3Gi", Some("standard"));
    assert_eq!(
        decide(&subject, &[]),
        Decision::default(),
        "a larger claim alone is no drift"
    );
    subject.templates[0] = template("data", "2Gi", Some("standard"));
    let created = decide(&subject, &[]).create.unwrap();
    assert_eq!(created.spec.volumes, vec![change("data", "3Gi", None)]);
    // A class change of a larger claim keeps its size too.
    let mut moved = with(web(), ANNOTATION_SYNC_CLAIMS, "true");
    moved.claims[2] = claim("data", 1, "3Gi", Some("standard"));
    moved.templates[0] = template("data", "1Gi", Some("fast"));
    let created = decide(&moved, &[]).create.unwrap();
    assert_eq!(created.spec.volumes, vec![change("data", "3Gi", Some("fast"))]);
}

/// `ferry.dev/sync-claims: "exact"` asks for the template's size exactly, a shrink included.
#[test]
fn exact_drift_shrinks_to_the_template_when_asked() {
    let mut subject = with(web(), ANNOTATION_SYNC_CLAIMS, "exact");
    subject.claims[2] = claim("data", 1, "3Gi", Some("standard"));
    let created = decide(&subject, &[]).create.unwrap();
    assert_eq!(created.spec.volumes, vec![change("data", "1Gi", None)]);
}

/// Any other value is reported, and nothing is resized.
#[test]
fn an_unknown_sync_claims_value_is_refused() {
    let mut subject = with(web(), ANNOTATION_SYNC_CLAIMS, "yes");
    subject.templates[0] = template("data", "2Gi", Some("standard"));
    let decision = decide(&subject, &[]);
    assert_eq!(decision.create, None);
    let text = status(&decision).unwrap().to_string();
    assert!(
        text.contains("ferry.dev/sync-claims") && text.contains("\"yes\""),
        "{text}"
    );
}

#[test]
fn without_sync_claims_drift_is_left_alone() {
    let mut subject = web();
    subject.templates[0] = template("data", "2Gi", Some("standard"));
    assert_eq!(decide(&subject, &[]), Decision::default());
}

#[test]
fn drift_in_class_names_the_template_class() {
    let mut subject = with(web(), ANNOTATION_SYNC_CLAIMS, "true");
    subject.templates[1] = template("logs", "1Gi", Some("fast"));
    let created = decide(&subject, &[]).create.unwrap();
    assert_eq!(created.spec.volumes, vec![change("logs", "1Gi", Some("fast"))]);
}

#[test]
fn names_are_short_and_differ_by_uid_and_change() {
    let long = "a".repeat(60);
    let name = resize_name(&long, "u", &[change("data", "1Gi", None)]);
    assert!(name.len() <= 63, "{name}");
    assert_eq!(
        resize_name("web", "u", &[change("data", "1Gi", None)]),
        resize_name("web", "u", &[change("data", "1024Mi", None)])
    );
    assert_ne!(
        resize_name("web", "u", &[change("data", "1Gi", None)]),
        resize_name("web", "v", &[change("data", "1Gi", None)])
    );
    assert_ne!(
        resize_name("web", "u", &[change("data", "1Gi", None)]),
        resize_name("web", "u", &[change("data", "1Gi", Some("fast"))])
    );
}

// --- the webhook's template comparison ---

fn sts(templates: serde_json::Value) -> StatefulSet {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": "web"},
        "spec": {"selector": {}, "serviceName": "web", "template": {}, "volumeClaimTemplates": templates},
    }))
    .unwrap()
}

fn pvc(name: &str, size: &str, class: Option<&str>) -> serde_json::Value {
    let mut spec = serde_json::json!({
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": size}},
    });
    if let Some(class) = class {
        spec["storageClassName"] = class.into();
    }
    serde_json::json!({"metadata": {"name": name}, "spec": spec})
}

#[test]
fn a_size_or_class_edit_is_a_resize() {
    let stored = sts(serde_json::json!([
        pvc("data", "1Gi", Some("a")),
        pvc("logs", "1Gi", Some("a"))
    ]));
    let update = sts(serde_json::json!([
        pvc("data", "512Mi", Some("a")),
        pvc("logs", "1Gi", Some("b"))
    ]));
    assert_eq!(
        template_edit(&stored, &update),
        TemplateEdit::Resize(vec![
            change("data", "512Mi", None),
            change("logs", "1Gi", Some("b"))
        ])
    );
}

/// A template's new attributes class is a resize of that class alone; removing one is refused
/// (Kubernetes keeps a volume's class once it has one).
#[test]
fn an_attributes_class_edit_is_a_resize_and_removing_one_is_refused() {
    let with_class = |class: &str| {
        let mut template = pvc("data", "1Gi", Some("a"));
        template["spec"]["volumeAttributesClassName"] = class.into();
        template
    };
    let stored = sts(serde_json::json!([with_class("gold")]));
    let mut expected = change("data", "1Gi", None);
    expected.volume_attributes_class_name = Some("platinum".into());
    assert_eq!(
        template_edit(&stored, &sts(serde_json::json!([with_class("platinum")]))),
        TemplateEdit::Resize(vec![expected])
    );
    match template_edit(&stored, &sts(serde_json::json!([pvc("data", "1Gi", Some("a"))]))) {
        TemplateEdit::Refuse(message) => {
            assert!(
                message.contains("removes volumeAttributesClassName gold"),
                "{message}"
            )
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn the_same_quantity_written_differently_is_no_change() {
    let stored = sts(serde_json::json!([pvc("data", "1Gi", None)]));
    let update = sts(serde_json::json!([pvc("data", "1024Mi", None)]));
    assert_eq!(template_edit(&stored, &update), TemplateEdit::Unchanged);
    assert_eq!(template_edit(&stored, &stored), TemplateEdit::Unchanged);
}

#[test]
fn changes_nobody_can_make_are_refused_with_the_reason() {
    let stored = sts(serde_json::json!([pvc("data", "1Gi", Some("a"))]));
    let mut other_mode = pvc("data", "2Gi", Some("a"));
    other_mode["spec"]["accessModes"] = serde_json::json!(["ReadWriteMany"]);
    for (update, expected) in [
        (
            serde_json::json!([other_mode]),
            "only its storage size, storageClassName and volumeAttributesClassName",
        ),
        (
            serde_json::json!([pvc("data", "1Gi", Some("a")), pvc("new", "1Gi", None)]),
            "cannot be added",
        ),
        (serde_json::json!([]), "cannot be added, removed"),
        (
            serde_json::json!([pvc("data", "2Gi", None)]),
            "removes storageClassName",
        ),
        (
            serde_json::json!([pvc("data", "0", Some("a"))]),
            "greater than zero",
        ),
    ] {
        match template_edit(&stored, &sts(update)) {
            TemplateEdit::Refuse(message) => assert!(message.contains(expected), "{message}"),
            other => panic!("expected a refusal with {expected:?}, got {other:?}"),
        }
    }
}

proptest! {
    /// Whatever the sizes and classes, the comparison answers (never panics), and a Resize
    /// records exactly the templates whose size or class differ, with the update's values.
    #[test]
    fn template_edit_records_exactly_what_changed(
        edits in proptest::collection::vec(
            (0u64..4, proptest::option::of(0u8..3), "[0-9]{1,4}(Ki|Mi|Gi|k|M|G|)?|[a-z]{0,3}"),
            1..4,
        ),
    ) {
        let classes = ["a", "b", "c"];
        let stored: Vec<_> = edits.iter().enumerate()
            .map(|(i, _)| pvc(&format!("t{i}"), "1Gi", Some("a"))).collect();
        let update: Vec<_> = edits.iter().enumerate()
            .map(|(i, (_, class, size))| pvc(&format!("t{i}"), size, class.map(|c| classes[c as usize]))).collect();
        let result = template_edit(&sts(stored.into()), &sts(update.into()));
        if let TemplateEdit::Resize(changes) = result {
            for change in &changes {
                let index: usize = change.name[1..].parse().unwrap();
                let (_, class, size) = &edits[index];
                prop_assert_eq!(&change.size, size);
                prop_assert_eq!(change.storage_class_name.as_deref(), class.filter(|c| *c != 0).map(|c| classes[c as usize]));
            }
        }
    }

    /// Driving `decide` to its fixed point from any mix of annotations creates at most one
    /// VolumeResize, and the writes then stop.
    #[test]
    fn decide_settles_after_one_create(
        resize in proptest::option::of("[0-9]{1,2}Gi"),
        class in proptest::option::of("(fast|standard)"),
        seed in proptest::option::of("[0-9]{1,2}Gi"),
        edit in proptest::option::of("[0-9]{1,2}Gi"),
        phase in proptest::sample::select(vec![Phase::Pending, Phase::Running, Phase::Succeeded, Phase::Failed]),
    ) {
        let mut subject = web();
        if let Some(size) = resize { subject.annotations.insert("ferry.dev/resize.data".into(), size); }
        if let Some(class) = class { subject.annotations.insert("ferry.dev/storage-class.data".into(), class); }
        if let Some(size) = seed { subject.annotations.insert("resize-statefulset-operator/resize-0".into(), size); }
        if let Some(size) = edit {
            subject.annotations.insert(ANNOTATION_REQUESTED_TEMPLATES.into(), format!(r#"[{{"name":"data","size":"{size}"}}]"#));
        }
        let mut resizes: Vec<ResizeSummary> = Vec::new();
        for _ in 0..6 {
            let decision = decide(&subject, &resizes);
            if let Some(created) = &decision.create {
                prop_assert!(resizes.is_empty(), "a second resize: {created:?}");
                resizes.push(summary(&created.name, phase, created.spec.volumes.clone()));
            }
            subject = apply(subject, &decision);
        }
        prop_assert_eq!(decide(&subject, &resizes), Decision::default());
    }
}

#[test]
fn resolved_drift_reports_the_outcome_then_forgets_the_resize() {
    let mut subject = with(web(), ANNOTATION_SYNC_CLAIMS, "true");
    subject.templates[0] = template("data", "2Gi", Some("standard"));
    let first = decide(&subject, &[]);
    let created = first.create.clone().unwrap();
    let mut after = apply(subject, &first);
    // The resize grew every claim: no drift is left to read.
    for claim in after.claims.iter_mut().filter(|c| c.template == "data") {
        claim.size = Some("2Gi".into());
    }
    let done = summary(&created.name, Phase::Succeeded, created.spec.volumes.clone());
    let decision = decide(&after, std::slice::from_ref(&done));
    assert!(
        status(&decision).unwrap().starts_with("Succeeded: "),
        "{decision:?}"
    );
    assert_eq!(decision.annotations.get(ANNOTATION_RESIZE_BY), Some(&None));
    assert_eq!(decision.notices[0].reason, REASON_SUCCEEDED);
    assert_eq!(decide(&apply(after, &decision), &[done]), Decision::default());
}

#[test]
fn a_smaller_size_for_an_autoscaled_template_is_set_aside_and_the_rest_kept() {
    let stored = sts(serde_json::json!([
        pvc("data", "384Mi", Some("a")),
        pvc("logs", "1Gi", Some("a")),
        pvc("wal", "1Gi", Some("a"))
    ]));
    let changes = vec![
        change("data", "320Mi", None),
        change("logs", "512Mi", None),
        change("wal", "2Gi", None),
    ];
    let autoscaled = Governed::Known(std::collections::BTreeMap::from([
        ("data".to_string(), "db".to_string()),
        ("wal".to_string(), "db".to_string()),
    ]));
    let (kept, set_aside) = without_autoscaled_shrinks(&stored, changes, &autoscaled);
    // Not autoscaled: a shrink like any other. Autoscaled but larger: a grow like any other.
    assert_eq!(
        kept,
        vec![change("logs", "512Mi", None), change("wal", "2Gi", None)]
    );
    assert_eq!(
        set_aside,
        vec![SetAside {
            template: "data".into(),
            because: "is autoscaled by VolumeAutoscaler db".into(),
            requested: "320Mi".into(),
            live: "384Mi".into(),
        }]
    );
    // A class change of an autoscaled template is the user's request.
    let (kept, set_aside) =
        without_autoscaled_shrinks(&stored, vec![change("data", "320Mi", Some("b"))], &autoscaled);
    assert_eq!((kept.len(), set_aside.len()), (1, 0));
    // Autoscalers unreadable: every shrink is kept aside (fail closed), a grow still goes on.
    let unknown = Governed::Unknown("timed out".into());
    let changes = vec![change("logs", "512Mi", None), change("wal", "2Gi", None)];
    let (kept, set_aside) = without_autoscaled_shrinks(&stored, changes, &unknown);
    assert_eq!(kept, vec![change("wal", "2Gi", None)]);
    assert_eq!(set_aside.len(), 1);
    assert_eq!(set_aside[0].template, "logs");
    assert!(
        set_aside[0]
            .because
            .contains("could not read the VolumeAutoscalers: timed out")
    );
}
