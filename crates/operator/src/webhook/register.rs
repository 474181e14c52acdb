//! The webhook configurations that make the API server call Ferry, applied (server-side) on every
//! start so they always point at this operator with its current CA.
//!
//! Both are `failurePolicy: Ignore` with a 5 s timeout: Ferry being down must never block
//! StatefulSet or VolumeResize writes. The StatefulSet webhook is only called when the update
//! changes `volumeClaimTemplates` (a `matchCondition`), so every other update never reaches it.
//! When Ferry is down, such an edit fails as it does without Ferry (the API server's
//! "updates to statefulset spec for fields other than ... are forbidden"), and a VolumeResize
//! with a wrong name is still refused by the prechecks, only later.

use crate::Error;
use base64::Engine;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};
use serde_json::{Value, json};

use super::server::{
    MUTATE_STATEFUL_SETS, VALIDATE_CONFIG_DELETES, VALIDATE_EXTENDED_STATEFUL_SETS,
    VALIDATE_STATEFUL_SET_CREATES, VALIDATE_VOLUME_RESIZES,
};
use crate::extended::config::LABEL_REFERENCED;

/// Where the API server reaches the webhook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A URL such as `https://127.0.0.1:9443` (an operator running outside the cluster).
    Url(String),
    /// A Service in the cluster (the chart's way).
    Service {
        namespace: String,
        name: String,
        port: i32,
    },
}

impl Endpoint {
    /// The names the serving certificate must carry.
    pub fn hosts(&self) -> Vec<String> {
        match self {
            Endpoint::Url(url) => {
                let rest = url.strip_prefix("https://").unwrap_or(url);
                let authority = rest.split('/').next().unwrap_or(rest);
                let host = if let Some(bracketed) = authority.strip_prefix('[') {
                    bracketed.split(']').next().unwrap_or(bracketed)
                } else {
                    authority.rsplit_once(':').map_or(authority, |(host, _)| host)
                };
                vec![host.to_string()]
            }
            Endpoint::Service { namespace, name, .. } => vec![
                format!("{name}.{namespace}.svc"),
                format!("{name}.{namespace}.svc.cluster.local"),
            ],
        }
    }

    fn client_config(&self, path: &str, ca_bundle: Option<&str>) -> Value {
        let mut config = match self {
            Endpoint::Url(url) => json!({"url": format!("{}{path}", url.trim_end_matches('/'))}),
            Endpoint::Service {
                namespace,
                name,
                port,
            } => json!({
                "service": {"namespace": namespace, "name": name, "path": path, "port": port},
            }),
        };
        if let Some(ca) = ca_bundle {
            config["caBundle"] = base64::engine::general_purpose::STANDARD
                .encode(ca.as_bytes())
                .into();
        }
        config
    }
}

/// The configurations' name: `ferry`, or `ferry.<namespace>` for an operator watching one
/// namespace (so operators of different namespaces do not overwrite each other).
pub fn configuration_name(watched: &[String]) -> String {
    std::iter::once("ferry")
        .chain(watched.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(".")
}

fn namespace_selector(watched: &[String]) -> Value {
    if watched.is_empty() {
        return json!({});
    }
    json!({"matchExpressions": [{
        "key": "kubernetes.io/metadata.name", "operator": "In", "values": watched,
    }]})
}

/// The mutating configuration for StatefulSet updates that change volume claim templates.
/// With `triggers` off it holds no webhook: nothing of Ferry sits in the path of a StatefulSet edit.
pub fn mutating(endpoint: &Endpoint, ca_bundle: Option<&str>, watched: &[String], triggers: bool) -> Value {
    let mut configuration = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": configuration_name(watched), "labels": {"app.kubernetes.io/managed-by": "ferry"}},
        "webhooks": [{
            "name": "statefulsets.ferry.dev",
            "admissionReviewVersions": ["v1"],
            "clientConfig": endpoint.client_config(MUTATE_STATEFUL_SETS, ca_bundle),
            "rules": [{
                "apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["UPDATE"],
                "resources": ["statefulsets"], "scope": "Namespaced",
            }],
            "matchPolicy": "Equivalent",
            "namespaceSelector": namespace_selector(watched),
            "matchConditions": [{
                "name": "volume-claim-templates-change",
                "expression": "has(object.spec.volumeClaimTemplates) && has(oldObject.spec.volumeClaimTemplates) && object.spec.volumeClaimTemplates != oldObject.spec.volumeClaimTemplates",
            }],
            "failurePolicy": "Ignore",
            "sideEffects": "None",
            "timeoutSeconds": 5,
            "reinvocationPolicy": "Never",
        }],
    });
    if !triggers {
        configuration["webhooks"] = json!([]);
    }
    configuration
}

/// The validating configuration for new VolumeResizes, and for StatefulSet creates (refused in
/// the window where Ferry replaces a StatefulSet of that name).
pub fn validating(endpoint: &Endpoint, ca_bundle: Option<&str>, watched: &[String]) -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": configuration_name(watched), "labels": {"app.kubernetes.io/managed-by": "ferry"}},
        "webhooks": [{
            "name": "volumeresizes.ferry.dev",
            "admissionReviewVersions": ["v1"],
            "clientConfig": endpoint.client_config(VALIDATE_VOLUME_RESIZES, ca_bundle),
            "rules": [{
                "apiGroups": ["ferry.dev"], "apiVersions": ["v1alpha1"], "operations": ["CREATE"],
                "resources": ["volumeresizes"], "scope": "Namespaced",
            }],
            "matchPolicy": "Equivalent",
            "namespaceSelector": namespace_selector(watched),
            "failurePolicy": "Ignore",
            "sideEffects": "None",
            "timeoutSeconds": 5,
        }, {
            "name": "statefulset-creates.ferry.dev",
            "admissionReviewVersions": ["v1"],
            "clientConfig": endpoint.client_config(VALIDATE_STATEFUL_SET_CREATES, ca_bundle),
            "rules": [{
                "apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE"],
                "resources": ["statefulsets"], "scope": "Namespaced",
            }],
            "matchPolicy": "Equivalent",
            "namespaceSelector": namespace_selector(watched),
            "failurePolicy": "Ignore",
            "sideEffects": "None",
            "timeoutSeconds": 5,
        }, {
            "name": "config-deletes.ferry.dev",
            "admissionReviewVersions": ["v1"],
            "clientConfig": endpoint.client_config(VALIDATE_CONFIG_DELETES, ca_bundle),
            "rules": [{
                "apiGroups": [""], "apiVersions": ["v1"], "operations": ["DELETE"],
                "resources": ["configmaps", "secrets"], "scope": "Namespaced",
            }],
            "matchPolicy": "Equivalent",
            "namespaceSelector": namespace_selector(watched),
            // Only what Ferry marked as referenced reaches the webhook.
            "objectSelector": {"matchLabels": {LABEL_REFERENCED: "true"}},
            "failurePolicy": "Ignore",
            "sideEffects": "None",
            "timeoutSeconds": 5,
        }, {
            "name": "extendedstatefulsets.ferry.dev",
            "admissionReviewVersions": ["v1"],
            "clientConfig": endpoint.client_config(VALIDATE_EXTENDED_STATEFUL_SETS, ca_bundle),
            "rules": [{
                "apiGroups": ["ferry.dev"], "apiVersions": ["v1alpha1"], "operations": ["CREATE", "UPDATE"],
                "resources": ["extendedstatefulsets"], "scope": "Namespaced",
            }],
            "matchPolicy": "Equivalent",
            "namespaceSelector": namespace_selector(watched),
            "matchConditions": [{
                "name": "template-written",
                "expression": TEMPLATE_WRITTEN,
            }],
            "failurePolicy": "Ignore",
            "sideEffects": "None",
            "timeoutSeconds": 5,
        }],
    })
}

/// Applies both configurations. `ca_bundle` is `None` when another party (cert-manager's CA
/// injector) keeps it.
pub async fn register(
    client: &Client,
    endpoint: &Endpoint,
    ca_bundle: Option<&str>,
    watched: &[String],
    triggers: bool,
) -> Result<(), Error> {
    let name = configuration_name(watched);
    let params = PatchParams {
        force: true,
        ..PatchParams::apply(ferry_api::names::FIELD_MANAGER)
    };
    let mutating: MutatingWebhookConfiguration =
        serde_json::from_value(mutating(endpoint, ca_bundle, watched, triggers)).map_err(|source| {
            Error::Serialize {
                what: "MutatingWebhookConfiguration",
                source,
            }
        })?;
    Api::<MutatingWebhookConfiguration>::all(client.clone())
        .patch(&name, &params, &Patch::Apply(&mutating))
        .await?;
    let validating: ValidatingWebhookConfiguration =
        serde_json::from_value(validating(endpoint, ca_bundle, watched)).map_err(|source| {
            Error::Serialize {
                what: "ValidatingWebhookConfiguration",
                source,
            }
        })?;
    Api::<ValidatingWebhookConfiguration>::all(client.clone())
        .patch(&name, &params, &Patch::Apply(&validating))
        .await?;
    Ok(())
}

/// The webhooks each configuration holds, by name (a chart's configurations must hold the same).
const MUTATING_WEBHOOKS: [&str; 1] = ["statefulsets.ferry.dev"];
const VALIDATING_WEBHOOKS: [&str; 4] = [
    "volumeresizes.ferry.dev",
    "statefulset-creates.ferry.dev",
    "config-deletes.ferry.dev",
    "extendedstatefulsets.ferry.dev",
];

/// When an ExtendedStatefulSet's template is dry-run: at create, and at an update that changes its
/// spec unless it is being deleted (a finalizer's removal must never wait on a check).
const TEMPLATE_WRITTEN: &str = "request.operation == 'CREATE' || (object.spec != oldObject.spec && !has(object.metadata.deletionTimestamp))";

/// Who owns the `caBundle` Ferry injects into an installer's configurations.
pub const CA_INJECTOR_FIELD_MANAGER: &str = "ferry-ca-injector";

/// Keeps only the `caBundle` of configurations an installer made (the Helm chart), as the field
/// manager `ferry`: every other field stays the installer's.
/// With `triggers` off the installer's mutating configuration holds no webhook and is left alone.
pub async fn inject_ca_bundle(
    client: &Client,
    name: &str,
    ca_bundle: &str,
    triggers: bool,
) -> Result<(), Error> {
    let encoded = base64::engine::general_purpose::STANDARD.encode(ca_bundle.as_bytes());
    // A field manager of its own: applying this partial object as the manager that made the whole
    // configuration (`ferry run` without --webhook-configuration) would drop every other field.
    let params = PatchParams {
        force: true,
        ..PatchParams::apply(CA_INJECTOR_FIELD_MANAGER)
    };
    let mutating_api = Api::<MutatingWebhookConfiguration>::all(client.clone());
    let validating_api = Api::<ValidatingWebhookConfiguration>::all(client.clone());
    let (Some(mutating_live), Some(validating_live)) = (
        mutating_api.get_opt(name).await?,
        validating_api.get_opt(name).await?,
    ) else {
        return Err(Error::Webhook(format!(
            "the webhook configurations {name} do not exist: install them with the chart, or run without --webhook-configuration to let Ferry register its own"
        )));
    };
    // Only the webhooks the installer registered (the chart leaves out those of switched-off
    // features): an applied entry of a webhook it has none of would be a webhook of its own,
    // with nothing but a caBundle, which the API server refuses.
    let hooks = |names: &[&str], live: Vec<String>| -> Value {
        names
            .iter()
            .filter(|hook| live.iter().any(|registered| registered == *hook))
            .map(|hook| json!({"name": hook, "clientConfig": {"caBundle": encoded}}))
            .collect()
    };
    let mutating = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": hooks(&MUTATING_WEBHOOKS, mutating_live.webhooks.into_iter().flatten().map(|w| w.name).collect()),
    });
    if triggers {
        mutating_api
            .patch(name, &params, &Patch::Apply(&mutating))
            .await?;
    }
    let validating = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": hooks(&VALIDATING_WEBHOOKS, validating_live.webhooks.into_iter().flatten().map(|w| w.name).collect()),
    });
    validating_api
        .patch(name, &params, &Patch::Apply(&validating))
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_certificate_names_the_host_the_api_server_dials() {
        assert_eq!(
            Endpoint::Url("https://127.0.0.1:9443".into()).hosts(),
            ["127.0.0.1"]
        );
        assert_eq!(Endpoint::Url("https://[::1]:9443/".into()).hosts(), ["::1"]);
        assert_eq!(
            Endpoint::Url("https://ferry.example".into()).hosts(),
            ["ferry.example"]
        );
        let service = Endpoint::Service {
            namespace: "ferry-system".into(),
            name: "ferry".into(),
            port: 443,
        };
        assert_eq!(service.hosts()[0], "ferry.ferry-system.svc");
    }

    #[test]
    fn configurations_parse_as_the_api_types_and_never_block_on_failure() {
        let endpoint = Endpoint::Url("https://127.0.0.1:9443/".into());
        let mutating: MutatingWebhookConfiguration =
            serde_json::from_value(mutating(&endpoint, Some("pem"), &["apps".to_string()], true)).unwrap();
        let hook = &mutating.webhooks.unwrap()[0];
        assert_eq!(hook.failure_policy.as_deref(), Some("Ignore"));
        assert_eq!(hook.side_effects, "None");
        assert_eq!(
            hook.client_config.url.as_deref(),
            Some("https://127.0.0.1:9443/mutate/statefulsets")
        );
        assert_eq!(hook.client_config.ca_bundle.as_ref().unwrap().0, b"pem");
        assert_eq!(mutating.metadata.name.as_deref(), Some("ferry.apps"));
        let validating: ValidatingWebhookConfiguration =
            serde_json::from_value(validating(&endpoint, None, &[])).unwrap();
        let hook = &validating.webhooks.unwrap()[0];
        assert_eq!(hook.failure_policy.as_deref(), Some("Ignore"));
        assert!(hook.client_config.ca_bundle.is_none());
        // Triggers switched off: the configuration holds no webhook at all.
        let off: MutatingWebhookConfiguration =
            serde_json::from_value(super::mutating(&endpoint, Some("pem"), &[], false)).unwrap();
        assert_eq!(off.webhooks, Some(vec![]));
    }
}
