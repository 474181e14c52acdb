//! Stopping a StatefulSet for a resize: its live spec kept in the backup ConfigMap, then an orphan
//! delete (its pods keep running). The re-create starts from what was kept, so the delete must only
//! go through if the StatefulSet is still what was kept: an edit made after the reconcile read it
//! (an image upgrade pushed while the copy waited for a disruption budget) would be lost otherwise.

use super::objects;
use crate::Error;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, Patch, Preconditions, PropagationPolicy};
use kube::{Api, Client, ResourceExt};

/// Keeps `sts` (as read) under the live key of the backup ConfigMap `backup`, then orphan-deletes it
/// on the condition that it is unchanged (same UID and resourceVersion). Gone or replaced already:
/// done. Changed since it was read: the API server's 409, a stale read, so the reconcile reads it
/// again and keeps the newer spec.
pub async fn keep_live_and_orphan_delete(
    client: Client,
    namespace: &str,
    backup: &str,
    sts: &StatefulSet,
) -> Result<(), Error> {
    let live = objects::serialize_kept(sts)?;
    Api::<ConfigMap>::namespaced(client.clone(), namespace)
        .patch(
            backup,
            &crate::writes::patch(),
            &Patch::Merge(objects::live_backup_patch(live)),
        )
        .await?;
    let params = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Orphan),
        preconditions: Some(Preconditions {
            uid: sts.uid(),
            resource_version: sts.resource_version(),
        }),
        ..DeleteParams::default()
    };
    let sets = Api::<StatefulSet>::namespaced(client, namespace);
    match sets.delete(&sts.name_any(), &params).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        // A failed precondition: replaced (another UID, or gone since) is done; the same one
        // changed is a stale read.
        Err(kube::Error::Api(status)) if status.code == 409 => match sets.get_opt(&sts.name_any()).await? {
            Some(now) if now.uid() == sts.uid() && now.metadata.deletion_timestamp.is_none() => {
                Err(kube::Error::Api(status).into())
            }
            _ => Ok(()),
        },
        Err(error) => Err(error.into()),
    }
}
