//! The ConfigMaps and Secrets an ExtendedStatefulSet's pods reference: their content (for the
//! digest that rolls the pods when it changes) and their marking as referenced (a label and the
//! users in an annotation). The admission webhook refuses deleting a marked object while a user
//! exists (`webhook::config_delete`); no finalizer, so nothing waits on Ferry when it is down or
//! uninstalled, and a namespace deletion never hangs.

use crate::{Error, writes};
use ferry_api::ExtendedStatefulSet;
use ferry_engine::extended::config::{ConfigRef, Content};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{ListParams, Patch};
use kube::{Api, Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use std::collections::{BTreeMap, BTreeSet};

/// The finalizer older Ferry versions put on a referenced ConfigMap or Secret; removed wherever
/// it is found (it made a namespace deletion wait on Ferry).
pub const FINALIZER_IN_USE: &str = "ferry.dev/in-use";
/// Label on a referenced ConfigMap or Secret (so Ferry watches only those).
pub const LABEL_REFERENCED: &str = "ferry.dev/referenced";
/// Annotation on a referenced ConfigMap or Secret: the ExtendedStatefulSets referencing it.
pub const ANNOTATION_USED_BY: &str = "ferry.dev/used-by";

fn configmap_content(map: &ConfigMap) -> BTreeMap<String, Vec<u8>> {
    let mut content: BTreeMap<String, Vec<u8>> = map
        .data
        .iter()
        .flatten()
        .map(|(key, value)| (key.clone(), value.as_bytes().to_vec()))
        .collect();
    content.extend(
        map.binary_data
            .iter()
            .flatten()
            .map(|(key, value)| (format!("binary:{key}"), value.0.clone())),
    );
    content
}

fn secret_content(secret: &Secret) -> BTreeMap<String, Vec<u8>> {
    secret
        .data
        .iter()
        .flatten()
        .map(|(key, value)| (key.clone(), value.0.clone()))
        .collect()
}

/// The content of every referenced object (missing ones as `None`).
pub async fn contents(
    client: &Client,
    namespace: &str,
    references: &BTreeSet<ConfigRef>,
) -> Result<BTreeMap<ConfigRef, Content>, Error> {
    let maps = Api::<ConfigMap>::namespaced(client.clone(), namespace);
    let secrets = Api::<Secret>::namespaced(client.clone(), namespace);
    let mut found = BTreeMap::new();
    for reference in references {
        let content = match reference {
            ConfigRef::ConfigMap(name) => maps.get_opt(name).await?.as_ref().map(configmap_content),
            ConfigRef::Secret(name) => secrets.get_opt(name).await?.as_ref().map(secret_content),
        };
        found.insert(reference.clone(), content);
    }
    Ok(found)
}

fn users_of(object: &impl ResourceExt) -> BTreeSet<String> {
    object
        .annotations()
        .get(ANNOTATION_USED_BY)
        .map(|list| {
            list.split(',')
                .filter(|n| !n.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Marks `object` as used by exactly `users`, or releases it (none); an old finalizer goes.
async fn mark<K>(api: &Api<K>, object: &K, users: &BTreeSet<String>) -> Result<(), Error>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    let old_finalizer = object.finalizers().iter().any(|f| f == FINALIZER_IN_USE);
    if users_of(object) == *users && !old_finalizer {
        return Ok(());
    }
    let finalizers: Vec<String> = object
        .finalizers()
        .iter()
        .filter(|f| *f != FINALIZER_IN_USE)
        .cloned()
        .collect();
    let patch = if users.is_empty() {
        serde_json::json!({"metadata": {
            "resourceVersion": object.resource_version(),
            "finalizers": finalizers,
            "labels": {LABEL_REFERENCED: null},
            "annotations": {ANNOTATION_USED_BY: null},
        }})
    } else {
        let list: Vec<&str> = users.iter().map(String::as_str).collect();
        serde_json::json!({"metadata": {
            "resourceVersion": object.resource_version(),
            "finalizers": finalizers,
            "labels": {LABEL_REFERENCED: "true"},
            "annotations": {ANNOTATION_USED_BY: list.join(",")},
        }})
    };
    api.patch(&object.name_any(), &writes::patch(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

/// Which kinds of referenced objects this installation follows (features `configMapReferences`
/// and `secretReferences`): one not followed may not be listed or marked at all.
#[derive(Debug, Clone, Copy)]
pub struct Followed {
    pub config_maps: bool,
    pub secrets: bool,
}

impl Followed {
    pub fn includes(&self, reference: &ConfigRef) -> bool {
        match reference {
            ConfigRef::ConfigMap(_) => self.config_maps,
            ConfigRef::Secret(_) => self.secrets,
        }
    }
}

/// Marks what `user` references now and releases what it referenced before (an empty
/// `references` releases everything); only the kinds `followed`. Users that no longer exist
/// (ExtendedStatefulSets deleted) are released too: there is no finalizer to do it at their
/// deletion.
pub async fn protect(
    client: &Client,
    namespace: &str,
    user: &str,
    references: &BTreeSet<ConfigRef>,
    followed: Followed,
) -> Result<(), Error> {
    let maps = Api::<ConfigMap>::namespaced(client.clone(), namespace);
    let secrets = Api::<Secret>::namespaced(client.clone(), namespace);
    let marked = ListParams::default().labels(LABEL_REFERENCED);
    // (Not followed: they may not be listed at all, and none is referenced here.)
    let marked_maps = if followed.config_maps {
        maps.list(&marked).await?.items
    } else {
        Vec::new()
    };
    let marked_secrets = if followed.secrets {
        secrets.list(&marked).await?.items
    } else {
        Vec::new()
    };
    // Which users still exist is asked only when something is marked (in most namespaces nothing
    // is, and this runs at every reconcile).
    let existing: BTreeSet<String> = if marked_maps.is_empty() && marked_secrets.is_empty() {
        BTreeSet::new()
    } else {
        Api::<ExtendedStatefulSet>::namespaced(client.clone(), namespace)
            .list_metadata(&ListParams::default())
            .await?
            .items
            .iter()
            .filter(|ests| ests.metadata.deletion_timestamp.is_none())
            .map(ResourceExt::name_any)
            .collect()
    };
    // The users a marked object keeps: those that exist, and `user` only if it still references it.
    let kept = |reference: ConfigRef, mut users: BTreeSet<String>| {
        users.retain(|name| existing.contains(name));
        if !references.contains(&reference) {
            users.remove(user);
        }
        users
    };
    for map in marked_maps {
        let users = kept(ConfigRef::ConfigMap(map.name_any()), users_of(&map));
        mark(&maps, &map, &users).await?;
    }
    for secret in marked_secrets {
        let users = kept(ConfigRef::Secret(secret.name_any()), users_of(&secret));
        mark(&secrets, &secret, &users).await?;
    }
    // Protect what it references (and exists, and is not already being deleted).
    for reference in references {
        match reference {
            ConfigRef::ConfigMap(name) => {
                if let Some(map) = maps.get_opt(name).await?
                    && map.metadata.deletion_timestamp.is_none()
                {
                    let mut users = users_of(&map);
                    users.insert(user.to_string());
                    mark(&maps, &map, &users).await?;
                }
            }
            ConfigRef::Secret(name) => {
                if let Some(secret) = secrets.get_opt(name).await?
                    && secret.metadata.deletion_timestamp.is_none()
                {
                    let mut users = users_of(&secret);
                    users.insert(user.to_string());
                    mark(&secrets, &secret, &users).await?;
                }
            }
        }
    }
    Ok(())
}

/// The ExtendedStatefulSets a marked ConfigMap or Secret names.
pub fn users(object: &impl ResourceExt) -> BTreeSet<String> {
    users_of(object)
}
