use super::*;
use crate::owners::built_in;
use crate::resize::action::{OwnerPatch, ResizeAction};
use crate::resize::observed::{Observed, OwnerView, StatefulSetView, TemplateView};
use crate::resize::run::Decision;
use ferry_api::condition::{REASON_OWNER_MISMATCH, REASON_OWNER_UNKNOWN};
use ferry_api::{
    OwnerField, OwnerPolicy, OwnerStatus, OwnerStep, Phase, VolumeChange, VolumeResizeSpec,
    VolumeResizeStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

/// The time `second`, with a minute for the owner to act (leaked: a test's clock lives as long).
fn clock_at(second: i64) -> Clock<'static> {
    Clock {
        now: Box::leak(Box::new(Time(Timestamp::from_second(second).unwrap()))),
        limit_seconds: 60,
    }
}

fn clock() -> Clock<'static> {
    clock_at(1000)
}

const GI: u64 = 1 << 30;

fn prometheus(size: &str, paused: Option<bool>, generation: i64, reconciled: i64) -> Value {
    let mut object = json!({
        "apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
        "metadata": {"name": "k8s", "uid": "p-uid", "resourceVersion": "7", "generation": generation},
        "spec": {"storage": {"volumeClaimTemplate": {"spec": {"storageClassName": "fast", "resources": {"requests": {"storage": size}}}}}},
        "status": {"conditions": [{"type": "Reconciled", "status": "True", "observedGeneration": reconciled}]}
    });
    if let Some(paused) = paused {
        object["spec"]["paused"] = json!(paused);
    }
    object
}

fn observed(owner: Option<Value>, known: bool, template_bytes: u64) -> Observed {
    let entry = built_in().into_iter().find(|entry| entry.kind == "Prometheus");
    Observed {
        stateful_set: Some(StatefulSetView {
            name: "prometheus-k8s".into(),
            replicas: 1,
            ready_replicas: 1,
            templates: [(
                "prometheus-k8s-db".to_string(),
                TemplateView::sized(template_bytes, Some("fast")),
            )]
            .into(),
            ..StatefulSetView::default()
        }),
        owner: Some(OwnerView {
            api_version: "monitoring.coreos.com/v1".into(),
            kind: "Prometheus".into(),
            name: "k8s".into(),
            uid: "p-uid".into(),
            entry: entry.filter(|_| known),
            object: owner,
        }),
        ..Observed::default()
    }
}

fn spec(template: &str, class: Option<&str>) -> VolumeResizeSpec {
    VolumeResizeSpec::for_volumes(
        "prometheus-k8s",
        vec![VolumeChange {
            name: template.into(),
            size: "20Gi".into(),
            storage_class_name: class.map(str::to_string),
            volume_attributes_class_name: None,
        }],
    )
}

fn owned(step: Option<OwnerStep>) -> VolumeResizeStatus {
    VolumeResizeStatus {
        phase: Some(Phase::Running),
        owner: Some(OwnerStatus {
            api_version: "monitoring.coreos.com/v1".into(),
            kind: "Prometheus".into(),
            name: "k8s".into(),
            uid: "p-uid".into(),
            step,
            ..OwnerStatus::default()
        }),
        ..VolumeResizeStatus::default()
    }
}

fn ended(status: &VolumeResizeStatus) -> Decision {
    let mut done = status.clone();
    done.phase = Some(Phase::Succeeded);
    done.message = Some("every volume expanded in place".into());
    Decision {
        status: done,
        actions: vec![],
        summary: "done".into(),
    }
}

fn patch_of(decision: &Decision) -> (OwnerPatch, Value) {
    match decision.actions.as_slice() {
        [ResizeAction::PatchOwner { what, patch, .. }] => (*what, serde_json::from_str(patch).unwrap()),
        other => panic!("one owner patch expected, got {other:?}"),
    }
}

#[test]
fn an_owner_ferry_does_not_know_is_refused_by_name_unless_the_request_ignores_it() {
    let unknown = observed(None, false, 10 * GI);
    let sts = unknown.stateful_set.clone().unwrap();
    let (reason, message) = check::owner_of(&spec("prometheus-k8s-db", None), &unknown, &sts).unwrap_err();
    assert_eq!(reason, REASON_OWNER_UNKNOWN);
    assert!(
        message.contains("Prometheus \"k8s\"")
            && message.contains("ferry-owners")
            && message.contains("ownerPolicy: Ignore"),
        "{message}"
    );
    let mut ignoring = spec("prometheus-k8s-db", None);
    ignoring.owner_policy = OwnerPolicy::Ignore;
    let status = check::owner_of(&ignoring, &unknown, &sts).unwrap().unwrap();
    assert!(status.ignored);
    let nobody = Observed {
        owner: None,
        ..unknown.clone()
    };
    assert_eq!(check::owner_of(&spec("x", None), &nobody, &sts).unwrap(), None);
}

#[test]
fn a_known_owner_is_accepted_only_where_its_entry_fits_the_resource() {
    let known = observed(Some(prometheus("10Gi", None, 1, 1)), true, 10 * GI);
    let sts = known.stateful_set.clone().unwrap();
    let status = check::owner_of(&spec("prometheus-k8s-db", Some("slow")), &known, &sts)
        .unwrap()
        .unwrap();
    assert_eq!(
        (status.kind.as_str(), status.step, status.ignored),
        ("Prometheus", None, false)
    );
    // The plan says what is paused and written, field by field.
    let field = |path: &str, value: &str| OwnerField {
        path: path.into(),
        value: value.into(),
    };
    assert_eq!(status.pause_switch, Some(field("/spec/paused", "true")));
    let template = "/spec/storage/volumeClaimTemplate/spec";
    assert_eq!(
        status.writes,
        [
            field(&format!("{template}/resources/requests/storage"), "\"20Gi\""),
            field(&format!("{template}/storageClassName"), "\"slow\""),
        ]
    );
    // A size the owner states as the same quantity is written as it states it.
    let mut same = spec("prometheus-k8s-db", None);
    same.volumes[0].size = "10240Mi".into();
    let status = check::owner_of(&same, &known, &sts).unwrap().unwrap();
    assert_eq!(status.writes[0].value, "\"10Gi\"");
    let (reason, message) = check::owner_of(&spec("other", None), &known, &sts).unwrap_err();
    assert_eq!(reason, REASON_OWNER_MISMATCH);
    assert!(message.contains("\"other\""), "{message}");
    let gone = observed(None, true, 10 * GI);
    let (reason, message) = check::owner_of(&spec("prometheus-k8s-db", None), &gone, &sts).unwrap_err();
    assert_eq!(reason, REASON_OWNER_MISMATCH);
    assert!(message.contains("does not exist"), "{message}");
}

#[test]
fn the_owner_is_paused_before_the_run_and_what_its_switch_was_is_recorded_first() {
    let status = owned(None);
    let Before::Act(pausing) = before_run(
        &status,
        &observed(Some(prometheus("10Gi", Some(false), 1, 1)), true, 10 * GI),
        clock(),
    ) else {
        panic!("the pause comes first");
    };
    let (what, ops) = patch_of(&pausing);
    assert_eq!(what, OwnerPatch::Pause);
    assert_eq!(
        ops[1],
        json!({"op": "replace", "path": "/spec/paused", "value": true})
    );
    let recorded = pausing.status.owner.clone().unwrap();
    assert_eq!(
        (recorded.step, recorded.pause_before.as_deref()),
        (Some(OwnerStep::Pausing), Some("false"))
    );
    let Before::Go(going) = before_run(
        &pausing.status,
        &observed(Some(prometheus("10Gi", Some(true), 2, 1)), true, 10 * GI),
        clock(),
    ) else {
        panic!("paused: the run goes on");
    };
    let owner = going.owner.unwrap();
    assert_eq!(
        (owner.step, owner.paused_already),
        (Some(OwnerStep::Paused), false)
    );
    let Before::Go(already) = before_run(
        &owned(None),
        &observed(Some(prometheus("10Gi", Some(true), 1, 1)), true, 10 * GI),
        clock(),
    ) else {
        panic!("paused by someone else: the run goes on");
    };
    assert!(already.owner.unwrap().paused_already);
}

#[test]
fn an_ended_run_writes_into_the_owner_lets_it_go_and_ends_once_it_acted() {
    let mut status = owned(Some(OwnerStep::Paused));
    status.owner.as_mut().unwrap().pause_before = None;
    // The StatefulSet has 20Gi now, the owner still says 10Gi: written first, the phase held.
    let writing = after_run(
        &status,
        ended(&status),
        &observed(Some(prometheus("10Gi", Some(true), 2, 2)), true, 20 * GI),
        clock(),
    );
    assert_eq!(writing.status.phase, Some(Phase::Running));
    let (what, ops) = patch_of(&writing);
    assert_eq!(what, OwnerPatch::Write);
    assert_eq!(
        ops[0],
        json!({"op": "test", "path": "/metadata/resourceVersion", "value": "7"})
    );
    assert!(
        ops.as_array()
            .unwrap()
            .iter()
            .any(|op| op["value"] == json!("20Gi")),
        "{ops:?}"
    );
    assert_eq!(
        writing.status.owner.as_ref().unwrap().step,
        Some(OwnerStep::Writing)
    );
    // Written: its switch goes back to how it was (absent).
    let status = writing.status;
    let releasing = after_run(
        &status,
        ended(&status),
        &observed(Some(prometheus("20Gi", Some(true), 3, 2)), true, 20 * GI),
        clock(),
    );
    let (what, ops) = patch_of(&releasing);
    assert_eq!(
        (what, &ops[1]),
        (
            OwnerPatch::Release,
            &json!({"op": "remove", "path": "/spec/paused"})
        )
    );
    // Let go, not yet acted on its new generation: still held.
    let status = releasing.status;
    let waiting = after_run(
        &status,
        ended(&status),
        &observed(Some(prometheus("20Gi", None, 4, 3)), true, 20 * GI),
        clock(),
    );
    assert_eq!(waiting.status.phase, Some(Phase::Running));
    assert!(waiting.actions.is_empty());
    assert!(
        waiting
            .status
            .message
            .as_deref()
            .unwrap()
            .contains("generation 4")
    );
    let status = waiting.status;
    let done = after_run(
        &status,
        ended(&status),
        &observed(Some(prometheus("20Gi", None, 4, 4)), true, 20 * GI),
        clock(),
    );
    assert_eq!(done.status.phase, Some(Phase::Succeeded));
    assert_eq!(
        done.status.owner.as_ref().unwrap().step,
        Some(OwnerStep::Confirmed)
    );
    assert!(
        done.status
            .message
            .as_deref()
            .unwrap()
            .contains("Prometheus/k8s took the new volume sizes")
    );
    // Confirmed is final: the run's own decision passes unchanged.
    let again = after_run(
        &done.status,
        ended(&done.status),
        &observed(Some(prometheus("20Gi", None, 4, 4)), true, 20 * GI),
        clock(),
    );
    assert_eq!(again.status.phase, Some(Phase::Succeeded));
}

#[test]
fn an_owner_that_undoes_the_templates_fails_the_run_and_one_paused_by_someone_else_stays_paused() {
    let mut status = owned(Some(OwnerStep::Confirming));
    status.owner.as_mut().unwrap().pause_before = None;
    let undone = after_run(
        &status,
        ended(&status),
        &observed(Some(prometheus("20Gi", None, 4, 4)), true, 10 * GI),
        clock(),
    );
    assert_eq!(undone.status.phase, Some(Phase::Failed));
    assert!(
        undone
            .status
            .message
            .as_deref()
            .unwrap()
            .contains("changed the StatefulSet's volume claim templates back")
    );

    let mut theirs = owned(Some(OwnerStep::Paused));
    theirs.owner.as_mut().unwrap().paused_already = true;
    let left_paused = after_run(
        &theirs,
        ended(&theirs),
        &observed(Some(prometheus("20Gi", Some(true), 3, 3)), true, 20 * GI),
        clock(),
    );
    assert!(
        left_paused.actions.is_empty(),
        "no release of a pause that was not Ferry's"
    );
    assert_eq!(left_paused.status.phase, Some(Phase::Succeeded));
}

#[test]
fn once_the_owner_is_written_into_the_runs_recorded_end_stands_for_its_planner() {
    // The run ends while the owner is paused: its end is recorded with the first write.
    let status = owned(Some(OwnerStep::Paused));
    assert!(recorded_end(&status).is_none(), "nothing recorded yet");
    let writing = after_run(
        &status,
        ended(&status),
        &observed(Some(prometheus("10Gi", Some(true), 2, 2)), true, 20 * GI),
        clock(),
    );
    let (what, _) = patch_of(&writing);
    assert_eq!(what, OwnerPatch::Write);
    let recorded = writing.status.owner.as_ref().unwrap().run_ended.clone().unwrap();
    assert_eq!(
        (recorded.phase, recorded.message.as_str()),
        (Phase::Succeeded, "every volume expanded in place")
    );
    assert_eq!(writing.status.phase, Some(Phase::Running), "held");

    // From then on the recorded end is the run's: no planner re-makes the StatefulSet. An owner
    // that re-made it with the old template as soon as it was let go (Ferry still Releasing) fails
    // the run; the old template is not written back into it, and nothing is done to it.
    let mut releasing = writing.status.clone();
    releasing.owner.as_mut().unwrap().step = Some(OwnerStep::Releasing);
    let end = recorded_end(&releasing).unwrap();
    let remade = after_run(
        &releasing,
        end,
        &observed(Some(prometheus("20Gi", None, 4, 4)), true, 10 * GI),
        clock(),
    );
    assert!(remade.actions.is_empty(), "{:?}", remade.actions);
    assert_eq!(remade.status.phase, Some(Phase::Failed));
    let mut confirming = writing.status.clone();
    confirming.owner.as_mut().unwrap().step = Some(OwnerStep::Confirming);
    let end = recorded_end(&confirming).unwrap();
    assert!(end.actions.is_empty());
    assert_eq!(end.status.phase, Some(Phase::Succeeded));
    let remade = after_run(
        &confirming,
        end,
        &observed(Some(prometheus("20Gi", None, 4, 4)), true, 10 * GI),
        clock(),
    );
    assert!(remade.actions.is_empty(), "{:?}", remade.actions);
    assert_eq!(remade.status.phase, Some(Phase::Failed));

    // A rollback on request starts the cycle afresh: nothing recorded.
    let mut confirmed = confirming;
    confirmed.phase = Some(Phase::Succeeded);
    confirmed.owner.as_mut().unwrap().step = Some(OwnerStep::Confirmed);
    let again = again_for_rollback(&confirmed).unwrap();
    assert_eq!(again.owner.unwrap().run_ended, None);
}

#[test]
fn a_run_that_has_not_ended_and_an_ignored_owner_pass_unchanged() {
    let status = owned(Some(OwnerStep::Paused));
    let running = Decision {
        status: status.clone(),
        actions: vec![ResizeAction::RecreateStatefulSet],
        summary: "recreating".into(),
    };
    assert_eq!(
        after_run(&status, running.clone(), &Observed::default(), clock()),
        running
    );
    let mut ignored = owned(None);
    ignored.owner.as_mut().unwrap().ignored = true;
    assert!(matches!(
        before_run(&ignored, &Observed::default(), clock()),
        Before::Go(_)
    ));
    assert_eq!(
        after_run(&ignored, ended(&ignored), &Observed::default(), clock())
            .status
            .phase,
        Some(Phase::Succeeded)
    );
}

#[test]
fn an_extended_stateful_sets_own_stateful_set_goes_through_it_and_a_zones_member_does_not() {
    let ests = json!({"apiVersion": "ferry.dev/v1alpha1", "kind": "ExtendedStatefulSet",
        "metadata": {"name": "web", "uid": "e"},
        "spec": {"template": {"spec": {"volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"resources": {"requests": {"storage": "1Gi"}}}}]}}}});
    let of = |sts_name: &str| {
        let observed = Observed {
            stateful_set: Some(StatefulSetView {
                name: sts_name.into(),
                templates: [("data".to_string(), TemplateView::sized(GI, None))].into(),
                ..StatefulSetView::default()
            }),
            owner: Some(OwnerView {
                api_version: "ferry.dev/v1alpha1".into(),
                kind: "ExtendedStatefulSet".into(),
                name: "web".into(),
                uid: "e".into(),
                entry: built_in()
                    .into_iter()
                    .find(|entry| entry.kind == "ExtendedStatefulSet"),
                object: Some(ests.clone()),
            }),
            ..Observed::default()
        };
        let sts = observed.stateful_set.clone().unwrap();
        check::owner_of(&VolumeResizeSpec::for_volumes(sts_name, vec![]), &observed, &sts).unwrap()
    };
    assert_eq!(
        of("web").map(|owner| owner.kind),
        Some("ExtendedStatefulSet".to_string())
    );
    assert_eq!(of("web-z0"), None);
    assert_eq!(of("web-v2"), None);
}

#[test]
fn an_owner_that_does_not_act_within_the_timeout_fails_the_run_saying_so() {
    let mut status = owned(Some(OwnerStep::Confirming));
    status.owner.as_mut().unwrap().since = Some(clock_at(1000).now.clone());
    let not_acted = observed(Some(prometheus("20Gi", None, 4, 3)), true, 20 * GI);
    let waiting = after_run(&status, ended(&status), &not_acted, clock_at(1059));
    assert_eq!(waiting.status.phase, Some(Phase::Running));
    let failed = after_run(&status, ended(&status), &not_acted, clock_at(1061));
    assert_eq!(failed.status.phase, Some(Phase::Failed));
    let message = failed.status.message.clone().unwrap();
    assert!(
        message.contains("Prometheus/k8s did not act on its new spec (generation 4) within 61 s"),
        "{message}"
    );
    let timed_out = failed
        .status
        .conditions
        .iter()
        .find(|c| c.type_ == ferry_api::condition::TIMED_OUT)
        .unwrap();
    assert_eq!(timed_out.reason, ferry_api::condition::REASON_OWNER_DID_NOT_ACT);
    // Each step's clock starts when the step does.
    let mut paused = owned(Some(OwnerStep::Paused));
    paused.owner.as_mut().unwrap().since = Some(clock_at(1).now.clone());
    let writing = after_run(
        &paused,
        ended(&paused),
        &observed(Some(prometheus("10Gi", Some(true), 2, 2)), true, 20 * GI),
        clock_at(5000),
    );
    assert_eq!(
        writing.status.owner.unwrap().since,
        Some(clock_at(5000).now.clone())
    );
}

#[test]
fn a_rollback_of_a_finished_run_pauses_the_owner_again_before_anything_moves_back() {
    let mut done = owned(Some(OwnerStep::Confirmed));
    done.phase = Some(Phase::Succeeded);
    done.owner.as_mut().unwrap().pause_before = Some("false".into());
    let again = again_for_rollback(&done).expect("the cycle starts again");
    let owner = again.owner.clone().unwrap();
    assert_eq!((owner.step, owner.pause_before, owner.since), (None, None, None));
    let Before::Act(pausing) = before_run(
        &again,
        &observed(Some(prometheus("20Gi", None, 5, 5)), true, 20 * GI),
        clock(),
    ) else {
        panic!("paused first");
    };
    assert_eq!(patch_of(&pausing).0, OwnerPatch::Pause);
    // Under way (rolling back, or the run itself), it is left alone.
    let mut rolling_back = done.clone();
    rolling_back.phase = Some(Phase::RollingBack);
    assert_eq!(again_for_rollback(&rolling_back), None);
    assert_eq!(again_for_rollback(&owned(Some(OwnerStep::Paused))), None);
}
