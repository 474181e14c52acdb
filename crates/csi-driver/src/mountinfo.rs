//! The mounts of this mount namespace, from `/proc/self/mountinfo`: which mount points a loop
//! device is mounted at (its staging mount and the bind mounts published to pods).

use crate::Error;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    pub mount_point: PathBuf,
    pub source: String,
    pub fs_type: String,
    /// The per-mount options (`rw,relatime`, `ro,...`).
    pub options: String,
}

impl Mount {
    pub fn read_only(&self) -> bool {
        self.options.split(',').any(|o| o == "ro")
    }
}

pub fn read() -> Result<Vec<Mount>, Error> {
    let path = "/proc/self/mountinfo";
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    Ok(parse(&text))
}

/// The mount at exactly `path`, if any (the last one: it hides those beneath).
pub fn at(path: &Path) -> Result<Option<Mount>, Error> {
    Ok(read()?.into_iter().rev().find(|m| m.mount_point == path))
}

/// Every mount of `source` (e.g. `/dev/loop3`).
pub fn of_source(source: &str) -> Result<Vec<Mount>, Error> {
    Ok(read()?.into_iter().filter(|m| m.source == source).collect())
}

/// Parses mountinfo lines: `36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue`.
pub fn parse(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let (before, after) = line.split_once(" - ")?;
            let fields: Vec<&str> = before.split(' ').collect();
            let mut rest = after.split(' ');
            Some(Mount {
                mount_point: PathBuf::from(unescape(fields.get(4)?)),
                options: (*fields.get(5)?).to_string(),
                fs_type: rest.next()?.to_string(),
                source: unescape(rest.next()?),
            })
        })
        .collect()
}

/// The kernel writes space, tab, newline and backslash in paths as `\040`-style octal escapes.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| bytes[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal {
            Some(digits) => {
                out.push(
                    digits
                        .iter()
                        .fold(0u8, |acc, d| acc.wrapping_mul(8).wrapping_add(d - b'0')),
                );
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_mount_point_source_and_options() {
        let text = "36 35 98:0 / /var/lib/a\\040b rw,noatime master:1 - xfs /dev/loop3 rw,attr2\n\
                    37 35 98:0 / /pods/x/mount ro,relatime shared:5 - xfs /dev/loop3 rw\n\
                    garbage\n";
        let mounts = parse(text);
        assert_eq!(mounts.len(), 2);
        assert_eq!(mounts[0].mount_point, PathBuf::from("/var/lib/a b"));
        assert_eq!(mounts[0].source, "/dev/loop3");
        assert_eq!(mounts[0].fs_type, "xfs");
        assert!(!mounts[0].read_only());
        assert!(mounts[1].read_only());
    }
}
