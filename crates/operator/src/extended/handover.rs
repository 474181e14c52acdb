//! Blue/green: one write of a replica's move between versions (`ferry_engine::extended::handover`),
//! through the resize wing's guarded writes: a UID precondition on every volume and claim it
//! touches, a claim already made or already gone taken as done.

use crate::Error;
use crate::resize::execute::{
    delete_if_same, ignore_conflict, nudge_claim, reserve_volume, set_reclaim_policy,
};
use crate::writes;
use ferry_engine::extended::handover::HandoverAction;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kube::{Api, Client};

pub async fn carry_out(client: &Client, namespace: &str, action: &HandoverAction) -> Result<(), Error> {
    let claims = Api::<PersistentVolumeClaim>::namespaced(client.clone(), namespace);
    match action {
        HandoverAction::SetReclaimPolicy { volume, uid, policy } => {
            set_reclaim_policy(client, volume, uid.as_deref(), policy).await
        }
        HandoverAction::DeleteClaim { claim, uid } => delete_if_same(&claims, claim, Some(uid.clone())).await,
        HandoverAction::ReserveVolume { volume, uid, claim } => {
            reserve_volume(client, namespace, volume, uid.as_deref(), claim).await
        }
        HandoverAction::CreateClaim { claim } => {
            ignore_conflict(claims.create(&writes::create(), claim).await)
        }
        HandoverAction::NudgeClaim { claim, uid } => nudge_claim(client, namespace, claim, uid).await,
    }
}
