//! ExtendedStatefulSets on the real control plane: scaling rules, restarts on configuration
//! change, zones on the three kwok nodes, canaries on the real node, volume template changes.

use crate::support::Harness;
use crate::support::disruption::DisruptionOracle;
use ferry_api::quantity::requested_storage;
use ferry_api::{ExtendedStatefulSet, ExtendedStatefulSetStatus, Phase, VolumeResize};
use ferry_testenv::fixtures::{stateful_set, wait_ready};
use ferry_testenv::workload::BUSYBOX_IMAGE;
use ferry_testenv::{CLASS_EXPANDABLE, REAL_NODE_KEY, REAL_ZONES, kubectl, wait_until};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Node, PersistentVolumeClaim, Pod};
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// An ExtendedStatefulSet `name` around the fixture StatefulSet (kwok pods, one `data` template).
pub(crate) fn extended(name: &str, replicas: i32, extra: Value) -> ExtendedStatefulSet {
    let template = serde_json::to_value(stateful_set(name, replicas, CLASS_EXPANDABLE, "1Gi")).unwrap();
    let mut spec = json!({"replicas": replicas, "template": {"spec": template["spec"]}});
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    serde_json::from_value(json!({
        "apiVersion": "ferry.dev/v1alpha1", "kind": "ExtendedStatefulSet",
        "metadata": {"name": name}, "spec": spec,
    }))
    .unwrap()
}

pub(crate) async fn create(harness: &Harness, ests: &ExtendedStatefulSet) {
    harness
        .ns
        .api::<ExtendedStatefulSet>()
        .create(&PostParams::default(), ests)
        .await
        .unwrap();
}

pub(crate) async fn wait_status(
    harness: &Harness,
    name: &str,
    what: &str,
    seconds: u64,
    done: impl Fn(&ExtendedStatefulSetStatus) -> bool,
) -> ExtendedStatefulSetStatus {
    let found: ExtendedStatefulSet = harness
        .wait_object(name, what, seconds, |object: &ExtendedStatefulSet| {
            object.status.as_ref().is_some_and(&done)
        })
        .await;
    found.status.unwrap_or_default()
}

async fn patch_spec(harness: &Harness, name: &str, patch: Value) -> Result<ExtendedStatefulSet, kube::Error> {
    harness
        .ns
        .api::<ExtendedStatefulSet>()
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": patch})),
        )
        .await
}

async fn scale(harness: &Harness, kind: &str, name: &str, replicas: i32) -> (i32, String) {
    let (code, out, err) = kubectl(&[
        "-n",
        &harness.ns.name,
        "scale",
        kind,
        name,
        &format!("--replicas={replicas}"),
    ])
    .await
    .unwrap();
    (code, format!("{out}{err}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scaling_rules_hold_for_kubectl_scale_and_edits_and_the_stateful_set_is_not_fought_over() {
    let harness = Harness::start("ests-scale").await;
    let api = harness.ns.api::<ExtendedStatefulSet>();
    for (scaling, says) in [
        (
            json!({"min": 3, "max": 1}),
            "scaling.min must not be larger than scaling.max",
        ),
        (
            json!({"min": 2, "max": 2, "oddOnly": true}),
            "must hold an odd number",
        ),
    ] {
        let error = api
            .create(
                &PostParams::default(),
                &extended("bad", 2, json!({"scaling": scaling})),
            )
            .await
            .unwrap_err();
        assert!(error.to_string().contains(says), "{error}");
    }
    create(
        &harness,
        &extended("db", 3, json!({"scaling": {"min": 1, "max": 5, "oddOnly": true}})),
    )
    .await;
    let sets = harness.ns.api::<StatefulSet>();
    wait_ready(&sets, "db", 3, 60).await.unwrap();
    wait_status(&harness, "db", "3/3 Ready", 60, |s| {
        s.ready_column.as_deref() == Some("3/3")
    })
    .await;

    let (code, said) = scale(&harness, "ests", "db", 4).await;
    assert_ne!(code, 0);
    assert!(said.contains("must be odd"), "{said}");
    let (code, said) = scale(&harness, "ests", "db", 7).await;
    assert_ne!(code, 0);
    assert!(said.contains("above scaling.max"), "{said}");
    let error = patch_spec(&harness, "db", json!({"replicas": 0}))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("below scaling.min"), "{error}");
    let (code, said) = scale(&harness, "ests", "db", 5).await;
    assert_eq!(code, 0, "{said}");
    wait_ready(&sets, "db", 5, 60).await.unwrap();

    // An edit of the StatefulSet itself is put back.
    let (code, said) = scale(&harness, "sts", "db", 1).await;
    assert_eq!(code, 0, "{said}");
    wait_until("the StatefulSet back at 5 replicas", 60, || async {
        let sts = sets.get("db").await.ok()?;
        (sts.spec?.replicas == Some(5)).then_some(())
    })
    .await
    .unwrap();
    let status = wait_status(&harness, "db", "5/5 Ready", 60, |s| s.ready_replicas == 5).await;
    assert_eq!(status.replicas, 5);
    assert_eq!(status.version, 1, "scaling is not a new version");

    // Deleting it deletes its StatefulSet (owner reference) and keeps the claims.
    harness
        .ns
        .api::<ExtendedStatefulSet>()
        .delete("db", &Default::default())
        .await
        .unwrap();
    wait_until("the StatefulSet to go with it", 60, || async {
        sets.get_opt("db")
            .await
            .ok()
            .and_then(|found| found.is_none().then_some(()))
    })
    .await
    .unwrap();
    let claims = harness
        .ns
        .api::<PersistentVolumeClaim>()
        .list(&Default::default())
        .await
        .unwrap();
    assert_eq!(claims.items.len(), 5, "the claims stay");
    harness.finish().await;
}

async fn pod_uids(harness: &Harness, app: &str) -> BTreeMap<String, String> {
    harness.pod_uids(app).await
}

async fn write_config(harness: &Harness, name: &str, value: &str) {
    let map: ConfigMap = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"value": value},
    }))
    .unwrap();
    harness
        .ns
        .api::<ConfigMap>()
        .patch(
            name,
            &PatchParams::apply("test").force(),
            &Patch::Apply(serde_json::to_value(&map).unwrap()),
        )
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_change_rolls_exactly_the_pods_that_reference_it() {
    let harness = Harness::start_with_webhook("ests-config").await;
    write_config(&harness, "app-config", "1").await;
    write_config(&harness, "unrelated", "1").await;
    let mut ests = extended("db", 2, json!({"updateOnConfigChange": true}));
    let pod = ests.spec.template.spec.template.spec.as_mut().unwrap();
    pod.containers[0].env_from = Some(vec![
        serde_json::from_value(json!({"configMapRef": {"name": "app-config"}})).unwrap(),
    ]);
    create(&harness, &ests).await;
    // A StatefulSet of another kind in the namespace: never touched.
    harness
        .healthy_stateful_set(stateful_set("other", 1, CLASS_EXPANDABLE, "1Gi"))
        .await;
    let sets = harness.ns.api::<StatefulSet>();
    wait_ready(&sets, "db", 2, 60).await.unwrap();
    let before = pod_uids(&harness, "db").await;
    let other_before = pod_uids(&harness, "other").await;
    assert_eq!(before.len(), 2);

    // The referenced ConfigMap is marked as referenced (no finalizer: nothing waits on Ferry).
    let maps = harness.ns.api::<ConfigMap>();
    let protected = wait_until("app-config marked", 60, || async {
        let map = maps.get("app-config").await.ok()?;
        map.labels().contains_key("ferry.dev/referenced").then_some(map)
    })
    .await
    .unwrap();
    assert_eq!(protected.annotations()["ferry.dev/used-by"], "db");
    assert!(protected.finalizers().is_empty(), "{:?}", protected.finalizers());
    let unrelated = maps.get("unrelated").await.unwrap();
    assert!(!unrelated.labels().contains_key("ferry.dev/referenced"));

    // An unrelated change rolls nothing.
    write_config(&harness, "unrelated", "2").await;
    tokio::time::sleep(std::time::Duration::from_secs(6)).await;
    assert_eq!(pod_uids(&harness, "db").await, before);

    // The referenced one rolls every pod of db, and only those.
    write_config(&harness, "app-config", "2").await;
    wait_until("every db pod replaced", 120, || async {
        let now = pod_uids(&harness, "db").await;
        (now.len() == 2 && now.iter().all(|(name, uid)| before.get(name) != Some(uid))).then_some(())
    })
    .await
    .unwrap();
    wait_status(&harness, "db", "version 2 done", 60, |s| {
        s.version == 2 && s.update_step.as_deref() == Some("Done")
    })
    .await;
    assert_eq!(pod_uids(&harness, "other").await, other_before);

    // Deleting it while referenced is refused, saying by whom; once no longer referenced it goes.
    let refused = maps
        .delete("app-config", &Default::default())
        .await
        .expect_err("a referenced ConfigMap is not deleted")
        .to_string();
    assert!(
        refused.contains("ConfigMap app-config is referenced by ExtendedStatefulSet db"),
        "{refused}"
    );
    assert!(
        maps.get("app-config")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_none()
    );
    patch_spec(&harness, "db", json!({"updateOnConfigChange": false}))
        .await
        .unwrap();
    wait_until("app-config released", 60, || async {
        let map = maps.get("app-config").await.ok()?;
        (!map.labels().contains_key("ferry.dev/referenced")).then_some(())
    })
    .await
    .unwrap();
    maps.delete("app-config", &Default::default()).await.unwrap();
    harness.finish().await;
}

/// A changed Secret (read through `env.valueFrom`) rolls exactly the pods of the ExtendedStatefulSet
/// that reads it; a changed ConfigMap mounted as a volume rolls exactly the pods that mount it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_change_and_a_mounted_config_map_change_roll_exactly_their_readers() {
    use k8s_openapi::api::core::v1::Secret;
    let harness = Harness::start("ests-secret").await;
    let secrets = harness.ns.api::<Secret>();
    let write_secret = |value: &'static str| {
        let secrets = secrets.clone();
        async move {
            let secret: Secret = serde_json::from_value(json!({
                "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db-password"},
                "stringData": {"password": value},
            }))
            .unwrap();
            secrets
                .patch(
                    "db-password",
                    &PatchParams::apply("test").force(),
                    &Patch::Apply(serde_json::to_value(&secret).unwrap()),
                )
                .await
                .unwrap();
        }
    };
    write_secret("one").await;
    write_config(&harness, "web-files", "1").await;
    // db reads the Secret in an env var; web mounts the ConfigMap; neither reads the other's.
    let mut db = extended("db", 2, json!({"updateOnConfigChange": true}));
    db.spec.template.spec.template.spec.as_mut().unwrap().containers[0].env = Some(vec![
        serde_json::from_value(json!({"name": "PASSWORD", "valueFrom": {
            "secretKeyRef": {"name": "db-password", "key": "password"}}}))
        .unwrap(),
    ]);
    let mut web = extended("web", 2, json!({"updateOnConfigChange": true}));
    let web_pod = web.spec.template.spec.template.spec.as_mut().unwrap();
    web_pod.volumes = Some(vec![
        serde_json::from_value(json!({"name": "files", "configMap": {"name": "web-files"}})).unwrap(),
    ]);
    web_pod.containers[0]
        .volume_mounts
        .get_or_insert_with(Vec::new)
        .push(serde_json::from_value(json!({"name": "files", "mountPath": "/files"})).unwrap());
    create(&harness, &db).await;
    create(&harness, &web).await;
    let sets = harness.ns.api::<StatefulSet>();
    wait_ready(&sets, "db", 2, 60).await.unwrap();
    wait_ready(&sets, "web", 2, 60).await.unwrap();
    for name in ["db", "web"] {
        wait_status(&harness, name, "version 1 done", 60, |s| {
            s.version == 1 && s.update_step.as_deref() == Some("Done")
        })
        .await;
    }
    let (db_before, web_before) = (pod_uids(&harness, "db").await, pod_uids(&harness, "web").await);

    // The Secret: every db pod is replaced, no web pod.
    write_secret("two").await;
    rolled_to_version_2(&harness, "db", &db_before).await;
    assert_eq!(pod_uids(&harness, "web").await, web_before, "web reads no Secret");

    // The mounted ConfigMap: every web pod is replaced, no db pod.
    let db_after = pod_uids(&harness, "db").await;
    write_config(&harness, "web-files", "2").await;
    rolled_to_version_2(&harness, "web", &web_before).await;
    assert_eq!(pod_uids(&harness, "db").await, db_after, "db mounts no ConfigMap");
    harness.finish().await;
}

/// Waits until both pods of `app` are new (none of `before`) and its version 2 is done.
async fn rolled_to_version_2(harness: &Harness, app: &str, before: &BTreeMap<String, String>) {
    wait_until(&format!("every {app} pod replaced"), 120, || async {
        let now = pod_uids(harness, app).await;
        (now.len() == 2 && now.iter().all(|(name, uid)| before.get(name) != Some(uid))).then_some(())
    })
    .await
    .unwrap();
    wait_status(harness, app, &format!("{app} version 2 done"), 60, |s| {
        s.version == 2 && s.update_step.as_deref() == Some("Done")
    })
    .await;
}

/// The configuration digest on the pod template is keyed with the installation's key, kept in the
/// chart's Secret: a reader of pods cannot test guesses of a Secret (here a 4-digit PIN) against
/// it, as they could against the bare SHA-256 Ferry wrote before. A restarted operator reads the
/// same key back, so a later change digests under it too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_config_digest_is_keyed_with_the_installations_key() {
    use ferry_engine::extended::config::{ConfigRef, DigestKey, digest};
    use k8s_openapi::api::core::v1::Secret;
    use sha2::{Digest, Sha256};
    let mut harness = Harness::start("ests-digest").await;
    let secrets = harness.ns.api::<Secret>();
    let write_pin = |pin: &'static str| {
        let secrets = secrets.clone();
        async move {
            let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "pin"}, "stringData": {"pin": pin}});
            secrets
                .patch("pin", &PatchParams::apply("test").force(), &Patch::Apply(secret))
                .await
                .unwrap();
        }
    };
    write_pin("4711").await;
    let mut ests = extended("db", 1, json!({"updateOnConfigChange": true}));
    let pod = ests.spec.template.spec.template.spec.as_mut().unwrap();
    pod.containers[0].env = Some(vec![
        serde_json::from_value(
            json!({"name": "PIN", "valueFrom": {"secretKeyRef": {"name": "pin", "key": "pin"}}}),
        )
        .unwrap(),
    ]);
    create(&harness, &ests).await;
    let sets = harness.ns.api::<StatefulSet>();
    let annotation_of = |set: &StatefulSet| {
        set.spec
            .as_ref()?
            .template
            .metadata
            .as_ref()?
            .annotations
            .as_ref()?
            .get("ferry.dev/config-digest")
            .cloned()
    };
    let first = wait_until("db's config digest", 60, || async {
        annotation_of(&sets.get_opt("db").await.ok()??)
    })
    .await
    .unwrap();

    let identity = harness.identity.as_ref().unwrap();
    let stored = secrets.get(&identity.config_digest_key_secret).await.unwrap();
    let key = DigestKey::from_bytes(&stored.data.unwrap()["config-digest.key"].0).expect("a 32-byte key");
    let pin = |value: &str| {
        BTreeMap::from([(
            ConfigRef::Secret("pin".into()),
            Some(BTreeMap::from([("pin".to_string(), value.as_bytes().to_vec())])),
        )])
    };
    assert_eq!(first, digest(&key, &pin("4711")));
    // What the unkeyed digest was: SHA-256 of the same encoding. Anyone could compute it per guess.
    let mut bare = Sha256::new();
    bare.update(b"Secret\0pin\0pin\0");
    bare.update(4u64.to_be_bytes());
    bare.update(b"4711\x01");
    let bare: String = bare
        .finalize()
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_ne!(first, bare);

    // A restarted operator keeps the key: the next change is digested under the same one.
    harness.restart_operator();
    write_pin("0815").await;
    let second = digest(&key, &pin("0815"));
    wait_until("db's digest of the new PIN", 60, || async {
        (annotation_of(&sets.get_opt("db").await.ok()??)? == second).then_some(())
    })
    .await
    .unwrap();
    harness.finish().await;
}

/// An ExtendedStatefulSet deleted releases its configuration at once: the delete refused while it
/// existed goes through (the webhook counts only users that exist; no finalizer held it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_extended_stateful_set_releases_its_configuration() {
    let harness = Harness::start_with_webhook("ests-release").await;
    write_config(&harness, "app-config", "1").await;
    let mut ests = extended("db", 1, json!({"updateOnConfigChange": true}));
    let pod = ests.spec.template.spec.template.spec.as_mut().unwrap();
    pod.containers[0].env_from = Some(vec![
        serde_json::from_value(json!({"configMapRef": {"name": "app-config"}})).unwrap(),
    ]);
    create(&harness, &ests).await;
    let maps = harness.ns.api::<ConfigMap>();
    wait_until("app-config marked", 60, || async {
        let map = maps.get("app-config").await.ok()?;
        map.labels().contains_key("ferry.dev/referenced").then_some(())
    })
    .await
    .unwrap();
    let refused = maps.delete("app-config", &Default::default()).await;
    assert!(refused.is_err(), "referenced: refused");

    let all = harness.ns.api::<ExtendedStatefulSet>();
    all.delete("db", &Default::default()).await.unwrap();
    wait_until("db gone (no finalizer holds it)", 30, || async {
        all.get_opt("db").await.ok()?.is_none().then_some(())
    })
    .await
    .unwrap();
    maps.delete("app-config", &Default::default()).await.unwrap();
    wait_until("app-config gone", 30, || async {
        maps.get_opt("app-config").await.ok()?.is_none().then_some(())
    })
    .await
    .unwrap();
    harness.finish().await;
}

/// With Ferry stopped (or uninstalled) nothing it marked holds a delete: the referenced ConfigMap
/// and Secret go, and so does the namespace with the ExtendedStatefulSet in it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_ferry_stopped_referenced_configuration_and_its_namespace_are_deleted() {
    let mut harness = Harness::start_with_webhook("ests-gone").await;
    write_config(&harness, "app-config", "1").await;
    let secret: k8s_openapi::api::core::v1::Secret = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "app-secret"},
        "stringData": {"password": "p"},
    }))
    .unwrap();
    let secrets = harness.ns.api::<k8s_openapi::api::core::v1::Secret>();
    secrets.create(&PostParams::default(), &secret).await.unwrap();
    let mut ests = extended("db", 1, json!({"updateOnConfigChange": true}));
    let pod = ests.spec.template.spec.template.spec.as_mut().unwrap();
    pod.containers[0].env_from = Some(vec![
        serde_json::from_value(json!({"configMapRef": {"name": "app-config"}})).unwrap(),
        serde_json::from_value(json!({"secretRef": {"name": "app-secret"}})).unwrap(),
    ]);
    create(&harness, &ests).await;
    let maps = harness.ns.api::<ConfigMap>();
    wait_until("both marked", 60, || async {
        let map = maps.get("app-config").await.ok()?;
        let secret = secrets.get("app-secret").await.ok()?;
        (map.labels().contains_key("ferry.dev/referenced")
            && secret.labels().contains_key("ferry.dev/referenced"))
        .then_some(())
    })
    .await
    .unwrap();

    harness.stop_operator().await;
    maps.delete("app-config", &Default::default()).await.unwrap();
    wait_until("app-config gone with Ferry stopped", 30, || async {
        maps.get_opt("app-config").await.ok()?.is_none().then_some(())
    })
    .await
    .unwrap();
    let namespaces = Api::<k8s_openapi::api::core::v1::Namespace>::all(harness.client.clone());
    namespaces
        .delete(&harness.ns.name, &Default::default())
        .await
        .unwrap();
    let name = harness.ns.name.clone();
    wait_until("the namespace gone with Ferry stopped", 180, || async {
        namespaces.get_opt(&name).await.ok()?.is_none().then_some(())
    })
    .await
    .unwrap();
    harness.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zones_get_one_pinned_stateful_set_each_with_an_even_spread() {
    let harness = Harness::start("ests-zones").await;
    create(
        &harness,
        &extended("db", 5, json!({"zones": ["zone-a", "zone-b", "zone-c"]})),
    )
    .await;
    let sets = harness.ns.api::<StatefulSet>();
    let nodes: Api<Node> = Api::all(harness.client.clone());
    let pods = harness.ns.api::<Pod>();
    for (index, (zone, replicas)) in [("zone-a", 2), ("zone-b", 2), ("zone-c", 1)]
        .into_iter()
        .enumerate()
    {
        let name = format!("db-z{index}");
        wait_ready(&sets, &name, replicas, 60).await.unwrap();
        for ordinal in 0..replicas {
            let pod = pods.get(&format!("{name}-{ordinal}")).await.unwrap();
            let node = nodes
                .get(pod.spec.as_ref().unwrap().node_name.as_deref().unwrap())
                .await
                .unwrap();
            assert_eq!(
                node.labels()["topology.kubernetes.io/zone"],
                zone,
                "{name}-{ordinal}"
            );
            assert_eq!(pod.labels()["ferry.dev/zone"], zone);
            let env: Vec<(String, String)> = pod.spec.as_ref().unwrap().containers[0]
                .env
                .iter()
                .flatten()
                .map(|e| (e.name.clone(), e.value.clone().unwrap_or_default()))
                .collect();
            assert!(env.contains(&("FERRY_ZONE".into(), zone.into())), "{env:?}");
            assert!(env.contains(&("FERRY_ZONE_INDEX".into(), index.to_string())));
        }
    }
    let status = wait_status(&harness, "db", "5/5 Ready", 60, |s| s.ready_replicas == 5).await;
    assert_eq!(status.zones_column.as_deref(), Some("zone-a,zone-b,zone-c"));
    let (_, out, _) = kubectl(&["-n", &harness.ns.name, "get", "ests", "db"])
        .await
        .unwrap();
    assert!(
        out.contains("READY") && out.contains("ZONES") && out.contains("VERSION"),
        "{out}"
    );
    assert!(out.contains("5/5"), "{out}");
    // kstatus: GitOps tools and `kubectl wait` can wait on it.
    let (code, out, err) = kubectl(&[
        "-n",
        &harness.ns.name,
        "wait",
        "--for=condition=Ready",
        "--timeout=60s",
        "extendedstatefulset/db",
    ])
    .await
    .unwrap();
    assert_eq!(code, 0, "{out}{err}");
    harness.finish().await;
}

/// Zones keep their place: removing the first zone (which shifted every StatefulSet's zone and
/// deleted the last one) and turning zones off (which replaced `db-z*` by `db` on new, empty
/// claims) are refused by the API server with the reason. Removing the last zone drains only that
/// zone's StatefulSet, and its claims stay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zones_change_only_at_the_end_and_a_removed_zone_is_drained() {
    let harness = Harness::start("ests-zone-edit").await;
    create(
        &harness,
        &extended("db", 3, json!({"zones": ["zone-a", "zone-b", "zone-c"]})),
    )
    .await;
    let sets = harness.ns.api::<StatefulSet>();
    for index in 0..3 {
        wait_ready(&sets, &format!("db-z{index}"), 1, 60).await.unwrap();
    }
    for (zones, case) in [
        (json!(["zone-b", "zone-c"]), "the first zone removed"),
        (json!(["zone-a", "zone-c", "zone-b"]), "zones reordered"),
        (json!(["zone-a", "zone-b", "zone-d"]), "the last zone replaced"),
        (json!([]), "zones turned off"),
    ] {
        let refused = patch_spec(&harness, "db", json!({"zones": zones}))
            .await
            .expect_err(case)
            .to_string();
        assert!(
            refused.contains("zones can only be added or removed at the end of the list"),
            "{case}: {refused}"
        );
    }
    let uids = |list: Vec<StatefulSet>| {
        list.iter()
            .map(|s| (s.name_any(), s.uid().unwrap()))
            .collect::<BTreeMap<_, _>>()
    };
    let before = uids(sets.list(&Default::default()).await.unwrap().items);
    assert_eq!(before.len(), 3, "{before:?}");

    patch_spec(&harness, "db", json!({"zones": ["zone-a", "zone-b"]}))
        .await
        .unwrap();
    wait_until("db-z2 drained and gone", 90, || async {
        sets.get_opt("db-z2").await.ok()?.is_none().then_some(())
    })
    .await
    .unwrap();
    wait_ready(&sets, "db-z0", 2, 60).await.unwrap();
    let after = uids(sets.list(&Default::default()).await.unwrap().items);
    assert_eq!(after.get("db-z0"), before.get("db-z0"), "db-z0 kept");
    assert_eq!(after.get("db-z1"), before.get("db-z1"), "db-z1 kept");
    let claims = harness.ns.api::<PersistentVolumeClaim>();
    assert!(
        claims.get_opt("data-db-z2-0").await.unwrap().is_some(),
        "the removed zone's claim stays"
    );
    harness.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_volume_template_change_resizes_every_zones_volumes_one_zone_at_a_time() {
    let harness = Harness::start("ests-volumes").await;
    create(
        &harness,
        &extended("db", 2, json!({"zones": ["zone-a", "zone-b"]})),
    )
    .await;
    let sets = harness.ns.api::<StatefulSet>();
    wait_ready(&sets, "db-z0", 1, 60).await.unwrap();
    wait_ready(&sets, "db-z1", 1, 60).await.unwrap();
    let mut ests = harness.ns.api::<ExtendedStatefulSet>().get("db").await.unwrap();
    let template = &mut ests.spec.template.spec.volume_claim_templates.as_mut().unwrap()[0];
    let mut template_value = serde_json::to_value(&*template).unwrap();
    template_value["spec"]["resources"]["requests"]["storage"] = "2Gi".into();
    *template = serde_json::from_value(template_value).unwrap();
    patch_spec(
        &harness,
        "db",
        json!({"template": {"spec": serde_json::to_value(&ests.spec.template.spec).unwrap()}}),
    )
    .await
    .unwrap();
    // One zone's StatefulSet at a time, in zone order, each resized by a VolumeResize of its own.
    let resizes = harness.ns.api::<VolumeResize>();
    for sts in ["db-z0", "db-z1"] {
        let status = wait_status(&harness, "db", &format!("the VolumeResize of {sts}"), 120, |s| {
            s.volume_resizes.contains_key(sts)
        })
        .await;
        assert_eq!(
            status.volume_resizes.len(),
            1,
            "one zone at a time: {:?}",
            status.volume_resizes
        );
        let resize = &status.volume_resizes[sts];
        let done = wait_until(&format!("{resize} to finish"), 120, || async {
            let found = resizes.get_opt(resize).await.ok().flatten()?;
            found.phase().is_terminal().then_some(found)
        })
        .await
        .unwrap();
        assert_eq!(done.phase(), Phase::Succeeded, "{sts}: {:?}", done.status);
        let claim = harness
            .ns
            .api::<PersistentVolumeClaim>()
            .get(&format!("data-{sts}-0"))
            .await
            .unwrap();
        assert_eq!(requested_storage(claim.spec.as_ref()).unwrap().0, "2Gi");
    }
    // The StatefulSets carry the new template and are still the ExtendedStatefulSet's.
    for sts in ["db-z0", "db-z1"] {
        let live = wait_until("the re-created StatefulSet", 60, || async {
            sets.get_opt(sts).await.ok().flatten()
        })
        .await
        .unwrap();
        let template = &live
            .spec
            .as_ref()
            .unwrap()
            .volume_claim_templates
            .as_ref()
            .unwrap()[0];
        assert_eq!(requested_storage(template.spec.as_ref()).unwrap().0, "2Gi");
        assert_eq!(live.owner_references()[0].kind, "ExtendedStatefulSet");
    }
    let status = wait_status(&harness, "db", "no resize left", 60, |s| {
        s.volume_resizes.is_empty()
    })
    .await;
    assert_eq!(status.version, 1, "a volume change is not a new version");
    harness.finish().await;
}

/// On the real node: pods are Ready only when their `VERSION` is not `bad`.
fn real_node_extended(canaries: i32) -> ExtendedStatefulSet {
    serde_json::from_value(json!({
        "apiVersion": "ferry.dev/v1alpha1", "kind": "ExtendedStatefulSet",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 3,
            "updateStrategy": {"canaries": canaries, "canaryWatchTime": "15s", "updateWatchTime": "60s"},
            "template": {"spec": {
                "serviceName": "web",
                "podManagementPolicy": "Parallel",
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {
                        "nodeSelector": {REAL_NODE_KEY: "true"},
                        "tolerations": [{"key": REAL_NODE_KEY, "operator": "Exists", "effect": "NoSchedule"}],
                        "terminationGracePeriodSeconds": 1,
                        "containers": [{
                            "name": "web", "image": BUSYBOX_IMAGE, "imagePullPolicy": "Never",
                            "env": [{"name": "VERSION", "value": "1"}],
                            "command": ["sh", "-c", "[ \"$VERSION\" = bad ] || touch /tmp/ready; trap 'exit 0' TERM; while true; do sleep 1; done"],
                            // A startup probe: Ready once it passes, and no `runc exec` a second after.
                            "startupProbe": {"exec": {"command": ["test", "-f", "/tmp/ready"]}, "periodSeconds": 1, "failureThreshold": 600},
                        }],
                    },
                },
            }},
        },
    }))
    .unwrap()
}

pub(crate) async fn set_version(harness: &Harness, value: &str) {
    let mut ests = harness.ns.api::<ExtendedStatefulSet>().get("web").await.unwrap();
    let pod = ests.spec.template.spec.template.spec.as_mut().unwrap();
    pod.containers[0].env = Some(vec![
        serde_json::from_value(json!({"name": "VERSION", "value": value})).unwrap(),
    ]);
    patch_spec(
        harness,
        "web",
        json!({"template": {"spec": serde_json::to_value(&ests.spec.template.spec).unwrap()}}),
    )
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_canary_that_never_becomes_ready_stops_the_rollout_and_marks_the_version_stale() {
    let mut harness = Harness::start("ests-canary").await;
    create(&harness, &real_node_extended(1)).await;
    let sets = harness.ns.api::<StatefulSet>();
    wait_ready(&sets, "web", 3, 120).await.unwrap();
    let before = pod_uids(&harness, "web").await;

    // A good version goes through canary and rest, the operator killed on the way.
    set_version(&harness, "2").await;
    wait_status(&harness, "web", "version 2 canaries", 30, |s| s.version == 2).await;
    harness.restart_operator();
    wait_status(&harness, "web", "version 2 on every pod", 120, |s| {
        s.update_step.as_deref() == Some("Done") && s.version == 2
    })
    .await;
    let good = pod_uids(&harness, "web").await;
    assert!(good.iter().all(|(name, uid)| before.get(name) != Some(uid)));

    // A bad one: the canary (web-2) never becomes Ready; web-0 and web-1 stay as they are.
    set_version(&harness, "bad").await;
    let stale = wait_status(&harness, "web", "version 3 stale", 90, |s| {
        s.update_step.as_deref() == Some("Stale")
    })
    .await;
    assert_eq!(stale.version, 3);
    assert!(
        stale.stale_at.as_deref().unwrap().starts_with("Canaries"),
        "{stale:?}"
    );
    let condition = stale.conditions.iter().find(|c| c.type_ == "Stale").unwrap();
    assert_eq!(condition.status, "True");
    assert_eq!(stale.versions.get("2"), Some(&true));
    assert_eq!(stale.versions.get("3"), Some(&true));
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    let after = pod_uids(&harness, "web").await;
    for untouched in ["web-0", "web-1"] {
        assert_eq!(
            after.get(untouched),
            good.get(untouched),
            "{untouched} was not updated"
        );
    }
    assert_ne!(after.get("web-2"), good.get("web-2"), "the canary was updated");
    let live = sets.get("web").await.unwrap();
    assert_eq!(
        live.annotations().get("ferry.dev/stale").map(String::as_str),
        Some("3")
    );
    let events = harness.events_for("ExtendedStatefulSet", "web").await;
    assert!(
        events.iter().any(|(_, reason, _)| reason == "VersionStale"),
        "{events:?}"
    );

    // The fix for a broken release: pods are not all Ready, so it needs updateNotReady.
    patch_spec(
        &harness,
        "web",
        json!({"updateStrategy": {"updateNotReady": true}}),
    )
    .await
    .unwrap();
    set_version(&harness, "4").await;
    wait_status(&harness, "web", "the fixed version on every pod", 120, |s| {
        s.update_step.as_deref() == Some("Done") && s.version == 4
    })
    .await;
    wait_ready(&sets, "web", 3, 60).await.unwrap();
    harness.finish().await;
}

/// A Job template on the real node that runs `script`.
fn job(script: &str) -> Value {
    json!({"spec": {"template": {"spec": {
        "restartPolicy": "Never",
        "nodeSelector": {REAL_NODE_KEY: "true"},
        "tolerations": [{"key": REAL_NODE_KEY, "operator": "Exists", "effect": "NoSchedule"}],
        "containers": [{"name": "hook", "image": BUSYBOX_IMAGE, "imagePullPolicy": "Never", "command": ["sh", "-c", script]}],
    }}}})
}

async fn set_image(harness: &Harness, name: &str, image: &str) {
    let mut ests = harness.ns.api::<ExtendedStatefulSet>().get(name).await.unwrap();
    ests.spec.template.spec.template.spec.as_mut().unwrap().containers[0].image = Some(image.to_string());
    patch_spec(
        harness,
        name,
        json!({"template": {"spec": serde_json::to_value(&ests.spec.template.spec).unwrap()}}),
    )
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_pre_update_job_leaves_the_stateful_set_unchanged() {
    let harness = Harness::start("ests-jobs").await;
    create(
        &harness,
        &extended(
            "db",
            2,
            json!({"preUpdate": job("exit 1"), "postUpdate": job("exit 0")}),
        ),
    )
    .await;
    let sets = harness.ns.api::<StatefulSet>();
    wait_ready(&sets, "db", 2, 60).await.unwrap();
    let before = sets.get("db").await.unwrap();
    let pods_before = pod_uids(&harness, "db").await;

    set_image(&harness, "db", "registry.k8s.io/pause:3.10-next").await;
    let stale = wait_status(&harness, "db", "the pre-update Job to fail", 120, |s| {
        s.update_step.as_deref() == Some("Stale")
    })
    .await;
    assert_eq!(stale.version, 2);
    assert!(
        stale.stale_at.as_deref().unwrap().starts_with("PreUpdate"),
        "{stale:?}"
    );
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    let after = sets.get("db").await.unwrap();
    assert_eq!(
        after.metadata.generation, before.metadata.generation,
        "the StatefulSet is untouched"
    );
    assert_eq!(pod_uids(&harness, "db").await, pods_before);

    // A working hook and a new version: pre-update, pods, post-update, done.
    patch_spec(&harness, "db", json!({"preUpdate": job("exit 0")}))
        .await
        .unwrap();
    set_image(&harness, "db", "registry.k8s.io/pause:3.10-third").await;
    let done = wait_status(&harness, "db", "version 3 done", 120, |s| {
        s.version == 3 && s.update_step.as_deref() == Some("Done")
    })
    .await;
    assert_eq!(done.versions.get("3"), Some(&true));
    let image = sets
        .get("db")
        .await
        .unwrap()
        .spec
        .unwrap()
        .template
        .spec
        .unwrap()
        .containers[0]
        .image
        .clone();
    assert_eq!(image.as_deref(), Some("registry.k8s.io/pause:3.10-third"));
    let jobs = harness.ns.api::<k8s_openapi::api::batch::v1::Job>();
    for name in ["db-pre-update-v2", "db-pre-update-v3", "db-post-update-v3"] {
        assert!(jobs.get_opt(name).await.unwrap().is_some(), "{name}");
    }
    harness.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_volume_template_change_on_the_real_node_keeps_every_acknowledged_write() {
    let harness = Harness::start("ests-real-volume").await;
    let writer = ferry_testenv::workload::writer_stateful_set(
        "db",
        2,
        &[("data", ferry_testenv::CLASS_BLOCK, "320Mi")],
        &harness.ns.name,
        8 << 10,
        0,
    )
    .unwrap();
    let template = serde_json::to_value(&writer).unwrap();
    let ests: ExtendedStatefulSet = serde_json::from_value(json!({
        "apiVersion": "ferry.dev/v1alpha1", "kind": "ExtendedStatefulSet",
        "metadata": {"name": "db"},
        "spec": {"replicas": 2, "template": {"spec": template["spec"]}},
    }))
    .unwrap();
    create(&harness, &ests).await;
    let sets = harness.ns.api::<StatefulSet>();
    wait_ready(&sets, "db", 2, 180).await.unwrap();
    harness.watch_disruption("db", 2).await;
    let mut seeds = BTreeMap::new();
    for claim in ["data-db-0", "data-db-1"] {
        seeds.insert(
            claim.to_string(),
            crate::real_node::seed_checksum(&harness, claim).await,
        );
    }

    let mut spec = serde_json::to_value(&ests.spec.template.spec).unwrap();
    spec["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"] = "384Mi".into();
    patch_spec(&harness, "db", json!({"template": {"spec": spec}}))
        .await
        .unwrap();
    let status = wait_status(&harness, "db", "the VolumeResize", 60, |s| {
        !s.volume_resizes.is_empty()
    })
    .await;
    let resize = status.volume_resizes["db"].clone();
    let done = crate::real_node::wait_phase(&harness, &resize, 240).await;
    assert_eq!(done.phase(), Phase::Succeeded, "{:?}", done.status);
    for replica in 0..2 {
        let size = ferry_testenv::workload::df_bytes(&harness.ns.name, &format!("db-{replica}"), "/data")
            .await
            .unwrap();
        assert!(size > 300 << 20, "db-{replica}: df size {size}");
    }
    crate::real_node::assert_nothing_lost(&harness, 2, &seeds).await;
    let status = wait_status(&harness, "db", "the resize done", 60, |s| {
        s.volume_resizes.is_empty()
    })
    .await;
    assert_eq!(status.version, 1);
    harness.finish().await;
}

/// A `status.updateStep` this Ferry does not know (a newer Ferry's, or written by hand) is never
/// taken for `Done`: a new version waits, with a Warning, until the step is one Ferry knows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_step_this_ferry_does_not_know_leaves_the_stateful_set_untouched() {
    let harness = Harness::start("ests-step").await;
    create(&harness, &extended("db", 2, json!({}))).await;
    let sets = harness.ns.api::<StatefulSet>();
    wait_ready(&sets, "db", 2, 60).await.unwrap();
    wait_status(&harness, "db", "version 1 done", 60, |s| {
        s.version == 1 && s.update_step.as_deref() == Some("Done")
    })
    .await;
    let ests = harness.ns.api::<ExtendedStatefulSet>();
    let set_step = |step: &'static str| {
        let ests = ests.clone();
        async move {
            ests.patch_status(
                "db",
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {"updateStep": step}})),
            )
            .await
            .unwrap();
        }
    };
    set_step("BlueGreen").await;
    let before = sets.get("db").await.unwrap();
    set_image(&harness, "db", "registry.k8s.io/pause:3.10-next").await;
    harness
        .wait_event("ExtendedStatefulSet", "db", "UnknownUpdateStep")
        .await;
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    let after = sets.get("db").await.unwrap();
    assert_eq!(
        after.metadata.generation, before.metadata.generation,
        "the StatefulSet is untouched"
    );
    let status = ests.get("db").await.unwrap().status.unwrap_or_default();
    assert_eq!(
        status.update_step.as_deref(),
        Some("BlueGreen"),
        "the step is left as written"
    );
    assert_eq!(status.version, 1);

    // Back at a step Ferry knows, the new version rolls out.
    set_step("Done").await;
    wait_status(&harness, "db", "version 2 done", 120, |s| {
        s.version == 2 && s.update_step.as_deref() == Some("Done")
    })
    .await;
    harness.finish().await;
}

/// [`real_node_extended`] spread over the real nodes' zones, one member per zone, with a readiness
/// that takes seconds, as a database's does.
fn zoned_on_real_nodes() -> ExtendedStatefulSet {
    let mut ests = serde_json::to_value(real_node_extended(0)).unwrap();
    ests["spec"]["zones"] = json!(REAL_ZONES);
    let container = &mut ests["spec"]["template"]["spec"]["template"]["spec"]["containers"][0];
    container["startupProbe"]["initialDelaySeconds"] = json!(3);
    serde_json::from_value(ests).unwrap()
}

/// One member per zone on the real nodes: a new version restarts the members one at a time across
/// the zones, each only once the one before is Ready on it (a rollout per zone's StatefulSet
/// restarted every zone's member at once).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zoned_update_on_the_real_nodes_restarts_one_member_at_a_time() {
    let harness = Harness::start("ests-zones-real").await;
    create(&harness, &zoned_on_real_nodes()).await;
    let sets = harness.ns.api::<StatefulSet>();
    let nodes: Api<Node> = Api::all(harness.client.clone());
    let pods = harness.ns.api::<Pod>();
    for (index, zone) in REAL_ZONES.iter().enumerate() {
        wait_ready(&sets, &format!("web-z{index}"), 1, 120).await.unwrap();
        let pod = pods.get(&format!("web-z{index}-0")).await.unwrap();
        let node = nodes
            .get(pod.spec.unwrap().node_name.as_deref().unwrap())
            .await
            .unwrap();
        assert_eq!(node.labels()["topology.kubernetes.io/zone"], *zone);
    }
    let before = pod_uids(&harness, "web").await;
    let oracle = DisruptionOracle::start(harness.ns.api(), "web", 3).await;
    set_version(&harness, "2").await;
    wait_status(&harness, "web", "version 2 on every member", 180, |s| {
        s.update_step.as_deref() == Some("Done") && s.version == 2
    })
    .await;
    oracle.assert_at_most(1).await;
    let after = pod_uids(&harness, "web").await;
    assert_eq!(after.len(), 3, "{after:?}");
    assert!(
        after.iter().all(|(name, uid)| before.get(name) != Some(uid)),
        "every member restarted"
    );
    harness.finish().await;
}

/// [`zoned_on_real_nodes`] with a volume on `ferry-block` per member, holding a seed it wrote once.
pub(crate) fn zoned_with_volumes() -> ExtendedStatefulSet {
    let mut ests = serde_json::to_value(zoned_on_real_nodes()).unwrap();
    let sts = &mut ests["spec"]["template"]["spec"];
    sts["volumeClaimTemplates"] = json!([{"metadata": {"name": "data"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "storageClassName": ferry_testenv::CLASS_BLOCK,
        "resources": {"requests": {"storage": "320Mi"}}}}]);
    let container = &mut sts["template"]["spec"]["containers"][0];
    container["volumeMounts"] = json!([{"name": "data", "mountPath": "/data"}]);
    container["command"] = json!([
        "sh",
        "-c",
        "[ -s /data/seed ] || hostname > /data/seed; sync; touch /tmp/ready; trap 'exit 0' TERM; while true; do sleep 1; done"
    ]);
    serde_json::from_value(ests).unwrap()
}

/// One member per zone on the real nodes, each on its own volume: a claim template moved to
/// another class is copied one zone's member at a time, each once the one before is back Ready, and
/// every member keeps its data.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zoned_claim_template_change_on_the_real_nodes_copies_one_member_at_a_time() {
    let harness = Harness::start("ests-zones-volumes").await;
    create(&harness, &zoned_with_volumes()).await;
    let sets = harness.ns.api::<StatefulSet>();
    for index in 0..REAL_ZONES.len() {
        wait_ready(&sets, &format!("web-z{index}"), 1, 180).await.unwrap();
    }
    let oracle = DisruptionOracle::start(harness.ns.api(), "web", 3).await;
    let mut ests = harness.ns.api::<ExtendedStatefulSet>().get("web").await.unwrap();
    let templates = ests.spec.template.spec.volume_claim_templates.as_mut().unwrap();
    templates[0].spec.as_mut().unwrap().storage_class_name =
        Some(ferry_testenv::CLASS_BLOCK_FIXED.to_string());
    patch_spec(
        &harness,
        "web",
        json!({"template": {"spec": serde_json::to_value(&ests.spec.template.spec).unwrap()}}),
    )
    .await
    .unwrap();
    for index in 0..REAL_ZONES.len() {
        let name = format!("web-z{index}");
        wait_until("the zone's claim on the new class", 300, || async {
            let claim = harness
                .ns
                .api::<PersistentVolumeClaim>()
                .get(&format!("data-{name}-0"))
                .await
                .ok()?;
            let class = claim.spec?.storage_class_name?;
            (class == ferry_testenv::CLASS_BLOCK_FIXED).then_some(())
        })
        .await
        .unwrap();
    }
    wait_status(&harness, "web", "no resize left", 120, |s| {
        s.volume_resizes.is_empty()
    })
    .await;
    for index in 0..REAL_ZONES.len() {
        wait_ready(&sets, &format!("web-z{index}"), 1, 120).await.unwrap();
    }
    oracle.assert_at_most(1).await;
    for index in 0..REAL_ZONES.len() {
        let pod = format!("web-z{index}-0");
        let (code, seed, err) = kubectl(&["-n", &harness.ns.name, "exec", &pod, "--", "cat", "/data/seed"])
            .await
            .unwrap();
        assert_eq!(code, 0, "{err}");
        assert_eq!(seed.trim(), pod, "the member's data moved with it");
    }
    harness.finish().await;
}

/// Blue/green over the real nodes' zones, one member per zone, each on its own volume: every
/// member moves to its zone's StatefulSet of the new version with its volume, one at a time across
/// the zones, the next only once the one before is Ready on the new version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zoned_blue_green_update_on_the_real_nodes_moves_one_member_at_a_time() {
    let harness = Harness::start("ests-bg-zones-real").await;
    let mut ests = serde_json::to_value(zoned_with_volumes()).unwrap();
    ests["spec"]["updateStrategy"] = json!({"type": "BlueGreen", "updateWatchTime": "5m"});
    create(&harness, &serde_json::from_value(ests).unwrap()).await;
    let sets = harness.ns.api::<StatefulSet>();
    for index in 0..REAL_ZONES.len() {
        wait_ready(&sets, &format!("web-z{index}-v1"), 1, 180)
            .await
            .unwrap();
    }
    let oracle = DisruptionOracle::start(harness.ns.api(), "web", 3).await;
    set_version(&harness, "2").await;
    wait_status(&harness, "web", "version 2 in every zone", 300, |s| {
        s.version == 2 && s.update_step.as_deref() == Some("Done") && s.handover.is_none()
    })
    .await;
    for index in 0..REAL_ZONES.len() {
        wait_ready(&sets, &format!("web-z{index}-v2"), 1, 120)
            .await
            .unwrap();
    }
    oracle.assert_at_most(1).await;
    for index in 0..REAL_ZONES.len() {
        let pod = format!("web-z{index}-v2-0");
        let (code, seed, err) = kubectl(&["-n", &harness.ns.name, "exec", &pod, "--", "cat", "/data/seed"])
            .await
            .unwrap();
        assert_eq!(code, 0, "{err}");
        assert_eq!(
            seed.trim(),
            format!("web-z{index}-v1-0"),
            "the member's volume moved with it"
        );
    }
    harness.finish().await;
}

/// A growth made outside the ExtendedStatefulSet (a VolumeResize of one zone's StatefulSet, as
/// `kubectl ferry resize` or an autoscaler makes) is kept: the ExtendedStatefulSet, whose template
/// still asks for the smaller size, does not shrink it back by copy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_growth_made_outside_the_extended_stateful_set_is_kept() {
    let harness = Harness::start("ests-kept-growth").await;
    create(&harness, &zoned_with_volumes()).await;
    let sets = harness.ns.api::<StatefulSet>();
    for index in 0..REAL_ZONES.len() {
        wait_ready(&sets, &format!("web-z{index}"), 1, 180).await.unwrap();
    }
    harness.watch_disruption("web", REAL_ZONES.len()).await;
    // The record of what it asked for and the StatefulSets have.
    wait_status(&harness, "web", "the claim templates recorded", 60, |s| {
        s.volume_claim_templates
            .get("data")
            .is_some_and(|v| v.size == "320Mi")
    })
    .await;
    crate::real_node::resize_succeeds(
        &harness,
        "grow-z0",
        json!({"statefulSetName": "web-z0", "volumes": [{"name": "data", "size": "480Mi"}]}),
        300,
    )
    .await;
    // A new generation the controller must have seen: then it has judged the grown template.
    let changed = patch_spec(
        &harness,
        "web",
        json!({"updateStrategy": {"updateWatchTime": "61s"}}),
    )
    .await
    .unwrap();
    let generation = changed.metadata.generation;
    let status = wait_status(&harness, "web", "the new generation seen", 60, |s| {
        s.observed_generation == generation
    })
    .await;
    assert!(status.volume_resizes.is_empty(), "{:?}", status.volume_resizes);
    let resizes = harness
        .ns
        .api::<VolumeResize>()
        .list(&Default::default())
        .await
        .unwrap();
    let names: Vec<String> = resizes.items.iter().map(|r| r.name_any()).collect();
    assert_eq!(names, ["grow-z0"], "no resize undoes the growth");
    let claim = harness
        .ns
        .api::<PersistentVolumeClaim>()
        .get("data-web-z0-0")
        .await
        .unwrap();
    let size = claim.spec.unwrap().resources.unwrap().requests.unwrap()["storage"]
        .0
        .clone();
    assert_eq!(size, "480Mi");
    harness.finish().await;
}
