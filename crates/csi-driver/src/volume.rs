//! Pure decisions about volumes: what a request asks for, the size to make, whether a repeated
//! request matches the volume already made. No I/O here.

use crate::Error;
use crate::placement::Placement;
use crate::proto::csi::volume_capability::AccessType;
use crate::proto::csi::volume_capability::access_mode::Mode;
use crate::proto::csi::{CapacityRange, VolumeCapability};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The StorageClass parameter that says how a class's volumes grow: online, offline or none.
pub const EXPANSION_PARAMETER: &str = "expansion";
/// mkfs.xfs refuses smaller file systems; like a cloud disk with a minimum size, a smaller request
/// gets this much.
pub const XFS_MIN_BYTES: u64 = 300 << 20;
/// Sizes are whole MiB, so the loop device and the file system agree on them.
const ALIGN: u64 = 1 << 20;

/// The file system made on a volume.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FileSystem {
    /// Grows online with `xfs_growfs`; at least [`XFS_MIN_BYTES`].
    Xfs,
    /// Any size; cannot grow here: resize2fs online needs CAP_SYS_RESOURCE, which this machine's
    /// sandbox does not grant.
    Ext4,
}

impl FileSystem {
    /// From a mount capability's fs_type (the StorageClass's `csi.storage.k8s.io/fstype`); XFS when empty.
    pub fn parse(fs_type: &str) -> Result<FileSystem, Error> {
        match fs_type {
            "" | "xfs" => Ok(FileSystem::Xfs),
            "ext4" => Ok(FileSystem::Ext4),
            other => Err(Error::Unsupported(format!(
                "file system {other:?} is not offered (xfs or ext4)"
            ))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            FileSystem::Xfs => "xfs",
            FileSystem::Ext4 => "ext4",
        }
    }

    fn min_bytes(self) -> u64 {
        match self {
            FileSystem::Xfs => XFS_MIN_BYTES,
            FileSystem::Ext4 => ALIGN * 16,
        }
    }
}

/// How a volume grows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Expansion {
    /// While a pod uses it.
    Online,
    /// Only while no pod mounts it: the claim sits at `FileSystemResizePending` until its pod restarts.
    Offline,
    /// Never.
    None,
}

impl Expansion {
    fn parse(value: Option<&str>) -> Result<Expansion, Error> {
        match value {
            None | Some("online") => Ok(Expansion::Online),
            Some("offline") => Ok(Expansion::Offline),
            Some("none") => Ok(Expansion::None),
            Some(other) => Err(Error::InvalidArgument(format!(
                "parameter {EXPANSION_PARAMETER}={other:?}: want online, offline or none"
            ))),
        }
    }
}

/// The StorageClass parameter of a test's fault: `expansionFault: unused` has every growth of a
/// volume no pod uses fail (UNAVAILABLE, which the external-resizer retries for ever), as a
/// driver that grows only unused volumes and then keeps failing.
pub const EXPANSION_FAULT_PARAMETER: &str = "expansionFault";

/// The fault a class's parameters ask for when a volume no pod uses is grown, if any.
pub fn unused_expansion_fault(volume: &Volume) -> Result<(), Error> {
    match volume
        .parameters
        .get(EXPANSION_FAULT_PARAMETER)
        .map(String::as_str)
    {
        Some("unused") => Err(Error::Fault(format!(
            "volume {} cannot grow now ({EXPANSION_FAULT_PARAMETER}: unused, a test's fault)",
            volume.id
        ))),
        _ => Ok(()),
    }
}

/// What a CreateVolume call asks for, once checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wanted {
    pub file_system: FileSystem,
    pub expansion: Expansion,
    pub parameters: BTreeMap<String, String>,
    pub required_bytes: u64,
    pub limit_bytes: u64,
}

/// One volume as the driver keeps it (its record on disk).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Volume {
    /// The volume id, also its file names; the name the CO gave (e.g. `pvc-<uid>`).
    pub id: String,
    pub capacity_bytes: u64,
    pub file_system: FileSystem,
    pub expansion: Expansion,
    pub zone: String,
    /// The node of a node-bound volume (StorageClass parameter `binding: node`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    pub parameters: BTreeMap<String, String>,
    /// The node it is attached to (ControllerPublishVolume), for drivers that need attaching.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attached_to: Option<String>,
    /// What it was made from (a clone or a snapshot restore).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
    /// The mutable parameter (VolumeAttributesClass): its file system is mounted read-only.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
}

/// The one mutable parameter (a VolumeAttributesClass's `parameters`): `readOnly: "true"` makes
/// the volume's file system read-only wherever it is mounted, `"false"` writable again.
pub const READ_ONLY_PARAMETER: &str = "readOnly";

/// The read-only setting `mutable_parameters` ask for (None: they leave it as it is); any other
/// key or value is INVALID_ARGUMENT, which the external-resizer reports as an infeasible change.
pub fn read_only_wanted(
    mutable_parameters: &std::collections::HashMap<String, String>,
) -> Result<Option<bool>, Error> {
    let mut wanted = None;
    for (key, value) in mutable_parameters {
        match (key.as_str(), value.as_str()) {
            (READ_ONLY_PARAMETER, "true") => wanted = Some(true),
            (READ_ONLY_PARAMETER, "false") => wanted = Some(false),
            (READ_ONLY_PARAMETER, other) => {
                return Err(Error::InvalidArgument(format!(
                    "{READ_ONLY_PARAMETER} must be \"true\" or \"false\", not {other:?}"
                )));
            }
            (other, _) => {
                return Err(Error::InvalidArgument(format!(
                    "{other:?} is not a mutable parameter of this driver (only {READ_ONLY_PARAMETER})"
                )));
            }
        }
    }
    Ok(wanted)
}

impl Volume {
    /// Where the volume lives.
    pub fn placement(&self) -> Placement {
        Placement {
            zone: self.zone.clone(),
            node: self.node.clone(),
        }
    }
}

impl crate::store::Record for Volume {
    const KIND: &'static str = "volume";
    const DIR: &'static str = "volumes";
    fn id(&self) -> &str {
        &self.id
    }
}

/// What a volume's content was copied from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Source {
    Snapshot(String),
    Volume(String),
}

/// The size of a volume made from a source of `source_bytes` holding `source_file_system`: the
/// file system must be the one asked for, and the volume at least as big as its source. XFS grows
/// to the volume's size when the volume is staged; ext4 cannot grow on this machine, so an ext4
/// volume gets exactly its source's size.
pub fn size_from_source(
    wanted: &Wanted,
    max_bytes: u64,
    source_file_system: FileSystem,
    source_bytes: u64,
) -> Result<u64, Error> {
    if source_file_system != wanted.file_system {
        return Err(Error::InvalidArgument(format!(
            "the source holds {}, the volume asks for {}",
            source_file_system.name(),
            wanted.file_system.name()
        )));
    }
    let size = size_to_make(wanted, max_bytes)?.max(source_bytes);
    if wanted.limit_bytes > 0 && size > wanted.limit_bytes {
        return Err(Error::OutOfRange(format!(
            "the source is {source_bytes} bytes, past limit_bytes {}",
            wanted.limit_bytes
        )));
    }
    if wanted.file_system == FileSystem::Ext4 && size != source_bytes {
        return Err(Error::OutOfRange(format!(
            "an ext4 volume made from a source gets the source's size ({source_bytes} bytes): ext4 cannot grow on this machine"
        )));
    }
    Ok(size)
}

/// A volume id (or CreateVolume name) safe as a file name.
pub fn check_id(id: &str) -> Result<(), Error> {
    let valid = !id.is_empty()
        && id.len() <= 128
        && !id.starts_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if valid {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!(
            "volume id {id:?}: want 1-128 letters, digits, '-', '_' or '.', not starting with '.'"
        )))
    }
}

/// The one file system the capabilities ask for, refusing what this driver does not offer: raw
/// block volumes, and access by more than one node (the volumes live on one node's loop devices).
pub fn check_capabilities(capabilities: &[VolumeCapability]) -> Result<FileSystem, Error> {
    if capabilities.is_empty() {
        return Err(Error::InvalidArgument("volume_capabilities is empty".into()));
    }
    let mut file_system = None;
    for capability in capabilities {
        let mount = match &capability.access_type {
            Some(AccessType::Mount(mount)) => mount,
            Some(AccessType::Block(_)) => {
                return Err(Error::Unsupported("raw block volumes are not offered".into()));
            }
            None => {
                return Err(Error::InvalidArgument(
                    "a volume capability has no access_type".into(),
                ));
            }
        };
        let mode = capability
            .access_mode
            .as_ref()
            .map(|m| m.mode())
            .unwrap_or(Mode::Unknown);
        if !matches!(
            mode,
            Mode::SingleNodeWriter
                | Mode::SingleNodeReaderOnly
                | Mode::SingleNodeSingleWriter
                | Mode::SingleNodeMultiWriter
        ) {
            return Err(Error::Unsupported(format!(
                "access mode {mode:?} is not offered: volumes live on one node"
            )));
        }
        let this = FileSystem::parse(&mount.fs_type)?;
        if file_system.is_some_and(|fs| fs != this) {
            return Err(Error::InvalidArgument(
                "volume capabilities ask for two file systems".into(),
            ));
        }
        file_system = Some(this);
    }
    file_system.ok_or_else(|| Error::InvalidArgument("volume_capabilities is empty".into()))
}

/// Reads a CreateVolume request's parameters, capabilities and range.
pub fn wanted(
    parameters: &std::collections::HashMap<String, String>,
    capabilities: &[VolumeCapability],
    range: Option<&CapacityRange>,
) -> Result<Wanted, Error> {
    let file_system = check_capabilities(capabilities)?;
    let expansion = Expansion::parse(parameters.get(EXPANSION_PARAMETER).map(String::as_str))?;
    if file_system == FileSystem::Ext4 && expansion != Expansion::None {
        return Err(Error::InvalidArgument(format!(
            "ext4 volumes cannot grow on this machine: set {EXPANSION_PARAMETER}: none, or use xfs"
        )));
    }
    let (required_bytes, limit_bytes) = byte_range(range)?;
    Ok(Wanted {
        file_system,
        expansion,
        parameters: parameters.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        required_bytes,
        limit_bytes,
    })
}

fn byte_range(range: Option<&CapacityRange>) -> Result<(u64, u64), Error> {
    let Some(range) = range else { return Ok((0, 0)) };
    let required = u64::try_from(range.required_bytes)
        .map_err(|_| Error::InvalidArgument(format!("required_bytes {} < 0", range.required_bytes)))?;
    let limit = u64::try_from(range.limit_bytes)
        .map_err(|_| Error::InvalidArgument(format!("limit_bytes {} < 0", range.limit_bytes)))?;
    if limit > 0 && required > limit {
        return Err(Error::InvalidArgument(format!(
            "required_bytes {required} > limit_bytes {limit}"
        )));
    }
    Ok((required, limit))
}

/// The size of a new volume: the request rounded up to whole MiB and to the file system's minimum,
/// refused when that passes the limit or what the backing file system can hold (`max_bytes`).
pub fn size_to_make(wanted: &Wanted, max_bytes: u64) -> Result<u64, Error> {
    let size = align_up(wanted.required_bytes).max(wanted.file_system.min_bytes());
    if wanted.limit_bytes > 0 && size > wanted.limit_bytes {
        return Err(Error::OutOfRange(format!(
            "the smallest {} volume for {} bytes is {size} bytes, past limit_bytes {}",
            wanted.file_system.name(),
            wanted.required_bytes,
            wanted.limit_bytes
        )));
    }
    check_max(size, max_bytes)?;
    Ok(size)
}

/// A repeated CreateVolume matches the volume made before only with the same parameters and a size
/// inside the requested range.
pub fn check_same(existing: &Volume, wanted: &Wanted) -> Result<(), Error> {
    if existing.file_system != wanted.file_system
        || existing.expansion != wanted.expansion
        || existing.parameters != wanted.parameters
    {
        return Err(Error::AlreadyExists(format!(
            "volume {} exists with other parameters ({} {:?} {:?})",
            existing.id,
            existing.file_system.name(),
            existing.expansion,
            existing.parameters
        )));
    }
    let too_small = existing.capacity_bytes < wanted.required_bytes;
    let too_big = wanted.limit_bytes > 0 && existing.capacity_bytes > wanted.limit_bytes;
    if too_small || too_big {
        return Err(Error::AlreadyExists(format!(
            "volume {} exists with {} bytes, outside the requested range [{}, {}]",
            existing.id, existing.capacity_bytes, wanted.required_bytes, wanted.limit_bytes
        )));
    }
    Ok(())
}

/// The size a ControllerExpandVolume grows a volume to; never smaller than it is (a repeated or late
/// call changes nothing).
pub fn size_to_grow(volume: &Volume, range: Option<&CapacityRange>, max_bytes: u64) -> Result<u64, Error> {
    if volume.expansion == Expansion::None {
        return Err(Error::FailedPrecondition(format!(
            "volume {} is of a class that does not grow ({EXPANSION_PARAMETER}: none)",
            volume.id
        )));
    }
    let (required, limit) = byte_range(range)?;
    if required == 0 {
        return Err(Error::InvalidArgument(
            "capacity_range.required_bytes is not set".into(),
        ));
    }
    let size = align_up(required).max(volume.capacity_bytes);
    if limit > 0 && size > limit {
        return Err(Error::OutOfRange(format!(
            "volume {} would be {size} bytes, past limit_bytes {limit}",
            volume.id
        )));
    }
    check_max(size, max_bytes)?;
    Ok(size)
}

fn check_max(size: u64, max_bytes: u64) -> Result<(), Error> {
    if size > max_bytes {
        return Err(Error::OutOfRange(format!(
            "{size} bytes is more than the backing file system holds ({max_bytes} bytes)"
        )));
    }
    Ok(())
}

fn align_up(bytes: u64) -> u64 {
    bytes.div_ceil(ALIGN).saturating_mul(ALIGN)
}

#[cfg(test)]
mod tests;
