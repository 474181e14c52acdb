//! The messages two movers exchange over their TLS stream, and how they are framed: a big-endian
//! `u32` length, then that many bytes of JSON; a [`Reply::Data`] frame is followed by its raw
//! bytes. One request at a time per connection; each is answered by frames ending in
//! [`Reply::End`] or [`Reply::Failed`].

use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::digest::Manifest;
use crate::meta::EntryMeta;

/// The largest JSON frame either side accepts (a batch of entries or a manifest of millions of
/// files stays far below it; a peer sending more is broken or hostile).
pub const MAX_FRAME: u32 = 1 << 30;
/// How many entries a [`Reply::Entries`] frame carries.
pub const ENTRIES_PER_FRAME: usize = 4096;
/// The most data a [`Reply::Data`] frame carries.
pub const DATA_PER_FRAME: u64 = 1 << 20;

/// What the pulling mover asks of the serving one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Request {
    /// Every entry of the source with its metadata, in path order (as `walk::scan` gives it).
    Tree,
    /// The data of one regular file, as frames of its data segments (holes are not sent).
    Read {
        /// Path relative to the source root.
        #[serde(with = "os_path")]
        rel: PathBuf,
    },
    /// The digest of each [`crate::PIECE`] of one regular file, to fetch only the pieces that
    /// differ from the target's (a large file changed in place).
    Pieces {
        /// Path relative to the source root.
        #[serde(with = "os_path")]
        rel: PathBuf,
    },
    /// Byte ranges (offset, length) of one regular file, as [`Reply::Data`] frames.
    ReadRanges {
        /// Path relative to the source root.
        #[serde(with = "os_path")]
        rel: PathBuf,
        /// The ranges, in order.
        ranges: Vec<(u64, u64)>,
    },
    /// The hash of one regular file's content read now (a file updated in place, verified).
    Hash {
        /// Path relative to the source root.
        #[serde(with = "os_path")]
        rel: PathBuf,
    },
    /// The manifest of the source (every file's content hashed where it lies), for verification.
    Manifest,
    /// The copy is over: the server stops serving.
    Done,
    /// A pass begins (sent before it reads the tree): a server that tracks changes starts a new
    /// segment of its record and answers [`Reply::Marked`] with its id.
    Mark,
    /// The pass that began with `mark` succeeded and left `files` entries and `bytes` of data in
    /// the target: the next pass may visit only what changed since it.
    Passed {
        /// The pass's mark.
        mark: u64,
        /// Entries in the target after it.
        files: u64,
        /// File data in the target after it, in bytes.
        bytes: u64,
    },
    /// The paths changed since the pass that began with `since` (none: the latest pass reported
    /// passed), answered by [`Reply::Changed`], or by [`Reply::Failed`] with why that is not known.
    Changes {
        /// A mark; `None` for the latest one passed.
        since: Option<u64>,
    },
    /// The entries of the source at `visits` and the directories above them (a partial tree, in
    /// path order, as [`Request::Tree`] sends the whole one).
    PartialTree {
        /// What to read.
        visits: Vec<WireVisit>,
    },
}

/// One path a pass over what changed visits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireVisit {
    /// Path relative to the root.
    #[serde(with = "os_path")]
    pub rel: PathBuf,
    /// Everything below it too (it was created, removed or moved).
    pub whole: bool,
    /// A directory here is read whole even if `whole` is not set: the target has no directory
    /// there, so all it holds is new to the target.
    #[serde(default)]
    pub target_lacks_dir: bool,
}

/// One source entry on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireEntry {
    /// Path relative to the root.
    #[serde(with = "os_path")]
    pub rel: PathBuf,
    /// Its metadata.
    pub meta: EntryMeta,
}

/// What the serving mover answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Reply {
    /// A batch of entries of the tree.
    Entries(Vec<WireEntry>),
    /// `len` bytes of the file at offset `at` follow this frame.
    Data {
        /// Offset in the file.
        at: u64,
        /// How many raw bytes follow.
        len: u64,
    },
    /// The source's manifest.
    Manifest(Box<Manifest>),
    /// The digests of a file's pieces (xxh3-128, in order) and its size when they were read.
    Pieces {
        /// The file's size.
        size: u64,
        /// One digest per piece.
        digests: Vec<u128>,
    },
    /// A [`Request::Read`] is answered: the file's size when it was opened, the xxh3-128 of its
    /// content as read (holes as zeros), and whether its inode changed while it was read (then
    /// the content may be torn: a warm pass's next pass copies it again).
    Sent {
        /// The file's size.
        size: u64,
        /// The hash of what was read.
        hash: u128,
        /// Whether the file changed while it was read.
        changed: bool,
    },
    /// A [`Request::Hash`] is answered: the hash of the content and the size and mtime the file
    /// had before it was read.
    Hashed {
        /// The hash of the content.
        hash: u128,
        /// The file's size.
        size: u64,
        /// Its mtime, seconds.
        mtime: i64,
        /// Its mtime, nanoseconds.
        mtime_nsec: i64,
    },
    /// The request is answered (`size`: a file's size for ranges, the entries for a tree).
    End {
        /// The file's size (reads), else 0.
        size: u64,
    },
    /// A [`Request::Mark`] is answered: the new segment's id.
    Marked {
        /// The mark.
        mark: u64,
    },
    /// A [`Request::Changes`] is answered: what to visit, and the totals the target held after
    /// the pass it counts from.
    Changed {
        /// Entries in the target after that pass.
        files: u64,
        /// File data in the target after that pass, in bytes.
        bytes: u64,
        /// The paths changed since, in walk order, none below one visited whole.
        visits: Vec<WireVisit>,
    },
    /// The request failed on the server: `vanished` when the entry is gone or no longer a regular
    /// file (a warm pass tolerates it), else the error.
    Failed {
        /// What went wrong.
        message: String,
        /// Whether the entry is gone or changed type.
        vanished: bool,
    },
}

/// Writes one JSON frame.
pub fn send<T: Serialize>(out: &mut impl Write, message: &T) -> io::Result<()> {
    let json = serde_json::to_vec(message).map_err(io::Error::other)?;
    let len = u32::try_from(json.len())
        .ok()
        .filter(|len| *len <= MAX_FRAME)
        .ok_or_else(|| io::Error::other("frame too large"))?;
    out.write_all(&len.to_be_bytes())?;
    out.write_all(&json)
}

/// Reads one JSON frame; `Ok(None)` when the peer closed the stream before a frame began.
pub fn receive<T: for<'de> Deserialize<'de>>(input: &mut impl Read) -> io::Result<Option<T>> {
    let mut len = [0u8; 4];
    match input.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_be_bytes(len);
    if len > MAX_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a frame of {len} bytes is over the limit"),
        ));
    }
    let mut json = vec![0u8; len as usize];
    input.read_exact(&mut json)?;
    serde_json::from_slice(&json)
        .map(Some)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// Whether `rel` names something inside the root: only plain names, no `..`, no root, not empty
/// unless it is the root itself. The server reads nothing else whatever a peer asks.
pub fn inside_root(rel: &Path) -> bool {
    rel.components().all(|c| matches!(c, Component::Normal(_)))
}

/// Paths as JSON: a string when they are UTF-8 (nearly always), else `{"bytes":[...]}`, so any
/// name a Linux file system holds crosses unchanged.
pub mod os_path {
    use super::*;
    use serde::{Deserializer, Serializer};

    #[derive(Serialize, Deserialize)]
    #[serde(untagged)]
    enum Encoded {
        Text(String),
        Bytes { bytes: Vec<u8> },
    }

    fn encode(path: &Path) -> Encoded {
        match path.to_str() {
            Some(text) => Encoded::Text(text.to_string()),
            None => Encoded::Bytes {
                bytes: path.as_os_str().as_bytes().to_vec(),
            },
        }
    }

    fn decode(encoded: Encoded) -> PathBuf {
        match encoded {
            Encoded::Text(text) => PathBuf::from(text),
            Encoded::Bytes { bytes } => PathBuf::from(OsString::from_vec(bytes)),
        }
    }

    /// Serializes a path.
    pub fn serialize<S: Serializer>(path: &Path, s: S) -> Result<S::Ok, S::Error> {
        encode(path).serialize(s)
    }

    /// Deserializes a path.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<PathBuf, D::Error> {
        Encoded::deserialize(d).map(decode)
    }

    /// The same for an optional path (a symlink's target).
    pub mod option {
        use super::*;

        /// Serializes an optional path.
        pub fn serialize<S: Serializer>(path: &Option<PathBuf>, s: S) -> Result<S::Ok, S::Error> {
            path.as_deref().map(encode).serialize(s)
        }

        /// Deserializes an optional path.
        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<PathBuf>, D::Error> {
            Option::<Encoded>::deserialize(d).map(|e| e.map(decode))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::Kind;

    fn meta(kind: Kind, link: Option<PathBuf>) -> EntryMeta {
        EntryMeta {
            kind,
            perm: 0o4755,
            uid: 1000,
            gid: 1001,
            size: 12,
            mtime: 1_700_000_000,
            mtime_nsec: 123_456_789,
            ctime: 1_700_000_001,
            ctime_nsec: 1,
            atime: 1_700_000_002,
            atime_nsec: 2,
            rdev: 0,
            dev: 5,
            ino: 77,
            nlink: 2,
            blocks: 8,
            link,
            xattrs: vec![(b"user.a".to_vec(), vec![0, 255, 1])],
        }
    }

    #[test]
    fn entries_with_names_that_are_not_utf8_cross_unchanged() {
        let odd = PathBuf::from(OsString::from_vec(vec![b'd', 0xff, b'/', 0xfe]));
        let entries = vec![
            WireEntry {
                rel: PathBuf::from("plain/name.txt"),
                meta: meta(Kind::File, None),
            },
            WireEntry {
                rel: odd.clone(),
                meta: meta(Kind::Symlink, Some(odd.clone())),
            },
        ];
        let mut frames = Vec::new();
        send(&mut frames, &Reply::Entries(entries.clone())).unwrap();
        send(&mut frames, &Reply::End { size: 0 }).unwrap();
        let mut input = frames.as_slice();
        let first: Option<Reply> = receive(&mut input).unwrap();
        assert_eq!(first, Some(Reply::Entries(entries)));
        let second: Option<Reply> = receive(&mut input).unwrap();
        assert_eq!(second, Some(Reply::End { size: 0 }));
        let closed: Option<Reply> = receive(&mut input).unwrap();
        assert_eq!(closed, None);
    }

    #[test]
    fn a_frame_over_the_limit_or_cut_short_is_refused() {
        let mut over = (MAX_FRAME + 1).to_be_bytes().to_vec();
        over.extend_from_slice(b"{}");
        let err = receive::<Request>(&mut over.as_slice()).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        let mut short = 10u32.to_be_bytes().to_vec();
        short.extend_from_slice(b"{\"re");
        assert!(receive::<Request>(&mut short.as_slice()).is_err());
        let mut garbage = 3u32.to_be_bytes().to_vec();
        garbage.extend_from_slice(b"xyz");
        assert!(receive::<Request>(&mut garbage.as_slice()).is_err());
    }

    #[test]
    fn only_names_below_the_root_are_inside_it() {
        assert!(inside_root(Path::new("")));
        assert!(inside_root(Path::new("a/b/c")));
        assert!(!inside_root(Path::new("../etc/passwd")));
        assert!(!inside_root(Path::new("a/../../b")));
        assert!(!inside_root(Path::new("/etc/passwd")));
    }
}
