use super::*;

const GIB: u64 = 1 << 30;

fn template(name: &str, class: Option<&str>) -> TemplateFacts {
    TemplateFacts {
        name: name.into(),
        storage_class: class.map(str::to_string),
        requested_bytes: Some(GIB),
        ..TemplateFacts::default()
    }
}

fn set(name: &str, replicas: i32, templates: Vec<TemplateFacts>) -> SetFacts {
    SetFacts {
        namespace: "ns".into(),
        name: name.into(),
        ordinals: 0..replicas,
        ready_replicas: replicas,
        selected: true,
        templates,
    }
}

fn claim(name: &str, class: Option<&str>, size: u64) -> ClaimFacts {
    ClaimFacts {
        namespace: "ns".into(),
        name: name.into(),
        storage_class: class.map(str::to_string),
        size_bytes: Some(size),
        bytes_in_use: None,
        selected: true,
        ephemeral_of: None,
    }
}

fn facts(sets: Vec<SetFacts>, claims: Vec<ClaimFacts>) -> MigrateFacts {
    MigrateFacts {
        from_class: "old".into(),
        to_class: "new".into(),
        default_class: Some("old".into()),
        from_class_exists: true,
        sets,
        claims,
        pods: Vec::new(),
        resizes_at_work: BTreeMap::new(),
        bytes_per_second: 100 << 20,
    }
}

fn names(plan: &MigrationPlan) -> Vec<&str> {
    plan.stateful_sets.iter().map(|s| s.name.as_str()).collect()
}

#[test]
fn selects_the_sets_with_a_template_on_the_class_and_moves_only_those_templates() {
    let facts = facts(
        vec![
            set(
                "db",
                2,
                vec![template("data", Some("old")), template("logs", Some("other"))],
            ),
            // No class named: the default, which is the class being left.
            set("cache", 1, vec![template("data", None)]),
            set("web", 1, vec![template("data", Some("other"))]),
            // "" is no class at all (a claim bound by hand), not the default.
            set("static", 1, vec![template("data", Some(""))]),
        ],
        vec![
            claim("data-db-0", Some("old"), GIB),
            claim("data-db-1", Some("old"), 2 * GIB),
            claim("logs-db-0", Some("other"), GIB),
            claim("data-cache-0", Some("old"), GIB),
        ],
    );
    let plan = plan(&facts);
    assert_eq!(names(&plan), ["db", "cache"]);
    let db = &plan.stateful_sets[0];
    assert_eq!(db.moving_templates, ["data"]);
    assert_eq!(
        db.staying_templates,
        [StayingTemplate {
            name: "logs".into(),
            storage_class: Some("other".into())
        }]
    );
    let claims: Vec<(i32, &str, Option<u64>)> = (db.claims.iter())
        .map(|c| (c.replica, c.claim.as_str(), c.size_bytes))
        .collect();
    assert_eq!(
        claims,
        [(0, "data-db-0", Some(GIB)), (1, "data-db-1", Some(2 * GIB))]
    );
    // Data in use unknown: the size is counted, as an upper bound (1 GiB at 100 MiB/s).
    assert_eq!(
        db.claims[0].estimate,
        Estimate {
            seconds: Some(11),
            upper_bound: true
        }
    );
    assert_eq!(db.estimate.seconds, Some(11 + 21));
    assert!(plan.refused.is_empty() && plan.not_handled.is_empty(), "{plan:?}");
}

#[test]
fn totals_add_the_sets_up_one_after_the_other() {
    let mut known = claim("data-a-0", Some("old"), 4 * GIB);
    known.bytes_in_use = Some(GIB);
    let facts = facts(
        vec![
            set("a", 1, vec![template("data", Some("old"))]),
            set("b", 1, vec![template("data", Some("old"))]),
        ],
        vec![known, claim("data-b-0", Some("old"), GIB)],
    );
    let plan = plan(&facts);
    let text = render::plan_text(&plan, true, crate::style::Style::PLAIN);
    assert!(
        text.contains("1.0 GiB in use, unknown on 1 more (their size counted)"),
        "{text}"
    );
    assert!(text.contains("(given with --rate)"), "{text}");
    // Known usage: the data in use, not the size, and an exact figure.
    assert_eq!(plan.stateful_sets[0].estimate, Estimate::exact(11));
    assert_eq!(
        plan.totals,
        Totals {
            stateful_sets: 2,
            claims: 2,
            bytes_in_use: GIB,
            claims_in_use_unknown: 1,
            estimate: Estimate {
                seconds: Some(22),
                upper_bound: true
            },
        }
    );
}

#[test]
fn a_claim_not_made_yet_or_already_on_the_target_copies_nothing() {
    let facts = facts(
        vec![set("db", 3, vec![template("data", Some("old"))])],
        vec![
            claim("data-db-0", Some("old"), GIB),
            claim("data-db-1", Some("new"), GIB),
        ],
    );
    let plan = plan(&facts);
    let notes: Vec<Option<&str>> = (plan.stateful_sets[0].claims.iter())
        .map(|c| c.note.as_deref())
        .collect();
    assert_eq!(
        notes,
        [
            None,
            Some("already on new: nothing to copy"),
            Some("not made yet: the replica's claim will be made on the new class")
        ]
    );
    assert_eq!(
        plan.stateful_sets[0].claims[2].size_bytes,
        Some(GIB),
        "the template's request"
    );
    assert_eq!(
        plan.totals.claims_in_use_unknown, 1,
        "only the claim that is copied"
    );
}

#[test]
fn refuses_block_read_write_once_pod_and_a_set_already_being_resized() {
    let mut block = template("data", Some("old"));
    block.raw_block = true;
    let mut once_pod = template("data", Some("old"));
    once_pod.read_write_once_pod = true;
    // A Block template on another class stays where it is: no reason to refuse.
    let mut staying_block = template("raw", Some("other"));
    staying_block.raw_block = true;
    let mut facts = facts(
        vec![
            set("raw", 1, vec![block]),
            set("solo", 1, vec![once_pod]),
            set("busy", 1, vec![template("data", Some("old"))]),
            set("fine", 1, vec![template("data", Some("old")), staying_block]),
        ],
        Vec::new(),
    );
    facts
        .resizes_at_work
        .insert(("ns".into(), "busy".into()), "busy-grow".into());
    let plan = plan(&facts);
    assert_eq!(names(&plan), ["fine"]);
    let refused: Vec<(&str, &str)> = (plan.refused.iter())
        .flat_map(|r| r.reasons.iter().map(move |why| (r.name.as_str(), why.as_str())))
        .collect();
    assert_eq!(refused.len(), 3, "{refused:?}");
    assert!(refused[0].0 == "raw" && refused[0].1.contains("volumeMode Block"));
    assert!(refused[1].0 == "solo" && refused[1].1.contains("ReadWriteOncePod"));
    assert!(refused[2].0 == "busy" && refused[2].1.contains("VolumeResize busy-grow is at work"));
}

#[test]
fn a_selector_narrows_the_sets_and_the_claims_listed_as_not_handled() {
    let mut other = set("other", 1, vec![template("data", Some("old"))]);
    other.selected = false;
    let mut unlabelled = claim("scratch", Some("old"), GIB);
    unlabelled.selected = false;
    let facts = facts(
        vec![set("db", 1, vec![template("data", Some("old"))]), other],
        vec![
            claim("data-db-0", Some("old"), GIB),
            // Another StatefulSet's: not this selection's business, not "not handled" either.
            claim("data-other-0", Some("old"), GIB),
            unlabelled,
            claim("labelled", Some("old"), GIB),
        ],
    );
    let plan = plan(&facts);
    assert_eq!(names(&plan), ["db"]);
    let left: Vec<&str> = plan.not_handled.iter().map(|n| n.claim.as_str()).collect();
    assert_eq!(left, ["labelled"]);
}

#[test]
fn claims_no_template_made_are_not_handled_with_who_uses_them() {
    let mut facts = facts(
        vec![
            set("db", 1, vec![template("data", Some("old"))]),
            set("web", 1, vec![template("data", Some("other"))]),
        ],
        vec![
            claim("data-db-0", Some("old"), GIB),
            claim("data-db-4", Some("old"), GIB),
            claim("data-web-0", Some("old"), GIB),
            claim("app-files", Some("old"), GIB),
            claim("bare", None, GIB),
            claim("unused", Some("old"), GIB),
            claim("shared", Some("old"), GIB),
            claim("job-scratch", Some("old"), GIB),
            claim("elsewhere", Some("other"), GIB),
            ClaimFacts {
                ephemeral_of: Some("runner".into()),
                ..claim("runner-scratch", Some("old"), GIB)
            },
        ],
    );
    let pod = |name: &str, claim: &str, controller: Option<(&str, &str)>| PodFacts {
        namespace: "ns".into(),
        name: name.into(),
        claims: vec![claim.into()],
        controller: controller.map(|(kind, name)| (kind.into(), name.into())),
        template_hash: Some("5d8f7c9b4".into()),
    };
    facts.pods = vec![
        pod(
            "app-5d8f7c9b4-x2k9q",
            "app-files",
            Some(("ReplicaSet", "app-5d8f7c9b4")),
        ),
        pod("debug", "bare", None),
        pod("db-0", "shared", Some(("StatefulSet", "db"))),
        pod("nightly-abc", "job-scratch", Some(("Job", "nightly"))),
    ];
    let plan = plan(&facts);
    let reasons: BTreeMap<&str, &str> = (plan.not_handled.iter())
        .map(|n| (n.claim.as_str(), n.reason.as_str()))
        .collect();
    let expected = [
        ("app-files", "used by Deployment app (pod app-5d8f7c9b4-x2k9q)"),
        ("bare", "used by pod debug, which no controller owns (a bare pod)"),
        (
            "data-db-4",
            "left by a scale-down: StatefulSet db has no replica 4 any more",
        ),
        (
            "data-web-0",
            "made from StatefulSet web's template \"data\", which now asks for class other",
        ),
        ("job-scratch", "used by Job nightly (pod nightly-abc)"),
        ("runner-scratch", "the generic ephemeral volume of pod runner"),
        ("shared", "mounted by StatefulSet db's pod db-0 as a plain volume"),
        ("unused", "no StatefulSet owns it and no pod uses it"),
    ];
    assert_eq!(reasons.len(), expected.len(), "{reasons:#?}");
    for (claim, reason) in expected {
        let said = reasons[claim];
        assert!(
            said.starts_with(reason) && said.ends_with("; never touched"),
            "{claim}: {said}"
        );
    }
}

#[test]
fn without_a_default_class_a_template_naming_none_is_on_no_class() {
    let mut facts = facts(vec![set("db", 1, vec![template("data", None)])], Vec::new());
    facts.default_class = None;
    assert!(plan(&facts).stateful_sets.is_empty());
}

#[test]
fn the_same_class_twice_or_an_empty_one_is_refused_before_anything_is_read() {
    assert!(check_classes("old", "new").is_ok());
    assert!(check_classes("old", "old").unwrap_err().contains("both \"old\""));
    assert!(check_classes("", "new").is_err());
}

#[test]
fn a_missing_source_class_is_a_note_not_an_error() {
    let mut facts = facts(Vec::new(), Vec::new());
    facts.from_class_exists = false;
    let plan = plan(&facts);
    assert_eq!(plan.notes.len(), 1);
    assert!(plan.notes[0].contains("\"old\" does not exist"));
}

#[test]
fn the_text_names_each_set_its_claims_refusals_and_totals() {
    let mut busy = facts(
        vec![
            set(
                "db",
                1,
                vec![template("data", Some("old")), template("logs", Some("other"))],
            ),
            set("busy", 1, vec![template("data", Some("old"))]),
        ],
        vec![
            claim("data-db-0", Some("old"), GIB),
            claim("unused", Some("old"), GIB),
        ],
    );
    busy.resizes_at_work
        .insert(("ns".into(), "busy".into()), "busy-grow".into());
    let text = render::plan_text(&plan(&busy), false, crate::style::Style::PLAIN);
    for line in [
        "Plan: StorageClass old -> new (a plan only: nothing was created or changed)",
        "Estimates at 100.0 MiB/s (measured on a dev machine's disk",
        "StatefulSet ns/db (1 replica): moves data; stays: logs (other)",
        "  0         data-db-0   1.0 GiB   unknown   at most 11s",
        "  StatefulSet ns/busy: VolumeResize busy-grow is at work on it",
        "  ns/unused: no StatefulSet owns it and no pod uses it; never touched",
        "Total: 1 StatefulSet(s) to move, 1 claim(s), data in use unknown on 1 (their size counted); 1 refused, 1 claim(s) not handled.",
        "Estimated copy time, one StatefulSet at a time: at most 11s.",
    ] {
        assert!(text.contains(line), "{line:?} missing from:\n{text}");
    }
}

#[test]
fn the_plan_as_data_names_its_fields_in_camel_case() {
    let facts = facts(
        vec![set("db", 1, vec![template("data", Some("old"))])],
        vec![claim("data-db-0", Some("old"), GIB)],
    );
    let value = serde_json::to_value(plan(&facts)).unwrap();
    assert_eq!(value["fromClass"], "old");
    assert_eq!(value["statefulSets"][0]["movingTemplates"][0], "data");
    assert_eq!(value["statefulSets"][0]["claims"][0]["sizeBytes"], GIB);
    assert_eq!(
        value["statefulSets"][0]["claims"][0]["bytesInUse"],
        serde_json::Value::Null
    );
    assert_eq!(value["totals"]["estimate"]["upperBound"], true);
    assert_eq!(value["notHandled"], serde_json::json!([]));
}
