//! The StatefulSet's controller owner, read for the engine: who it is (its controller reference at
//! prechecks; the recorded owner during a run, while the StatefulSet may be briefly absent), its
//! kind's entry in the owners' table (the admin's `ferry-owners` ConfigMap first, then the built-in
//! entries) and its resource, read through discovery since its kind is known only at run time.

use crate::Error;
use crate::context::Context;
use crate::resize::owner_api::owner_api;
use ferry_api::VolumeResizeStatus;
use ferry_engine::owners::{self, OwnerKind};
use ferry_engine::resize::observed::OwnerView;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, Resource};

/// The key of the admins' ConfigMap that holds their entries (a YAML list of owner kinds).
pub const OWNERS_KEY: &str = "owners.yaml";

/// The owner a resize deals with: at prechecks the StatefulSet's controller (not Ferry's own hold
/// or anything without `controller: true`); during a run the one its status recorded.
pub async fn read_owner(
    ctx: &Context,
    namespace: &str,
    stateful_set: Option<&StatefulSet>,
    status: Option<&VolumeResizeStatus>,
    running: bool,
) -> Result<Option<OwnerView>, Error> {
    let who = if running {
        match status.and_then(|status| status.owner.as_ref()) {
            Some(owner) if !owner.ignored => Some((
                owner.api_version.clone(),
                owner.kind.clone(),
                owner.name.clone(),
                owner.uid.clone(),
            )),
            _ => None,
        }
    } else {
        stateful_set
            .and_then(|sts| sts.meta().owner_references.as_ref())
            .and_then(|refs| refs.iter().find(|owner| owner.controller == Some(true)))
            .map(|owner| {
                (
                    owner.api_version.clone(),
                    owner.kind.clone(),
                    owner.name.clone(),
                    owner.uid.clone(),
                )
            })
    };
    let Some((api_version, kind, name, uid)) = who else {
        return Ok(None);
    };
    let table = table(ctx).await?;
    let entry = owners::find(&table, owners::group_of(&api_version), &kind).cloned();
    let object = match &entry {
        Some(_) => read_object(ctx, namespace, &api_version, &kind, &name, &uid).await?,
        None => None,
    };
    Ok(Some(OwnerView {
        api_version,
        kind,
        name,
        uid,
        entry,
        object,
    }))
}

/// The admins' entries, then the built-in ones. An admins' ConfigMap that cannot be read as a
/// table is said in a warning and left out: its owners count as unknown (refused), never guessed.
async fn table(ctx: &Context) -> Result<Vec<OwnerKind>, Error> {
    let mut table = Vec::new();
    if let Some((namespace, name)) = &ctx.resize.owners_config_map {
        let config_map = Api::<ConfigMap>::namespaced(ctx.client.clone(), namespace)
            .get_opt(name)
            .await?;
        let text = config_map
            .as_ref()
            .and_then(|config_map| config_map.data.as_ref())
            .and_then(|data| data.get(OWNERS_KEY));
        if let Some(text) = text {
            match yaml_serde::from_str::<Vec<OwnerKind>>(text) {
                Ok(entries) => table.extend(entries),
                Err(error) => {
                    tracing::warn!(%namespace, %name, %error, "the owners' ConfigMap cannot be read; its entries are left out");
                }
            }
        }
    }
    table.extend(owners::built_in());
    Ok(table)
}

/// The owner's resource as JSON, if it exists and is still the one with `uid` (a namesake made
/// since is not the StatefulSet's owner). A kind the API server does not serve reads as absent.
async fn read_object(
    ctx: &Context,
    namespace: &str,
    api_version: &str,
    kind: &str,
    name: &str,
    uid: &str,
) -> Result<Option<serde_json::Value>, Error> {
    let api = match owner_api(&ctx.client, namespace, api_version, kind).await {
        Ok(api) => api,
        Err(kube::Error::Api(status)) if status.code == 404 => return Ok(None),
        Err(kube::Error::Discovery(_)) => return Ok(None),
        Err(error) => return Err(error.into()),
    };
    let Some(object) = api.get_opt(name).await? else {
        return Ok(None);
    };
    if object.metadata.uid.as_deref() != Some(uid) {
        return Ok(None);
    }
    serde_json::to_value(&object)
        .map(Some)
        .map_err(|source| Error::Serialize {
            what: "the StatefulSet's owner",
            source,
        })
}
