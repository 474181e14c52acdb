//! The VolumeMigration controller's wiring: a migration is woken by its own changes and by those
//! of the VolumeResizes it made.

use crate::context::Context;
use crate::watches::{controller, scoped, touched_metadata};
use ferry_api::names::LABEL_MIGRATION_UID;
use ferry_api::{VolumeMigration, VolumeResize};
use futures::StreamExt;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use std::sync::Arc;

pub fn run(
    client: &Client,
    scope: Option<&str>,
    ctx: Arc<Context>,
) -> impl std::future::Future<Output = ()> + use<> {
    let migrations = scoped::<VolumeMigration>(client, scope);
    // Metadata only: the label it maps by is read even off a VolumeResize this Ferry cannot parse.
    let resizes = scoped::<PartialObjectMeta<VolumeResize>>(client, scope);
    let controller = controller(migrations, watcher::Config::default().any_semantic());
    let store = controller.store();
    controller
        .watches_stream(
            touched_metadata(resizes),
            move |resize: PartialObjectMeta<VolumeResize>| {
                let uid = resize.labels().get(LABEL_MIGRATION_UID).cloned();
                store
                    .state()
                    .iter()
                    .filter(|migration| uid.is_some() && migration.uid() == uid)
                    .map(|migration| ObjectRef::from_obj(migration.as_ref()))
                    .collect::<Vec<_>>()
            },
        )
        .shutdown_on_signal()
        .run(super::reconcile, super::error_policy, ctx)
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::debug!(%error, "VolumeMigration: reconcile error (handled by the error policy)");
            }
        })
}
