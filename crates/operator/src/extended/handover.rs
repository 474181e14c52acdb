//! Blue/green: one write of a replica's move between versions (`ferry_engine::extended::handover`),
//! with the resize wing's guards: a UID precondition on every volume and claim it touches, a
//! claim already made or already gone taken as done.

use crate::Error;
use crate::resize::execute::{delete_if_same, ignore_conflict};
use crate::resize::objects::{nudge_patch, reclaim_policy_patch, reserve_volume_patch};
use crate::writes::{self, with_uid_precondition};
use ferry_engine::extended::handover::HandoverAction;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use kube::api::Patch;
use kube::{Api, Client};

pub async fn carry_out(client: &Client, namespace: &str, action: &HandoverAction) -> Result<(), Error> {
    let volumes = Api::<PersistentVolume>::all(client.clone());
    let claims = Api::<PersistentVolumeClaim>::namespaced(client.clone(), namespace);
    match action {
        HandoverAction::SetReclaimPolicy { volume, uid, policy } => {
            let patch = with_uid_precondition(reclaim_policy_patch(policy), uid.as_deref());
            volumes
                .patch(volume, &writes::patch(), &Patch::Merge(patch))
                .await?;
        }
        HandoverAction::DeleteClaim { claim, uid } => {
            delete_if_same(&claims, claim, Some(uid.clone())).await?;
        }
        HandoverAction::ReserveVolume { volume, uid, claim } => {
            let patch = with_uid_precondition(reserve_volume_patch(namespace, claim), uid.as_deref());
            volumes
                .patch(volume, &writes::patch(), &Patch::Merge(patch))
                .await?;
        }
        HandoverAction::CreateClaim { claim } => {
            ignore_conflict(claims.create(&writes::create(), claim).await)?;
        }
        HandoverAction::NudgeClaim { claim, uid } => {
            let patch = with_uid_precondition(nudge_patch(), Some(uid.as_str()));
            claims
                .patch(claim, &writes::patch(), &Patch::Merge(&patch))
                .await?;
        }
    }
    Ok(())
}
