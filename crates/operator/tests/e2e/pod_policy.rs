//! The operator's one pod write, bounded by the chart: RBAC grants it `patch` on pods (for the go of
//! a final mover on standby), and the chart's ValidatingAdmissionPolicy `<release>-operator-pods`
//! lets that ServiceAccount change nothing else, on no other pod, on the real API server. Its one
//! attach (`pods/attach` get and create, feature `directGo`) is bounded the same way by
//! `<release>-operator-attach`: the stdin of a final mover, nothing else.

use ferry_testenv::{TestNamespace, client};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{AttachParams, Patch, PatchParams, PostParams};
use kube::client::UpgradeConnectionError;
use serde_json::{Value, json};

/// A pod no node takes (a node selector nothing has), with `labels` and `annotations`.
fn pod(name: &str, labels: Value, annotations: Value) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels, "annotations": annotations},
        "spec": {
            "nodeSelector": {"ferry.dev/no-such-node": "true"},
            "containers": [{"name": "mover", "image": "ferry.local/ferry:dev"}],
        },
    }))
    .unwrap()
}

/// A final mover pod `name` on standby (its go not given).
fn final_mover(name: &str) -> Pod {
    let labels = json!({"ferry.dev/mover": "true", "ferry.dev/mover-pass": "final"});
    pod(name, labels, json!({"ferry.dev/final-pass": ""}))
}

/// A namespace `prefix-…` holding `made`, the chart's operator identity for it, and the pods as
/// an administrator and as that identity see them.
struct Setup {
    ns: TestNamespace,
    identity: ferry_testenv::chart::OperatorIdentity,
    pods: Api<Pod>,
    as_operator: Api<Pod>,
}

async fn setup(prefix: &str, made: Vec<Pod>) -> Setup {
    let admin = client().await.unwrap();
    let ns = TestNamespace::create(&admin, prefix).await.unwrap();
    let identity = ferry_testenv::chart::install_identity(&ns.name).await.unwrap();
    let pods = Api::<Pod>::namespaced(admin, &ns.name);
    for pod in made {
        pods.create(&PostParams::default(), &pod).await.unwrap();
    }
    let operator = ferry_testenv::chart::client_as(&identity.user).await.unwrap();
    let as_operator = Api::<Pod>::namespaced(operator, &ns.name);
    Setup {
        ns,
        identity,
        pods,
        as_operator,
    }
}

async fn patch(pods: &Api<Pod>, name: &str, patch: Value) -> Result<Pod, kube::Error> {
    pods.patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
}

fn assert_refused(what: &str, result: Result<Pod, kube::Error>, says: &str) {
    match result {
        Err(kube::Error::Api(status)) => assert!(status.message.contains(says), "{what}: {}", status.message),
        other => panic!("{what} must be refused, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_may_patch_only_the_go_of_its_own_final_movers() {
    let made = vec![
        pod("app", json!({"app": "db"}), json!({})),
        final_mover("final"),
        pod("warm", json!({"ferry.dev/mover": "true"}), json!({})),
    ];
    let Setup {
        ns,
        identity,
        pods,
        as_operator,
    } = setup("pod-policy", made).await;
    let go = json!({"metadata": {"annotations": {"ferry.dev/final-pass": "go"}}});

    let not_ours = "may update only its own final mover pods";
    // A new policy takes effect once the API server has loaded it (a second or so).
    let refused = ferry_testenv::wait_until("the policy to take effect", 30, || async {
        patch(&as_operator, "app", go.clone()).await.err()
    });
    assert_refused(
        "the go on an application's pod",
        Err(refused.await.unwrap()),
        not_ours,
    );
    assert_refused(
        "the go on a warm mover",
        patch(&as_operator, "warm", go.clone()).await,
        not_ours,
    );
    let only_go = "may change only the ferry.dev/final-pass annotation";
    // A strategic merge, so the API server's own validation has nothing to object to but the image.
    let image = json!({"spec": {"containers": [{"name": "mover", "image": "elsewhere.example/evil:1"}]}});
    let new_image = as_operator
        .patch("final", &PatchParams::default(), &Patch::Strategic(image))
        .await;
    assert_refused("a final mover's image", new_image, only_go);
    let label = json!({"metadata": {"labels": {"ferry.dev/mover-pass": "warm"}}});
    assert_refused(
        "a final mover's label",
        patch(&as_operator, "final", label).await,
        only_go,
    );
    let other = json!({"metadata": {"annotations": {"ferry.dev/final-pass": "go", "x": "y"}}});
    assert_refused(
        "another annotation",
        patch(&as_operator, "final", other).await,
        only_go,
    );
    let finalizer = json!({"metadata": {"finalizers": ["ferry.dev/keep"]}});
    assert_refused(
        "a finalizer",
        patch(&as_operator, "final", finalizer).await,
        only_go,
    );

    let given = patch(&as_operator, "final", go)
        .await
        .expect("the go on a final mover");
    assert_eq!(given.metadata.annotations.unwrap()["ferry.dev/final-pass"], "go");
    // The policy binds the operator only: anyone else is judged by RBAC alone, as before.
    let relabelled = patch(&pods, "app", json!({"metadata": {"labels": {"tier": "1"}}})).await;
    assert!(relabelled.is_ok(), "{relabelled:?}");

    ferry_testenv::chart::remove_identity(&identity).await.unwrap();
    ns.cleanup().await.unwrap();
}

/// The status code an attach as `pods` gets: the API server admits (or refuses) a CONNECT before it
/// asks a kubelet, so a pod no node took answers with another error once admitted.
async fn attach_status(pods: &Api<Pod>, name: &str, params: &AttachParams) -> Option<u16> {
    match pods.attach(name, params).await {
        Ok(_) => None,
        Err(kube::Error::UpgradeConnection(UpgradeConnectionError::ProtocolSwitch(code))) => {
            Some(code.as_u16())
        }
        Err(kube::Error::Api(status)) => Some(status.code),
        Err(other) => panic!("attach {name}: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_may_attach_only_to_the_stdin_of_its_own_final_movers() {
    let final_mover_name = "data-db-0-ferry-abc-final";
    let made = vec![
        pod("app", json!({"app": "db"}), json!({})),
        final_mover(final_mover_name),
    ];
    let Setup {
        ns,
        identity,
        as_operator,
        ..
    } = setup("attach-policy", made).await;
    let stdin_only = || {
        AttachParams::default()
            .container("mover")
            .stdin(true)
            .stdout(false)
            .stderr(false)
    };

    let forbidden = Some(403);
    // A new policy takes effect once the API server has loaded it (a second or so).
    ferry_testenv::wait_until("the policy to take effect", 30, || async {
        (attach_status(&as_operator, "app", &stdin_only()).await == forbidden).then_some(())
    })
    .await
    .unwrap();
    let reading = stdin_only().stdout(true);
    assert_eq!(
        attach_status(&as_operator, final_mover_name, &reading).await,
        forbidden,
        "output read"
    );
    let other_container = stdin_only().container("app");
    assert_eq!(
        attach_status(&as_operator, final_mover_name, &other_container).await,
        forbidden,
        "another container"
    );
    // Admitted: the API server goes on to find the pod has no node (400), which no policy says.
    let admitted = attach_status(&as_operator, final_mover_name, &stdin_only()).await;
    assert_eq!(admitted, Some(400), "the stdin of a final mover");
    // Switched off, the chart grants no attach at all.
    let off = ferry_testenv::chart::install_identity_with(&ns.name, &["features.directGo=false"])
        .await
        .unwrap();
    let without = ferry_testenv::chart::client_as(&off.user).await.unwrap();
    let as_operator_without = Api::<Pod>::namespaced(without, &ns.name);
    ferry_testenv::wait_until("the grant to be withdrawn", 30, || async {
        (attach_status(&as_operator_without, final_mover_name, &stdin_only()).await == forbidden)
            .then_some(())
    })
    .await
    .unwrap();

    ferry_testenv::chart::remove_identity(&identity).await.unwrap();
    ns.cleanup().await.unwrap();
}

/// A Secret as the operator makes a serving mover's key, with `name`, `type_` and its one owner
/// (kind, name).
fn key_secret(name: &str, type_: &str, owner: (&str, &str)) -> k8s_openapi::api::core::v1::Secret {
    serde_json::from_value(json!({
        "metadata": {
            "name": name,
            "labels": {"ferry.dev/mover": "true", "ferry.dev/mover-pass": "serve"},
            "ownerReferences": [{"apiVersion": "v1", "kind": owner.0, "name": owner.1, "uid": "0f0e0d0c-0000-4000-8000-000000000001"}],
        },
        "type": type_,
        "stringData": {"tls.crt": "-", "tls.key": "-", "ca.crt": "-"},
    }))
    .unwrap()
}

/// RBAC grants the operator `create` on Secrets (a copy's key for each serving mover); the chart's
/// ValidatingAdmissionPolicy `<release>-operator-secrets` lets it create nothing but such keys.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_may_create_only_the_keys_of_its_own_serving_movers() {
    use k8s_openapi::api::core::v1::Secret;
    let Setup { ns, identity, .. } = setup("secret-policy", vec![]).await;
    let operator = ferry_testenv::chart::client_as(&identity.user).await.unwrap();
    let as_operator: Api<Secret> = Api::namespaced(operator, &ns.name);
    let create = |secret: Secret| {
        let secrets = as_operator.clone();
        async move { secrets.create(&PostParams::default(), &secret).await }
    };
    let not_ours = "may create only the keys of its own serving movers";
    // A new policy takes effect once the API server has loaded it: each try under a new name.
    let mut tries = 0;
    let refused = ferry_testenv::wait_until("the policy to take effect", 30, || {
        tries += 1;
        let plain: Secret =
            serde_json::from_value(json!({"metadata": {"name": format!("stolen-{tries}")}})).unwrap();
        let made = create(plain);
        async move { made.await.err() }
    })
    .await
    .unwrap();
    let says = |result: Result<Secret, kube::Error>| match result {
        Err(kube::Error::Api(status)) => status.message,
        other => format!("{other:?}"),
    };
    assert!(says(Err(refused)).contains(not_ours));
    let pod_owner = ("Pod", "data-db-0-ferry-1a2b3c4d-serve");
    let opaque = key_secret("data-db-0-ferry-1a2b3c4d-key-0", "Opaque", pod_owner);
    assert!(says(create(opaque).await).contains(not_ours), "an Opaque key");
    let owned_elsewhere = key_secret(
        "data-db-0-ferry-1a2b3c4d-key-0",
        "kubernetes.io/tls",
        ("ConfigMap", "x-serve"),
    );
    assert!(
        says(create(owned_elsewhere).await).contains(not_ours),
        "owned by a ConfigMap"
    );
    let other_name = key_secret("registry-credentials", "kubernetes.io/tls", pod_owner);
    assert!(says(create(other_name).await).contains(not_ours), "another name");

    let key = key_secret("data-db-0-ferry-1a2b3c4d-key-0", "kubernetes.io/tls", pod_owner);
    create(key).await.expect("a serving mover's key");

    ferry_testenv::chart::remove_identity(&identity).await.unwrap();
    ns.cleanup().await.unwrap();
}
