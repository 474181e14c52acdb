use super::plan::{Input, resize_name};
use super::*;
use ferry_api::{
    MigrationFailurePolicy, MigrationItemPhase, MigrationPhase, Phase, VolumeMigrationSpec,
    VolumeMigrationStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

const GI: u64 = 1 << 30;
const UID: &str = "mig-uid";

fn spec(max: i32, policy: MigrationFailurePolicy) -> VolumeMigrationSpec {
    VolumeMigrationSpec {
        from_storage_class_name: "old".into(),
        to_storage_class_name: "new".into(),
        selector: None,
        max_concurrent: Some(max),
        failure_policy: policy,
    }
}

fn set(name: &str, templates: &[(&str, Option<&str>)]) -> SetView {
    SetView {
        name: name.into(),
        first_ordinal: 0,
        replicas: 1,
        ready_replicas: 1,
        templates: (templates.iter())
            .map(|(t, class)| TemplateView {
                name: (*t).into(),
                class: class.map(String::from),
                request_bytes: GI,
            })
            .collect(),
    }
}

fn claim(name: &str, class: Option<&str>, bytes: u64) -> ClaimView {
    ClaimView {
        name: name.into(),
        class: class.map(String::from),
        bytes,
    }
}

/// Four StatefulSets: a and b on the old class, c's `data` on the default class (the old one) and
/// its `logs` on another, d wholly on another class; a bare claim on the old class; b's claim grew.
fn namespace() -> Observed {
    Observed {
        stateful_sets: vec![
            set("b", &[("data", Some("old"))]),
            set("a", &[("data", Some("old"))]),
            set("c", &[("data", None), ("logs", Some("other"))]),
            set("d", &[("data", Some("other"))]),
        ],
        claims: vec![
            claim("data-a-0", Some("old"), GI),
            claim("data-b-0", Some("old"), 3 * GI),
            claim("data-c-0", None, GI),
            claim("logs-c-0", Some("other"), GI),
            claim("data-d-0", Some("other"), GI),
            claim("scratch", Some("old"), GI),
        ],
        default_class: Some("old".into()),
        target_class_exists: true,
        ..Observed::default()
    }
}

fn now() -> Time {
    Time(Timestamp::from_second(1_800_000_000).unwrap())
}

fn pass(spec: &VolumeMigrationSpec, status: Option<&VolumeMigrationStatus>, observed: &Observed) -> Decision {
    let now = now();
    plan(
        Input {
            spec,
            status,
            uid: UID,
            generation: Some(1),
            now: &now,
        },
        observed,
    )
}

fn resize(sts: &str, phase: Option<Phase>) -> (String, ResizeView) {
    (
        resize_name(UID, sts),
        ResizeView {
            stateful_set: sts.into(),
            phase,
            message: (phase == Some(Phase::Failed)).then(|| format!("precheck failed for {sts}")),
            bytes_copied: Some(42),
            max_downtime_milliseconds: Some(1500),
        },
    )
}

fn phases(status: &VolumeMigrationStatus) -> Vec<(&str, MigrationItemPhase)> {
    (status.items.iter())
        .map(|i| (i.stateful_set.as_str(), i.phase))
        .collect()
}

#[test]
fn the_first_pass_selects_by_class_and_starts_at_most_max_concurrent() {
    let decision = pass(&spec(2, MigrationFailurePolicy::Stop), None, &namespace());
    let status = &decision.status;
    // By name; d has nothing on the old class; c only its data (on the default class).
    assert_eq!(
        phases(status),
        vec![
            ("a", MigrationItemPhase::Running),
            ("b", MigrationItemPhase::Running),
            ("c", MigrationItemPhase::Waiting),
        ]
    );
    assert_eq!(status.items[2].volumes.len(), 1);
    assert_eq!(status.items[2].volumes[0].name, "data");
    // b's claim grew past its template: nothing shrinks.
    assert_eq!(status.items[1].volumes[0].size, "3Gi");
    assert_eq!(status.phase, MigrationPhase::Running);
    assert_eq!(status.progress.as_deref(), Some("0/3"));
    let names: Vec<_> = (decision.actions.iter())
        .map(
            |MigrationAction::CreateVolumeResize {
                 stateful_set, spec, ..
             }| {
                assert_eq!(spec.volumes[0].storage_class_name.as_deref(), Some("new"));
                stateful_set.as_str()
            },
        )
        .collect();
    assert_eq!(names, vec!["a", "b"]);
    // The bare claim is listed, never moved.
    let not_handled: Vec<_> = status.not_handled.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(not_handled, vec!["scratch"]);
}

#[test]
fn a_claim_left_by_a_scale_down_is_not_handled_and_says_so() {
    let spec = spec(2, MigrationFailurePolicy::Stop);
    let mut observed = namespace();
    // a runs one replica: its claim of ordinal 3 is a scale-down's leftover, which no resize moves
    // (nor sizes the move: 8Gi does not count).
    observed.claims.push(claim("data-a-3", Some("old"), 8 * GI));
    let decision = pass(&spec, None, &observed);
    let status = decision.status;
    assert_eq!(status.items[0].stateful_set, "a");
    assert_eq!(status.items[0].volumes[0].size, "1Gi");
    let reasons: Vec<_> = (status.not_handled.iter())
        .map(|c| (c.name.as_str(), c.reason.as_str()))
        .collect();
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert_eq!(reasons[0].0, "data-a-3");
    assert!(
        reasons[0]
            .1
            .contains("left by a scale-down: StatefulSet a has no replica 3"),
        "{reasons:?}"
    );
    assert_eq!(reasons[1].0, "scratch");
}

#[test]
fn a_pass_repeated_after_a_kill_asks_for_the_same_resizes_and_a_seen_one_is_not_asked_again() {
    let spec = spec(2, MigrationFailurePolicy::Stop);
    let first = pass(&spec, None, &namespace());
    // Killed before the status was written: the same pass again asks for the same names.
    let again = pass(&spec, None, &namespace());
    assert_eq!(first.actions, again.actions);
    // Killed after: the resizes are there, so nothing more starts.
    let mut seen = namespace();
    seen.resizes
        .extend([resize("a", None), resize("b", Some(Phase::Running))]);
    let after = pass(&spec, Some(&first.status), &seen);
    assert!(after.actions.is_empty(), "{:?}", after.actions);
    assert_eq!(after.status.items[0].phase, MigrationItemPhase::Running);
}

#[test]
fn a_stateful_set_already_moving_stays_in_the_selection_though_no_longer_on_the_class() {
    let mut moved = namespace();
    moved.stateful_sets[1] = set("a", &[("data", Some("new"))]);
    moved.claims[0] = claim("data-a-0", Some("new"), GI);
    moved.resizes.extend([resize("a", Some(Phase::Running))]);
    let decision = pass(&spec(1, MigrationFailurePolicy::Stop), None, &moved);
    assert!(decision.actions.is_empty());
    assert!(phases(&decision.status).contains(&("a", MigrationItemPhase::Running)));
}

#[test]
fn finished_moves_free_their_slot_and_the_migration_ends_when_all_moved() {
    let spec = spec(2, MigrationFailurePolicy::Stop);
    let first = pass(&spec, None, &namespace());
    let mut observed = namespace();
    observed.resizes.extend([
        resize("a", Some(Phase::Succeeded)),
        resize("b", Some(Phase::Running)),
    ]);
    let second = pass(&spec, Some(&first.status), &observed);
    assert_eq!(second.actions.len(), 1, "c takes a's slot");
    assert_eq!(second.status.items[0].bytes_copied, Some(42));
    assert_eq!(second.status.items[0].max_downtime_milliseconds, Some(1500));
    observed.resizes.extend([
        resize("b", Some(Phase::Succeeded)),
        resize("c", Some(Phase::Succeeded)),
    ]);
    let last = pass(&spec, Some(&second.status), &observed);
    assert_eq!(last.status.phase, MigrationPhase::Succeeded);
    assert_eq!(last.status.progress.as_deref(), Some("3/3"));
    assert!(last.status.finished_at.is_some());
    // Ended: later passes change nothing.
    let after = pass(&spec, Some(&last.status), &Observed::default());
    assert_eq!(after.status, last.status);
}

#[test]
fn a_failure_stops_the_rest_under_stop_and_not_under_continue() {
    for (policy, c_phase, phase) in [
        (
            MigrationFailurePolicy::Stop,
            MigrationItemPhase::Skipped,
            MigrationPhase::Running,
        ),
        (
            MigrationFailurePolicy::Continue,
            MigrationItemPhase::Running,
            MigrationPhase::Running,
        ),
    ] {
        let spec = spec(2, policy);
        let first = pass(&spec, None, &namespace());
        let mut observed = namespace();
        observed.resizes.extend([
            resize("a", Some(Phase::Failed)),
            resize("b", Some(Phase::Running)),
        ]);
        let second = pass(&spec, Some(&first.status), &observed);
        assert_eq!(second.status.items[0].phase, MigrationItemPhase::Failed);
        assert_eq!(
            second.status.items[0].message.as_deref(),
            Some("precheck failed for a")
        );
        assert_eq!(second.status.items[2].phase, c_phase, "{policy:?}");
        // b still moves either way.
        assert_eq!(second.status.phase, phase);
        observed.resizes.extend([
            resize("b", Some(Phase::Succeeded)),
            resize("c", Some(Phase::Succeeded)),
        ]);
        let last = pass(&spec, Some(&second.status), &observed);
        assert_eq!(last.status.phase, MigrationPhase::Failed, "{policy:?}");
    }
}

#[test]
fn a_stateful_set_another_resize_holds_waits_and_the_next_one_goes_first() {
    let mut observed = namespace();
    observed.held_by_others.insert("a".into(), "by-hand".into());
    let decision = pass(&spec(1, MigrationFailurePolicy::Stop), None, &observed);
    assert_eq!(decision.status.items[0].phase, MigrationItemPhase::Waiting);
    assert_eq!(
        decision.status.items[0].message.as_deref(),
        Some("waiting for VolumeResize by-hand, which holds it")
    );
    assert_eq!(decision.status.items[1].phase, MigrationItemPhase::Running);
}

#[test]
fn a_missing_target_class_refuses_the_migration_and_changes_nothing() {
    let mut observed = namespace();
    observed.target_class_exists = false;
    let decision = pass(&spec(2, MigrationFailurePolicy::Stop), None, &observed);
    assert!(decision.actions.is_empty());
    assert_eq!(decision.status.phase, MigrationPhase::Failed);
    assert!(decision.status.items.is_empty());
    assert_eq!(
        decision.status.message.as_deref(),
        Some("StorageClass new does not exist: nothing moved")
    );
}

#[test]
fn a_resize_deleted_while_it_ran_fails_its_item() {
    let spec = spec(1, MigrationFailurePolicy::Continue);
    let first = pass(&spec, None, &namespace());
    let second = pass(&spec, Some(&first.status), &namespace());
    assert_eq!(second.status.items[0].phase, MigrationItemPhase::Failed);
    assert!(
        (second.status.items[0].message.as_deref()).is_some_and(|m| m.contains("was deleted")),
        "{:?}",
        second.status.items[0]
    );
}

#[test]
fn nothing_on_the_class_is_a_migration_that_moved_everything() {
    let observed = Observed {
        stateful_sets: vec![set("d", &[("data", Some("other"))])],
        target_class_exists: true,
        ..Observed::default()
    };
    let decision = pass(&spec(1, MigrationFailurePolicy::Stop), None, &observed);
    assert_eq!(decision.status.phase, MigrationPhase::Succeeded);
    assert_eq!(decision.status.progress.as_deref(), Some("0/0"));
}

#[test]
fn resize_names_are_stable_per_migration_and_stateful_set_and_short() {
    assert_eq!(resize_name("u", "db"), resize_name("u", "db"));
    assert_ne!(resize_name("u", "db"), resize_name("v", "db"));
    assert!(resize_name("u", "db").starts_with("db-migrate-"));
    assert!(resize_name("u", &"x".repeat(250)).len() <= 63);
}

#[test]
fn a_stateful_set_not_ready_at_its_turn_is_not_moved_and_says_why() {
    let mut observed = namespace();
    observed.stateful_sets[1].ready_replicas = 0; // a
    for (policy, b) in [
        (MigrationFailurePolicy::Continue, MigrationItemPhase::Running),
        (MigrationFailurePolicy::Stop, MigrationItemPhase::Skipped),
    ] {
        let decision = pass(&spec(1, policy), None, &observed);
        let a = &decision.status.items[0];
        assert_eq!(a.phase, MigrationItemPhase::Failed, "{policy:?}");
        assert!(
            a.message
                .as_deref()
                .is_some_and(|m| m.contains("0/1 replicas Ready")),
            "{a:?}"
        );
        assert_eq!(decision.status.items[1].phase, b, "{policy:?}");
        // Under Stop nothing starts after it; under Continue b takes the slot.
        assert_eq!(
            decision.actions.len(),
            usize::from(b == MigrationItemPhase::Running)
        );
    }
}
