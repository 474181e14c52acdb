//! The capabilities a mover pod gets: only those the data it copies needs, as the measuring pod
//! found it before the copy (least privilege per copy, docs/security.md).

use ferry_api::VolumePlan;
use ferry_mover_report::CopyNeeds;

/// Every capability a copy can use. `DAC_OVERRIDE` reads and writes whatever the modes say; the
/// rest keep owners (`CHOWN`, `FOWNER`), set-id bits (`FSETID`), device nodes (`MKNOD`) and file
/// capabilities (`SETFCAP`).
pub const EVERY_COPY_CAPABILITY: [&str; 6] =
    ["CHOWN", "FOWNER", "DAC_OVERRIDE", "FSETID", "MKNOD", "SETFCAP"];

/// The capabilities a copy of data with `needs` gets; with nothing known (a measuring mover that
/// did not say), every one.
pub fn for_needs(needs: Option<CopyNeeds>) -> Vec<String> {
    let Some(needs) = needs else {
        return EVERY_COPY_CAPABILITY.iter().map(|c| c.to_string()).collect();
    };
    let wanted = [
        ("CHOWN", needs.other_owners),
        ("FOWNER", needs.other_owners),
        ("DAC_OVERRIDE", true),
        ("FSETID", needs.set_id),
        ("MKNOD", needs.device_nodes),
        ("SETFCAP", needs.file_capabilities),
    ];
    wanted
        .into_iter()
        .filter(|(_, needed)| *needed)
        .map(|(capability, _)| capability.to_string())
        .collect()
}

/// The capabilities of a row's mover pods: as recorded when its source was measured, or every one
/// for a row measured by a Ferry that did not record them.
pub fn of_row(row: &VolumePlan) -> Vec<String> {
    row.mover_capabilities.clone().unwrap_or_else(|| for_needs(None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_gets_only_what_its_data_needs() {
        assert_eq!(for_needs(Some(CopyNeeds::default())), ["DAC_OVERRIDE"]);
        let owned = CopyNeeds {
            other_owners: true,
            ..CopyNeeds::default()
        };
        assert_eq!(for_needs(Some(owned)), ["CHOWN", "FOWNER", "DAC_OVERRIDE"]);
        let devices = CopyNeeds {
            device_nodes: true,
            set_id: true,
            ..CopyNeeds::default()
        };
        assert_eq!(for_needs(Some(devices)), ["DAC_OVERRIDE", "FSETID", "MKNOD"]);
        let capabilities = CopyNeeds {
            file_capabilities: true,
            ..CopyNeeds::default()
        };
        assert_eq!(for_needs(Some(capabilities)), ["DAC_OVERRIDE", "SETFCAP"]);
    }

    #[test]
    fn nothing_known_means_every_capability() {
        assert_eq!(for_needs(None), EVERY_COPY_CAPABILITY);
        assert_eq!(of_row(&VolumePlan::default()), EVERY_COPY_CAPABILITY);
        let measured = VolumePlan {
            mover_capabilities: Some(vec!["DAC_OVERRIDE".into()]),
            ..VolumePlan::default()
        };
        assert_eq!(of_row(&measured), ["DAC_OVERRIDE"]);
    }
}
