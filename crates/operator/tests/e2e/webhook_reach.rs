//! The leader proves the API server calls its validating webhook (a dry-run VolumeResize for a
//! missing StatefulSet, `ferry_engine::webhook_probe`): the webhooks fail open, so a path the API
//! server loses must be said, not silent. Here the path is cut in the webhook configuration itself
//! (its URL pointed at a port that refuses, as a firewall of a managed control plane would), then
//! mended.

use crate::support::{Harness, OperatorOptions};
use ferry_engine::webhook_probe::{PROBE_STATEFUL_SET, ProbeSchedule, probe_resize};
use ferry_testenv::wait_until;
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;
use std::time::Duration;

const GAUGE: &str = "ferry_webhook_reachable{webhook=\"volumeresizes.ferry.dev\"}";

async fn wait_reported(harness: &Harness, value: u8, what: &str) {
    let expected = format!("{GAUGE} {value}");
    wait_until(what, 60, || async {
        harness
            .metrics()
            .await
            .lines()
            .any(|line| line == expected)
            .then_some(())
    })
    .await
    .unwrap();
}

/// Points the validating webhook for VolumeResizes at `url`.
async fn set_url(harness: &Harness, url: &str) {
    let configurations: Api<ValidatingWebhookConfiguration> = Api::all(harness.client.clone());
    let name = ferry_operator::webhook::register::configuration_name(std::slice::from_ref(&harness.ns.name));
    let live = configurations.get(&name).await.unwrap();
    let index = live
        .webhooks
        .unwrap_or_default()
        .iter()
        .position(|hook| hook.name == "volumeresizes.ferry.dev")
        .expect("the VolumeResize webhook is registered");
    let patch =
        json!([{"op": "replace", "path": format!("/webhooks/{index}/clientConfig/url"), "value": url}]);
    configurations
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::<()>::Json(serde_json::from_value(patch).unwrap()),
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn a_webhook_the_api_server_stops_calling_is_reported_and_so_is_its_return() {
    let schedule = ProbeSchedule {
        first: Duration::from_millis(500),
        while_answered: Duration::from_millis(500),
        while_not: Duration::from_millis(500),
        not_called_to_report: 2,
    };
    let harness = Harness::start_with_webhook_and(
        "reach",
        OperatorOptions {
            webhook_probe: Some(schedule),
            ..OperatorOptions::default()
        },
    )
    .await;
    wait_reported(&harness, 1, "the webhook reported answering").await;

    let served = format!("{}/validate/volumeresizes", harness.webhook_url.clone().unwrap());
    // Port 9 on loopback refuses at once; the webhook fails open.
    set_url(&harness, "https://127.0.0.1:9/validate/volumeresizes").await;
    let resizes: Api<ferry_api::VolumeResize> = harness.ns.api();
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let probe = probe_resize(&harness.ns.name, PROBE_STATEFUL_SET);
    wait_until("the API server to stop calling the webhook", 30, || async {
        resizes.create(&dry_run, &probe).await.ok().map(drop)
    })
    .await
    .unwrap();
    wait_reported(&harness, 0, "the webhook reported not called").await;

    set_url(&harness, &served).await;
    wait_reported(&harness, 1, "the webhook reported answering again").await;
    let refusal = resizes.create(&dry_run, &probe).await.unwrap_err().to_string();
    assert!(refusal.contains(PROBE_STATEFUL_SET), "{refusal}");
    harness.finish().await;
}
