//! The leader's probe of Ferry's own validating webhook (`ferry_engine::webhook_probe`): a dry-run
//! VolumeResize for a missing StatefulSet, on the engine's schedule; a change of what it finds is
//! said by an Event on the operator (its pod, or outside a cluster the webhook configuration) and by
//! `ferry_webhook_reachable`. The webhooks fail open, so without it an API server that cannot reach
//! them would be silent.

use crate::events::{self, Notice};
use crate::metrics::{Metrics, WebhookLabels};
use ferry_api::VolumeResize;
use ferry_engine::webhook_probe::{
    self, PROBE_STATEFUL_SET, ProbeAnswer, ProbeSchedule, ProbeState, Reach, Reported,
};
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::{Api, PostParams};
use kube::runtime::events::{Recorder, Reporter};
use kube::{Client, Resource};
use std::sync::Arc;

/// The webhook the probe proves (the validating one for VolumeResizes).
const PROBED_WEBHOOK: &str = "volumeresizes.ferry.dev";

/// Where and when the leader probes, and what its Events regard.
#[derive(Debug, Clone)]
pub struct ProbeSettings {
    /// A namespace the webhooks cover and the operator may create VolumeResizes in.
    pub namespace: String,
    pub schedule: ProbeSchedule,
    /// The operator's own pod (`POD_NAMESPACE`, `POD_NAME`, `POD_UID`); `None` outside a cluster,
    /// where the Events regard the validating webhook configuration.
    pub pod: Option<ObjectReference>,
}

/// Sends one probe to the API server in `namespace`.
pub async fn send(client: &Client, namespace: &str, stateful_set: &str) -> ProbeAnswer {
    let resizes: Api<VolumeResize> = Api::namespaced(client.clone(), namespace);
    let params = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    match resizes
        .create(&params, &webhook_probe::probe_resize(namespace, stateful_set))
        .await
    {
        Ok(_) => ProbeAnswer::Accepted,
        Err(kube::Error::Api(status)) => ProbeAnswer::Refused(status.message),
        Err(error) => ProbeAnswer::Failed(error.to_string()),
    }
}

/// Probes until dropped (the leader's task). `configuration` names the validating webhook
/// configuration the Events regard when the operator has no pod.
pub async fn keep_probing(
    client: Client,
    settings: ProbeSettings,
    configuration: String,
    metrics: Arc<Metrics>,
    identity: String,
) {
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: "ferry".into(),
            instance: Some(identity),
        },
    );
    let mut state = ProbeState::default();
    let mut next = settings.schedule.first;
    loop {
        tokio::time::sleep(next).await;
        let reach = webhook_probe::reach(
            &send(&client, &settings.namespace, PROBE_STATEFUL_SET).await,
            PROBE_STATEFUL_SET,
        );
        match &reach {
            Reach::Unknown(answer) => {
                tracing::warn!(namespace = %settings.namespace, %answer, "the webhook probe tells nothing")
            }
            _ => tracing::debug!(namespace = %settings.namespace, ?reach, "webhook probed"),
        }
        let step = webhook_probe::step(state, &reach, &settings.schedule);
        if let Some(reported) = step.report {
            let regarding = match &settings.pod {
                Some(pod) => pod.clone(),
                None => configuration_reference(&client, &configuration).await,
            };
            report(&recorder, &metrics, reported, &settings.namespace, &regarding).await;
        }
        (state, next) = (step.state, step.next);
    }
}

async fn report(
    recorder: &Recorder,
    metrics: &Metrics,
    reported: Reported,
    namespace: &str,
    regarding: &ObjectReference,
) {
    let answered = reported == Reported::Answered;
    metrics
        .webhook_reachable
        .get_or_create(&WebhookLabels {
            webhook: PROBED_WEBHOOK.to_string(),
        })
        .set(i64::from(answered));
    let notice = match reported {
        Reported::Answered => {
            tracing::info!(namespace, "the API server calls Ferry's validating webhook");
            Notice {
                warning: false,
                reason: "WebhookAnswered",
                action: "ProbeWebhook",
                note: format!(
                    "the API server calls Ferry's validating webhook: a dry-run VolumeResize in namespace {namespace} for the missing StatefulSet {PROBE_STATEFUL_SET:?} was refused by it"
                ),
            }
        }
        Reported::NotCalled | Reported::Nothing => {
            let note = format!(
                "the API server does not call Ferry's webhooks: it accepted dry-run VolumeResizes in namespace {namespace} for the missing StatefulSet {PROBE_STATEFUL_SET:?}. They fail open, so claim template edits are not turned into resizes and invalid VolumeResizes are not refused at admission. Can the API server reach the operator's pods on the webhook port (firewall rules of a managed control plane, a CNI it cannot route into: the chart's webhook.hostNetwork)? docs/install.md, \"Webhooks on managed clusters\""
            );
            tracing::warn!(namespace, "{note}");
            Notice {
                warning: true,
                reason: "WebhookNotCalled",
                action: "ProbeWebhook",
                note,
            }
        }
    };
    events::publish(recorder, &notice, std::slice::from_ref(regarding)).await;
}

/// The validating webhook configuration as an Event's subject, with its UID when it can be read
/// (`kubectl describe` matches Events by UID).
async fn configuration_reference(client: &Client, name: &str) -> ObjectReference {
    let configurations: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    match configurations.get_opt(name).await {
        Ok(Some(configuration)) => configuration.object_ref(&()),
        _ => ObjectReference {
            api_version: Some("admissionregistration.k8s.io/v1".into()),
            kind: Some("ValidatingWebhookConfiguration".into()),
            name: Some(name.to_string()),
            ..ObjectReference::default()
        },
    }
}
