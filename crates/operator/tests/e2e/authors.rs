//! A Ferry object never lets its author do more than they could with the StatefulSet themselves
//! (docs/security.md): the chart's ValidatingAdmissionPolicy makes the API server check the
//! author's own rights before it stores a VolumeResize, VolumeAutoscaler or ExtendedStatefulSet,
//! and before it stores a rollback asked for on a VolumeResize.

use crate::support::Harness;
use ferry_testenv::CLASS_EXPANDABLE;
use ferry_testenv::fixtures::stateful_set;
use k8s_openapi::api::authorization::v1::SubjectAccessReview;
use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Api, Client};
use serde_json::{Value, json};

/// The Ferry objects of `kind` in `namespace`, as `client`.
fn ferry_objects(client: &Client, namespace: &str, kind: &str) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("ferry.dev", "v1alpha1", kind));
    Api::namespaced_with(client.clone(), namespace, &resource)
}

/// The refusal's message of a write, or `None` when it was admitted.
fn refusal(what: &str, answer: Result<DynamicObject, kube::Error>) -> Option<String> {
    match answer {
        Ok(_) => None,
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 403, "{what}: {status:?}");
            Some(status.message)
        }
        Err(other) => panic!("{what}: {other}"),
    }
}

/// Creates (dry run: the API server admits it fully, then stores nothing) a Ferry object of `kind`
/// as `author`; the refusal's message, or `None` when it was admitted.
async fn dry_run_create(author: &Client, namespace: &str, kind: &str, spec: Value) -> Option<String> {
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "ferry.dev/v1alpha1", "kind": kind,
        "metadata": {"name": "by-author"}, "spec": spec,
    }))
    .unwrap();
    let params = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let answer = ferry_objects(author, namespace, kind)
        .create(&params, &object)
        .await;
    refusal(kind, answer)
}

/// Sets `annotations` on the VolumeResize `name` as `author` (dry run, a merge patch as `kubectl
/// ferry rollback` sends); the refusal's message, or `None` when it was admitted.
async fn dry_run_annotate(
    author: &Client,
    namespace: &str,
    name: &str,
    annotations: Value,
) -> Option<String> {
    let params = PatchParams {
        dry_run: true,
        ..PatchParams::default()
    };
    let patch = json!({"metadata": {"annotations": annotations}});
    let answer = ferry_objects(author, namespace, "VolumeResize")
        .patch(name, &params, &Patch::Merge(&patch))
        .await;
    refusal(
        &format!("annotations {annotations} on VolumeResize {name}"),
        answer,
    )
}

/// Asserts that `author` may not create the Ferry object, for the reason `why` names.
async fn assert_refused(author: &Client, namespace: &str, kind: &str, spec: &Value, why: &str) {
    let refused = dry_run_create(author, namespace, kind, spec.clone())
        .await
        .unwrap_or_else(|| panic!("{kind} was admitted; expected: {why}"));
    assert!(refused.contains(why), "{kind}: {refused}");
}

/// Asserts that `author` may create the Ferry object.
async fn assert_admitted(author: &Client, namespace: &str, kind: &str, spec: &Value) {
    assert_eq!(
        dry_run_create(author, namespace, kind, spec.clone()).await,
        None,
        "{kind}"
    );
}

/// Grants the ServiceAccount `author` one `rule` through the Role `name` (as admin), and waits
/// until the API server's authorizer says so (RBAC reaches it through a watch, not at once).
async fn grant(admin: &Client, namespace: &str, name: &str, rule: Value) {
    grant_to(admin, namespace, name, "author", rule).await;
}

/// Grants ServiceAccount `account` of `namespace` one `rule` (Role and RoleBinding `name`), and
/// waits until the authorizer allows its first verb.
async fn grant_to(admin: &Client, namespace: &str, name: &str, account: &str, rule: Value) {
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": name, "namespace": namespace}, "rules": [rule],
    });
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": name, "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
    });
    ferry_testenv::chart::apply(&format!("{role}\n---\n{binding}"))
        .await
        .unwrap();
    let review: SubjectAccessReview = serde_json::from_value(json!({
        "spec": {
            "user": format!("system:serviceaccount:{namespace}:{account}"),
            "resourceAttributes": {
                "namespace": namespace,
                "group": rule["apiGroups"][0],
                "resource": rule["resources"][0],
                "verb": rule["verbs"][0],
                "name": rule["resourceNames"].get(0).cloned().unwrap_or(json!("")),
            },
        },
    }))
    .unwrap();
    let reviews: Api<SubjectAccessReview> = Api::all(admin.clone());
    ferry_testenv::wait_until("the grant to reach the authorizer", 30, || async {
        let answer = reviews.create(&PostParams::default(), &review).await.ok()?;
        answer.status?.allowed.then_some(())
    })
    .await
    .unwrap();
}

/// The ServiceAccount `author` of the test's namespace, allowed `verbs` on Ferry's objects and
/// nothing else, and a client acting as it.
async fn author(harness: &Harness, verbs: &[&str]) -> Client {
    let ns = &harness.ns.name;
    policy_in_force(harness).await;
    service_account(ns, "author").await;
    grant(
        &harness.client,
        ns,
        "ferry-objects",
        json!({
            "apiGroups": ["ferry.dev"],
            "resources": ["volumeresizes", "volumeautoscalers", "extendedstatefulsets", "volumemigrations"],
            "verbs": verbs,
        }),
    )
    .await;
    ferry_testenv::chart::client_as(&format!("system:serviceaccount:{ns}:author"))
        .await
        .unwrap()
}

async fn service_account(namespace: &str, name: &str) {
    ferry_testenv::chart::apply(
        &json!({
            "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": namespace},
        })
        .to_string(),
    )
    .await
    .unwrap();
}

/// Waits until the API server enforces the chart's author policy in the harness's namespace: it
/// loads a new policy and binding a moment after they are made, and a check made before that
/// admits what the policy refuses (it failed a CI run). A prober that may create VolumeResizes
/// and nothing else asks for one of a StatefulSet no test grants, until the policy refuses it.
async fn policy_in_force(harness: &Harness) {
    let ns = &harness.ns.name;
    service_account(ns, "prober").await;
    let rule = json!({"apiGroups": ["ferry.dev"], "resources": ["volumeresizes"], "verbs": ["create"]});
    grant_to(&harness.client, ns, "prober", "prober", rule).await;
    let prober = ferry_testenv::chart::client_as(&format!("system:serviceaccount:{ns}:prober"))
        .await
        .unwrap();
    let probe = json!({"statefulSetName": "in-force-probe", "volumes": [{"name": "data", "size": "2Gi"}]});
    ferry_testenv::wait_until("the author policy to be in force", 60, || async {
        dry_run_create(&prober, ns, "VolumeResize", probe.clone())
            .await
            .filter(|why| why.contains("may not patch StatefulSet in-force-probe"))
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ferry_object_never_grants_its_author_more_than_they_have() {
    let harness = Harness::start("authors").await;
    let ns = harness.ns.name.clone();
    harness
        .healthy_stateful_set(stateful_set("db", 1, CLASS_EXPANDABLE, "1Gi"))
        .await;
    // May write Ferry's objects, nothing else.
    let admin = harness.client.clone();
    let author = author(&harness, &["create", "get", "update"]).await;
    let resize = json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "2Gi"}]});
    let autoscaler = |target: Value| {
        let mut spec = json!({"volumes": [{"name": "data", "threshold": 80, "maxSize": "4Gi"}]});
        spec.as_object_mut()
            .unwrap()
            .extend(target.as_object().unwrap().clone());
        spec
    };
    let by_name = autoscaler(json!({"statefulSetName": "db"}));
    let by_selector = autoscaler(json!({"selector": {"matchLabels": {"app": "db"}}}));
    let template = serde_json::to_value(stateful_set("app", 1, CLASS_EXPANDABLE, "1Gi")).unwrap();
    let extended = json!({"replicas": 1, "template": {"spec": template["spec"]}});
    let mut hooked = extended.clone();
    hooked["preUpdate"] = json!({"spec": {"template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "hook", "image": "busybox"}],
    }}}});

    assert_refused(
        &author,
        &ns,
        "VolumeResize",
        &resize,
        "may not patch StatefulSet db",
    )
    .await;
    assert_refused(
        &author,
        &ns,
        "VolumeAutoscaler",
        &by_name,
        "may not patch StatefulSet db",
    )
    .await;
    assert_refused(
        &author,
        &ns,
        "ExtendedStatefulSet",
        &extended,
        "may not create StatefulSets",
    )
    .await;

    // Patching db alone is not enough for a resize: it runs pods.
    grant(
        &admin,
        &ns,
        "patch-db",
        json!({
            "apiGroups": ["apps"], "resources": ["statefulsets"], "resourceNames": ["db"], "verbs": ["patch"],
        }),
    )
    .await;
    assert_refused(&author, &ns, "VolumeResize", &resize, "may not create pods").await;

    grant(
        &admin,
        &ns,
        "pods",
        json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["create"]}),
    )
    .await;
    assert_admitted(&author, &ns, "VolumeResize", &resize).await;
    assert_admitted(&author, &ns, "VolumeAutoscaler", &by_name).await;
    // A selector may pick any StatefulSet here: rights on db alone do not cover it.
    assert_refused(
        &author,
        &ns,
        "VolumeAutoscaler",
        &by_selector,
        "may not patch StatefulSets in namespace",
    )
    .await;
    // A migration moves any StatefulSet of the namespace: so must its author be allowed to.
    let migration = json!({"fromStorageClassName": CLASS_EXPANDABLE, "toStorageClassName": "elsewhere"});
    assert_refused(
        &author,
        &ns,
        "VolumeMigration",
        &migration,
        "may not patch StatefulSets in namespace",
    )
    .await;

    grant(
        &admin,
        &ns,
        "create-sets",
        json!({
            "apiGroups": ["apps"], "resources": ["statefulsets"], "verbs": ["create"],
        }),
    )
    .await;
    assert_admitted(&author, &ns, "ExtendedStatefulSet", &extended).await;
    assert_refused(
        &author,
        &ns,
        "ExtendedStatefulSet",
        &hooked,
        "may not create Jobs",
    )
    .await;
    grant(
        &admin,
        &ns,
        "jobs",
        json!({"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["create"]}),
    )
    .await;
    assert_admitted(&author, &ns, "ExtendedStatefulSet", &hooked).await;
    grant(
        &admin,
        &ns,
        "patch-sets",
        json!({"apiGroups": ["apps"], "resources": ["statefulsets"], "verbs": ["patch"]}),
    )
    .await;
    assert_admitted(&author, &ns, "VolumeMigration", &migration).await;
    harness.finish().await;
}

/// The annotation `kubectl ferry rollback` sets.
fn rollback() -> Value {
    json!({ferry_api::names::ANNOTATION_ROLLBACK_REQUESTED: "true"})
}

/// Asserts that `author` may not ask for a rollback of the VolumeResize `grow`, for the reason
/// `why` names.
async fn assert_rollback_refused(author: &Client, namespace: &str, why: &str) {
    let refused = dry_run_annotate(author, namespace, "grow", rollback())
        .await
        .unwrap_or_else(|| panic!("the rollback was admitted; expected: {why}"));
    assert!(refused.contains(why), "{refused}");
}

/// The pod template of an ExtendedStatefulSet referencing a ConfigMap in each place Ferry reads
/// (env, an init container's envFrom, a volume) and Secrets in others (envFrom, a projected
/// volume), `env-map` twice.
fn referencing_template() -> Value {
    let mut template = serde_json::to_value(stateful_set("app", 1, CLASS_EXPANDABLE, "1Gi")).unwrap();
    let pod = &mut template["spec"]["template"]["spec"];
    pod["containers"][0]["env"] = json!([
        {"name": "A", "valueFrom": {"configMapKeyRef": {"name": "env-map", "key": "a"}}},
        {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
    ]);
    pod["initContainers"] = json!([{
        "name": "init", "image": "registry.k8s.io/pause:3.10",
        "envFrom": [{"secretRef": {"name": "env-secret"}}, {"configMapRef": {"name": "env-map"}}],
    }]);
    pod["volumes"] = json!([
        {"name": "settings", "configMap": {"name": "vol-map"}},
        {"name": "keys", "projected": {"sources": [{"secret": {"name": "projected-secret"}}]}},
    ]);
    template["spec"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_extended_stateful_set_switches_services_and_holds_deletes_only_within_its_authors_rights() {
    let harness = Harness::start("authors-ests").await;
    let ns = harness.ns.name.clone();
    let admin = harness.client.clone();
    let author = author(&harness, &["create", "get", "update"]).await;
    grant(
        &admin,
        &ns,
        "create-sets",
        json!({"apiGroups": ["apps"], "resources": ["statefulsets"], "verbs": ["create"]}),
    )
    .await;
    let kind = "ExtendedStatefulSet";
    let template = referencing_template();
    let extended = |fields: Value| {
        let mut spec = json!({"replicas": 1, "template": {"spec": template.clone()}});
        spec.as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        spec
    };

    // Blue/green with a Service: Ferry patches that Service's selector for the author.
    let switched = extended(json!({"updateStrategy": {"type": "BlueGreen", "service": "front"}}));
    assert_admitted(
        &author,
        &ns,
        kind,
        &extended(json!({"updateStrategy": {"type": "BlueGreen"}})),
    )
    .await;
    assert_refused(&author, &ns, kind, &switched, "may not patch Service front").await;
    // Rights on another Service do not cover it.
    grant(
        &admin,
        &ns,
        "patch-other",
        json!({"apiGroups": [""], "resources": ["services"], "resourceNames": ["other"], "verbs": ["patch"]}),
    )
    .await;
    assert_refused(&author, &ns, kind, &switched, "may not patch Service front").await;
    grant(
        &admin,
        &ns,
        "patch-front",
        json!({"apiGroups": [""], "resources": ["services"], "resourceNames": ["front"], "verbs": ["patch"]}),
    )
    .await;
    assert_admitted(&author, &ns, kind, &switched).await;

    // With updateOnConfigChange Ferry marks what the pods reference and refuses its deletion;
    // without, it does neither and nothing is asked.
    let following = extended(json!({"updateOnConfigChange": true}));
    assert_admitted(&author, &ns, kind, &extended(json!({}))).await;
    assert_refused(
        &author,
        &ns,
        kind,
        &following,
        "may not patch ConfigMap env-map in namespace",
    )
    .await;
    // The quarks name of the switch counts the same.
    assert_refused(
        &author,
        &ns,
        kind,
        &extended(json!({"updateOnEnvChange": true})),
        "may not patch ConfigMap env-map in namespace",
    )
    .await;
    // Each reference is asked for by name, in order; the first missing one is named.
    let by_name = [
        (
            "configmaps",
            "env-map",
            "may not patch ConfigMap vol-map in namespace",
        ),
        (
            "configmaps",
            "vol-map",
            "may not patch Secret env-secret in namespace",
        ),
        (
            "secrets",
            "env-secret",
            "may not patch Secret projected-secret in namespace",
        ),
    ];
    for (resource, name, then) in by_name {
        grant(
            &admin,
            &ns,
            &format!("patch-{name}"),
            json!({"apiGroups": [""], "resources": [resource], "resourceNames": [name], "verbs": ["patch"]}),
        )
        .await;
        assert_refused(&author, &ns, kind, &following, then).await;
    }
    grant(
        &admin,
        &ns,
        "patch-projected-secret",
        json!({"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["projected-secret"], "verbs": ["patch"]}),
    )
    .await;
    assert_admitted(&author, &ns, kind, &following).await;
    harness.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollback_request_needs_the_rights_a_rollback_needs() {
    let harness = Harness::start("authors-rollback").await;
    let ns = harness.ns.name.clone();
    let admin = harness.client.clone();
    harness
        .healthy_stateful_set(stateful_set("db", 1, CLASS_EXPANDABLE, "1Gi"))
        .await;
    // A resize made by someone else (a plan only: nothing of db changes).
    let resize: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "ferry.dev/v1alpha1", "kind": "VolumeResize", "metadata": {"name": "grow"},
        "spec": {"statefulSetName": "db", "volumes": [{"name": "data", "size": "2Gi"}], "dryRun": true},
    }))
    .unwrap();
    ferry_objects(&admin, &ns, "VolumeResize")
        .create(&PostParams::default(), &resize)
        .await
        .unwrap();
    // May patch VolumeResizes, nothing else.
    let author = author(&harness, &["get", "patch"]).await;

    // Another annotation asks for nothing.
    assert_eq!(
        dry_run_annotate(&author, &ns, "grow", json!({"team": "storage"})).await,
        None
    );
    // What creating the resize needs, then the claims: a rollback re-makes them on the old
    // volumes, and the writes since are deleted with the new ones. Each refusal names what is
    // missing; granted, the next one does.
    let needs = [
        (
            "may not patch StatefulSet db",
            "patch-db",
            json!({"apiGroups": ["apps"], "resources": ["statefulsets"], "resourceNames": ["db"], "verbs": ["patch"]}),
        ),
        (
            "may not create pods",
            "pods",
            json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["create"]}),
        ),
        (
            "may not delete persistentvolumeclaims in namespace",
            "delete-claims",
            json!({"apiGroups": [""], "resources": ["persistentvolumeclaims"], "verbs": ["delete"]}),
        ),
        (
            "may not create persistentvolumeclaims in namespace",
            "create-claims",
            json!({"apiGroups": [""], "resources": ["persistentvolumeclaims"], "verbs": ["create"]}),
        ),
    ];
    for (refusal, role, rule) in needs {
        assert_rollback_refused(&author, &ns, refusal).await;
        grant(&admin, &ns, role, rule).await;
    }
    assert_eq!(dry_run_annotate(&author, &ns, "grow", rollback()).await, None);
    harness.finish().await;
}
