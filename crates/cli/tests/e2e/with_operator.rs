//! `plan` and `status --follow` against a real StatefulSet with the real operator running
//! in-process for the test's namespace.

use crate::support;

use ferry_testenv::{CLASS_EXPANDABLE, CLASS_FIXED};
use k8s_openapi::api::apps::v1::StatefulSet;
use kube::Api;
use kube::api::DeleteParams;
use serde_json::json;
use std::time::Duration;
use support::Env;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_shows_the_operators_plan_and_changes_nothing() {
    let mut env = Env::start("cli-plan").await;
    env.stateful_set("db", 2, CLASS_EXPANDABLE, true).await;
    env.stateful_set("fixed", 1, CLASS_FIXED, true).await;
    env.start_operator().await;

    let run = env.ferry(&["plan", "db", "--volume", "data=2Gi"]).await;
    assert_eq!(run.code, 0, "{run:?}");
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(
        lines[0].starts_with("Plan for StatefulSet db (Rolling mode, strategy Auto"),
        "{}",
        run.stdout
    );
    assert!(lines[1].starts_with("REPLICA   CLAIM"), "{}", run.stdout);
    for replica in 0..2 {
        let row = lines
            .iter()
            .find(|l| l.contains(&format!("data-db-{replica}")))
            .unwrap_or_else(|| panic!("no row for replica {replica}: {}", run.stdout));
        assert!(row.contains("InPlace"), "{row}");
        assert!(row.contains("1Gi -> 2Gi"), "{row}");
        assert!(row.contains(&format!("{CLASS_EXPANDABLE} (unchanged)")), "{row}");
        assert!(row.contains("no copy"), "{row}");
    }
    assert!(
        run.stdout.contains("2 PVC(s): 2 in place, 0 by copy."),
        "{}",
        run.stdout
    );
    assert!(env.resize_names().await.is_empty(), "the dry run is deleted");

    // A shrink is a copy; data in use is unknown until the operator measures it. --keep keeps it.
    let run = env
        .ferry(&[
            "plan",
            "db",
            "--volume",
            "data=512Mi",
            "--keep",
            "--name",
            "shrink-plan",
        ])
        .await;
    assert_eq!(run.code, 0, "{run:?}");
    let row = run
        .stdout
        .lines()
        .find(|l| l.contains("data-db-1"))
        .unwrap_or_default();
    assert!(
        row.contains("Copy") && row.contains("1Gi -> 512Mi"),
        "{}",
        run.stdout
    );
    // kwok's nodes have no kubelet to report usage, so the dry run knows no data in use: the data
    // column and the estimate both say so, and the footer explains why there is no estimate.
    let last_two: Vec<&str> = row.split_whitespace().rev().take(2).collect();
    assert_eq!(last_two, ["unknown", "unknown"], "{row}");
    assert!(
        run.stdout
            .contains("Estimated copy time: unknown (the operator did not report the data in use: "),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("Kept the dry-run VolumeResize shrink-plan."));
    assert_eq!(env.resize_names().await, ["shrink-plan"]);
    let kept = env.resizes().get("shrink-plan").await.unwrap();
    assert!(kept.spec.dry_run);

    // JSON output is the planned object itself.
    let run = env
        .ferry(&["plan", "db", "--volume", "data=3Gi", "-o", "json"])
        .await;
    assert_eq!(run.code, 0, "{run:?}");
    let planned: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(planned["status"]["phase"], "Succeeded");
    assert_eq!(planned["status"]["plan"].as_array().map(Vec::len), Some(2));

    // resize --watch follows what it created to the end.
    let run = env
        .ferry(&[
            "resize",
            "db",
            "--volume",
            "data=4Gi",
            "--dry-run=plan",
            "--watch",
            "--name",
            "watched",
        ])
        .await;
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout
            .starts_with("volumeresize.ferry.dev/watched created (dry run)\n"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("data-db-1  InPlace"), "{}", run.stdout);
    assert!(
        run.stdout.contains("watched: Succeeded (dry run)"),
        "{}",
        run.stdout
    );
    env.resizes()
        .delete("watched", &Default::default())
        .await
        .unwrap();
    ferry_testenv::wait_until("the watched dry run to be gone", 30, || async {
        (env.resize_names().await == ["shrink-plan"]).then_some(())
    })
    .await
    .unwrap();

    // A request the operator rejects: exit 1 with its reason.
    let run = env
        .ferry(&["plan", "fixed", "--volume", "data=2Gi", "--strategy", "inplace"])
        .await;
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stdout.contains("Cannot resize:") && run.stdout.contains("does not allow volume expansion"),
        "{}",
        run.stdout
    );
    assert_eq!(env.resize_names().await, ["shrink-plan"]);
    env.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_follow_returns_when_the_resize_ends() {
    let mut env = Env::start("cli-follow").await;
    env.stateful_set("db", 1, CLASS_EXPANDABLE, true).await;
    // Its pod cannot be scheduled, so the operator keeps a resize of it Pending (not Ready).
    env.unready_stateful_set("slow").await;

    // Created before the operator runs.
    let run = env
        .ferry(&[
            "resize",
            "db",
            "--volume",
            "data=2Gi",
            "--dry-run=plan",
            "--name",
            "dry",
        ])
        .await;
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout
            .starts_with("volumeresize.ferry.dev/dry created (dry run)"),
        "{}",
        run.stdout
    );
    env.create_resize(
        "ghost",
        json!({"statefulSetName": "ghost", "volumes": [{"name": "data", "size": "2Gi"}]}),
    )
    .await;
    let run = env
        .ferry(&["resize", "slow", "--volume", "data=2Gi", "--name", "slow"])
        .await;
    assert_eq!(run.code, 0, "{run:?}");

    let follow = |name: &str| {
        tokio::spawn(
            env.command(&["status", name, "--follow", "--interval", "0.3"])
                .output(),
        )
    };
    let (dry, ghost, slow) = (follow("dry"), follow("ghost"), follow("slow"));
    env.start_operator().await;

    // A dry run ends Succeeded: exit 0.
    let dry = tokio::time::timeout(Duration::from_secs(60), dry)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let dry_out = String::from_utf8_lossy(&dry.stdout);
    assert_eq!(dry.status.code(), Some(0), "{dry_out}");
    assert!(dry_out.contains("dry: Succeeded (dry run)"), "{dry_out}");
    assert!(dry_out.contains("data-db-0  InPlace"), "{dry_out}");

    // A request the operator rejects ends Failed: exit 1.
    let ghost = tokio::time::timeout(Duration::from_secs(60), ghost)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let ghost_out = String::from_utf8_lossy(&ghost.stdout);
    assert_eq!(ghost.status.code(), Some(1), "{ghost_out}");
    assert!(
        ghost_out.contains("ghost: Failed") && ghost_out.contains("\"ghost\" does not exist"),
        "{ghost_out}"
    );

    // A resize that waits keeps --follow waiting, and it returns when the resize ends.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(!slow.is_finished(), "--follow waits while the resize is Pending");
    let sets: Api<StatefulSet> = env.ns.api();
    sets.delete("slow", &DeleteParams::default()).await.unwrap();
    let slow = tokio::time::timeout(Duration::from_secs(60), slow)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let slow_out = String::from_utf8_lossy(&slow.stdout);
    assert_eq!(slow.status.code(), Some(1), "{slow_out}");
    assert!(slow_out.starts_with("slow: Pending"), "{slow_out}");
    assert!(slow_out.contains("slow: Failed"), "{slow_out}");
    env.finish().await;
}

/// An operator run outside the cluster (no pod) is known by the leader Lease it labels and renews:
/// `version` shows it and `resize` does not warn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_outside_the_cluster_is_known_by_its_lease() {
    let mut env = Env::start("cli-lease").await;
    env.stateful_set("db", 1, ferry_testenv::CLASS_EXPANDABLE, true)
        .await;
    env.start_operator_leading().await;
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> = env.ns.api();
    let lease = ferry_testenv::wait_until("the operator to hold its Lease", 60, || async {
        let lease = leases.get_opt("ferry-leader").await.ok()??;
        let held = lease
            .spec
            .as_ref()?
            .holder_identity
            .as_ref()
            .is_some_and(|h| !h.is_empty());
        held.then_some(lease)
    })
    .await
    .unwrap();
    assert_eq!(
        lease
            .metadata
            .labels
            .unwrap_or_default()
            .get("app.kubernetes.io/name")
            .map(String::as_str),
        Some("ferry"),
        "the operator labels the Lease it makes"
    );

    let run = env.ferry(&["version"]).await;
    assert_eq!(run.code, 0, "{run:?}");
    let line = format!("Operator Lease: {}/ferry-leader held by ", env.ns.name);
    assert!(run.stdout.contains(&line), "{run:?}");
    assert!(!run.stdout.contains("none running"), "{run:?}");
    let resize = env
        .ferry(&[
            "resize", "db", "--volume", "data", "--size", "2Gi", "--name", "grow",
        ])
        .await;
    assert_eq!(resize.code, 0, "{resize:?}");
    assert!(!resize.stderr.contains("no Ferry operator"), "{resize:?}");
    env.finish().await;
}
