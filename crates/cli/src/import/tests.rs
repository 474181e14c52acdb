//! Each system's own example objects (crates/cli/tests/fixtures/import/) translated: the fields
//! of the Ferry objects and the notes.

use super::*;
use ferry_api::ExtendedStatefulSet;
use serde_json::json;

fn report(text: &str) -> Report {
    let objects = documents::objects(text, "f.yaml").unwrap();
    translate(&objects, "f.yaml").unwrap()
}

fn only(report: &Report) -> (serde_json::Value, &Translation) {
    let translation = &report.translations[0];
    assert_eq!(report.translations.len(), 1, "{report:#?}");
    assert_eq!(translation.objects.len(), 1, "{translation:#?}");
    (translation.objects[0].to_value().unwrap(), translation)
}

fn has_note(translation: &Translation, words: &str) -> bool {
    translation.notes.iter().any(|note| note.contains(words))
}

const VOLMIG: &str = include_str!("../../tests/fixtures/import/volmig.yaml");
const QUARKS: &str = include_str!("../../tests/fixtures/import/quarks.yaml");
const PONG: &str = include_str!("../../tests/fixtures/import/pong.yaml");
const VSHN_IDLE: &str = include_str!("../../tests/fixtures/import/vshn-idle.yaml");
const VSHN_BACKUP: &str = include_str!("../../tests/fixtures/import/vshn-backup.yaml");
const VSHN_RESTORE: &str = include_str!("../../tests/fixtures/import/vshn-restore.yaml");
const VSHN_FAILED: &str = include_str!("../../tests/fixtures/import/vshn-failed.yaml");

#[test]
fn volmigs_example_is_the_same_request() {
    let report = report(VOLMIG);
    let (object, translation) = only(&report);
    assert_eq!(translation.system, Some(System::Volmig));
    assert_eq!(object["apiVersion"], "ferry.dev/v1alpha1");
    assert_eq!(object["kind"], "VolumeResize");
    assert_eq!(object["metadata"]["name"], "resize-my-app");
    assert_eq!(
        object["metadata"]["annotations"][ANNOTATION_IMPORTED_FROM],
        "storage.maurice.fr/v1alpha1 VolumeResize resize-my-app"
    );
    assert_eq!(object["spec"]["statefulSetName"], "my-app");
    assert_eq!(
        object["spec"]["volumes"],
        json!([{"name": "data", "size": "500Mi"}, {"name": "logs", "size": "100Mi", "storageClassName": "standard"}])
    );
    assert_eq!(
        (&object["spec"]["strategy"], &object["spec"]["mode"]),
        (&json!("Auto"), &json!("Rolling"))
    );
    assert!(object.get("status").is_none());
    assert!(translation.notes.is_empty(), "{:?}", translation.notes);
}

#[test]
fn a_volmig_resize_under_way_or_done_is_not_imported() {
    let with_status = |status: serde_json::Value| {
        let mut object: serde_json::Value = yaml_serde::from_str(VOLMIG).unwrap();
        object["status"] = status;
        translate(&[object], "f").unwrap().translations.remove(0)
    };
    let running = with_status(json!({"phase": "Syncing", "currentReplica": 1, "currentVolume": "data"}));
    assert!(running.objects.is_empty());
    assert!(
        has_note(&running, "status.phase Syncing") && has_note(&running, "replica 1, volume data"),
        "{:?}",
        running.notes
    );
    let failed = with_status(
        json!({"phase": "Failed", "message": "rclone exited 1", "backupConfigMapName": "my-app-sts-backup"}),
    );
    assert!(
        failed.objects.is_empty() && has_note(&failed, "ConfigMap my-app-sts-backup"),
        "{:?}",
        failed.notes
    );
    let done = with_status(json!({"phase": "Completed"}));
    assert!(done.objects.is_empty() && has_note(&done, "nothing left to do"));
    let pending = with_status(
        json!({"phase": "Pending", "volumeStatuses": [{"volumeName": "data", "replica": 0, "phase": "Pending"}]}),
    );
    assert_eq!(pending.objects.len(), 1);
}

#[test]
fn a_volmig_resize_with_fields_ferry_lacks_or_a_bad_size_says_so() {
    let text = VOLMIG
        .replace("newSize: 100Mi", "newSize: 100Mi\n      compress: true")
        .replace("statefulSetName", "paused: true\n  statefulSetName");
    let report = report(&text);
    let (_, translation) = only(&report);
    assert!(
        has_note(translation, "not carried over: spec.volumes[1].compress"),
        "{:?}",
        translation.notes
    );
    assert!(
        has_note(translation, "not carried over: spec.paused"),
        "{:?}",
        translation.notes
    );
    let report = self::report(&VOLMIG.replace("500Mi", "500MB"));
    assert!(report.translations[0].objects.is_empty());
    assert!(has_note(
        &report.translations[0],
        "not imported: spec.volumes[0].newSize \"500MB\""
    ));
}

#[test]
fn the_quarks_example_becomes_an_extended_stateful_set_the_api_server_accepts() {
    let report = report(QUARKS);
    let (object, translation) = only(&report);
    assert_eq!(translation.system, Some(System::Quarks));
    assert_eq!(object["apiVersion"], "ferry.dev/v1alpha1");
    assert_eq!(object["metadata"]["name"], "myextendedstatefulset");
    let spec = &object["spec"];
    // No replicas in the template: the StatefulSet default 1 is below scaling.min.
    assert_eq!(spec["replicas"], 3);
    assert_eq!(spec["scaling"], json!({"min": 3, "max": 13, "oddOnly": true}));
    assert_eq!(spec["updateOnConfigChange"], true);
    assert_eq!(
        spec["updateStrategy"],
        json!({"canaries": 1, "retryCount": 2, "updateNotReady": true})
    );
    assert!(spec.get("zones").is_none(), "az is empty");
    assert_eq!(
        spec["template"]["metadata"],
        json!({"labels": {"a-label-for-my-stateful-set": "foo"}})
    );
    assert_eq!(spec["template"]["spec"]["serviceName"], "app");
    assert_eq!(
        spec["template"]["spec"]["selector"],
        json!({"matchLabels": {"app": "my-app"}})
    );
    assert_eq!(
        spec["template"]["spec"]["template"]["spec"]["containers"][0]["name"],
        "my-web-app"
    );
    assert!(spec["template"]["spec"].get("replicas").is_none());
    for words in [
        "named myextendedstatefulset",
        "spec.replicas 3: the template gives no spec.replicas",
        "updateStrategy.retryCount 2: in Ferry",
        "new StatefulSet (<name>)",
    ] {
        assert!(has_note(translation, words), "{words}: {:?}", translation.notes);
    }
    // Ferry's own type reads it back, and its replicas satisfy the CRD's rules.
    let ests: ExtendedStatefulSet = serde_json::from_value(object.clone()).unwrap();
    assert!(ests.spec.update_on_config_change);
}

#[test]
fn quarks_zones_watch_times_and_template_replicas_are_carried_over() {
    let text = QUARKS
        .replace("  az:  \n", "  az: [z1, z2]\n")
        .replace(
            "    updateNotReady: true\n",
            "    updateNotReady: true\n    canaryWatchTime: 30000\n    updateWatchTime: 1000-300000\n",
        )
        .replace("      selector:\n", "      replicas: 5\n      selector:\n")
        .replace(
            "name: MyExtendedStatefulSet",
            "name: db\n  finalizers: [fissile.cloudfoundry.org/finalizer]",
        );
    let report = report(&text);
    let (object, translation) = only(&report);
    let spec = &object["spec"];
    assert_eq!(spec["replicas"], 5);
    assert_eq!(spec["zones"], json!(["z1", "z2"]));
    assert_eq!(spec["updateStrategy"]["canaryWatchTime"], "30s");
    assert_eq!(spec["updateStrategy"]["updateWatchTime"], "5m");
    assert!(has_note(translation, "zones z1, z2") && has_note(translation, "<name>-z<index> per zone"));
    assert!(has_note(
        translation,
        "finalizer fissile.cloudfoundry.org/finalizer"
    ));
    assert!(!has_note(translation, "spec.replicas"), "{:?}", translation.notes);
}

#[test]
fn a_quarks_name_ferry_cannot_use_is_not_imported() {
    let report = report(&QUARKS.replace("MyExtendedStatefulSet", "My_Extended"));
    assert!(report.translations[0].objects.is_empty());
    assert!(has_note(
        &report.translations[0],
        "metadata.name \"My_Extended\" is not a name"
    ));
}

#[test]
fn pongs_auto_scaled_annotation_is_ferrys_default_autoscaler() {
    let report = report(PONG);
    let db = &report.translations[0];
    assert_eq!(db.system, Some(System::Pong));
    let object = db.objects[0].to_value().unwrap();
    assert_eq!(object["kind"], "VolumeAutoscaler");
    assert_eq!(object["metadata"]["name"], "db-auto-scaled");
    assert!(
        object["metadata"]["labels"].is_null(),
        "not Ferry's own default autoscaler: the user's"
    );
    assert_eq!(
        object["spec"],
        json!({"statefulSetName": "db", "volumes": [
            {"name": "data", "maxSize": "10Gi"}, {"name": "wal", "maxSize": "3000Mi"}]})
    );
    assert!(
        has_note(db, "next power of two") && has_note(db, "increase: 100%"),
        "{:?}",
        db.notes
    );
}

#[test]
fn pongs_resize_annotations_still_above_the_template_are_a_volume_resize() {
    let report = report(PONG);
    let queue = &report.translations[1];
    assert_eq!(queue.objects.len(), 1);
    let object = queue.objects[0].to_value().unwrap();
    assert_eq!(object["kind"], "VolumeResize");
    assert_eq!(object["metadata"]["name"], "queue-import-pong");
    assert_eq!(object["spec"]["statefulSetName"], "queue");
    assert_eq!(
        object["spec"]["volumes"],
        json!([{"name": "data", "size": "10Gi"}])
    );
    // resize-1 asks for the template's size: done already.
    assert!(
        has_note(queue, "resize-statefulset-operator/resize-1: 1Gi: not above"),
        "{:?}",
        queue.notes
    );
    let odd = self::report(&PONG.replace("resize-1: \"1Gi\"", "resized: \"yes\""));
    assert!(has_note(
        &odd.translations[1],
        "not carried over: the annotation resize-statefulset-operator/resized"
    ));
    let wrong = self::report(&PONG.replace("resize-1: \"1Gi\"", "resize-4: \"1Gi\""));
    assert!(has_note(
        &wrong.translations[1],
        "no volume claim template at index \"4\""
    ));
}

#[test]
fn an_idle_vshn_stateful_set_gives_the_resize_its_claims_still_need() {
    let report = report(VSHN_IDLE);
    let (object, translation) = only(&report);
    assert_eq!(translation.system, Some(System::Vshn));
    assert_eq!(object["metadata"]["name"], "web-import-vshn");
    assert_eq!(object["spec"]["statefulSetName"], "web");
    assert_eq!(object["spec"]["volumes"], json!([{"name": "www", "size": "4Gi"}]));
    assert_eq!(
        (&object["spec"]["mode"], &object["spec"]["strategy"]),
        (&json!("Offline"), &json!("Auto"))
    );
    assert!(has_note(
        translation,
        "sts-resize.vshn.net/replicas and sts-resize.vshn.net/scalup are left"
    ));
    assert!(has_note(translation, "ferry.dev/sync-claims"));
    // Claims at the template's size: nothing to do. No claims in the file: it says it cannot tell.
    let done = self::report(&VSHN_IDLE.replace("storage: 2Gi", "storage: 4Gi"));
    assert!(done.translations[0].objects.is_empty());
    assert!(has_note(&done.translations[0], "nothing to resize: the claims"));
    let sts_only: String = VSHN_IDLE
        .split("- apiVersion: v1\n")
        .next()
        .unwrap_or_default()
        .to_string();
    let blind = self::report(&sts_only);
    assert!(blind.translations[0].objects.is_empty());
    assert!(has_note(
        &blind.translations[0],
        "holds no claim of this StatefulSet"
    ));
}

#[test]
fn vshns_in_place_mode_resizes_in_place() {
    let text = VSHN_IDLE.replace(
        "    annotations:\n",
        "    labels: {sts-resize.vshn.net/resize-inplace: \"true\"}\n    annotations:\n",
    );
    let report = report(&text);
    let (object, _) = only(&report);
    assert_eq!(
        (&object["spec"]["mode"], &object["spec"]["strategy"]),
        (&json!("Rolling"), &json!("InPlace"))
    );
}

#[test]
fn a_vshn_backup_under_way_is_not_imported_and_says_how_to_finish_or_roll_back() {
    let report = report(VSHN_BACKUP);
    let translation = &report.translations[0];
    assert!(translation.objects.is_empty());
    let note = &translation.notes[0];
    for words in [
        "at its backup step (it scaled the StatefulSet from 3 to 0",
        "www-web-0 (1Gi → 2Gi)",
        "the original claims still hold the data",
        "kubectl -n apps delete job sync-www-web-0-to-www-web-0-backup-1gi,",
        "kubectl -n apps delete pvc www-web-0-backup-1gi, www-web-1-backup-1gi, www-web-2-backup-1gi",
        "`kubectl -n apps scale sts web --replicas=3`",
        "sts-resize.vshn.net/pvcs- sts-resize.vshn.net/replicas- sts-resize.vshn.net/scalup-",
    ] {
        assert!(note.contains(words), "{words}: {note}");
    }
}

#[test]
fn a_vshn_restore_under_way_is_never_started_again() {
    let report = report(VSHN_RESTORE);
    let translation = &report.translations[0];
    assert!(translation.objects.is_empty());
    let note = &translation.notes[0];
    for words in [
        "restore step",
        "Backed up and not yet restored: www-web-0 (backup www-web-0-backup-1gi)",
        "Nothing may start again from the original claims",
        "Not backed up yet, still holding their data: www-web-1, www-web-2",
        "sync-www-web-0-backup-1gi-to-www-web-0",
        "Delete the backup claims only once the data is checked",
    ] {
        assert!(note.contains(words), "{words}: {note}");
    }
}

#[test]
fn a_failed_vshn_resize_says_where_the_data_is() {
    let report = report(VSHN_FAILED);
    let translation = &report.translations[0];
    assert!(translation.objects.is_empty());
    let note = &translation.notes[0];
    assert!(
        note.contains("gave up on this StatefulSet (label sts-resize.vshn.net/failed=true"),
        "{note}"
    );
    assert!(
        note.contains("Backed up, and maybe re-created empty since: www-web-0;"),
        "{note}"
    );
    assert!(
        note.contains("kubectl -n apps label sts web sts-resize.vshn.net/failed-"),
        "{note}"
    );
}

#[test]
fn unknown_objects_are_notes_and_a_file_of_nothing_known_is_a_usage_error() {
    let text = format!("{VOLMIG}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: settings}}\n");
    let report = report(&text);
    assert_eq!(report.translations.len(), 2);
    assert_eq!(report.translations[1].system, None);
    assert!(report.translations[1].notes[0].contains("not an object of a system Ferry imports"));
    let objects =
        documents::objects("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n", "c.yaml").unwrap();
    let error = translate(&objects, "c.yaml").unwrap_err();
    assert_eq!(error.exit_code(), ExitCode::Usage);
    assert!(
        error
            .to_string()
            .starts_with("nothing in c.yaml is an object Ferry imports (1 object(s) of kind ConfigMap)"),
        "{error}"
    );
    assert!(
        translate(&[], "e.yaml")
            .unwrap_err()
            .to_string()
            .contains("no object at all")
    );
}

#[test]
fn a_plain_stateful_set_whose_claims_lag_its_template_says_so() {
    let plain = VSHN_IDLE.replace("    annotations:\n      sts-resize.vshn.net/pvcs: \"[]\"\n      sts-resize.vshn.net/replicas: \"3\"\n      sts-resize.vshn.net/scalup: \"true\"\n", "");
    let text = format!("{plain}\n---\n{VOLMIG}");
    let report = report(&text);
    let sts = &report.translations[0];
    assert_eq!(sts.system, None);
    assert!(
        sts.notes[0].contains("smaller than its template (www to 4Gi)"),
        "{:?}",
        sts.notes
    );
    // Claims at the template's size: the StatefulSet is only context, not a note.
    let quiet = format!("{}\n---\n{VOLMIG}", plain.replace("storage: 2Gi", "storage: 4Gi"));
    let report = self::report(&quiet);
    assert_eq!(report.translations.len(), 1);
    assert_eq!(report.translations[0].system, Some(System::Volmig));
}

#[test]
fn yaml_output_carries_the_notes_as_comments_and_reads_back_as_the_objects() {
    let text = format!("{VOLMIG}\n---\n{QUARKS}\n---\n{VSHN_BACKUP}");
    let report = report(&text);
    let yaml = render::yaml(&report).unwrap();
    assert!(
        yaml.starts_with("# kubectl ferry import -f f.yaml: 2 Ferry object(s) from 3 object(s)"),
        "{yaml}"
    );
    assert!(yaml.contains("# Nothing made from:\n#   - StatefulSet apps/web (apps/v1), vshn's statefulset-resize-controller:\n"), "{yaml}");
    assert!(yaml.contains("---\n# From ExtendedStatefulSet MyExtendedStatefulSet (fissile.cloudfoundry.org/v1alpha1), quarks"), "{yaml}");
    assert!(
        yaml.lines()
            .all(|line| line.len() <= 100 || !line.starts_with('#')),
        "{yaml}"
    );
    let back = documents::objects(&yaml, "out").unwrap();
    assert_eq!(back.len(), 2);
    assert_eq!(back[0]["kind"], "VolumeResize");
    assert_eq!(back[1]["kind"], "ExtendedStatefulSet");
    let json: serde_json::Value = serde_json::from_str(&render::json(&report).unwrap()).unwrap();
    assert_eq!(
        (json["kind"].as_str(), json["items"].as_array().map(Vec::len)),
        (Some("List"), Some(2))
    );
    let notes = render::note_lines(&report);
    assert!(notes.iter().all(|n| n.starts_with("note: ")));
    assert!(
        notes
            .iter()
            .any(|n| n.contains("vshn's statefulset-resize-controller: not imported"))
    );
}

#[test]
fn derived_names_fit() {
    assert_eq!(derived_name("web", "import-vshn", 63), "web-import-vshn");
    let long = "a".repeat(70);
    let name = derived_name(&long, "import-vshn", 63);
    assert_eq!(name.len(), 63);
    assert!(name.ends_with("a-import-vshn"));
}
