//! Volumes with real capacity for the real node: a file system on a loop device over a sparse file,
//! mounted where a `local` PV points. Writing past it fails with ENOSPC, `df` shows its size, and
//! growing it grows the file, the loop device and the file system online, as a cloud disk and the
//! kubelet's node-side expansion do.
//!
//! Growing ext4 online needs CAP_SYS_RESOURCE, which this machine's sandbox does not grant, so
//! volumes that may grow are XFS (`xfs_growfs` needs only CAP_SYS_ADMIN). XFS needs at least
//! 300 MiB; like a cloud disk with a minimum size, a smaller request gets that minimum.
//!
//! Every step checks what is already there first, so a killed agent redoes only what is missing.

use crate::Error;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The file system made on a disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileSystem {
    /// Any size; cannot grow here (see the module docs).
    Ext4,
    /// Grows online; at least [`XFS_MIN_BYTES`].
    Xfs,
}

/// mkfs.xfs refuses smaller file systems.
pub const XFS_MIN_BYTES: u64 = 300 << 20;

impl FileSystem {
    /// The size of the disk made for a request of `bytes`.
    pub fn disk_bytes(self, bytes: u64) -> u64 {
        match self {
            FileSystem::Ext4 => bytes,
            FileSystem::Xfs => bytes.max(XFS_MIN_BYTES),
        }
    }
}

/// Where one volume lives: `<dir>/<name>.img` (the disk) and `<dir>/mounts/<name>` (its file system).
#[derive(Debug, Clone)]
pub struct BlockVolume {
    pub image: PathBuf,
    pub mount: PathBuf,
}

impl BlockVolume {
    pub fn new(dir: &Path, name: &str) -> BlockVolume {
        BlockVolume {
            image: dir.join(format!("{name}.img")),
            mount: dir.join("mounts").join(name),
        }
    }

    /// Creates (or finishes creating) the disk of `bytes` (see [`FileSystem::disk_bytes`]), its
    /// file system, and mounts it.
    pub fn ensure(&self, bytes: u64, file_system: FileSystem) -> Result<(), Error> {
        if let Some(parent) = self.image.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::io(parent.display(), e))?;
        }
        std::fs::create_dir_all(&self.mount).map_err(|e| Error::io(self.mount.display(), e))?;
        if !self.image.exists() {
            let file = std::fs::File::create(&self.image).map_err(|e| Error::io(self.image.display(), e))?;
            file.set_len(file_system.disk_bytes(bytes))
                .map_err(|e| Error::io(self.image.display(), e))?;
        }
        let device = self.attach()?;
        if !has_file_system(&device)? {
            match file_system {
                // No lazy init: the disk is small and its inodes must be ready before the first write.
                FileSystem::Ext4 => run(Command::new("mkfs.ext4")
                    .args([
                        "-q",
                        "-F",
                        "-m",
                        "0",
                        "-E",
                        "lazy_itable_init=0,lazy_journal_init=0",
                    ])
                    .arg(&device))?,
                FileSystem::Xfs => run(Command::new("mkfs.xfs").args(["-q", "-f"]).arg(&device))?,
            };
        }
        if !self.mounted()? {
            run(Command::new("mount").arg(&device).arg(&self.mount))?;
        }
        Ok(())
    }

    /// Grows disk and (XFS) file system to `bytes` while mounted (never shrinks).
    pub fn grow(&self, bytes: u64) -> Result<(), Error> {
        let current = std::fs::metadata(&self.image)
            .map_err(|e| Error::io(self.image.display(), e))?
            .len();
        if bytes > current {
            std::fs::OpenOptions::new()
                .write(true)
                .open(&self.image)
                .and_then(|file| file.set_len(bytes))
                .map_err(|e| Error::io(self.image.display(), e))?;
        }
        let device = self.attach()?;
        run(Command::new("losetup").arg("--set-capacity").arg(&device))?;
        run(Command::new("xfs_growfs").arg(&self.mount))?;
        Ok(())
    }

    /// Unmounts, detaches and deletes the disk, freeing its space.
    pub fn remove(&self) -> Result<(), Error> {
        if self.mounted()? {
            run(Command::new("umount").arg(&self.mount))?;
        }
        if let Some(device) = self.device()? {
            run(Command::new("losetup").arg("-d").arg(&device))?;
        }
        for (path, result) in [
            (&self.image, std::fs::remove_file(&self.image)),
            (&self.mount, std::fs::remove_dir(&self.mount)),
        ] {
            match result {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(Error::io(path.display(), e));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The loop device over the image, attaching one when there is none.
    fn attach(&self) -> Result<String, Error> {
        match self.device()? {
            Some(device) => Ok(device),
            None => new_loop_device(&self.image),
        }
    }

    fn device(&self) -> Result<Option<String>, Error> {
        loop_device(&self.image)
    }

    fn mounted(&self) -> Result<bool, Error> {
        let status = Command::new("mountpoint")
            .arg("-q")
            .arg(&self.mount)
            .status()
            .map_err(|e| Error::io("mountpoint", e))?;
        Ok(status.success())
    }
}

fn has_file_system(device: &str) -> Result<bool, Error> {
    // blkid exits 2 when it finds nothing on the device.
    let output = Command::new("blkid")
        .args(["-p", "-o", "value", "-s", "TYPE", device])
        .output()
        .map_err(|e| Error::io("blkid", e))?;
    Ok(output.status.success() && !output.stdout.is_empty())
}

/// The loop device attached over `image`, if any.
pub(crate) fn loop_device(image: &Path) -> Result<Option<String>, Error> {
    let listed = run(Command::new("losetup")
        .args(["-n", "-O", "NAME", "-j"])
        .arg(image))?;
    Ok(listed
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_string))
}

/// Attaches a new loop device over `image`.
pub(crate) fn new_loop_device(image: &Path) -> Result<String, Error> {
    let device = run(Command::new("losetup").args(["--find", "--show"]).arg(image))?;
    Ok(device.trim().to_string())
}

/// Runs a command, returning its stdout, or its stderr as the error.
pub(crate) fn run(command: &mut Command) -> Result<String, Error> {
    let output = command
        .output()
        .map_err(|e| Error::io(format!("{command:?}"), e))?;
    if !output.status.success() {
        return Err(Error::Setup(format!(
            "{command:?} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}
