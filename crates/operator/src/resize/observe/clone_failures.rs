//! For each clone a run waits on (its claim Pending, made from the old one), the provisioner's
//! newest `ProvisioningFailed` Event on that claim: a clone the driver refuses (no capability, a
//! size or class it cannot clone to) is then given up at once for the mover, instead of after
//! `CLONE_BIND_SECONDS`. Read only while such a clone is pending, so other runs ask nothing more.

use crate::resize::apply::objects::uid_suffix;
use ferry_api::VolumeResize;
use ferry_engine::resize::Observed;
use ferry_engine::resize::copy::temp_claim_name;
use k8s_openapi::api::core::v1::Event;
use kube::Api;
use kube::api::ListParams;

pub async fn read(client: &kube::Client, resize: &VolumeResize, namespace: &str, observed: &mut Observed) {
    let suffix = uid_suffix(resize);
    let plan = resize
        .status
        .as_ref()
        .map(|s| s.plan.as_slice())
        .unwrap_or_default();
    let waiting: Vec<(String, String)> = plan
        .iter()
        .filter(|row| row.cloned == Some(true))
        .map(|row| temp_claim_name(row, &suffix))
        .filter_map(|name| {
            let claim = observed.claims.get(&name)?;
            (!claim.bound && !claim.deleting).then(|| (name.clone(), claim.uid.clone()))
        })
        .collect();
    if waiting.is_empty() {
        return;
    }
    let events = Api::<Event>::namespaced(client.clone(), namespace);
    let found = futures::future::join_all(
        waiting
            .iter()
            .map(|(claim, uid)| newest_failure(&events, claim, uid)),
    )
    .await;
    for ((claim, _), failure) in waiting.into_iter().zip(found) {
        if let Some(view) = observed.claims.get_mut(&claim) {
            view.provisioning_failed = failure;
        }
    }
}

/// The message of the newest `ProvisioningFailed` Event on this claim (this UID: never one of an
/// earlier claim of the same name). A list that fails (an installation whose RBAC predates this
/// read) finds none: the clone is then given up after its timeout, as before.
async fn newest_failure(events: &Api<Event>, claim: &str, uid: &str) -> Option<String> {
    let selector = format!(
        "involvedObject.kind=PersistentVolumeClaim,involvedObject.name={claim},involvedObject.uid={uid},reason=ProvisioningFailed"
    );
    let listed = match events.list(&ListParams::default().fields(&selector)).await {
        Ok(listed) => listed,
        Err(error) => {
            tracing::debug!(%claim, %error, "cannot read the clone's provisioning Events");
            return None;
        }
    };
    listed
        .items
        .into_iter()
        .max_by_key(|event| {
            event
                .last_timestamp
                .as_ref()
                .map(|t| t.0)
                .or_else(|| event.event_time.as_ref().map(|t| t.0))
        })
        .and_then(|event| event.message)
}
