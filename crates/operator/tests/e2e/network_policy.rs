//! The chart's optional NetworkPolicy (`networkPolicy.enabled`) and its release namespace, as the
//! real API server takes them: rendered by helm and applied server-side with a dry run. That the
//! policy is *enforced* is not shown: the test bed's network enforces no NetworkPolicy.

use k8s_openapi::api::core::v1::Pod;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use kube::discovery::Scope;
use kube::{Api, Client, ResourceExt};
use serde::Deserialize;

pub(crate) fn documents(yaml: &str) -> Vec<DynamicObject> {
    yaml_serde::Deserializer::from_str(yaml)
        .map(|document| yaml_serde::Value::deserialize(document).unwrap())
        .filter(|value| !value.is_null())
        .map(|value| yaml_serde::from_value(value).unwrap())
        .collect()
}

/// Server-side apply with `dryRun=All` and strict field validation: the API server validates (a
/// field it does not know fails it) and admits the object, and stores nothing.
pub(crate) async fn dry_run_apply(client: &Client, object: &DynamicObject) -> DynamicObject {
    let types = object.types.clone().unwrap();
    let kind = GroupVersionKind::try_from(&types).unwrap();
    let (resource, capabilities): (ApiResource, _) =
        kube::discovery::pinned_kind(client, &kind).await.unwrap();
    let api: Api<DynamicObject> = match (capabilities.scope, object.namespace()) {
        (Scope::Namespaced, Some(namespace)) => Api::namespaced_with(client.clone(), &namespace, &resource),
        _ => Api::all_with(client.clone(), &resource),
    };
    api.patch(
        &object.name_any(),
        &PatchParams::apply("ferry-tests").dry_run().validation_strict(),
        &Patch::Apply(object),
    )
    .await
    .unwrap_or_else(|error| panic!("{} {}: {error}", types.kind, object.name_any()))
}

#[tokio::test]
async fn the_network_policy_and_the_restricted_namespace_are_accepted_by_the_api_server() {
    let client = ferry_testenv::client().await.unwrap();
    let ns = ferry_testenv::TestNamespace::create(&client, "netpol")
        .await
        .unwrap();
    let rendered = ferry_testenv::chart::render(
        &ns.name,
        &ns.name,
        &[
            "--set",
            "networkPolicy.enabled=true,metrics.secure=true,namespace.create=true",
            "--set",
            "networkPolicy.metrics.from[0].namespaceSelector.matchLabels.kubernetes\\.io/metadata\\.name=monitoring",
            "--set",
            "networkPolicy.apiServer.cidrs[0]=10.0.0.10/32",
            "--set",
            "networkPolicy.extraEgress[0].to[0].ipBlock.cidr=10.1.0.0/16",
            "--set",
            "networkPolicy.extraEgress[0].ports[0].port=9090",
            "--show-only",
            "templates/networkpolicy.yaml",
            "--show-only",
            "templates/namespace.yaml",
            "--show-only",
            "templates/deployment.yaml",
        ],
    )
    .await
    .unwrap();
    let objects = documents(&rendered);
    let of_kind = |kind: &str| -> &DynamicObject {
        let found: Vec<&DynamicObject> = objects
            .iter()
            .filter(|object| object.types.as_ref().is_some_and(|types| types.kind == kind))
            .collect();
        assert_eq!(found.len(), 1, "one {kind} in {rendered}");
        found[0]
    };

    let policy = dry_run_apply(&client, of_kind("NetworkPolicy")).await;
    let spec = &policy.data["spec"];
    assert_eq!(spec["policyTypes"], serde_json::json!(["Ingress", "Egress"]));
    let ingress_ports: Vec<i64> = spec["ingress"]
        .as_array()
        .unwrap()
        .iter()
        .map(|rule| rule["ports"][0]["port"].as_i64().unwrap())
        .collect();
    // The webhook, the secure /metrics, /readyz for helm test.
    assert_eq!(ingress_ports, [9443, 8443, 8080], "{spec}");
    assert_eq!(
        spec["ingress"][1]["from"][0]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"],
        "monitoring"
    );
    assert_eq!(spec["egress"][0]["to"][0]["ipBlock"]["cidr"], "10.0.0.10/32");
    assert_eq!(spec["egress"][2]["ports"][0]["port"], 9090);

    // The release namespace enforces Pod Security `restricted` ...
    let namespace = dry_run_apply(&client, of_kind("Namespace")).await;
    let labels = namespace.labels();
    assert_eq!(
        labels
            .get("pod-security.kubernetes.io/enforce")
            .map(String::as_str),
        Some("restricted"),
        "{labels:?}"
    );
    // ... and admits the operator's pod: its template, created (dry run) in a namespace that
    // enforces it.
    let restricted =
        serde_json::json!({"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "restricted"}}});
    Api::<k8s_openapi::api::core::v1::Namespace>::all(client.clone())
        .patch(&ns.name, &PatchParams::default(), &Patch::Merge(&restricted))
        .await
        .unwrap();
    let template = &of_kind("Deployment").data["spec"]["template"];
    // (The ServiceAccount admission plugin refuses a pod whose account does not exist.)
    let account = template["spec"]["serviceAccountName"].as_str().unwrap();
    let account = serde_json::from_value(serde_json::json!({"metadata": {"name": account}})).unwrap();
    ns.api::<k8s_openapi::api::core::v1::ServiceAccount>()
        .create(&PostParams::default(), &account)
        .await
        .unwrap();
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "operator", "labels": template["metadata"]["labels"]},
        "spec": template["spec"],
    }))
    .unwrap();
    ns.api::<Pod>()
        .create(
            &PostParams {
                dry_run: true,
                ..PostParams::default()
            },
            &pod,
        )
        .await
        .unwrap_or_else(|error| panic!("the operator's pod under restricted: {error}"));
    ns.cleanup().await.unwrap();
}
