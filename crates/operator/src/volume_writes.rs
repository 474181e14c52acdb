//! The guarded writes that hand a volume between claims by PV re-binding
//! ([`ferry_engine::volume_writes::VolumeWrite`]), for a resize's swap and a blue/green move alike:
//! each only on the object of the UID its plan recorded, a claim already gone taken as done.

use crate::Error;
use crate::writes::{delete_if_same, with_uid_precondition};
use ferry_api::names::ANNOTATION_BIND_NUDGE;
use ferry_engine::volume_writes::VolumeWrite;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use kube::api::Patch;
use kube::{Api, Client};
use serde_json::json;

pub async fn carry_out(client: &Client, namespace: &str, write: &VolumeWrite) -> Result<(), Error> {
    match write {
        VolumeWrite::SetReclaimPolicy { volume, uid, policy } => {
            patch_volume(client, volume, uid.as_deref(), reclaim_policy_patch(policy)).await
        }
        VolumeWrite::DeleteClaim { claim, uid } => {
            let claims = Api::<PersistentVolumeClaim>::namespaced(client.clone(), namespace);
            delete_if_same(&claims, claim, Some(uid.clone())).await
        }
        VolumeWrite::ReserveVolume { volume, uid, claim } => {
            let patch = reserve_volume_patch(namespace, claim);
            patch_volume(client, volume, uid.as_deref(), patch).await
        }
        VolumeWrite::NudgeClaim { claim, uid } => {
            // The UID in the patch makes it fail rather than touch a claim of the same name.
            let patch = with_uid_precondition(nudge_patch(), Some(uid));
            Api::<PersistentVolumeClaim>::namespaced(client.clone(), namespace)
                .patch(claim, &crate::writes::patch(), &Patch::Merge(&patch))
                .await?;
            Ok(())
        }
    }
}

/// Merge-patches a volume, only while it still has `uid`.
async fn patch_volume(
    client: &Client,
    volume: &str,
    uid: Option<&str>,
    patch: serde_json::Value,
) -> Result<(), Error> {
    let patch = with_uid_precondition(patch, uid);
    Api::<PersistentVolume>::all(client.clone())
        .patch(volume, &crate::writes::patch(), &Patch::Merge(patch))
        .await?;
    Ok(())
}

fn reclaim_policy_patch(policy: &str) -> serde_json::Value {
    json!({"spec": {"persistentVolumeReclaimPolicy": policy}})
}

/// Reserves a volume for claim `claim` of `namespace` by name; the `null`s clear the old claim's
/// UID and resourceVersion, so any claim of that name may bind it.
fn reserve_volume_patch(namespace: &str, claim: &str) -> serde_json::Value {
    json!({"spec": {"claimRef": {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "namespace": namespace, "name": claim, "uid": null, "resourceVersion": null,
    }}})
}

/// An annotation whose change makes the PV controller look at a claim again.
fn nudge_patch() -> serde_json::Value {
    json!({"metadata": {"annotations": {ANNOTATION_BIND_NUDGE: "true"}}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_patches_are_the_merge_patches_ferry_always_sent() {
        assert_eq!(
            reclaim_policy_patch("Retain"),
            json!({"spec": {"persistentVolumeReclaimPolicy": "Retain"}})
        );
        assert_eq!(
            reserve_volume_patch("ns", "data-db-0"),
            json!({"spec": {"claimRef": {
                "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "namespace": "ns", "name": "data-db-0", "uid": null, "resourceVersion": null,
            }}})
        );
        assert_eq!(
            nudge_patch(),
            json!({"metadata": {"annotations": {"ferry.dev/bind-nudge": "true"}}})
        );
    }
}
