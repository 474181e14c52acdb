//! Ferry installed the way users install it: `helm install` of deploy/helm/ferry runs the operator
//! as two real pods on the real node (from the local image), with its webhooks registered through
//! its Service. A resize goes through the installed operator, installed from the previous chart;
//! its leader is deleted mid-resize and the other replica takes over within the lease; `helm
//! upgrade` to this chart rolls the operator while the resize waits, and the resize then finishes;
//! `helm uninstall` leaves no orphans and keeps the data. An upgrade from the previous chart with
//! `--reuse-values` keeps every feature on that is on by default.

use crate::real_node::{assert_nothing_lost, wait_phase, writer_with};
use crate::support::Harness;
use ferry_api::{Phase, VolumeResize};
use ferry_testenv::chart::{chart_dir, helm};
use ferry_testenv::{CLASS_BLOCK_FIXED, REAL_NODE, wait_until};
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{PersistentVolume, Pod, Secret};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::api::{DeleteParams, ListParams};
use kube::{Api, ResourceExt};
use serde_json::json;

const LEASE_SECONDS: u64 = 6;

/// The chart users ran before this one: deploy/helm/ferry as of 8acf592 (main at the end of
/// 2026-11-27's first session), packaged with `helm package`. When the chart is released, this
/// becomes the previous release's package.
fn previous_chart() -> String {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/chart/ferry-0.1.0-8acf592.tgz");
    assert!(path.exists(), "{} is missing", path.display());
    path.to_string_lossy().into_owned()
}

async fn helm_ok(args: &[&str]) -> String {
    let (code, out, err) = helm(args).await.unwrap();
    assert_eq!(code, 0, "helm {args:?}: {err}\n{out}");
    out
}

/// The replica holding the leader Lease.
async fn leader(harness: &Harness, lease: &str) -> String {
    let leases: Api<Lease> = harness.ns.api();
    wait_until("a leader", 60, || async {
        let lease = leases.get_opt(lease).await.ok().flatten()?;
        lease.spec?.holder_identity.filter(|holder| !holder.is_empty())
    })
    .await
    .unwrap()
}

/// (time, reporting instance) of every Event the operator reported in the namespace, in time order
/// (for an Event repeated as a series, both its first and its last time).
async fn operator_actions(harness: &Harness) -> Vec<(String, String)> {
    let events: Api<Event> = harness.ns.api();
    let mut out = Vec::new();
    for event in events.list(&ListParams::default()).await.unwrap().items {
        if event.reporting_controller.as_deref() != Some("ferry") {
            continue;
        }
        let instance = event.reporting_instance.clone().unwrap_or_default();
        if let Some(time) = &event.event_time {
            out.push((time.0.to_string(), instance.clone()));
        }
        if let Some(last) = event
            .series
            .as_ref()
            .map(|series| series.last_observed_time.0.to_string())
        {
            out.push((last, instance));
        }
    }
    out.sort();
    out
}

/// A VolumeResize for a StatefulSet that does not exist is refused: only a webhook the API server
/// reaches refuses it (its failurePolicy is Ignore).
async fn assert_webhook_refuses_a_missing_stateful_set(harness: &Harness) {
    let refused = harness
        .try_create_resize(
            "ghost",
            json!({"statefulSetName": "nobody", "volumes": [{"name": "data", "size": "1Gi"}]}),
        )
        .await;
    let message = format!(
        "{:?}",
        refused.expect_err("the webhook refuses a VolumeResize for a missing StatefulSet")
    );
    assert!(message.contains("nobody"), "{message}");
}

/// The pod a `WebhookAnswered` Event of the operator's webhook probe regards, by name and UID,
/// once there is one.
async fn webhook_answered_on_a_pod(harness: &Harness) -> String {
    let events: Api<Event> = harness.ns.api();
    wait_until("the leader's WebhookAnswered Event on its pod", 90, || async {
        let listed = events.list(&ListParams::default()).await.ok()?.items;
        listed.into_iter().find_map(|event| {
            let regarding = event.regarding?;
            (event.reason.as_deref() == Some("WebhookAnswered")
                && regarding.kind.as_deref() == Some("Pod")
                && regarding.uid.is_some())
            .then_some(regarding.name?)
        })
    })
    .await
    .unwrap()
}

/// A VolumeResize CREATE review (naming a StatefulSet that does not exist) sent to one replica at
/// `ip`, verifying its certificate for `host` against `ca_pem`; the replica's answer.
async fn review_at(ip: &str, host: &str, ca_pem: &[u8], ns: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.crt");
    std::fs::write(&ca_file, ca_pem).unwrap();
    let review = json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": "direct", "operation": "CREATE", "name": "ghost", "namespace": ns,
            "kind": {"group": "ferry.dev", "version": "v1alpha1", "kind": "VolumeResize"},
            "resource": {"group": "ferry.dev", "version": "v1alpha1", "resource": "volumeresizes"},
            "userInfo": {"username": "test"},
            "object": {
                "apiVersion": "ferry.dev/v1alpha1", "kind": "VolumeResize",
                "metadata": {"name": "ghost", "namespace": ns},
                "spec": {"statefulSetName": "nobody", "volumes": [{"name": "data", "size": "1Gi"}]},
            },
        },
    });
    let output = tokio::process::Command::new("curl")
        .args([
            "-sS",
            "--http1.1",
            "--max-time",
            "20",
            "-H",
            "Content-Type: application/json",
        ])
        .arg("--cacert")
        .arg(&ca_file)
        .arg("--resolve")
        .arg(format!("{host}:9443:{ip}"))
        .arg("--data-binary")
        .arg(review.to_string())
        .arg(format!("https://{host}:9443/validate/volumeresizes"))
        .output()
        .await
        .unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The replicas that acted, in the order they first acted, never overlap: the last action of each
/// comes before the first of the next. `first` acted first and `second` acted too.
fn assert_one_at_a_time(actions: &[(String, String)], first: &str) {
    let mut order: Vec<&str> = Vec::new();
    for (_, who) in actions {
        if !order.contains(&who.as_str()) {
            order.push(who);
        }
    }
    assert_eq!(order.first().copied(), Some(first), "{actions:?}");
    assert!(order.len() >= 2, "one replica did everything: {actions:?}");
    for pair in order.windows(2) {
        let last = actions
            .iter()
            .filter(|(_, who)| who == pair[0])
            .map(|(at, _)| at)
            .max();
        let next = actions
            .iter()
            .filter(|(_, who)| who == pair[1])
            .map(|(at, _)| at)
            .min();
        assert!(
            last < next,
            "{} and {} acted at the same time: {actions:?}",
            pair[0],
            pair[1]
        );
    }
}

/// `helm` arguments that install into `namespace` from the local image, on the real node, with
/// the CRDs left to the suite (every test running at the same time shares them), waiting for the
/// pods; `extra` values go between the namespace and the rest.
pub(crate) fn on_the_real_node(namespace: &str, extra: &[&str]) -> Vec<String> {
    let node_selector = format!(r#"nodeSelector={{"kubernetes.io/hostname":"{REAL_NODE}"}}"#);
    let tolerations =
        r#"tolerations=[{"key":"ferry.dev/real-node","operator":"Exists","effect":"NoSchedule"}]"#;
    let local_image = [
        "--set",
        "image.repository=ferry.local/ferry",
        "--set",
        "image.tag=dev",
        "--set",
        "image.pullPolicy=Never",
    ];
    let rest = [
        "--set",
        "crds.install=false",
        "--set-json",
        node_selector.as_str(),
        "--set-json",
        tolerations,
        "--wait",
        "--timeout",
        "180s",
    ];
    ["--namespace", namespace]
        .iter()
        .chain(&local_image)
        .chain(extra)
        .chain(&rest)
        .map(|arg| arg.to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chart_runs_ferry_on_the_node_hands_over_mid_resize_and_uninstalls_cleanly() {
    let harness = Harness::start_bare("helm").await;
    let ns = harness.ns.name.clone();
    let release = ns.clone();
    let fullname = format!("{release}-ferry");
    let chart = chart_dir().to_string_lossy().into_owned();
    let watched = format!("watchNamespaces={{{ns}}}");
    let lease_duration = format!("leaderElection.leaseDuration={LEASE_SECONDS}s");
    let mut values = on_the_real_node(
        &ns,
        &[
            "--set",
            &watched,
            "--set",
            "replicaCount=2",
            "--set",
            &lease_duration,
        ],
    );
    let values_ref: Vec<&str> = values.iter().map(String::as_str).collect();
    // A bad value fails at install with the schema's message, and installs nothing.
    let (code, _, err) = helm(
        &[
            &["install", &release, &chart, "--set", "replicaCount=0"][..],
            &values_ref[..2],
        ]
        .concat(),
    )
    .await
    .unwrap();
    assert_ne!(code, 0);
    assert!(err.contains("replicaCount"), "{err}");

    // Installed from the previous chart; upgraded to this one mid-resize below.
    let previous = previous_chart();
    let mut install = vec!["install", release.as_str(), previous.as_str()];
    install.extend_from_slice(&values_ref);
    let notes = helm_ok(&install).await;
    assert!(notes.contains("Uninstalling keeps your data"), "{notes}");

    // Both replicas run on the real node; the webhooks carry the CA the operator keeps.
    let pods: Api<Pod> = harness.ns.api();
    let selector = format!("app.kubernetes.io/instance={release}");
    let operator_pods = pods
        .list(&ListParams::default().labels(&selector))
        .await
        .unwrap()
        .items;
    assert_eq!(operator_pods.len(), 2);
    assert!(
        operator_pods
            .iter()
            .all(|pod| pod.spec.as_ref().unwrap().node_name.as_deref() == Some(REAL_NODE))
    );
    let webhook_name = ferry_operator::webhook::register::configuration_name(&[ns.to_string()]);
    let mutating: Api<MutatingWebhookConfiguration> = Api::all(harness.client.clone());
    wait_until("the operator to inject its CA", 60, || async {
        let configuration = mutating.get_opt(&webhook_name).await.ok().flatten()?;
        configuration
            .webhooks?
            .first()?
            .client_config
            .ca_bundle
            .as_ref()
            .map(|_| ())
    })
    .await
    .unwrap();
    // Served through the Service by the pods: the validating webhook refuses a VolumeResize for a
    // StatefulSet that does not exist (its failurePolicy is Ignore, so only a served webhook refuses).
    assert_webhook_refuses_a_missing_stateful_set(&harness).await;
    // Every replica serves it, leader or not, with a certificate for the Service from the one CA
    // in the webhook CA Secret (the caBundle the API server trusts).
    let secrets: Api<Secret> = harness.ns.api();
    let ca = secrets.get(&format!("{fullname}-webhook-ca")).await.unwrap();
    let ca_pem = ca.data.unwrap().remove("ca.crt").unwrap().0;
    assert_eq!(
        mutating.get(&webhook_name).await.unwrap().webhooks.unwrap()[0]
            .client_config
            .ca_bundle
            .as_ref()
            .unwrap()
            .0,
        ca_pem
    );
    // The replicas share one configuration digest key, which the first wrote into the chart's
    // empty Secret (docs/security.md).
    let digest_key = secrets
        .get(&format!("{fullname}-config-digest-key"))
        .await
        .unwrap();
    assert_eq!(digest_key.data.unwrap()["config-digest.key"].0.len(), 32);
    for pod in &operator_pods {
        let ip = pod.status.as_ref().unwrap().pod_ip.clone().unwrap();
        let answer = review_at(&ip, &format!("{fullname}.{ns}.svc"), &ca_pem, &ns).await;
        assert!(
            answer.contains("\"allowed\":false"),
            "{} answered {answer}",
            pod.name_any()
        );
    }

    // A copy through the installed operator, held after its warm pass by a budget that allows no
    // disruption, so that it is surely still running through the hand-over and the upgrade.
    let seeds = writer_with(&harness, 1, CLASS_BLOCK_FIXED, "64Mi", 8 << 10, 0).await;
    let budgets = harness.budget_allowing_no_disruption(1).await;
    let lease_name = format!("{fullname}-leader");
    let first = leader(&harness, &lease_name).await;
    harness
        .create_resize(
            "copy",
            json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "96Mi"}]}),
        )
        .await;
    let resizes: Api<VolumeResize> = harness.ns.api();
    harness
        .wait_message(
            "copy",
            "the copy to wait for the budget after its warm pass",
            120,
            "PodDisruptionBudget",
        )
        .await;
    pods.delete(&first, &DeleteParams::default()).await.unwrap();
    let deleted_at = std::time::Instant::now();
    let second = wait_until("another replica to lead", 60, || async {
        let holder = leader(&harness, &lease_name).await;
        (holder != first).then_some(holder)
    })
    .await
    .unwrap();
    assert!(
        deleted_at.elapsed().as_secs() <= 2 * LEASE_SECONDS + 10,
        "handed over to {second} after {:?}",
        deleted_at.elapsed()
    );
    // helm upgrade from the previous chart to this one rolls the operator while the resize waits;
    // the resize is the same object, still running, and finishes under the new release.
    let held = resizes.get("copy").await.unwrap();
    let mut upgrade = vec![
        "upgrade",
        release.as_str(),
        chart.as_str(),
        "--set",
        "logFormat=text",
    ];
    upgrade.extend_from_slice(&values_ref);
    helm_ok(&upgrade).await;
    let deployments: Api<Deployment> = harness.ns.api();
    let deployment = deployments.get(&fullname).await.unwrap();
    let env = &deployment.spec.unwrap().template.spec.unwrap().containers[0].env;
    assert!(
        env.iter()
            .flatten()
            .any(|var| var.name == "FERRY_LOG_FORMAT" && var.value.as_deref() == Some("text"))
    );
    // helm test: the release's smoke test passes in a pod of the operator's image on the real node
    // (CRDs served, /readyz of each ready pod, Ferry's validating webhook refusing a dry-run
    // VolumeResize for a missing StatefulSet: it exits non-zero when the webhook is not reached).
    helm_ok(
        &[
            &["test", release.as_str(), "--timeout", "120s"][..],
            &values_ref[..2],
        ]
        .concat(),
    )
    .await;
    let after_upgrade = resizes.get("copy").await.unwrap();
    assert_eq!(after_upgrade.uid(), held.uid());
    assert_eq!(after_upgrade.status.and_then(|s| s.phase), Some(Phase::Running));
    budgets.delete("db", &DeleteParams::default()).await.unwrap();
    let resize = wait_phase(&harness, "copy", 300).await;
    let status = resize.status.clone().unwrap();
    assert_eq!(status.phase, Some(Phase::Succeeded), "{:?}", status.message);
    assert_nothing_lost(&harness, 1, &seeds).await;
    // Never two at once: each replica's actions all come before the next leader's, the upgraded
    // release's replicas included. (The replica that took over from the deleted leader led while
    // the budget held the resize, so it may have had nothing to do before the upgrade replaced it.)
    assert_one_at_a_time(&operator_actions(&harness).await, &first);
    // The upgraded leader proved the API server calls its webhook, and said so on its own pod (by
    // UID, as `kubectl describe pod` finds Events).
    let answered = webhook_answered_on_a_pod(&harness).await;
    assert!(answered.starts_with(&fullname), "{answered}");

    // helm uninstall: nothing of the chart is left, the data is.
    values.truncate(2);
    let namespace: Vec<&str> = values.iter().map(String::as_str).collect();
    helm_ok(&[&["uninstall", release.as_str(), "--wait"][..], &namespace[..]].concat()).await;
    assert!(deployments.get_opt(&fullname).await.unwrap().is_none());
    assert!(
        Api::<ClusterRole>::all(harness.client.clone())
            .get_opt(&fullname)
            .await
            .unwrap()
            .is_none()
    );
    assert!(mutating.get_opt(&webhook_name).await.unwrap().is_none());
    assert!(
        Api::<ValidatingWebhookConfiguration>::all(harness.client.clone())
            .get_opt(&webhook_name)
            .await
            .unwrap()
            .is_none()
    );
    let leases: Api<Lease> = harness.ns.api();
    assert!(leases.get_opt(&lease_name).await.unwrap().is_none());
    // (Its pods stop after the uninstall returns: the garbage collector deletes them gracefully.)
    wait_until("nothing of the release to be left", 60, || async {
        let (_, names, _) = ferry_testenv::kubectl(&[
            "get",
            "all,role,rolebinding,secret,serviceaccount,lease,pdb,configmap",
            "-n",
            &ns,
            "-l",
            &selector,
            "-o",
            "name",
        ])
        .await
        .ok()?;
        names.trim().is_empty().then_some(())
    })
    .await
    .unwrap();
    assert_eq!(
        resizes.get("copy").await.unwrap().uid(),
        resize.uid(),
        "the VolumeResize is kept"
    );
    let volumes: Api<PersistentVolume> = Api::all(harness.client.clone());
    let retained = &resize.status.unwrap().created_objects.retained_volumes;
    assert!(!retained.is_empty());
    for volume in retained {
        assert!(
            volumes.get_opt(volume).await.unwrap().is_some(),
            "retained volume {volume} is kept"
        );
    }
    harness.finish().await;
}

/// Whether `rules` grant `verb` on `resource` (any API group).
fn grants(rules: &[k8s_openapi::api::rbac::v1::PolicyRule], resource: &str, verb: &str) -> bool {
    rules.iter().any(|rule| {
        rule.resources.iter().flatten().any(|r| r == resource) && rule.verbs.iter().any(|v| v == verb)
    })
}

/// `helm upgrade --reuse-values`, as docs/upgrade.md has it, from the previous chart, whose values
/// lack every feature switch added since (autoscale, extendedStatefulSets, triggers, directGo,
/// and the opt-in configMapReferences and blueGreenService): helm renders this chart with those
/// values, and every feature on by default is on afterwards, with its rules, its webhook and its
/// policy, the opt-in ones are off, and the values given at install (the previous chart's
/// secretReferences and kubeletStats, true there) are kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_reusing_the_previous_charts_values_keeps_every_default_feature_on() {
    use k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicy;
    use k8s_openapi::api::rbac::v1::Role;
    let harness = Harness::start_bare("helm-reuse").await;
    let ns = harness.ns.name.clone();
    let release = ns.clone();
    let fullname = format!("{release}-ferry");
    let chart = chart_dir().to_string_lossy().into_owned();
    let watched = format!("watchNamespaces={{{ns}}}");
    let values = on_the_real_node(&ns, &["--set", &watched, "--set", "replicaCount=1"]);
    let previous = previous_chart();
    let mut install = vec!["install", release.as_str(), previous.as_str()];
    install.extend(values.iter().map(String::as_str));
    helm_ok(&install).await;
    let roles: Api<Role> = harness.ns.api();
    let before = roles.get(&fullname).await.unwrap().rules.unwrap_or_default();
    assert!(
        !grants(&before, "pods/attach", "create"),
        "the previous chart already has directGo: {before:?}"
    );

    // Nothing but the release's values: the image, node and namespaces given at install.
    helm_ok(&[
        "upgrade",
        release.as_str(),
        chart.as_str(),
        "--namespace",
        ns.as_str(),
        "--reuse-values",
        "--wait",
        "--timeout",
        "180s",
    ])
    .await;
    let deployments: Api<Deployment> = harness.ns.api();
    let deployment = deployments.get(&fullname).await.unwrap();
    let pod_spec = deployment.spec.unwrap().template.spec.unwrap();
    let container = &pod_spec.containers[0];
    assert_eq!(container.image.as_deref(), Some("ferry.local/ferry:dev"));
    let disabled: Vec<_> = container
        .env
        .iter()
        .flatten()
        .filter(|var| var.name == "FERRY_DISABLE_FEATURES")
        .filter_map(|var| var.value.as_deref())
        .collect();
    assert_eq!(
        disabled,
        ["config-map-references,blue-green-service"],
        "features off after the upgrade"
    );
    let rules = roles.get(&fullname).await.unwrap().rules.unwrap_or_default();
    for (resource, verb, feature) in [
        ("volumeautoscalers", "watch", "autoscale"),
        ("extendedstatefulsets", "watch", "extendedStatefulSets"),
        ("jobs", "create", "updateHooks"),
        ("secrets", "watch", "secretReferences"),
        ("pods/attach", "create", "directGo"),
    ] {
        assert!(
            grants(&rules, resource, verb),
            "{feature}: no {verb} on {resource} after the upgrade: {rules:?}"
        );
    }
    for (resource, verb, feature) in [
        ("services", "patch", "blueGreenService"),
        ("configmaps", "watch", "configMapReferences"),
    ] {
        assert!(
            !grants(&rules, resource, verb),
            "{feature}: {verb} on {resource} after the upgrade, though off by default: {rules:?}"
        );
    }
    let cluster_rules = Api::<ClusterRole>::all(harness.client.clone())
        .get(&fullname)
        .await
        .unwrap()
        .rules
        .unwrap_or_default();
    assert!(
        grants(&cluster_rules, "nodes/proxy", "get"),
        "kubeletStats: no nodes/proxy after the upgrade: {cluster_rules:?}"
    );
    let webhook_name = ferry_operator::webhook::register::configuration_name(&[ns.to_string()]);
    let mutating = Api::<MutatingWebhookConfiguration>::all(harness.client.clone())
        .get(&webhook_name)
        .await
        .unwrap();
    assert!(
        !mutating.webhooks.unwrap_or_default().is_empty(),
        "triggers: the StatefulSet webhook is gone after the upgrade"
    );
    let policies: Api<ValidatingAdmissionPolicy> = Api::all(harness.client.clone());
    assert!(
        policies
            .get_opt(&format!("{fullname}-operator-attach"))
            .await
            .unwrap()
            .is_some(),
        "directGo: no attach policy after the upgrade"
    );

    helm_ok(&[
        "uninstall",
        release.as_str(),
        "--namespace",
        ns.as_str(),
        "--wait",
    ])
    .await;
    harness.finish().await;
}

/// `webhook.hostNetwork`, for API servers that reach nodes but not pods (docs/install.md,
/// "Webhooks on managed clusters"): the operator's pod on the real node's own network, on node
/// ports of the chart's values; the API server calls its webhook there, through the Service, and
/// the leader's probe says so on its pod.
#[tokio::test]
async fn a_host_network_operator_is_called_by_the_api_server_at_its_node() {
    let harness = Harness::start_bare("helm-hostnet").await;
    let ns = harness.ns.name.clone();
    let release = ns.clone();
    let chart = chart_dir().to_string_lossy().into_owned();
    let watched = format!("watchNamespaces={{{ns}}}");
    // Ports no other test's pod binds on the real node's network.
    let values = on_the_real_node(
        &ns,
        &[
            "--set",
            &watched,
            "--set",
            "replicaCount=1",
            "--set",
            "webhook.hostNetwork=true",
            "--set",
            "webhook.port=10260",
            "--set",
            "metrics.port=10261",
        ],
    );
    // With a namespace the chart makes under baseline Pod Security, it refuses to render.
    let (code, _, err) = helm(&[
        "template",
        release.as_str(),
        chart.as_str(),
        "--set",
        "webhook.hostNetwork=true",
        "--set",
        "namespace.create=true",
        "--kube-version",
        "1.37.0",
    ])
    .await
    .unwrap();
    assert_ne!(code, 0);
    assert!(err.contains("namespace.podSecurity.enforce=privileged"), "{err}");

    let mut install = vec!["install", release.as_str(), chart.as_str()];
    install.extend(values.iter().map(String::as_str));
    helm_ok(&install).await;
    let pods: Api<Pod> = harness.ns.api();
    let selector = format!("app.kubernetes.io/instance={release}");
    let pod = pods
        .list(&ListParams::default().labels(&selector))
        .await
        .unwrap()
        .items
        .remove(0);
    let status = pod.status.clone().unwrap();
    assert_eq!(pod.spec.as_ref().unwrap().host_network, Some(true));
    assert_eq!(status.pod_ip, status.host_ip, "the pod has the node's address");
    // Only a webhook the API server reaches refuses a VolumeResize for a missing StatefulSet.
    assert_webhook_refuses_a_missing_stateful_set(&harness).await;
    assert_eq!(webhook_answered_on_a_pod(&harness).await, pod.name_any());

    helm_ok(&[
        "uninstall",
        release.as_str(),
        "--namespace",
        ns.as_str(),
        "--wait",
    ])
    .await;
    harness.finish().await;
}
