//! `kubectl ferry migrate --plan` on the local control plane (kwok nodes; no operator): the plan of
//! a move from one StorageClass to another names exactly the StatefulSets and templates on the
//! class being left, refuses what cannot be copied, lists the claim no StatefulSet owns as not
//! handled, narrows with `-l`, fails plainly when the target class is missing, and changes nothing.

use crate::support::Env;
use ferry_testenv::fixtures::stateful_set_with;
use ferry_testenv::{CLASS_FIXED, wait_until};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::PostParams;
use kube::{Api, Client};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// Deletes the test's StorageClasses when it ends, passed or failed: they are cluster-scoped.
struct RemoveClasses(Client, Vec<String>);

impl Drop for RemoveClasses {
    fn drop(&mut self) {
        let (client, names) = (self.0.clone(), self.1.clone());
        let removed = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                let classes = Api::<StorageClass>::all(client);
                for name in names {
                    if let Err(error) = classes.delete(&name, &Default::default()).await {
                        eprintln!("could not delete StorageClass {name}: {error}");
                    }
                }
            })
        });
        let _ = removed.join();
    }
}

/// A StatefulSet that makes every replica (and so every claim) at once, none waiting for the one
/// before to be Ready: the claims on the test's classes may stay Pending.
fn parallel_set(name: &str, replicas: i32, templates: &[(&str, &str, &str)]) -> StatefulSet {
    let mut set = stateful_set_with(name, replicas, templates);
    set.spec.as_mut().unwrap().pod_management_policy = Some("Parallel".into());
    set
}

/// A StatefulSet labelled `tier=TIER` and `migrate-test=NS` (so `-A -l` finds only this test's).
async fn labelled_set(env: &Env, name: &str, replicas: i32, tier: &str, templates: &[(&str, &str, &str)]) {
    let mut set = parallel_set(name, replicas, templates);
    set.metadata.labels = Some(BTreeMap::from([
        ("tier".to_string(), tier.to_string()),
        ("migrate-test".to_string(), env.ns.name.clone()),
    ]));
    env.ns
        .api::<StatefulSet>()
        .create(&PostParams::default(), &set)
        .await
        .unwrap();
}

fn plan_of(run: &crate::support::Run) -> Value {
    assert_eq!(run.code, 0, "{run:?}");
    serde_json::from_str(&run.stdout).unwrap()
}

fn set_names(plan: &Value) -> BTreeSet<String> {
    (plan["statefulSets"].as_array().unwrap().iter())
        .map(|set| set["name"].as_str().unwrap().to_string())
        .collect()
}

fn set_named<'a>(plan: &'a Value, name: &str) -> &'a Value {
    (plan["statefulSets"].as_array().unwrap().iter())
        .find(|set| set["name"] == name)
        .unwrap_or_else(|| panic!("{name} is not in the plan: {plan:#}"))
}

fn claim_names(set: &Value) -> Vec<&str> {
    (set["claims"].as_array().unwrap().iter())
        .map(|claim| claim["claim"].as_str().unwrap())
        .collect()
}

/// Each StatefulSet's generation and each claim's class: what a migration would change.
async fn shapes(env: &Env) -> (Vec<(String, Option<i64>)>, Vec<(String, Option<String>)>) {
    let sets = (env
        .ns
        .api::<StatefulSet>()
        .list(&Default::default())
        .await
        .unwrap()
        .items)
        .into_iter()
        .map(|set| (set.metadata.name.unwrap(), set.metadata.generation))
        .collect();
    let claims = (env
        .ns
        .api::<PersistentVolumeClaim>()
        .list(&Default::default())
        .await
        .unwrap()
        .items)
        .into_iter()
        .map(|claim| {
            (
                claim.metadata.name.unwrap(),
                claim.spec.unwrap().storage_class_name,
            )
        })
        .collect();
    (sets, claims)
}

/// `migrate --from-class OLD --to-class NEW ARGS`.
async fn migrate(env: &Env, classes: (&str, &str), args: &[&str]) -> crate::support::Run {
    let mut words = vec!["migrate", "--from-class", classes.0, "--to-class", classes.1];
    words.extend(args);
    env.ferry(&words).await
}

/// A StatefulSet with one raw block template on `class`: refused (no file system to copy).
fn raw_block_set(class: &str) -> StatefulSet {
    let mut raw = parallel_set("raw", 1, &[("disk", class, "1Gi")]);
    let spec = raw.spec.as_mut().unwrap();
    let claim = spec.volume_claim_templates.as_mut().unwrap()[0]
        .spec
        .as_mut()
        .unwrap();
    claim.volume_mode = Some("Block".into());
    let container = &mut spec.template.spec.as_mut().unwrap().containers[0];
    container.volume_mounts = None;
    container.volume_devices = Some(vec![
        serde_json::from_value(json!({"name": "disk", "devicePath": "/dev/disk"})).unwrap(),
    ]);
    raw
}

/// Two StatefulSets on `old` (db's second template on another class), one on another class, one
/// refused, and a claim on `old` that no StatefulSet owns; returns once every claim is made.
async fn make_fleet(env: &Env, old: &str) {
    let db_templates = [("data", old, "1Gi"), ("logs", CLASS_FIXED, "1Gi")];
    labelled_set(env, "db", 2, "db", &db_templates).await;
    labelled_set(env, "cache", 1, "cache", &[("data", old, "2Gi")]).await;
    labelled_set(env, "web", 1, "web", &[("data", CLASS_FIXED, "1Gi")]).await;
    let sets = env.ns.api::<StatefulSet>();
    sets.create(&PostParams::default(), &raw_block_set(old))
        .await
        .unwrap();
    let loose: PersistentVolumeClaim = serde_json::from_value(json!({
        "metadata": {"name": "loose"},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": old,
                 "resources": {"requests": {"storage": "1Gi"}}},
    }))
    .unwrap();
    let claims = env.ns.api::<PersistentVolumeClaim>();
    claims.create(&PostParams::default(), &loose).await.unwrap();
    let made = [
        "data-db-0",
        "data-db-1",
        "logs-db-0",
        "logs-db-1",
        "data-cache-0",
        "data-web-0",
        "disk-raw-0",
    ];
    for claim in made {
        wait_until(&format!("claim {claim} to be made"), 60, || async {
            claims.get_opt(claim).await.ok().flatten().map(|_| ())
        })
        .await
        .unwrap();
    }
}

/// The whole plan of the fleet: exactly db and cache move, db's logs stay, raw is refused, loose is
/// not handled.
fn check_whole_plan(plan: &Value, ns: &str) {
    assert_eq!(
        set_names(plan),
        BTreeSet::from(["cache".into(), "db".into()]),
        "{plan:#}"
    );
    let db = set_named(plan, "db");
    assert_eq!(db["movingTemplates"], json!(["data"]));
    assert_eq!(
        db["stayingTemplates"],
        json!([{"name": "logs", "storageClass": CLASS_FIXED}])
    );
    assert_eq!(claim_names(db), ["data-db-0", "data-db-1"]);
    let cache = set_named(plan, "cache");
    assert_eq!(claim_names(cache), ["data-cache-0"]);
    assert_eq!(cache["claims"][0]["sizeBytes"], 2u64 << 30);
    // No data in use is read: the size bounds the estimate (2 GiB at the measured ~380 MiB/s).
    assert_eq!(cache["claims"][0]["bytesInUse"], Value::Null);
    assert_eq!(
        cache["claims"][0]["estimate"],
        json!({"seconds": 6, "upperBound": true})
    );
    assert_eq!(plan["refused"].as_array().unwrap().len(), 1, "{plan:#}");
    assert_eq!(plan["refused"][0]["name"], "raw");
    let why = plan["refused"][0]["reasons"][0].as_str().unwrap();
    assert!(why.contains("volumeMode Block"), "{why}");
    let not_handled = plan["notHandled"].as_array().unwrap();
    assert_eq!(not_handled.len(), 1, "{plan:#}");
    assert_eq!(not_handled[0]["namespace"], ns);
    assert_eq!(not_handled[0]["claim"], "loose");
    let why = not_handled[0]["reason"].as_str().unwrap();
    assert!(why.contains("no pod uses it"), "{why}");
    assert_eq!(
        (&plan["totals"]["statefulSets"], &plan["totals"]["claims"]),
        (&json!(2), &json!(3))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_plans_the_sets_on_the_class_and_leaves_everything_as_it_was() {
    let env = Env::start("cli-migrate").await;
    let ns = env.ns.name.clone();
    let (old, new) = (format!("{ns}-old"), format!("{ns}-new"));
    for class in [&old, &new] {
        ferry_testenv::fixtures::annotated_class_copy(&env.client, CLASS_FIXED, class, BTreeMap::new())
            .await
            .unwrap();
    }
    let _remove = RemoveClasses(env.client.clone(), vec![old.clone(), new.clone()]);
    make_fleet(&env, &old).await;
    let before = shapes(&env).await;
    let classes = (old.as_str(), new.as_str());

    let plan = plan_of(&migrate(&env, classes, &["--plan", "-o", "json"]).await);
    check_whole_plan(&plan, &ns);
    // The same as text, and as YAML.
    let text = migrate(&env, classes, &["--plan"]).await;
    assert_eq!(text.code, 0, "{text:?}");
    for line in [
        format!("StatefulSet {ns}/db (2 replicas): moves data; stays: logs ({CLASS_FIXED})"),
        format!("{ns}/loose: no StatefulSet owns it and no pod uses it; never touched"),
        "Total: 2 StatefulSet(s) to move, 3 claim(s)".to_string(),
    ] {
        assert!(text.stdout.contains(&line), "{line:?} missing: {text:?}");
    }
    let yaml = migrate(&env, classes, &["--plan", "-o", "yaml"]).await;
    assert_eq!(yaml.code, 0, "{yaml:?}");
    assert_eq!(yaml_serde::from_str::<Value>(&yaml.stdout).unwrap(), plan);

    // -l narrows the StatefulSets; the unlabelled claim is not listed then.
    let narrowed = plan_of(&migrate(&env, classes, &["-l", "tier=db", "--plan", "-o", "json"]).await);
    assert_eq!(set_names(&narrowed), BTreeSet::from(["db".into()]));
    assert_eq!(
        (&narrowed["notHandled"], &narrowed["refused"]),
        (&json!([]), &json!([]))
    );
    // -A: every namespace (this test's label keeps other tests' StatefulSets out).
    let selector = format!("migrate-test={ns},tier in (db,cache)");
    let everywhere = migrate(&env, classes, &["-A", "-l", &selector, "--plan", "-o", "json"]).await;
    assert_eq!(
        set_names(&plan_of(&everywhere)),
        BTreeSet::from(["cache".into(), "db".into()])
    );

    // A target class that does not exist: an error, exit 3, and no plan.
    let missing = format!("{ns}-missing");
    let run = migrate(&env, (&old, &missing), &["--plan"]).await;
    assert_eq!(run.code, 3, "{run:?}");
    let said = format!("StorageClass {missing:?} (--to-class) does not exist");
    assert!(run.stderr.contains(&said), "{run:?}");
    assert_eq!(run.stdout, "", "nothing printed as a plan");
    // Without --plan, -o (a plan's output) is a usage error, and nothing is made.
    let run = migrate(&env, classes, &["-o", "json"]).await;
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("-o prints a plan"), "{run:?}");

    // Nothing was created or changed.
    assert_eq!(env.resize_names().await, Vec::<String>::new());
    assert_eq!(shapes(&env).await, before);
    env.finish().await;
}

/// Without `--plan` the migration is carried out: a VolumeMigration in the namespace, which the
/// operator runs; `--watch` follows it and returns 0 once every StatefulSet moved. On the real
/// node, with a writer whose every acknowledged write must be on the new class's volume.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_carried_out_moves_a_writer_and_watch_returns_once_it_moved() {
    use ferry_api::{MigrationPhase, VolumeMigration};
    use ferry_testenv::fixtures::{claim_directory, wait_ready};
    use ferry_testenv::workload::{lost_records, writer_stateful_set};
    use ferry_testenv::{CLASS_BLOCK_FIXED, CLASS_BLOCK_FIXED_OTHER};
    use k8s_openapi::api::core::v1::PersistentVolume;

    let mut env = Env::start("cli-migrate-run").await;
    let sets: Api<StatefulSet> = env.ns.api();
    let templates = [("data", CLASS_BLOCK_FIXED, "96Mi")];
    let set = writer_stateful_set("db", 1, &templates, &env.ns.name, 1 << 10, 0).unwrap();
    sets.create(&PostParams::default(), &set).await.unwrap();
    wait_ready(&sets, "db", 1, 180).await.unwrap();
    env.start_operator().await;
    let classes = [
        "--from-class",
        CLASS_BLOCK_FIXED,
        "--to-class",
        CLASS_BLOCK_FIXED_OTHER,
    ];

    // A selector a VolumeMigration cannot hold is refused before anything is made.
    let refused = env
        .ferry(&[&["migrate", "-l", "app!=db"][..], &classes].concat())
        .await;
    assert_eq!(refused.code, 2, "{refused:?}");
    let migrations: Api<VolumeMigration> = env.ns.api();
    assert!(
        migrations
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );

    let run = env
        .ferry(&[&["migrate", "--max-concurrent", "2", "--watch"][..], &classes].concat())
        .await;
    assert_eq!(run.code, 0, "{run:?}");
    let name = format!("{CLASS_BLOCK_FIXED}-to-{CLASS_BLOCK_FIXED_OTHER}");
    assert!(
        run.stdout.contains(&format!(
            "volumemigration.ferry.dev/{name} created in {}",
            env.ns.name
        )),
        "{run:?}"
    );
    assert!(run.stdout.contains("Succeeded 1/1"), "{run:?}");
    let migration = migrations.get(&name).await.unwrap();
    let status = migration.status.unwrap();
    assert_eq!(status.phase, MigrationPhase::Succeeded);
    assert_eq!(migration.spec.max_concurrent, Some(2));
    let claims: Api<PersistentVolumeClaim> = env.ns.api();
    let claim = claims.get("data-db-0").await.unwrap();
    assert_eq!(
        claim.spec.unwrap().storage_class_name.as_deref(),
        Some(CLASS_BLOCK_FIXED_OTHER)
    );
    let volumes: Api<PersistentVolume> = Api::all(env.client.clone());
    wait_ready(&sets, "db", 1, 120).await.unwrap();
    let dir = claim_directory(&claims, &volumes, "data-db-0").await.unwrap();
    assert_eq!(
        lost_records(&env.ns.name, "db-0", &dir).unwrap(),
        Vec::<u64>::new()
    );

    // The same again: everything moved, so nothing more is made.
    let again = env.ferry(&[&["migrate"][..], &classes].concat()).await;
    assert_eq!(again.code, 0, "{again:?}");
    assert!(again.stdout.contains("nothing to migrate"), "{again:?}");
    assert_eq!(migrations.list(&Default::default()).await.unwrap().items.len(), 1);
    env.finish().await;
}
