//! One resize at a time per StatefulSet, enforced by the API server: a resize that passed its
//! prechecks first creates a Lease named after the StatefulSet. Creation is atomic, so two
//! VolumeResizes prechecked at the same moment (each from a cache that does not show the other yet)
//! cannot both start. The Lease goes when its resize ends or lets go on deletion; one left by a
//! resize that no longer exists, or has ended, is taken back.
//!
//! The Leases live in the operator's own namespace (`--hold-namespace`, the chart's release
//! namespace), so Ferry needs no right to Leases where users keep theirs (kube-system's and
//! kube-node-lease's included); without that flag, beside the StatefulSet.

use crate::Error;
use crate::context::Context;
use ferry_api::VolumeResize;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DeleteParams, Preconditions};
use kube::{Api, Resource, ResourceExt};

/// Annotation on the Lease: the UID of the VolumeResize holding it.
const HOLDER_UID: &str = "ferry.dev/holder-uid";

/// Where the Lease that holds the StatefulSet of `resize` (in `namespace`) is: its namespace and
/// name.
pub fn hold_location(ctx: &Context, resize: &VolumeResize, namespace: &str) -> (String, String) {
    let home = ctx.resize.hold_namespace.as_deref().unwrap_or(namespace);
    (
        home.to_string(),
        ferry_engine::names::hold(namespace, &resize.spec.stateful_set_name),
    )
}

/// Who holds the StatefulSet, when it is not this resize.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hold {
    /// This resize holds it (just now, or already).
    Ours,
    /// Another, still unfinished, VolumeResize holds it.
    Theirs(String),
}

/// Takes the StatefulSet's hold for `resize`, or says who has it.
pub async fn acquire(ctx: &Context, resize: &VolumeResize, namespace: &str) -> Result<Hold, Error> {
    let (home, name) = hold_location(ctx, resize, namespace);
    let leases = Api::<Lease>::namespaced(ctx.client.clone(), &home);
    let uid = resize.uid().unwrap_or_default();
    // Beside the resize, garbage-collected with it should Ferry never get to let go itself (an
    // owner reference cannot cross namespaces: elsewhere the next resize takes it back).
    let owner_references = if home == namespace {
        resize.controller_owner_ref(&()).map(|owner| vec![owner])
    } else {
        None
    };
    let lease = Lease {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            annotations: Some([(HOLDER_UID.to_string(), uid.clone())].into()),
            owner_references,
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(resize.name_any()),
            ..LeaseSpec::default()
        }),
    };
    match leases.create(&crate::writes::create(), &lease).await {
        Ok(_) => return Ok(Hold::Ours),
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        Err(error) => return Err(error.into()),
    }
    let Some(existing) = leases.get_opt(&name).await? else {
        // Released between the two calls: try again on the next reconcile.
        return Ok(Hold::Theirs("(released just now)".into()));
    };
    let holder_uid = existing
        .annotations()
        .get(HOLDER_UID)
        .cloned()
        .unwrap_or_default();
    if holder_uid == uid {
        return Ok(Hold::Ours);
    }
    let holder = existing
        .spec
        .as_ref()
        .and_then(|s| s.holder_identity.clone())
        .unwrap_or_default();
    let resizes = Api::<VolumeResize>::namespaced(ctx.client.clone(), namespace);
    let alive = resizes
        .get_opt(&holder)
        .await?
        .is_some_and(|r| r.uid().as_deref() == Some(holder_uid.as_str()) && !r.phase().is_terminal());
    if alive {
        return Ok(Hold::Theirs(holder));
    }
    // Left behind by a resize that is gone or finished: take it back (only that very Lease).
    delete_lease(&leases, &name, existing.uid()).await?;
    Ok(Hold::Theirs(format!("{holder} (ended; its hold is released)")))
}

/// Lets go of the StatefulSet's hold if this resize has it.
pub async fn release(ctx: &Context, resize: &VolumeResize, namespace: &str) -> Result<(), Error> {
    let (home, name) = hold_location(ctx, resize, namespace);
    let leases = Api::<Lease>::namespaced(ctx.client.clone(), &home);
    let Some(existing) = leases.get_opt(&name).await? else {
        return Ok(());
    };
    if existing.annotations().get(HOLDER_UID) != resize.uid().as_ref() {
        return Ok(());
    }
    delete_lease(&leases, &name, existing.uid()).await
}

async fn delete_lease(leases: &Api<Lease>, name: &str, uid: Option<String>) -> Result<(), Error> {
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid,
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match leases.delete(name, &params).await {
        Ok(_) => Ok(()),
        // Already gone, or replaced by another holder's Lease meanwhile.
        Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => Ok(()),
        Err(error) => Err(error.into()),
    }
}
