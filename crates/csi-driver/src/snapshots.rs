//! The driver's snapshots on disk: `<state>/snapshots/<id>.json` (the record, written last) and
//! `<id>.img` (a sparse copy of the volume's image, taken with its file system frozen when mounted).

use crate::Error;
use crate::store::remove_file;
use crate::volume::FileSystem;
use serde::{Deserialize, Serialize};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// One snapshot as the driver keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    /// The snapshot id, also its file names; the name the CO gave (`snapshot-<uid>`).
    pub id: String,
    pub source_volume_id: String,
    pub size_bytes: u64,
    pub file_system: FileSystem,
    /// Seconds since the Unix epoch.
    pub created: i64,
}

#[derive(Debug, Clone)]
pub struct SnapshotStore {
    dir: PathBuf,
}

impl SnapshotStore {
    pub fn open(state_dir: &Path) -> Result<SnapshotStore, Error> {
        let dir = state_dir.join("snapshots");
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(dir.display(), e))?;
        Ok(SnapshotStore { dir })
    }

    pub fn image(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.img"))
    }

    pub fn image_in_progress(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.img.new"))
    }

    fn record(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    pub fn get(&self, id: &str) -> Result<Option<Snapshot>, Error> {
        let path = self.record(id);
        let text = match std::fs::read(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(path.display(), e)),
        };
        serde_json::from_slice(&text)
            .map(Some)
            .map_err(|source| Error::Record {
                path: path.display().to_string(),
                source,
            })
    }

    /// The snapshot, or NOT_FOUND.
    pub fn require(&self, id: &str) -> Result<Snapshot, Error> {
        self.get(id)?
            .ok_or_else(|| Error::NotFound(format!("snapshot {id} does not exist")))
    }

    pub fn put(&self, snapshot: &Snapshot) -> Result<(), Error> {
        let path = self.record(&snapshot.id);
        let next = self.dir.join(format!("{}.json.new", snapshot.id));
        let text = serde_json::to_vec_pretty(snapshot).map_err(|source| Error::Record {
            path: path.display().to_string(),
            source,
        })?;
        std::fs::write(&next, text).map_err(|e| Error::io(next.display(), e))?;
        std::fs::rename(&next, &path).map_err(|e| Error::io(path.display(), e))
    }

    /// Removes a snapshot's files, the record last; one already gone is fine.
    pub fn remove(&self, id: &str) -> Result<(), Error> {
        remove_file(&self.image_in_progress(id))?;
        remove_file(&self.image(id))?;
        remove_file(&self.record(id))
    }
}
