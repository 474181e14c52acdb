//! A dry run's answer to "does this shrink fit?": the data in use on each claim as the kubelet
//! reports it (the operator reads it for dry runs only), and a copy whose target leaves no room
//! for it refused, with the headroom and the words a run uses once its own pods have measured.

use super::Precheck;
use crate::resize::copy::SHRINK_HEADROOM;
use ferry_api::quantity::human_bytes;
use ferry_api::{ChosenStrategy, VolumePlan, condition::REASON_TOO_SMALL_FOR_DATA};
use std::collections::BTreeMap;

/// Every row whose claim the kubelet reported gets its bytes in use as `bytesTotal`.
pub(super) fn with_usage(plan: &mut [VolumePlan], usage: &BTreeMap<String, u64>) {
    for row in plan {
        if let Some(used) = usage.get(&row.claim_name) {
            row.bytes_total = Some(*used);
        }
    }
}

/// Refuses the plan when a copy's target is smaller than its data plus the headroom.
pub(super) fn room_for_data(plan: &[VolumePlan]) -> Result<(), Precheck> {
    let short: Vec<String> = plan
        .iter()
        .filter(|row| row.strategy == Some(ChosenStrategy::Copy))
        .filter_map(|row| {
            let used = row.bytes_total?;
            let target = row.target_bytes()?;
            let needed = (used as f64 * SHRINK_HEADROOM).ceil() as u64;
            (target < needed).then(|| {
                format!(
                    "{} holds {} of data (the kubelet's figure); {} leaves no room (at least {} needed with {:.0}% headroom)",
                    row.claim_name,
                    human_bytes(used),
                    row.target_size,
                    human_bytes(needed),
                    (SHRINK_HEADROOM - 1.0) * 100.0
                )
            })
        })
        .collect();
    if short.is_empty() {
        Ok(())
    } else {
        Err(Precheck::reject(REASON_TOO_SMALL_FOR_DATA, short.join("; ")))
    }
}
