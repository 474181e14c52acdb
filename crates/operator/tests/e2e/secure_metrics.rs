//! The secure /metrics (`--metrics-secure`, the chart's `metrics.secure`) against the real API
//! server: the operator runs in this process as the chart's ServiceAccount with the chart's RBAC
//! for it (tokenreviews and subjectaccessreviews create), serves /metrics over HTTPS with a
//! certificate of the webhook CA Secret the chart makes, and answers a ServiceAccount token bound to
//! the chart's `<release>-metrics-reader` ClusterRole with the metrics, another ServiceAccount's
//! token with 403, and no token or a made-up one with 401. The plain HTTP address keeps /readyz and
//! serves no /metrics.

use crate::support;

use ferry_operator::secure_metrics::SecureMetrics;
use ferry_operator::shared_secret::SecretRef;
use ferry_operator::webhook::Certificates;
use ferry_operator::{Settings, run};
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::api::PostParams;
use kube::{Api, Client, ResourceExt};
use serde_json::json;

/// (HTTP status, body) of a GET; `https` ones verified with `ca` alone, with `token` as bearer.
async fn get(url: &str, ca: Option<&std::path::Path>, token: Option<&str>) -> (u16, String) {
    let mut command = tokio::process::Command::new("curl");
    command.args(["-s", "-w", "\\n%{http_code}"]);
    if let Some(ca) = ca {
        command.arg("--cacert").arg(ca);
    }
    if let Some(token) = token {
        command.args(["-H", &format!("Authorization: Bearer {token}")]);
    }
    let output = command.arg(url).output().await.unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (code.parse().unwrap_or(0), body.to_string())
}

/// A ServiceAccount `name` in `namespace` and a ten-minute token of it (TokenRequest API).
async fn account_token(client: &Client, namespace: &str, name: &str) -> String {
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), namespace);
    let account = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    accounts.create(&PostParams::default(), &account).await.unwrap();
    let request = TokenRequest {
        spec: TokenRequestSpec {
            expiration_seconds: Some(600),
            ..TokenRequestSpec::default()
        },
        ..TokenRequest::default()
    };
    accounts
        .create_token_request(name, &PostParams::default(), &request)
        .await
        .unwrap()
        .status
        .unwrap()
        .token
}

/// Whether the API server's authorizer now lets `user` get /metrics (asked as the admin).
async fn may_get_metrics(client: &Client, user: &str) -> bool {
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(user.to_string()),
            non_resource_attributes: Some(NonResourceAttributes {
                path: Some("/metrics".into()),
                verb: Some("get".into()),
            }),
            ..SubjectAccessReviewSpec::default()
        },
        ..SubjectAccessReview::default()
    };
    Api::<SubjectAccessReview>::all(client.clone())
        .create(&PostParams::default(), &review)
        .await
        .unwrap()
        .status
        .is_some_and(|status| status.allowed)
}

/// The chart's reader ClusterRole for release `release`, applied; its name.
async fn apply_reader_role(release: &str) -> String {
    let rendered = ferry_testenv::chart::render(
        release,
        release,
        &[
            "--set",
            "metrics.secure=true",
            "--show-only",
            "templates/metrics-reader.yaml",
        ],
    )
    .await
    .unwrap();
    ferry_testenv::chart::apply(&rendered).await.unwrap();
    rendered
        .lines()
        .find_map(|line| line.strip_prefix("  name: "))
        .unwrap()
        .trim()
        .to_string()
}

/// Binds `account` (in `namespace`) to `role`, labelled as the release's so that
/// `remove_release` deletes it.
async fn bind(client: &Client, namespace: &str, role: &str, account: &str) {
    let binding = serde_json::from_value(json!({
        "metadata": {"name": format!("{namespace}-{account}-reads-metrics"),
            "labels": {"app.kubernetes.io/instance": namespace}},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
    }))
    .unwrap();
    Api::<ClusterRoleBinding>::all(client.clone())
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
}

/// The chart's ServiceMonitor with `metrics.secure` (https, Prometheus's token, the CA Secret's
/// `ca.crt` and the Service's name), for Ferry's own CA and for cert-manager's, as the pinned
/// prometheus-operator's CRD takes it: a server-side dry run with strict field validation.
#[tokio::test]
async fn the_secure_service_monitor_is_one_prometheus_operator_takes() {
    let client = ferry_testenv::client().await.unwrap();
    ferry_testenv::prometheus_operator::install_crds(&client)
        .await
        .unwrap();
    let ns = ferry_testenv::TestNamespace::create(&client, "secure-monitor")
        .await
        .unwrap();
    for (certificates, ca_secret) in [("operator", "webhook-ca"), ("cert-manager", "webhook-tls")] {
        let values = format!(
            "metrics.secure=true,metrics.serviceMonitor.enabled=true,webhook.certificates={certificates}"
        );
        let rendered = ferry_testenv::chart::render(
            &ns.name,
            &ns.name,
            &["--set", &values, "--show-only", "templates/servicemonitor.yaml"],
        )
        .await
        .unwrap();
        let monitor = crate::network_policy::documents(&rendered).remove(0);
        let applied = crate::network_policy::dry_run_apply(&client, &monitor).await;
        let endpoint = &applied.data["spec"]["endpoints"][0];
        assert_eq!(endpoint["scheme"], "https", "{endpoint}");
        assert_eq!(
            endpoint["bearerTokenFile"],
            "/var/run/secrets/kubernetes.io/serviceaccount/token"
        );
        let fullname = format!("{}-ferry", ns.name);
        assert_eq!(
            endpoint["tlsConfig"]["serverName"],
            format!("{fullname}.{}.svc", ns.name)
        );
        assert_eq!(
            endpoint["tlsConfig"]["ca"]["secret"],
            json!({"name": format!("{fullname}-{ca_secret}"), "key": "ca.crt"})
        );
    }
    ns.cleanup().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secure_metrics_answer_only_a_token_allowed_to_get_them() {
    let client = ferry_testenv::client().await.unwrap();
    support::install_crd(&client).await;
    let ns = ferry_testenv::TestNamespace::create(&client, "secure-metrics")
        .await
        .unwrap();
    let identity = ferry_testenv::chart::install_identity_with(&ns.name, &["metrics.secure=true"])
        .await
        .unwrap();
    let operator_client = ferry_testenv::chart::client_as(&identity.user).await.unwrap();
    let role = apply_reader_role(&ns.name).await;
    let reader = account_token(&client, &ns.name, "reader").await;
    let stranger = account_token(&client, &ns.name, "stranger").await;
    bind(&client, &ns.name, &role, "reader").await;
    // Verdicts are remembered a minute: ask the operator only once RBAC has the binding.
    let reader_user = format!("system:serviceaccount:{}:reader", ns.name);
    ferry_testenv::wait_until("the reader's binding in effect", 30, || async {
        may_get_metrics(&client, &reader_user).await.then_some(())
    })
    .await
    .unwrap();
    let ca_secret = ns
        .api::<Secret>()
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|secret| secret.name_any())
        .find(|name| name.ends_with("-webhook-ca"))
        .expect("the chart's webhook CA Secret");

    let http_port = support::free_port();
    let secure_port = support::free_port();
    let settings = Settings {
        namespaces: vec![ns.name.clone()],
        http_addr: Some(([127, 0, 0, 1], http_port).into()),
        secure_metrics: Some(SecureMetrics {
            listen: ([127, 0, 0, 1], secure_port).into(),
            certificates: Certificates::SelfSigned,
            ca_secret: Some(SecretRef {
                namespace: ns.name.clone(),
                name: ca_secret.clone(),
            }),
            hosts: vec!["127.0.0.1".into()],
        }),
        ..Settings::default()
    };
    let operator = tokio::spawn(run(operator_client, settings));
    let plain = format!("http://127.0.0.1:{http_port}");
    ferry_testenv::wait_until("/readyz on the plain address", 60, || async {
        (get(&format!("{plain}/readyz"), None, None).await.0 == 200).then_some(())
    })
    .await
    .unwrap();
    assert_eq!(
        get(&format!("{plain}/metrics"), None, None).await.0,
        404,
        "no /metrics on the plain address"
    );

    // The certificate chains to the CA the operator keeps in the chart's Secret, for 127.0.0.1.
    let ca_pem = ns.api::<Secret>().get(&ca_secret).await.unwrap().data.unwrap()["ca.crt"]
        .0
        .clone();
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.crt");
    std::fs::write(&ca, ca_pem).unwrap();
    let url = format!("https://127.0.0.1:{secure_port}/metrics");

    let (code, body) = get(&url, Some(&ca), Some(&reader)).await;
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("ferry_build_info{"), "{body}");
    assert!(body.contains("\nprocess_resident_memory_bytes "), "{body}");
    let (code, body) = get(&url, Some(&ca), Some(&stranger)).await;
    assert_eq!(code, 403, "a token of a user without get /metrics: {body}");
    assert_eq!(get(&url, Some(&ca), None).await.0, 401, "no token");
    assert_eq!(
        get(&url, Some(&ca), Some("not-a-token")).await.0,
        401,
        "a made-up token"
    );
    // The reader's verdict is remembered: it reads again (and the stranger stays refused).
    assert_eq!(get(&url, Some(&ca), Some(&reader)).await.0, 200);
    assert_eq!(get(&url, Some(&ca), Some(&stranger)).await.0, 403);

    operator.abort();
    ferry_testenv::chart::remove_identity(&identity).await.unwrap();
    ns.cleanup().await.unwrap();
}
