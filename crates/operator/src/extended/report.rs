//! What the ExtendedStatefulSet controller tells: its status (a compare-and-swap on what it read)
//! and its Events.

use crate::Error;
use crate::context::Context;
use crate::events::{self, Notice};
use ferry_api::{ExtendedStatefulSet, ExtendedStatefulSetStatus};
use kube::{Api, Resource};

/// Whether the status was written, or refused because the object changed since it was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    Yes,
    Stale,
}

/// The status, written as a compare-and-swap on the resourceVersion this reconcile read: one that
/// read an older status (an update step since changed) must not write it back over the newer one.
pub async fn write_status(
    api: &Api<ExtendedStatefulSet>,
    ests: &ExtendedStatefulSet,
    status: ExtendedStatefulSetStatus,
) -> Result<Written, Error> {
    match crate::writes::write_status(api, ests, &status).await {
        Ok(_) => Ok(Written::Yes),
        Err(error) if error.is_stale_read() => Ok(Written::Stale),
        Err(error) => Err(error),
    }
}

/// Each notice (warning, reason, message) as an Event on the ExtendedStatefulSet.
pub async fn publish(ctx: &Context, ests: &ExtendedStatefulSet, notices: Vec<(bool, &'static str, String)>) {
    let reference = ests.object_ref(&());
    for (warning, reason, note) in notices {
        let notice = Notice {
            warning,
            reason,
            action: "Update",
            note,
        };
        events::publish(&ctx.recorder, &notice, std::slice::from_ref(&reference)).await;
    }
}
