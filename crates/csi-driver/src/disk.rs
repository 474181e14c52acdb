//! Loop devices, file systems and mounts: the I/O behind a volume. Every function looks at what is
//! already there first, so a repeated call (after a crash) finishes the job or does nothing.

use crate::Error;
use crate::mountinfo;
use crate::volume::FileSystem;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// Makes a sparse image of `bytes` with a file system on it, from scratch (any earlier attempt at
/// `path` is thrown away: it was never handed out).
pub fn make_image(path: &Path, bytes: u64, file_system: FileSystem) -> Result<(), Error> {
    crate::store::remove_file(path)?;
    let file = std::fs::File::create(path).map_err(|e| Error::io(path.display(), e))?;
    file.set_len(bytes).map_err(|e| Error::io(path.display(), e))?;
    drop(file);
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
            .arg(path))?,
        FileSystem::Xfs => run(Command::new("mkfs.xfs").args(["-q", "-f"]).arg(path))?,
    };
    Ok(())
}

/// Grows the image file to `bytes` (never shrinks it).
pub fn grow_image(path: &Path, bytes: u64) -> Result<(), Error> {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| Error::io(path.display(), e))?;
    let current = file.metadata().map_err(|e| Error::io(path.display(), e))?.len();
    if bytes > current {
        file.set_len(bytes).map_err(|e| Error::io(path.display(), e))?;
    }
    Ok(())
}

/// The loop device over `image`, if one is attached.
pub fn loop_device(image: &Path) -> Result<Option<String>, Error> {
    let output = run(Command::new("losetup")
        .args(["-n", "-O", "NAME", "-j"])
        .arg(image))?;
    Ok(output
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .map(str::to_string))
}

/// Attaches a loop device over `image`, or returns the one attached.
pub fn attach(image: &Path) -> Result<String, Error> {
    if let Some(device) = loop_device(image)? {
        return Ok(device);
    }
    let output = run(Command::new("losetup").args(["--find", "--show"]).arg(image))?;
    Ok(output.trim().to_string())
}

/// Detaches the loop device over `image` and waits until it is gone. While anything still holds
/// the device open (udev probing it after the unmount, a backup tool), `losetup -d` only marks it
/// to detach on last close, so answering at once would let DeleteVolume find it staged.
pub fn detach(image: &Path) -> Result<(), Error> {
    let Some(device) = loop_device(image)? else {
        return Ok(());
    };
    run(Command::new("losetup").arg("-d").arg(&device))?;
    let deadline = Instant::now() + DETACH_WAIT;
    while loop_device(image)?.is_some() {
        if Instant::now() >= deadline {
            return Err(Error::Busy(format!(
                "{device} is still held open {}s after detaching it; the kernel detaches it on last close",
                DETACH_WAIT.as_secs()
            )));
        }
        std::thread::sleep(DETACH_POLL);
    }
    Ok(())
}

/// How long an unstage waits for a held loop device to close before answering "try again".
const DETACH_WAIT: Duration = Duration::from_secs(10);
const DETACH_POLL: Duration = Duration::from_millis(50);

/// Copies an image, keeping it sparse.
pub fn copy_image(source: &Path, target: &Path) -> Result<(), Error> {
    run(Command::new("cp").arg("--sparse=always").arg(source).arg(target)).map(drop)
}

/// Freezes the file system mounted at `mount_point` (writes wait) so a copy of its device is
/// consistent; [`thaw`] lets writes go on.
pub fn freeze(mount_point: &Path) -> Result<(), Error> {
    run(Command::new("fsfreeze").arg("--freeze").arg(mount_point)).map(drop)
}

pub fn thaw(mount_point: &Path) -> Result<(), Error> {
    run(Command::new("fsfreeze").arg("--unfreeze").arg(mount_point)).map(drop)
}

/// Makes the loop device see the image's new size.
pub fn refresh_capacity(device: &str) -> Result<(), Error> {
    run(Command::new("losetup").arg("--set-capacity").arg(device)).map(drop)
}

/// Mounts `device` at `target` (made if missing) unless it is mounted there already.
pub fn mount(device: &str, target: &Path, file_system: FileSystem, options: &[String]) -> Result<(), Error> {
    std::fs::create_dir_all(target).map_err(|e| Error::io(target.display(), e))?;
    if let Some(existing) = mountinfo::at(target)? {
        if existing.source == device {
            return Ok(());
        }
        return Err(Error::FailedPrecondition(format!(
            "{} is already a mount of {}, not of {device}",
            target.display(),
            existing.source
        )));
    }
    let mut command = Command::new("mount");
    command.args(["-t", file_system.name()]);
    let mut options = options.to_vec();
    // A clone or a restored snapshot carries its source's UUID, which XFS refuses to mount twice.
    if file_system == FileSystem::Xfs {
        options.push("nouuid".into());
    }
    if !options.is_empty() {
        command.arg("-o").arg(options.join(","));
    }
    run(command.arg(device).arg(target)).map(drop)
}

/// Bind-mounts `source` at `target` (made if missing), read-only when asked, unless done already.
pub fn bind(source: &Path, target: &Path, read_only: bool) -> Result<(), Error> {
    std::fs::create_dir_all(target).map_err(|e| Error::io(target.display(), e))?;
    if mountinfo::at(target)?.is_none() {
        run(Command::new("mount").arg("--bind").arg(source).arg(target))?;
    }
    if read_only && !mountinfo::at(target)?.is_some_and(|m| m.read_only()) {
        run(Command::new("mount").args(["-o", "remount,bind,ro"]).arg(target))?;
    }
    Ok(())
}

/// Remounts the file system mounted at `mount_point` read-only or writable: the file system
/// itself, so every bind mount of it follows (writes there fail with EROFS).
pub fn remount(mount_point: &Path, read_only: bool) -> Result<(), Error> {
    let mode = if read_only { "remount,ro" } else { "remount,rw" };
    run(Command::new("mount").args(["-o", mode]).arg(mount_point)).map(drop)
}

/// Unmounts whatever is mounted at `target`, if anything.
pub fn unmount(target: &Path) -> Result<(), Error> {
    while mountinfo::at(target)?.is_some() {
        run(Command::new("umount").arg(target))?;
    }
    Ok(())
}

/// Grows the file system mounted at `mount_point` to fill its device.
pub fn grow_file_system(file_system: FileSystem, mount_point: &Path) -> Result<(), Error> {
    match file_system {
        FileSystem::Xfs => run(Command::new("xfs_growfs").arg(mount_point)).map(drop),
        FileSystem::Ext4 => Err(Error::FailedPrecondition(
            "ext4 volumes cannot grow on this machine".into(),
        )),
    }
}

/// What `df` and `df -i` show for the file system at `path`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub total_bytes: u64,
    pub available_bytes: u64,
    pub used_bytes: u64,
    pub total_inodes: u64,
    pub free_inodes: u64,
    pub used_inodes: u64,
}

pub fn usage(path: &Path) -> Result<Usage, Error> {
    let stat = rustix::fs::statvfs(path).map_err(|e| Error::io(path.display(), e.into()))?;
    let block = stat.f_frsize;
    Ok(Usage {
        total_bytes: stat.f_blocks.saturating_mul(block),
        available_bytes: stat.f_bavail.saturating_mul(block),
        used_bytes: stat.f_blocks.saturating_sub(stat.f_bfree).saturating_mul(block),
        total_inodes: stat.f_files,
        free_inodes: stat.f_ffree,
        used_inodes: stat.f_files.saturating_sub(stat.f_ffree),
    })
}

/// Runs a command, returning its stdout, or its stderr as the error.
fn run(command: &mut Command) -> Result<String, Error> {
    let output = command
        .output()
        .map_err(|e| Error::io(format!("{command:?}"), e))?;
    if !output.status.success() {
        return Err(Error::Command(format!(
            "{command:?} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}
