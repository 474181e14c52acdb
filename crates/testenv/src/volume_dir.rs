//! A claim's files as the host sees them, for tests that seed a volume or check it by checksum.
//!
//! A `hostPath` or `local` PV is a directory already. A CSI volume of the real node's driver is a
//! file system in an image file that is mounted only while a pod uses it, so the host mounts it
//! itself, for as long as the [`VolumeDir`] lives: through the loop device the driver attached (the
//! kernel then shares one superblock between the pod's mount and this one, so both see the same
//! files), or through a loop device of its own, detached again on drop (lazily, if the driver
//! staged the volume on it meanwhile; the kernel frees it at the driver's unmount).

use crate::block::{loop_device, new_loop_device, run};
use crate::paths::state_dir;
use crate::{CSI_ATTACH_DRIVER, CSI_DRIVER, Error};
use k8s_openapi::api::core::v1::PersistentVolumeSpec;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

/// Where `scripts/testenv` mounts CSI volumes for the host (cleaned with the drivers' state).
fn views_dir() -> PathBuf {
    state_dir().join("csi").join("views")
}

/// A PV's files on the host; a CSI volume stays mounted here until this is dropped.
#[derive(Debug)]
pub struct VolumeDir {
    path: PathBuf,
    _mount: Option<HostMount>,
}

impl VolumeDir {
    /// The directory of `spec`'s volume: its `hostPath` or `local` path, or a fresh mount of its CSI
    /// volume.
    pub fn of(volume_name: &str, spec: &PersistentVolumeSpec) -> Result<Self, Error> {
        if let Some(path) = spec
            .host_path
            .as_ref()
            .map(|h| h.path.clone())
            .or_else(|| spec.local.as_ref().map(|l| l.path.clone()))
        {
            return Ok(Self {
                path: PathBuf::from(path),
                _mount: None,
            });
        }
        let csi = spec
            .csi
            .as_ref()
            .ok_or_else(|| Error::Setup(format!("PV {volume_name} is neither hostPath, local nor CSI")))?;
        let image = driver_image(&csi.driver, &csi.volume_handle)
            .ok_or_else(|| Error::Setup(format!("PV {volume_name} is of CSI driver {}", csi.driver)))?;
        let mount = HostMount::new(&image)?;
        Ok(Self {
            path: mount.mount_point.clone(),
            _mount: Some(mount),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl std::ops::Deref for VolumeDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for VolumeDir {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

/// The image file of a volume of one of the real node's CSI drivers (`scripts/lib/csi.sh`).
pub fn driver_image(driver: &str, handle: &str) -> Option<PathBuf> {
    let short = match driver {
        CSI_DRIVER | CSI_ATTACH_DRIVER => driver.split('.').next()?,
        _ => return None,
    };
    Some(
        state_dir()
            .join("csi")
            .join(short)
            .join("state")
            .join("volumes")
            .join(format!("{handle}.img")),
    )
}

#[derive(Debug)]
struct HostMount {
    mount_point: PathBuf,
    /// The loop device this view attached itself (None: it used the driver's).
    own_device: Option<String>,
}

impl HostMount {
    fn new(image: &Path) -> Result<Self, Error> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let (device, own_device) = match loop_device(image)? {
            Some(device) => (device, None),
            None => {
                let device = new_loop_device(image)?;
                (device.clone(), Some(device))
            }
        };
        let mount_point = views_dir().join(format!(
            "{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        // From here on, drop undoes what was done.
        let view = Self {
            mount_point,
            own_device,
        };
        std::fs::create_dir_all(&view.mount_point).map_err(|e| Error::io(view.mount_point.display(), e))?;
        run(Command::new("mount").arg(&device).arg(&view.mount_point))?;
        Ok(view)
    }
}

impl Drop for HostMount {
    fn drop(&mut self) {
        // Best effort: `scripts/testenv down` removes whatever a killed test left.
        let _ = Command::new("umount").arg(&self.mount_point).status();
        let _ = std::fs::remove_dir(&self.mount_point);
        if let Some(device) = &self.own_device {
            let _ = Command::new("losetup").arg("-d").arg(device).status();
        }
    }
}
