//! pvc-autoresizer's setup of its README (crates/cli/tests/fixtures/import/autoresizer.yaml)
//! translated: the VolumeAutoscaler's fields and the notes, and each claim it would not grow.

use super::super::{Report, System, Translation, documents, translate};
use serde_json::json;

const AUTORESIZER: &str = include_str!("../../tests/fixtures/import/autoresizer.yaml");

fn report(text: &str) -> Report {
    let objects = documents::objects(text, "f.yaml").unwrap();
    translate(&objects, "f.yaml").unwrap()
}

fn has_note(translation: &Translation, words: &str) -> bool {
    translation.notes.iter().any(|note| note.contains(words))
}

/// The StatefulSet's translation (the StorageClass's comes first).
fn of_db(report: &Report) -> &Translation {
    report
        .translations
        .iter()
        .find(|t| t.source.kind == "StatefulSet")
        .unwrap()
}

#[test]
fn the_readmes_claims_become_an_autoscaler_with_the_same_policy() {
    let report = report(AUTORESIZER);
    assert_eq!(report.translations.len(), 2, "{report:#?}");
    let class = &report.translations[0];
    assert_eq!(class.system, Some(System::Autoresizer));
    assert!(class.objects.is_empty() && has_note(class, "remove this annotation"));
    let db = of_db(&report);
    assert_eq!(db.system, Some(System::Autoresizer));
    let [object] = db.objects.as_slice() else {
        panic!("{db:#?}")
    };
    let object = object.to_value().unwrap();
    assert_eq!(object["kind"], "VolumeAutoscaler");
    assert_eq!(object["metadata"]["name"], "db-autoresizer");
    assert_eq!(object["spec"]["statefulSetName"], "db");
    // 20% free is 80% used; the logs template has no annotation and is left out.
    assert_eq!(
        object["spec"]["volumes"],
        json!([{"name": "data", "threshold": 80, "inodesThreshold": 80, "increase": "20Gi", "maxSize": "100Gi"}])
    );
    assert!(has_note(db, "Ferry differs"), "{:?}", db.notes);
    assert!(has_note(db, "ManagedByPvcAutoresizer"), "{:?}", db.notes);
    assert!(has_note(
        db,
        "or resize.topolvm.io/enabled from StorageClass topolvm-provisioner"
    ));
    // Its own record of the last grow is no policy: no note about it.
    assert!(!has_note(db, "pre_capacity_bytes"), "{:?}", db.notes);
}

#[test]
fn missing_annotations_take_pvc_autoresizers_defaults_and_a_free_quantity_is_read_at_todays_size() {
    let text: String = AUTORESIZER
        .lines()
        .filter(|line| !line.contains("inodes-threshold") && !line.contains("increase"))
        .map(|line| format!("{line}\n"))
        .collect();
    let text = text.replace(
        "resize.topolvm.io/threshold: 20%",
        "resize.topolvm.io/threshold: 5Gi",
    );
    let report = report(&text);
    let object = of_db(&report).objects[0].to_value().unwrap();
    // 5Gi free of the largest claim's 50Gi: 90% used. Defaults 10%: 90% of inodes, 10% steps.
    assert_eq!(
        object["spec"]["volumes"][0],
        json!({"name": "data", "threshold": 90, "inodesThreshold": 90, "increase": "10%", "maxSize": "100Gi"})
    );
    assert!(has_note(of_db(&report), "5Gi free on today's 50Gi is 90% used"));
}

#[test]
fn claims_pvc_autoresizer_would_not_grow_are_not_imported_and_say_why() {
    let not_imported = |text: &str, why: &str| {
        let report = report(text);
        let db = of_db(&report);
        assert!(db.objects.is_empty(), "{db:#?}");
        assert!(has_note(db, why), "{why}: {:?}", db.notes);
    };
    let disabled = AUTORESIZER.replace(
        "resize.topolvm.io/enabled: \"true\"",
        "resize.topolvm.io/enabled: \"false\"",
    );
    not_imported(&disabled, "is not annotated resize.topolvm.io/enabled: \"true\"");
    let no_limit = AUTORESIZER.replace(
        "resize.topolvm.io/storage_limit: 100Gi",
        "resize.topolvm.io/storage_limit: \"0\"",
    );
    not_imported(&no_limit, "no positive resize.topolvm.io/storage_limit");
    let bad_inodes = AUTORESIZER.replace("inodes-threshold: 20%", "inodes-threshold: 1Gi");
    not_imported(
        &bad_inodes,
        "resize.topolvm.io/inodes-threshold: \"1Gi\" is not a percent",
    );
    let one_differs = AUTORESIZER.replacen(
        "resize.topolvm.io/increase: 20Gi\n    resize.topolvm.io/pre",
        "resize.topolvm.io/increase: 5Gi\n    resize.topolvm.io/pre",
        1,
    );
    not_imported(&one_differs, "its claims in the file carry different");
}

#[test]
fn without_the_class_or_the_claims_the_template_speaks_and_the_notes_say_so() {
    let sts_only: String = AUTORESIZER
        .split("---\n")
        .filter(|doc| doc.contains("kind: StatefulSet"))
        .collect();
    let report = report(&sts_only);
    let db = of_db(&report);
    assert_eq!(db.objects.len(), 1);
    assert!(
        has_note(db, "StorageClass topolvm-provisioner is not in the file"),
        "{:?}",
        db.notes
    );
    let grouped = AUTORESIZER.replace(
        "resize.topolvm.io/increase: 20Gi\n",
        "resize.topolvm.io/increase: 20Gi\n    resize.topolvm.io/initial-resize-group-by: app\n",
    );
    let report = self::report(&grouped);
    assert!(has_note(
        of_db(&report),
        "not carried over: resize.topolvm.io/initial-resize-group-by: app"
    ));
}
