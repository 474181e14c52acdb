//! The migration plan's actions, carried out: each move is an ordinary VolumeResize.

use crate::Error;
use crate::context::Context;
use crate::resize_create::{Origin, create_resize};
use ferry_api::names::LABEL_MIGRATION_UID;
use ferry_engine::migration::MigrationAction;

/// The `ferry.dev/trigger` label of a migration's VolumeResizes.
pub const TRIGGER_MIGRATION: &str = "migration";

pub async fn apply(
    ctx: &Context,
    namespace: &str,
    uid: &str,
    actions: &[MigrationAction],
) -> Result<(), Error> {
    for action in actions {
        match action {
            // One already there under the same name is this same move.
            MigrationAction::CreateVolumeResize {
                stateful_set,
                name,
                spec,
            } => {
                let origin = Origin {
                    trigger: TRIGGER_MIGRATION,
                    stateful_set,
                    asked_by: Some((LABEL_MIGRATION_UID, uid)),
                    annotations: Default::default(),
                };
                create_resize(&ctx.client, namespace, name, spec.as_ref().clone(), &origin).await?;
            }
        }
    }
    Ok(())
}
