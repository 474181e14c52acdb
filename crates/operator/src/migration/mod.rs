//! The VolumeMigration controller, in the autoscaler's shape: guard → observe (the namespace's
//! StatefulSets the selector picks, its claims, the StorageClasses, the VolumeResizes) → plan
//! (`ferry_engine::migration::plan`: the selection on the first pass, each move read back from its
//! VolumeResize, the moves to start) → apply (each move an ordinary VolumeResize) → report
//! (status, then Events).
//!
//! Status safety: as the autoscaler, this wing acts first, then writes its status. Its one action,
//! a VolumeResize, is its own record: created under a name derived from the migration's UID and the
//! StatefulSet, so a repeat after a lost status write is the same request (AlreadyExists), and each
//! move's state is read back from those VolumeResizes on every pass.

mod apply;
pub mod controller;
mod observe;
mod report;

use crate::Error;
use crate::context::Context;
use ferry_api::{MigrationPhase, VolumeMigration};
use ferry_engine::migration::plan;
use ferry_engine::migration::plan::Input;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::runtime::controller::Action;
use std::sync::Arc;
use std::time::Duration;

/// A running migration is looked at again this often besides its VolumeResizes' changes (which
/// wake it at once): a StatefulSet another resize held may be free by then.
const RUNNING_RECHECK: Duration = Duration::from_secs(30);

pub async fn reconcile(migration: Arc<VolumeMigration>, ctx: Arc<Context>) -> Result<Action, Error> {
    if ended(&migration) || migration.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let namespace = migration.namespace().ok_or_else(|| Error::NotNamespaced {
        kind: "VolumeMigration",
        name: migration.name_any(),
    })?;
    let uid = migration.uid().unwrap_or_default();
    let observed = observe::observe(&ctx, &migration, &namespace, &uid).await?;
    let now = Time(Timestamp::now());
    let input = Input {
        spec: &migration.spec,
        status: migration.status.as_ref(),
        uid: &uid,
        generation: migration.metadata.generation,
        now: &now,
    };
    let decision = plan(input, &observed);
    apply::apply(&ctx, &namespace, &uid, &decision.actions).await?;
    report::write_status(&ctx, &migration, &namespace, &decision.status).await?;
    // After the status that remembers them, so a failed write does not repeat them.
    report::publish(&ctx, &migration, &decision.status).await;
    Ok(match decision.status.phase {
        MigrationPhase::Running | MigrationPhase::Pending => Action::requeue(RUNNING_RECHECK),
        MigrationPhase::Succeeded | MigrationPhase::Failed => Action::await_change(),
    })
}

/// An ended migration never acts again.
fn ended(migration: &VolumeMigration) -> bool {
    migration
        .status
        .as_ref()
        .is_some_and(|s| matches!(s.phase, MigrationPhase::Succeeded | MigrationPhase::Failed))
}

pub fn error_policy(migration: Arc<VolumeMigration>, error: &Error, _ctx: Arc<Context>) -> Action {
    tracing::warn!(migration = %migration.name_any(), %error, "VolumeMigration: retrying");
    Action::requeue(Duration::from_secs(5))
}
