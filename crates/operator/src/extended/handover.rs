//! Blue/green: one write of a replica's move between versions (`ferry_engine::extended::handover`):
//! the guarded volume writes the resize wing's swap makes too (`volume_writes`), and the new claim,
//! one already made taken as done.

use crate::Error;
use crate::writes::{self, ignore_conflict};
use ferry_engine::extended::handover::HandoverAction;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kube::{Api, Client};

pub async fn carry_out(client: &Client, namespace: &str, action: &HandoverAction) -> Result<(), Error> {
    match action {
        HandoverAction::Volume(write) => crate::volume_writes::carry_out(client, namespace, write).await,
        HandoverAction::CreateClaim { claim } => {
            let claims = Api::<PersistentVolumeClaim>::namespaced(client.clone(), namespace);
            ignore_conflict(claims.create(&writes::create(), claim).await)
        }
    }
}
