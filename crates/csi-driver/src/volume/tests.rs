use super::*;
use crate::proto::csi::volume_capability::{AccessMode, BlockVolume, MountVolume};
use std::collections::HashMap;

fn mount(fs_type: &str, mode: Mode) -> VolumeCapability {
    VolumeCapability {
        access_type: Some(AccessType::Mount(MountVolume {
            fs_type: fs_type.to_string(),
            mount_flags: vec![],
            volume_mount_group: String::new(),
        })),
        access_mode: Some(AccessMode { mode: mode as i32 }),
    }
}

fn range(required: i64, limit: i64) -> CapacityRange {
    CapacityRange {
        required_bytes: required,
        limit_bytes: limit,
    }
}

/// A 1 GiB XFS volume `pvc-1` in zone-r that grows as `expansion` says, with no parameters.
fn xfs_volume(expansion: Expansion) -> Volume {
    Volume {
        id: "pvc-1".into(),
        capacity_bytes: 1 << 30,
        file_system: FileSystem::Xfs,
        expansion,
        zone: "zone-r".into(),
        node: None,
        parameters: BTreeMap::new(),
        attached_to: None,
        source: None,
        read_only: false,
    }
}

fn params(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn sizes_round_up_to_mib_and_the_file_system_minimum() {
    let caps = [mount("xfs", Mode::SingleNodeWriter)];
    let small = wanted(&params(&[]), &caps, Some(&range(1, 0))).unwrap();
    assert_eq!(size_to_make(&small, u64::MAX).unwrap(), XFS_MIN_BYTES);
    let big = wanted(&params(&[]), &caps, Some(&range((512 << 20) + 1, 0))).unwrap();
    assert_eq!(size_to_make(&big, u64::MAX).unwrap(), 513 << 20);
    let ext4 = wanted(
        &params(&[("expansion", "none")]),
        &[mount("ext4", Mode::SingleNodeWriter)],
        Some(&range(64 << 20, 0)),
    )
    .unwrap();
    assert_eq!(size_to_make(&ext4, u64::MAX).unwrap(), 64 << 20);
}

#[test]
fn out_of_range_past_the_limit_or_the_backing_file_system() {
    let caps = [mount("xfs", Mode::SingleNodeWriter)];
    let limited = wanted(&params(&[]), &caps, Some(&range(1 << 20, 100 << 20))).unwrap();
    assert!(matches!(
        size_to_make(&limited, u64::MAX),
        Err(Error::OutOfRange(_))
    ));
    let huge = wanted(&params(&[]), &caps, Some(&range(10 << 30, 0))).unwrap();
    assert!(matches!(size_to_make(&huge, 1 << 30), Err(Error::OutOfRange(_))));
}

#[test]
fn refuses_what_is_not_offered() {
    let block = VolumeCapability {
        access_type: Some(AccessType::Block(BlockVolume {})),
        access_mode: Some(AccessMode {
            mode: Mode::SingleNodeWriter as i32,
        }),
    };
    assert!(matches!(check_capabilities(&[block]), Err(Error::Unsupported(_))));
    assert!(matches!(
        check_capabilities(&[mount("xfs", Mode::MultiNodeMultiWriter)]),
        Err(Error::Unsupported(_))
    ));
    assert!(matches!(
        check_capabilities(&[mount("btrfs", Mode::SingleNodeWriter)]),
        Err(Error::Unsupported(_))
    ));
    assert!(matches!(check_capabilities(&[]), Err(Error::InvalidArgument(_))));
    let ext4_growing = wanted(&params(&[]), &[mount("ext4", Mode::SingleNodeWriter)], None);
    assert!(matches!(ext4_growing, Err(Error::InvalidArgument(_))));
    let bad_expansion = wanted(
        &params(&[("expansion", "sometimes")]),
        &[mount("", Mode::SingleNodeWriter)],
        None,
    );
    assert!(matches!(bad_expansion, Err(Error::InvalidArgument(_))));
    assert!(matches!(
        wanted(
            &params(&[]),
            &[mount("", Mode::SingleNodeWriter)],
            Some(&range(10, 5))
        ),
        Err(Error::InvalidArgument(_))
    ));
    for bad in ["", "../x", ".hidden", "a/b", &"x".repeat(129)] {
        assert!(check_id(bad).is_err(), "{bad:?}");
    }
    check_id("pvc-0b6c1e5e-8d1f-4c1a-9f57-2f2d3c4b5a69").unwrap();
}

#[test]
fn a_repeated_create_matches_only_the_same_request() {
    let caps = [mount("xfs", Mode::SingleNodeWriter)];
    let first = wanted(
        &params(&[("expansion", "online")]),
        &caps,
        Some(&range(1 << 30, 0)),
    )
    .unwrap();
    let made = Volume {
        id: "pvc-1".into(),
        capacity_bytes: size_to_make(&first, u64::MAX).unwrap(),
        file_system: first.file_system,
        expansion: first.expansion,
        zone: "zone-r".into(),
        node: None,
        parameters: first.parameters.clone(),
        attached_to: None,
        source: None,
        read_only: false,
    };
    check_same(&made, &first).unwrap();
    let bigger = wanted(
        &params(&[("expansion", "online")]),
        &caps,
        Some(&range(2 << 30, 0)),
    )
    .unwrap();
    assert!(matches!(check_same(&made, &bigger), Err(Error::AlreadyExists(_))));
    let other_class = wanted(
        &params(&[("expansion", "offline")]),
        &caps,
        Some(&range(1 << 30, 0)),
    )
    .unwrap();
    assert!(matches!(
        check_same(&made, &other_class),
        Err(Error::AlreadyExists(_))
    ));
}

#[test]
fn growth_never_shrinks_and_fixed_classes_refuse() {
    let mut volume = xfs_volume(Expansion::Online);
    assert_eq!(
        size_to_grow(&volume, Some(&range(512 << 20, 0)), u64::MAX).unwrap(),
        1 << 30
    );
    assert_eq!(
        size_to_grow(&volume, Some(&range(2 << 30, 0)), u64::MAX).unwrap(),
        2 << 30
    );
    assert!(matches!(
        size_to_grow(&volume, Some(&range(2 << 30, 0)), (1 << 31) - 1),
        Err(Error::OutOfRange(_))
    ));
    assert!(matches!(
        size_to_grow(&volume, None, u64::MAX),
        Err(Error::InvalidArgument(_))
    ));
    volume.expansion = Expansion::None;
    assert!(matches!(
        size_to_grow(&volume, Some(&range(2 << 30, 0)), u64::MAX),
        Err(Error::FailedPrecondition(_))
    ));
}

#[test]
fn a_volume_from_a_source_keeps_its_file_system_and_at_least_its_size() {
    const MI: u64 = 1 << 20;
    let xfs = wanted(
        &params(&[]),
        &[mount("xfs", Mode::SingleNodeWriter)],
        Some(&range(300 << 20, 0)),
    )
    .unwrap();
    // Asked for less than the source: the source's size.
    assert_eq!(
        size_from_source(&xfs, 1 << 40, FileSystem::Xfs, 400 * MI).unwrap(),
        400 * MI
    );
    // Asked for more: the volume's size (the file system grows when staged).
    let big = wanted(
        &params(&[]),
        &[mount("xfs", Mode::SingleNodeWriter)],
        Some(&range(500 << 20, 0)),
    )
    .unwrap();
    assert_eq!(
        size_from_source(&big, 1 << 40, FileSystem::Xfs, 400 * MI).unwrap(),
        500 * MI
    );
    // Another file system than the source's, a limit below the source, ext4 bigger than its source.
    assert!(matches!(
        size_from_source(&xfs, 1 << 40, FileSystem::Ext4, 400 * MI),
        Err(Error::InvalidArgument(_))
    ));
    let capped = wanted(
        &params(&[]),
        &[mount("xfs", Mode::SingleNodeWriter)],
        Some(&range(300 << 20, 300 << 20)),
    )
    .unwrap();
    assert!(matches!(
        size_from_source(&capped, 1 << 40, FileSystem::Xfs, 400 * MI),
        Err(Error::OutOfRange(_))
    ));
    let ext4 = wanted(
        &params(&[("expansion", "none")]),
        &[mount("ext4", Mode::SingleNodeWriter)],
        Some(&range(128 << 20, 0)),
    )
    .unwrap();
    assert_eq!(
        size_from_source(&ext4, 1 << 40, FileSystem::Ext4, 128 * MI).unwrap(),
        128 * MI
    );
    assert!(matches!(
        size_from_source(&ext4, 1 << 40, FileSystem::Ext4, 64 * MI),
        Err(Error::OutOfRange(_))
    ));
}

#[test]
fn the_one_mutable_parameter_is_read_only_and_anything_else_is_invalid() {
    assert_eq!(read_only_wanted(&params(&[])).unwrap(), None);
    assert_eq!(
        read_only_wanted(&params(&[("readOnly", "true")])).unwrap(),
        Some(true)
    );
    assert_eq!(
        read_only_wanted(&params(&[("readOnly", "false")])).unwrap(),
        Some(false)
    );
    assert!(matches!(
        read_only_wanted(&params(&[("readOnly", "yes")])),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        read_only_wanted(&params(&[("iops", "9000")])),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn a_class_asking_for_the_unused_expansion_fault_fails_with_a_retried_code() {
    let mut volume = xfs_volume(Expansion::Offline);
    assert!(unused_expansion_fault(&volume).is_ok());
    volume
        .parameters
        .insert(EXPANSION_FAULT_PARAMETER.into(), "unused".into());
    let fault = unused_expansion_fault(&volume).unwrap_err();
    // Not OUT_OF_RANGE or INVALID_ARGUMENT: the external-resizer would call those infeasible.
    assert_eq!(fault.code(), tonic::Code::Unavailable);
}
