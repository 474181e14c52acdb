//! Every command of the real `kubectl-ferry` binary against the local control plane, without the
//! operator: output and exit code; JSON/YAML parsed back; every error a user can act on. Where a
//! VolumeResize must be in a given state, the test writes its status itself (no operator runs in
//! these namespaces).

use crate::support;

use ferry_testenv::{CLASS_EXPANDABLE, CLASS_FIXED};
use kube::ResourceExt;
use serde_json::json;
use std::process::Stdio;
use std::time::Duration;
use support::{Env, condition, plan_row};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resize_creates_what_it_prints_and_list_shows_it() {
    let env = Env::start("cli-resize").await;
    env.stateful_set("db", 2, CLASS_EXPANDABLE, false).await;

    let run = env
        .ferry(&[
            "resize",
            "db",
            "--volume",
            "data=2Gi",
            "--name",
            "grow",
            "--mode",
            "offline",
            "--no-warm-copy",
            "--verify",
            "metadata",
            "--strategy",
            "copy",
            "--retain-old-volumes",
            "7d",
        ])
        .await;
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.starts_with("volumeresize.ferry.dev/grow created\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("StatefulSet db, volume data: 1Gi -> 2Gi"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("mode Offline, strategy Copy, verify Metadata, warm copy off")
    );
    let created = env.resizes().get("grow").await.unwrap();
    let spec = serde_json::to_value(&created.spec).unwrap();
    assert_eq!(
        spec,
        json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "2Gi"}],
               "strategy": "Copy", "mode": "Offline", "warmCopy": false, "verify": "Metadata",
               "retainOldVolumes": "7d", "dryRun": false, "force": false})
    );

    // No --volume: the only template; a generated name; the created object as JSON.
    let run = env.ferry(&["resize", "db", "--size", "3Gi", "-o", "json"]).await;
    assert_eq!(run.code, 0, "{run:?}");
    let printed: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let generated = printed["metadata"]["name"].as_str().unwrap().to_string();
    assert!(generated.starts_with("db-resize-"), "{generated}");
    assert_eq!(
        printed["spec"]["volumes"],
        json!([{"name": "data", "size": "3Gi"}])
    );
    // A StorageClass move without a size keeps the current size.
    let run = env
        .ferry(&[
            "resize",
            "db",
            "--volume",
            "data",
            "--storage-class",
            CLASS_FIXED,
            "--name",
            "move",
            "-o",
            "yaml",
        ])
        .await;
    assert_eq!(run.code, 0, "{run:?}");
    let printed: yaml_serde::Value = yaml_serde::from_str(&run.stdout).unwrap();
    assert_eq!(printed["spec"]["volumes"][0]["size"].as_str(), Some("1Gi"));
    assert_eq!(
        printed["spec"]["volumes"][0]["storageClassName"].as_str(),
        Some(CLASS_FIXED)
    );

    let mut names = vec!["grow".to_string(), "move".to_string(), generated.clone()];
    names.sort();
    assert_eq!(env.resize_names().await, names);

    env.set_status(
        "grow",
        json!({"phase": "Running", "progress": "1/2", "message": "copying data-db-1",
               "plan": [plan_row(1, "Copy", json!({"step": "WarmCopy"}))]}),
    )
    .await;
    let run = env.ferry(&["list"]).await;
    assert_eq!(run.code, 0, "{run:?}");
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{}", run.stdout);
    assert!(
        lines[0].starts_with("NAME") && lines[0].contains("STATEFULSET   PHASE"),
        "{}",
        lines[0]
    );
    let grow = lines.iter().find(|l| l.starts_with("grow ")).unwrap();
    assert!(
        grow.contains("db") && grow.contains("Running") && grow.contains("1/2"),
        "{grow}"
    );
    assert!(!run.stdout.contains('\x1b'), "no colors when not a terminal");

    let run = env.ferry(&["list", "-o", "wide"]).await;
    assert!(
        run.stdout.contains("MESSAGE") && run.stdout.contains("copying data-db-1"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("data=1Gi@ferry-fixed"), "{}", run.stdout);

    let run = env.ferry(&["list", "-o", "json"]).await;
    assert_eq!(run.code, 0);
    let list: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(list["kind"], "List");
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 3);
    let grow = items.iter().find(|i| i["metadata"]["name"] == "grow").unwrap();
    assert_eq!(grow["kind"], "VolumeResize");
    assert_eq!(grow["status"]["phase"], "Running");

    let run = env.ferry(&["list", "-o", "yaml"]).await;
    let list: yaml_serde::Value = yaml_serde::from_str(&run.stdout).unwrap();
    assert_eq!(list["items"].as_sequence().unwrap().len(), 3);

    // kubectl's jsonpath, over the same List.
    let run = env
        .ferry(&[
            "list",
            "-o",
            "jsonpath={.items[?@.metadata.name=='grow'].status.phase}",
        ])
        .await;
    assert_eq!((run.code, run.stdout.as_str()), (0, "Running"), "{run:?}");
    let run = env.ferry(&["list", "-o", "jsonpath={.items[*].kind}"]).await;
    assert_eq!(run.stdout, "VolumeResize VolumeResize VolumeResize", "{run:?}");
    let run = env
        .ferry(&["list", "-o", "jsonpath={range .items[*]}{end}"])
        .await;
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("range/end is not supported"),
        "{}",
        run.stderr
    );

    let run = env.ferry(&["list", "-A"]).await;
    assert_eq!(run.code, 0);
    assert!(run.stdout.starts_with("NAMESPACE"), "{}", run.stdout);
    assert!(
        run.stdout
            .lines()
            .any(|l| l.starts_with(&env.ns.name) && l.contains("grow"))
    );
    env.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_are_actionable_and_create_nothing() {
    let env = Env::start("cli-errors").await;
    env.stateful_set("db", 1, CLASS_EXPANDABLE, false).await;

    let run = env.ferry(&["resize", "ghost", "--volume", "data=2Gi"]).await;
    assert_eq!(run.code, 3, "{run:?}");
    assert!(
        run.stderr.contains("StatefulSet \"ghost\" not found") && run.stderr.contains("there are: db"),
        "{}",
        run.stderr
    );

    let run = env.ferry(&["resize", "db", "--volume", "logs=2Gi"]).await;
    assert_eq!(run.code, 3, "{run:?}");
    assert!(
        run.stderr
            .contains("no volume claim template \"logs\" (it has: data)"),
        "{}",
        run.stderr
    );

    let run = env.ferry(&["plan", "db", "--volume", "logs=2Gi"]).await;
    assert_eq!(run.code, 3, "{run:?}");

    let run = env.ferry(&["resize", "db", "--volume", "data=20GB"]).await;
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("\"20GB\" is not a Kubernetes quantity"),
        "{}",
        run.stderr
    );

    let run = env
        .ferry(&["resize", "db", "--volume", "data", "--size", "0"])
        .await;
    assert_eq!(run.code, 2, "{run:?}");

    let run = env.ferry(&["resize", "db", "--volume", "data"]).await;
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("no size for volume \"data\""),
        "{}",
        run.stderr
    );

    let run = env
        .ferry(&["resize", "db", "--volume", "data=2Gi", "--storage-class", "gold"])
        .await;
    assert_eq!(run.code, 3, "{run:?}");
    assert!(
        run.stderr.contains("StorageClass \"gold\" does not exist") && run.stderr.contains(CLASS_FIXED),
        "{}",
        run.stderr
    );

    let run = env
        .ferry(&["resize", "db", "--volume", "data=2Gi", "--mode", "sideways"])
        .await;
    assert_eq!(run.code, 2, "{run:?}");

    for command in [
        ["status", "nope"],
        ["describe", "nope"],
        ["delete", "nope"],
        ["watch", "nope"],
        ["rollback", "nope"],
    ] {
        let run = env.ferry(&command).await;
        assert_eq!(run.code, 3, "{run:?}");
        assert!(
            run.stderr.contains("volumeresizes.ferry.dev \"nope\" not found"),
            "{}",
            run.stderr
        );
    }
    assert!(env.resize_names().await.is_empty(), "no error created anything");

    // Nothing listening: cluster unreachable.
    let dir = tempfile::tempdir().unwrap();
    let unreachable = dir.path().join("unreachable");
    std::fs::write(
        &unreachable,
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'http://127.0.0.1:1'}}]\n\
         users: [{name: u, user: {}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n",
    )
    .unwrap();
    let run = support::ferry_with(&unreachable, &["list"]).await;
    assert_eq!(run.code, 4, "{run:?}");
    assert!(
        run.stderr
            .contains("cannot reach the Kubernetes API server at http://127.0.0.1:1"),
        "{}",
        run.stderr
    );
    // Not even a kubeconfig.
    let run = support::ferry_with(&dir.path().join("missing"), &["list"]).await;
    assert_eq!(run.code, 4, "{run:?}");

    // A user who may do nothing: forbidden, naming verb and resource.
    let nobody = format!("system:serviceaccount:{}:nobody", env.ns.name);
    let restricted = env.kubeconfig_with(dir.path(), |user| {
        user.insert("as".into(), nobody.clone().into());
    });
    let run = support::ferry_with(&restricted, &["-n", &env.ns.name, "list"]).await;
    assert_eq!(run.code, 4, "{run:?}");
    assert!(
        run.stderr
            .contains("forbidden: you may not list volumeresizes.ferry.dev"),
        "{}",
        run.stderr
    );
    let run = support::ferry_with(
        &restricted,
        &["-n", &env.ns.name, "resize", "db", "--volume", "data=2Gi"],
    )
    .await;
    assert_eq!(run.code, 4, "{run:?}");
    assert!(
        run.stderr
            .contains("forbidden: you may not get statefulsets.apps"),
        "{}",
        run.stderr
    );

    // An API server that does not serve the CRD.
    let server = support::no_crd_server().await;
    let no_crd = dir.path().join("no-crd");
    std::fs::write(
        &no_crd,
        format!(
            "apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: 'http://{server}'}}}}]\n\
             users: [{{name: u, user: {{}}}}]\ncontexts: [{{name: x, context: {{cluster: c, user: u, namespace: prod}}}}]\n\
             current-context: x\n"
        ),
    )
    .unwrap();
    for command in [
        &["list"][..],
        &["status", "grow"],
        &["resize", "db", "--volume", "data=2Gi"],
    ] {
        let run = support::ferry_with(&no_crd, command).await;
        assert_eq!(run.code, 4, "{run:?}");
        assert!(
            run.stderr
                .contains("CRD (volumeresizes.ferry.dev) is not installed"),
            "{}",
            run.stderr
        );
        assert!(
            run.stderr.contains("ferry crd | kubectl apply -f -"),
            "{}",
            run.stderr
        );
    }
    env.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_and_describe_show_the_record() {
    let env = Env::start("cli-status").await;
    env.unready_stateful_set("db").await;
    env.create_resize(
        "grow",
        json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "2Gi"}]}),
    )
    .await;

    let run = env.ferry(&["status", "grow"]).await;
    assert_eq!(run.code, 5, "{run:?}");
    assert!(run.stdout.starts_with("grow: Pending"), "{}", run.stdout);
    let run = env
        .ferry(&[
            "status",
            "grow",
            "--follow",
            "--timeout",
            "1s",
            "--interval",
            "200ms",
        ])
        .await;
    assert_eq!(run.code, 5, "{run:?}");
    assert!(
        run.stderr.contains("grow is still Pending after 1s"),
        "{}",
        run.stderr
    );

    env.set_status(
        "grow",
        json!({"phase": "Running", "progress": "1/2", "message": "copying data-db-1",
               "observedGeneration": 1,
               "conditions": [condition("Prechecked", "True", "PrechecksPassed", "all prechecks passed")],
               "plan": [
                   plan_row(0, "Copy", json!({"bytesDone": 1048576, "bytesTotal": 1048576,
                        "sourceVolume": "pv-old-0", "targetVolume": "pv-new-0", "finishedAt": "2025-01-01T00:01:00Z"})),
                   plan_row(1, "Copy", json!({"step": "WarmCopy", "bytesDone": 268435456u64, "bytesTotal": 1073741824u64,
                        "filesDone": 10, "filesTotal": 40, "bytesPerSecond": 67108864u64})),
               ],
               "createdObjects": {"backupConfigMap": "grow-backup", "temporaryClaims": ["grow-data-db-1"],
                                  "retainedVolumes": ["pv-old-0"]},
               "startedAt": "2025-01-01T00:00:00Z"}),
    )
    .await;
    // An Event about it, as the operator publishes them.
    let event: k8s_openapi::api::core::v1::Event = serde_json::from_value(json!({
        "metadata": {"name": "grow.1"},
        "involvedObject": {"kind": "VolumeResize", "name": "grow", "namespace": env.ns.name,
                           "apiVersion": "ferry.dev/v1alpha1"},
        "reason": "Copying", "message": "copying data-db-1", "type": "Normal", "count": 1,
        "firstTimestamp": "2025-01-01T00:00:00Z", "lastTimestamp": "2025-01-01T00:00:00Z",
    }))
    .unwrap();
    env.ns
        .api::<k8s_openapi::api::core::v1::Event>()
        .create(&Default::default(), &event)
        .await
        .unwrap();

    let run = env.ferry(&["status", "grow"]).await;
    assert_eq!(run.code, 5, "{run:?}");
    assert_eq!(
        run.stdout,
        "grow: Running 1/2 - copying data-db-1\n\
         \x20 data-db-0  Copy  Done  1.0 MiB/1.0 MiB (100%)\n\
         \x20 data-db-1  Copy  WarmCopy  256.0 MiB/1.0 GiB (25%)  10/40 files  64.0 MiB/s  ETA 12s\n"
    );

    let run = env.ferry(&["describe", "grow"]).await;
    assert_eq!(run.code, 0, "{run:?}");
    for part in [
        "Name:               grow",
        &format!("Namespace:          {}", env.ns.name),
        "StatefulSet:        db",
        "Phase:              Running",
        "Progress:           1/2",
        "Spec:",
        "Strategy: Auto  Mode: Rolling  Warm copy: true  Verify: Checksum",
        "Plan:",
        "pv-old-0",
        "pv-new-0",
        "256.0 MiB/1.0 GiB (25%)",
        "Conditions:",
        "Prechecked   True     PrechecksPassed",
        "Objects made:",
        "backup ConfigMap: grow-backup",
        "temporary PVC: grow-data-db-1",
        "retained PV: pv-old-0",
        "Events:",
    ] {
        assert!(
            run.stdout.contains(part),
            "describe lacks {part:?}:\n{}",
            run.stdout
        );
    }

    let events = run.stdout.split("Events:").nth(1).unwrap_or_default();
    assert!(
        events
            .lines()
            .any(|l| l.contains("Normal") && l.contains("Copying") && l.contains("copying data-db-1")),
        "{events}"
    );

    env.set_status(
        "grow",
        json!({"phase": "Failed", "message": "verify failed on data-db-1"}),
    )
    .await;
    let run = env.ferry(&["status", "grow"]).await;
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stdout.starts_with("grow: Failed"), "{}", run.stdout);
    env.set_status("grow", json!({"phase": "Succeeded", "message": "done"}))
        .await;
    let run = env.ferry(&["status", "grow", "--follow"]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.starts_with("grow: Succeeded"), "{}", run.stdout);
    env.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_sets_the_annotation_or_refuses() {
    let env = Env::start("cli-rollback").await;
    let spec = json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "512Mi"}]});
    env.create_resize("pending", spec.clone()).await;
    let run = env.ferry(&["rollback", "pending"]).await;
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("nothing to roll back"), "{}", run.stderr);

    let mut dry = spec.clone();
    dry["dryRun"] = json!(true);
    env.create_resize("dry", dry).await;
    env.set_status(
        "dry",
        json!({"phase": "Succeeded", "plan": [plan_row(0, "Copy", json!({}))]}),
    )
    .await;
    let run = env.ferry(&["rollback", "dry"]).await;
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("is a dry run"), "{}", run.stderr);

    env.create_resize("shrink", spec).await;
    env.set_status(
        "shrink",
        json!({"phase": "Succeeded", "plan": [plan_row(0, "Copy", json!({"finishedAt": "2025-01-01T00:01:00Z"}))],
               "createdObjects": {"retainedVolumes": ["pv-old-0"]}}),
    )
    .await;
    // Without --yes and without a terminal to ask on: refused, nothing changes.
    let run = env.ferry(&["rollback", "shrink"]).await;
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("confirm with --yes"), "{}", run.stderr);
    let shrink = env.resizes().get("shrink").await.unwrap();
    assert!(
        !shrink.annotations().contains_key("ferry.dev/rollback-requested"),
        "{:?}",
        shrink.annotations()
    );
    // On a terminal it asks; anything but yes changes nothing.
    let (code, screen) = on_terminal(&env, &["rollback", "shrink"], "n\n", &[]).await;
    assert_eq!(code, 1, "{screen}");
    assert!(
        screen.contains("Roll back? [y/N]") && screen.contains("not confirmed; nothing changed"),
        "{screen}"
    );
    let shrink = env.resizes().get("shrink").await.unwrap();
    assert!(!shrink.annotations().contains_key("ferry.dev/rollback-requested"));
    let run = env.ferry(&["rollback", "shrink", "--yes"]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "volumeresize.ferry.dev/shrink rollback requested\n");
    assert!(
        run.stderr.contains("warning:")
            && run
                .stderr
                .contains("writes made to the new volumes since the swap are lost"),
        "{}",
        run.stderr
    );
    let shrink = env.resizes().get("shrink").await.unwrap();
    assert_eq!(
        shrink
            .annotations()
            .get("ferry.dev/rollback-requested")
            .map(String::as_str),
        Some("true")
    );
    let run = env.ferry(&["rollback", "shrink"]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("already requested"), "{}", run.stdout);
    let run = env.ferry(&["describe", "shrink"]).await;
    assert!(
        run.stdout.contains("Rollback:           requested"),
        "{}",
        run.stdout
    );
    // "y" on a terminal is consent, as --yes.
    let again = json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "512Mi"}]});
    env.create_resize("shrink-again", again).await;
    env.set_status(
        "shrink-again",
        json!({"phase": "Succeeded", "plan": [plan_row(0, "Copy", json!({"finishedAt": "2025-01-01T00:01:00Z"}))],
               "createdObjects": {"retainedVolumes": ["pv-old-0"]}}),
    )
    .await;
    let (code, screen) = on_terminal(&env, &["rollback", "shrink-again"], "y\n", &[]).await;
    assert_eq!(code, 0, "{screen}");
    assert!(screen.contains("rollback requested"), "{screen}");
    let confirmed = env.resizes().get("shrink-again").await.unwrap();
    assert_eq!(
        confirmed
            .annotations()
            .get("ferry.dev/rollback-requested")
            .map(String::as_str),
        Some("true")
    );
    env.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_removes_it() {
    let env = Env::start("cli-delete").await;
    env.create_resize(
        "grow",
        json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "2Gi"}]}),
    )
    .await;
    let run = env.ferry(&["delete", "grow"]).await;
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "volumeresize.ferry.dev \"grow\" deleted\n"),
        "{run:?}"
    );
    ferry_testenv::wait_until("the VolumeResize to be gone", 30, || async {
        env.resize_names().await.is_empty().then_some(())
    })
    .await
    .unwrap();
    let run = env.ferry(&["delete", "grow"]).await;
    assert_eq!(run.code, 3, "{run:?}");
    // As `kubectl delete -o name`: only the name.
    env.create_resize(
        "grow-more",
        json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "3Gi"}]}),
    )
    .await;
    let run = env.ferry(&["delete", "grow-more", "-o", "name"]).await;
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "volumeresize.ferry.dev/grow-more\n"),
        "{run:?}"
    );
    ferry_testenv::wait_until("the second VolumeResize to be gone", 30, || async {
        env.resize_names().await.is_empty().then_some(())
    })
    .await
    .unwrap();
    let run = env.ferry(&["list"]).await;
    assert_eq!((run.code, run.stdout.as_str()), (0, ""));
    assert!(run.stderr.contains("No VolumeResizes found"), "{}", run.stderr);
    env.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completion_scripts() {
    for (shell, marker) in [
        ("bash", "-o default kubectl-ferry"),
        ("zsh", "#compdef kubectl-ferry"),
        ("fish", "complete -c kubectl-ferry"),
    ] {
        let output = tokio::process::Command::new(support::BIN)
            .args(["completion", shell])
            .output()
            .await
            .unwrap();
        assert_eq!(output.status.code(), Some(0));
        let text = String::from_utf8_lossy(&output.stdout);
        assert!(text.contains(marker), "{shell}: {text}");
        assert!(text.contains("resize") && text.contains("rollback"), "{shell}");
    }
    // A reader that went away (`| head`): the plugin stops quietly instead of panicking.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let output = std::process::Command::new(support::BIN)
        .args(["completion", "bash"])
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");

    let output = tokio::process::Command::new(support::BIN)
        .args(["completion", "tcsh"])
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
}

/// The Running status the watch tests start from.
fn running(done: u64) -> serde_json::Value {
    json!({"phase": "Running", "progress": "0/2", "plan": [
        plan_row(0, "Copy", json!({"step": "WarmCopy", "bytesDone": done, "bytesTotal": 1073741824u64,
                                   "bytesPerSecond": 104857600u64})),
        plan_row(1, "InPlace", json!({})),
    ]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_prints_plain_lines_when_not_a_terminal() {
    let env = Env::start("cli-watch").await;
    env.create_resize(
        "grow",
        json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "2Gi"}]}),
    )
    .await;
    env.set_status("grow", running(268435456)).await;
    let child = env
        .command(&["watch", "grow", "--interval", "0.2"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    env.set_status("grow", running(536870912)).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    env.set_status("grow", json!({"phase": "Succeeded", "progress": "2/2"}))
        .await;
    let output = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(!stdout.contains('\x1b'), "plain text only: {stdout:?}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines,
        [
            "grow: Running 0/2",
            "  data-db-0  Copy  WarmCopy  256.0 MiB/1.0 GiB (25%)  100.0 MiB/s  ETA 8s",
            "  data-db-1  InPlace  Waiting",
            "  data-db-0  Copy  WarmCopy  512.0 MiB/1.0 GiB (50%)  100.0 MiB/s  ETA 6s",
            "grow: Succeeded 2/2",
        ],
        "{stdout}"
    );
    env.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_draws_progress_bars_in_a_terminal() {
    let env = Env::start("cli-watch-tty").await;
    env.create_resize(
        "grow",
        json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "2Gi"}]}),
    )
    .await;
    env.set_status("grow", running(536870912)).await;
    // `script` gives the binary a pseudo-terminal and copies what it draws to our pipe.
    let command = format!(
        "{} --kubeconfig {} -n {} watch grow --interval 0.2",
        support::BIN,
        env.kubeconfig.display(),
        env.ns.name
    );
    let child = tokio::process::Command::new("script")
        .args(["-qfec", &command, "/dev/null"])
        .env("TERM", "xterm-256color")
        .env("COLUMNS", "160")
        .env_remove("NO_COLOR")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    env.set_status(
        "grow",
        json!({"phase": "Failed", "progress": "0/2", "message": "verify failed"}),
    )
    .await;
    let output = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let screen = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "Failed exits 1: {screen:?}");
    assert!(
        screen.contains("\x1b["),
        "terminal escapes (colors, redraws): {screen:?}"
    );
    assert!(
        screen.contains("data-db-0") && screen.contains("data-db-1"),
        "{screen:?}"
    );
    assert!(screen.contains("==============>"), "a half-full bar: {screen:?}");
    assert!(
        screen.contains("(50%)") && screen.contains("100.0 MiB/s") && screen.contains("ETA 6s"),
        "{screen:?}"
    );
    assert!(
        screen.contains("Failed") && screen.contains("verify failed"),
        "{screen:?}"
    );
    env.finish().await;
}

async fn resizes_in(env: &Env) -> Vec<ferry_api::VolumeResize> {
    let resizes: kube::Api<ferry_api::VolumeResize> = env.ns.api();
    resizes.list(&Default::default()).await.unwrap().items
}

/// `version` names the operator pods it finds in any namespace (labelled as the chart labels
/// them), with their version and readiness; `--client` asks no cluster; an unreachable cluster is
/// an error after the client's version. (That none runs: `alone::`, as the chart's tests may run
/// an operator beside this one.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn version_shows_the_client_and_the_operators_the_cluster_runs() {
    let env = Env::start("cli-version").await;
    let client_only = env.ferry(&["version", "--client"]).await;
    assert_eq!(client_only.code, 0, "{client_only:?}");
    assert_eq!(
        client_only.stdout,
        format!("Client Version: {}\n", env!("CARGO_PKG_VERSION"))
    );

    // An operator pod as the chart labels it, never scheduled (so never Ready).
    let pods: kube::Api<k8s_openapi::api::core::v1::Pod> = env.ns.api();
    let pod = serde_json::from_value(json!({
        "metadata": {"name": "ferry-test-operator", "labels": {
            "app.kubernetes.io/name": "ferry", "app.kubernetes.io/version": "9.8.7"}},
        "spec": {"schedulingGates": [{"name": "ferry.dev/never"}],
            "containers": [{"name": "ferry", "image": "ferry.local/ferry:dev"}]},
    }))
    .unwrap();
    pods.create(&Default::default(), &pod).await.unwrap();
    let run = env.ferry(&["version"]).await;
    assert_eq!(run.code, 0, "{run:?}");
    let line = format!(
        "Operator Version: 9.8.7 ({}/ferry-test-operator, not Ready)",
        env.ns.name
    );
    assert!(run.stdout.contains(&line), "{run:?}");
    // No webhook covers this namespace (the test operators' cover their own): the dry run of a
    // VolumeResize for a missing StatefulSet is accepted, and said.
    let webhooks = format!("Webhooks: NOT called in namespace {}", env.ns.name);
    assert!(run.stdout.contains(&webhooks), "{run:?}");
    let data = env.ferry(&["version", "-o", "json"]).await;
    let report: serde_json::Value = serde_json::from_str(&data.stdout).unwrap();
    assert_eq!(report["webhooks"]["called"], false, "{report}");
    assert!(resizes_in(&env).await.is_empty(), "the dry run kept nothing");
    let ours = report["operators"]
        .as_array()
        .unwrap()
        .iter()
        .find(|pod| pod["namespace"] == env.ns.name.as_str())
        .cloned();
    assert_eq!(
        ours,
        Some(
            json!({"namespace": env.ns.name, "name": "ferry-test-operator", "version": "9.8.7", "ready": false})
        )
    );

    let unreachable =
        support::ferry_with(std::path::Path::new("/nonexistent/kubeconfig"), &["version"]).await;
    assert_eq!(unreachable.code, 4, "{unreachable:?}");
    assert!(
        unreachable.stdout.starts_with("Client Version: "),
        "{unreachable:?}"
    );
    env.finish().await;
}

/// `--attributes-class` alone asks for another tier at the template's size, and `--clone` for the
/// warm copy as a CSI clone; `--clone` without a warm copy is a usage error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attributes_class_alone_keeps_the_size_and_clone_asks_for_a_clone() {
    let env = Env::start("cli-attributes").await;
    env.stateful_set("db", 1, CLASS_EXPANDABLE, false).await;
    let printed = env
        .ferry(&[
            "resize",
            "db",
            "--attributes-class",
            "gold",
            "--clone",
            "--dry-run",
            "-o",
            "json",
        ])
        .await;
    assert_eq!(printed.code, 0, "{printed:?}");
    let printed: serde_json::Value = serde_json::from_str(&printed.stdout).unwrap();
    assert_eq!(
        printed["spec"]["volumes"],
        json!([{"name": "data", "size": "1Gi", "volumeAttributesClassName": "gold"}])
    );
    assert_eq!(printed["spec"]["warmCopyMethod"], "Clone");
    let refused = env
        .ferry(&[
            "resize",
            "db",
            "--size",
            "2Gi",
            "--clone",
            "--no-warm-copy",
            "--dry-run",
        ])
        .await;
    assert_eq!(refused.code, 2, "{refused:?}");
    assert!(env.resize_names().await.is_empty(), "a dry run stored something");
    env.finish().await;
}

/// `--dry-run=client` prints and sends nothing; `--dry-run=server` is checked by the API server
/// (a name it refuses is refused) and stores nothing; `--watch` with either is a usage error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_and_server_dry_runs_create_nothing() {
    let env = Env::start("cli-dry-run").await;
    env.stateful_set("db", 1, CLASS_EXPANDABLE, false).await;

    let client = env
        .ferry(&["resize", "db", "--size", "2Gi", "--dry-run", "-o", "json"])
        .await;
    assert_eq!(client.code, 0, "{client:?}");
    let printed: serde_json::Value = serde_json::from_str(&client.stdout).unwrap();
    assert_eq!(
        printed["spec"]["volumes"],
        json!([{"name": "data", "size": "2Gi"}])
    );
    assert_eq!(printed["spec"]["dryRun"], false);
    // Not the API server's to refuse: the client does not check names.
    let bad_name = env
        .ferry(&[
            "resize",
            "db",
            "--size",
            "2Gi",
            "--dry-run=client",
            "--name",
            "Not_A_Name",
        ])
        .await;
    assert_eq!(bad_name.code, 0, "{bad_name:?}");
    assert!(
        bad_name
            .stdout
            .starts_with("volumeresize.ferry.dev/Not_A_Name created (dry run)\n")
    );

    let server = env
        .ferry(&[
            "resize",
            "db",
            "--size",
            "2Gi",
            "--dry-run=server",
            "--name",
            "checked",
        ])
        .await;
    assert_eq!(server.code, 0, "{server:?}");
    assert!(
        server
            .stdout
            .starts_with("volumeresize.ferry.dev/checked created (server dry run)\n")
    );
    let refused = env
        .ferry(&[
            "resize",
            "db",
            "--size",
            "2Gi",
            "--dry-run=server",
            "--name",
            "Not_A_Name",
        ])
        .await;
    assert_ne!(refused.code, 0, "{refused:?}");

    let watched = env
        .ferry(&["resize", "db", "--size", "2Gi", "--dry-run=server", "--watch"])
        .await;
    assert_eq!(watched.code, 2, "{watched:?}");
    assert!(env.resize_names().await.is_empty(), "a dry run stored something");
    env.finish().await;
}

/// kubectl's `-o name` for `resize` and `list`; `status` and `watch` as data: one document now,
/// or one JSON line per change until the resize ends, with the exit code of its phase.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_and_status_as_data_for_scripts() {
    let env = Env::start("cli-data").await;
    env.stateful_set("db", 1, CLASS_EXPANDABLE, false).await;
    let made = env
        .ferry(&["resize", "db", "--size", "2Gi", "--name", "grow", "-o", "name"])
        .await;
    assert_eq!(
        (made.code, made.stdout.as_str()),
        (0, "volumeresize.ferry.dev/grow\n"),
        "{made:?}"
    );
    let listed = env.ferry(&["list", "-o", "name"]).await;
    assert_eq!(listed.stdout, "volumeresize.ferry.dev/grow\n", "{listed:?}");

    // Not acted on (no operator here): in progress, exit 5; its document says so.
    let now = env.ferry(&["status", "grow", "-o", "json"]).await;
    assert_eq!(now.code, 5, "{now:?}");
    let document: serde_json::Value = serde_json::from_str(&now.stdout).unwrap();
    assert_eq!(document["metadata"]["name"], "grow");
    assert_eq!(document["phase"], "Pending");
    let phase = env
        .ferry(&["status", "grow", "-o", "jsonpath={.metadata.name}: {.phase}"])
        .await;
    assert_eq!(phase.stdout, "grow: Pending", "{phase:?}");
    let timed_out = env
        .ferry(&[
            "status",
            "grow",
            "--follow",
            "--timeout",
            "1",
            "--interval",
            "0.2",
            "-o",
            "json",
        ])
        .await;
    assert_eq!(timed_out.code, 5, "{timed_out:?}");
    assert_eq!(
        timed_out.stdout.lines().count(),
        1,
        "one line while nothing changes: {timed_out:?}"
    );

    env.set_status("grow", json!({"phase": "Succeeded", "message": "done"}))
        .await;
    let watched = env.ferry(&["watch", "grow", "-o", "json"]).await;
    assert_eq!(watched.code, 0, "{watched:?}");
    let last: serde_json::Value = serde_json::from_str(watched.stdout.lines().last().unwrap()).unwrap();
    assert_eq!(
        (last["phase"].as_str(), last["status"]["message"].as_str()),
        (Some("Succeeded"), Some("done"))
    );
    let yaml = env.ferry(&["status", "grow", "-o", "yaml"]).await;
    assert_eq!(yaml.code, 0, "{yaml:?}");
    assert!(yaml.stdout.contains("phase: Succeeded"), "{yaml:?}");
    env.finish().await;
}

/// kubectl's connection flags: `--as` (and `--as-group`) act as another user, so RBAC answers for
/// them; `--request-timeout` takes kubectl's durations and refuses others before any request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn impersonation_and_request_timeout_as_in_kubectl() {
    let env = Env::start("cli-as").await;
    let nobody = env.ferry(&["--as", "ferry-test-nobody", "list"]).await;
    assert_eq!(nobody.code, 4, "{nobody:?}");
    assert!(
        nobody.stderr.contains("forbidden") || nobody.stderr.contains("Forbidden"),
        "{nobody:?}"
    );
    let admin = env
        .ferry(&[
            "--as",
            "ferry-test-nobody",
            "--as-group",
            "system:masters",
            "list",
            "--request-timeout",
            "20s",
        ])
        .await;
    assert_eq!(admin.code, 0, "{admin:?}");
    let bad = env.ferry(&["list", "--request-timeout", "soon"]).await;
    assert_eq!(bad.code, 2, "{bad:?}");
    assert!(
        bad.stderr.contains("--request-timeout") && bad.stderr.contains("\"soon\" is not a duration"),
        "{bad:?}"
    );
    // Go's form, as kubectl takes it.
    let kubectl_like = env.ferry(&["list", "--request-timeout", "1m30s"]).await;
    assert_eq!(kubectl_like.code, 0, "{kubectl_like:?}");
    env.finish().await;
}

/// kubectl's plugin completion runs `kubectl_complete-ferry` with the words after `ferry`: it
/// offers the StatefulSets, templates, VolumeResizes and namespaces the cluster has, then Cobra's
/// no-file directive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_plugin_completion_offers_the_clusters_names() {
    let env = Env::start("cli-complete").await;
    env.stateful_set("db", 1, CLASS_EXPANDABLE, false).await;
    env.create_resize(
        "grow",
        json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "2Gi"}]}),
    )
    .await;
    let complete = |words: &[&str]| {
        let kubeconfig = env.kubeconfig.display().to_string();
        let mut args = vec![
            "--kubeconfig".to_string(),
            kubeconfig,
            "-n".to_string(),
            env.ns.name.clone(),
        ];
        args.extend(words.iter().map(|word| word.to_string()));
        async move {
            let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_kubectl_complete-ferry"))
                .args(&args)
                .output()
                .await
                .unwrap();
            assert!(output.status.success(), "{output:?}");
            String::from_utf8(output.stdout).unwrap()
        }
    };
    assert_eq!(complete(&["resize", ""]).await, "db\n:4\n");
    assert_eq!(complete(&["resize", "db", "--volume", "d"]).await, "data\n:4\n");
    assert_eq!(complete(&["status", "gr"]).await, "grow\n:4\n");
    assert_eq!(complete(&["wat"]).await, "watch\n:4\n");
    assert!(
        complete(&["list", "-n", "cli-complete"])
            .await
            .contains(&format!("{}\n", env.ns.name))
    );
    // An unreachable cluster offers nothing, and says nothing into the command line.
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_kubectl_complete-ferry"))
        .args(["--kubeconfig", "/nonexistent", "status", ""])
        .output()
        .await
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&output.stdout), ":4\n");
    env.finish().await;
}

/// Runs `kubectl-ferry ARGS` on a pseudo-terminal (`script`), typing `input`, with `vars` set;
/// returns its exit code and everything it wrote to the terminal (stdout and stderr together).
async fn on_terminal(env: &Env, args: &[&str], input: &str, vars: &[(&str, &str)]) -> (i32, String) {
    use tokio::io::AsyncWriteExt;
    let command = format!(
        "{} --kubeconfig {} -n {} {}",
        support::BIN,
        env.kubeconfig.display(),
        env.ns.name,
        args.join(" ")
    );
    let mut script = tokio::process::Command::new("script");
    script
        .args(["-qfec", &command, "/dev/null"])
        .env("TERM", "xterm-256color")
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR")
        .env_remove("CLICOLOR_FORCE")
        // A user's terminal: with CI set (as .ci/run sets it), anstream colours a terminal even
        // when TERM=dumb, as CI logs show colours.
        .env_remove("CI")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (name, value) in vars {
        script.env(name, value);
    }
    let mut child = script.spawn().unwrap();
    // Typed ahead: the terminal keeps it until the command reads its answer.
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).await.unwrap();
    drop(stdin);
    let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let screen = String::from_utf8_lossy(&output.stdout).into_owned();
    eprintln!("$ kubectl-ferry {} (on a terminal)\n{screen}", args.join(" "));
    (output.status.code().unwrap_or(-1), screen)
}

/// Colours follow the ecosystem's conventions when not asked for: `CLICOLOR_FORCE` colours even a
/// pipe, `NO_COLOR` and a pipe alone do not; `--color never` wins over all. On a terminal they are
/// on, unless `TERM=dumb` or `CLICOLOR=0` says the terminal cannot or should not show them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn colours_follow_clicolor_force_and_no_color() {
    let env = Env::start("cli-colour").await;
    env.create_resize(
        "grow",
        json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "2Gi"}]}),
    )
    .await;
    let run = |args: &[&str], vars: &[(&str, &str)]| {
        let mut command = env.command(args);
        command.env_remove("CLICOLOR").env_remove("CLICOLOR_FORCE");
        for (name, value) in vars {
            command.env(name, value);
        }
        async move { String::from_utf8(command.output().await.unwrap().stdout).unwrap() }
    };
    assert!(run(&["list"], &[("CLICOLOR_FORCE", "1")]).await.contains("\x1b["));
    assert!(
        !run(&["list"], &[]).await.contains("\x1b["),
        "a pipe gets no colours"
    );
    assert!(!run(&["list"], &[("NO_COLOR", "1")]).await.contains("\x1b["));
    assert!(
        !run(&["list", "--color", "never"], &[("CLICOLOR_FORCE", "1")])
            .await
            .contains("\x1b[")
    );
    let (code, screen) = on_terminal(&env, &["list"], "", &[]).await;
    assert_eq!(code, 0, "{screen}");
    assert!(screen.contains("\x1b["), "a terminal gets colours: {screen:?}");
    for unwanted in [("TERM", "dumb"), ("CLICOLOR", "0")] {
        let (code, screen) = on_terminal(&env, &["list"], "", &[unwanted]).await;
        assert_eq!(code, 0, "{screen}");
        assert!(screen.contains("grow"), "{screen}");
        assert!(!screen.contains("\x1b["), "{unwanted:?}: {screen:?}");
    }
    env.finish().await;
}

/// A kubeconfig cluster with `proxy-url` (an HTTP proxy, as kubectl honours it) is reached through
/// that proxy; one naming a proxy that is not there fails as unreachable, not silently direct.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kubeconfig_proxy_url_is_used() {
    let env = Env::start("cli-proxy").await;
    env.stateful_set("db", 1, CLASS_EXPANDABLE, false).await;
    let (proxy, tunnels) = support::connect_proxy().await;
    let dir = tempfile::tempdir().unwrap();
    let proxied = support::kubeconfig_with_cluster(&env.kubeconfig, dir.path(), |cluster| {
        cluster.insert("proxy-url".into(), format!("http://{proxy}").into());
    });
    let run = support::ferry_with(&proxied, &["-n", &env.ns.name, "list"]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        tunnels.load(std::sync::atomic::Ordering::SeqCst) >= 1,
        "the request did not go through the proxy: {run:?}"
    );

    let gone = support::kubeconfig_with_cluster(&env.kubeconfig, dir.path(), |cluster| {
        cluster.insert("proxy-url".into(), "http://127.0.0.1:1".into());
    });
    let run = support::ferry_with(&gone, &["-n", &env.ns.name, "list"]).await;
    assert_eq!(run.code, 4, "{run:?}");
    env.finish().await;
}

/// `resize KIND/NAME` resizes the one StatefulSet that resource controls (`prometheus/k8s`); none,
/// or several, is an error that names what it found.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resize_of_an_owners_resource_resolves_the_stateful_set_it_controls() {
    use k8s_openapi::api::apps::v1::StatefulSet;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::PostParams;
    let env = Env::start("cli-owner").await;
    let parents = env.ns.api::<ConfigMap>();
    let mut uids = Vec::new();
    for name in ["parent", "twins"] {
        let made = parents
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": name}})).unwrap(),
            )
            .await
            .unwrap();
        uids.push(made.uid().unwrap());
    }
    for (sts, owner, uid) in [
        ("db", "parent", &uids[0]),
        ("a", "twins", &uids[1]),
        ("b", "twins", &uids[1]),
    ] {
        let mut set = ferry_testenv::fixtures::stateful_set(sts, 1, CLASS_FIXED, "1Gi");
        set.metadata.owner_references = Some(vec![
            k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                name: owner.into(),
                uid: uid.clone(),
                controller: Some(true),
                block_owner_deletion: None,
            },
        ]);
        env.ns
            .api::<StatefulSet>()
            .create(&PostParams::default(), &set)
            .await
            .unwrap();
    }

    let run = env
        .ferry(&[
            "resize",
            "configmaps/parent",
            "--size",
            "2Gi",
            "--dry-run",
            "-o",
            "json",
        ])
        .await;
    assert_eq!(run.code, 0, "{run:?}");
    let printed: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(printed["spec"]["statefulSetName"], "db");
    assert!(
        printed["metadata"]["generateName"]
            .as_str()
            .unwrap()
            .starts_with("db-")
    );

    let nobody = env
        .ferry(&["resize", "configmap/nobody", "--size", "2Gi", "--dry-run"])
        .await;
    assert_eq!(nobody.code, 3, "{nobody:?}");
    assert!(
        nobody.stderr.contains("no StatefulSet in namespace") && nobody.stderr.contains("configmap/nobody"),
        "{nobody:?}"
    );
    let several = env
        .ferry(&["resize", "ConfigMap/twins", "--size", "2Gi", "--dry-run"])
        .await;
    assert_eq!(several.code, 2, "{several:?}");
    assert!(
        several
            .stderr
            .contains("controls 2 StatefulSets (a, b); name one"),
        "{several:?}"
    );
    assert!(env.resize_names().await.is_empty());
    env.finish().await;
}
