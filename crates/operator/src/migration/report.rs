//! What a migration tells: its status (written before the Events, which it remembers), and an
//! Event per move started, done or failed, and at its end.

use crate::Error;
use crate::context::Context;
use crate::events::{self, Notice};
use crate::writes;
use ferry_api::{VolumeMigration, VolumeMigrationStatus};
use kube::{Api, Resource};

/// The status, as a compare-and-swap over the migration as read: a pass that read a stale copy
/// fails here instead of writing older progress over newer.
pub async fn write_status(
    ctx: &Context,
    migration: &VolumeMigration,
    namespace: &str,
    status: &VolumeMigrationStatus,
) -> Result<(), Error> {
    if migration.status.as_ref() == Some(status) {
        return Ok(());
    }
    let api = Api::<VolumeMigration>::namespaced(ctx.client.clone(), namespace);
    writes::write_status(&api, migration, status).await?;
    Ok(())
}

pub async fn publish(ctx: &Context, migration: &VolumeMigration, status: &VolumeMigrationStatus) {
    let own = [migration.object_ref(&())];
    for notice in ferry_engine::migration::notices(migration.status.as_ref(), status) {
        let event = Notice {
            warning: notice.warning,
            reason: notice.reason,
            action: "Migrate",
            note: notice.message,
        };
        events::publish(&ctx.recorder, &event, &own).await;
    }
}
