//! Which copies start from a CSI clone of the old volume instead of the mover's warm pass.

use crate::resize::observed::Observed;
use ferry_api::{ChosenStrategy, Mode, VolumePlan, VolumeResizeSpec, WarmCopyMethod};

/// Marks the copy rows whose new volume can be a clone of the old one, where `warmCopyMethod:
/// Clone` asks for it: a warm copy of a Rolling resize (the clone is made while the replica serves,
/// by the standby final mover's start), from and to StorageClasses of one installed CSI driver (a
/// clone never crosses drivers), at least the old size (a clone is never smaller than its source).
pub(super) fn mark(spec: &VolumeResizeSpec, observed: &Observed, plan: &mut [VolumePlan]) {
    // Every copied volume of a replica needs its standby mover at once, or a clone would be made
    // after the stop (downtime).
    let concurrency = crate::resize::copy::mover_concurrency(spec);
    let asked = spec.warm_copy && spec.warm_copy_method == WarmCopyMethod::Clone;
    if !asked || spec.mode != Mode::Rolling || spec.volumes.len() > concurrency {
        return;
    }
    for row in plan
        .iter_mut()
        .filter(|row| row.strategy == Some(ChosenStrategy::Copy))
    {
        if clonable(observed, row) {
            row.cloned = Some(true);
        }
    }
}

fn clonable(observed: &Observed, row: &VolumePlan) -> bool {
    // A clone is made where its source lies, never on another node.
    if row.target_node.is_some() {
        return false;
    }
    let driver = |class: Option<&String>| {
        let provisioner = &observed.storage_classes.get(class?)?.provisioner;
        observed.csi_drivers.contains(provisioner).then_some(provisioner)
    };
    let (Some(from), Some(to)) = (
        driver(row.current_storage_class.as_ref()),
        driver(row.target_storage_class.as_ref()),
    ) else {
        return false;
    };
    from == to
        && row
            .current_bytes()
            .is_some_and(|current| row.target_bytes().is_some_and(|target| target >= current))
}
