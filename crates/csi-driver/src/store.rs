//! The driver's volumes on disk: `<state>/volumes/<id>.json` (the record, written last when
//! creating and removed last when deleting, so it says the volume is whole) and `<id>.img` (the
//! sparse file behind its loop device). A record is replaced by writing a new file and renaming it,
//! so a killed driver leaves the old record or the new one, never half of one.

use crate::Error;
use crate::volume::Volume;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

impl Store {
    pub fn open(state_dir: &Path) -> Result<Store, Error> {
        let dir = state_dir.join("volumes");
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(dir.display(), e))?;
        Ok(Store { dir })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn image(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.img"))
    }

    /// Where a new image is made before it is renamed to [`Store::image`].
    pub fn image_in_progress(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.img.new"))
    }

    fn record(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    pub fn get(&self, id: &str) -> Result<Option<Volume>, Error> {
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

    /// The volume, or NOT_FOUND.
    pub fn require(&self, id: &str) -> Result<Volume, Error> {
        self.get(id)?
            .ok_or_else(|| Error::NotFound(format!("volume {id} does not exist")))
    }

    pub fn put(&self, volume: &Volume) -> Result<(), Error> {
        let path = self.record(&volume.id);
        let next = self.dir.join(format!("{}.json.new", volume.id));
        let text = serde_json::to_vec_pretty(volume).map_err(|source| Error::Record {
            path: path.display().to_string(),
            source,
        })?;
        std::fs::write(&next, text).map_err(|e| Error::io(next.display(), e))?;
        std::fs::rename(&next, &path).map_err(|e| Error::io(path.display(), e))
    }

    pub fn remove(&self, id: &str) -> Result<(), Error> {
        remove_file(&self.record(id))
    }

    /// Every volume with a record, by id.
    pub fn list(&self) -> Result<Vec<Volume>, Error> {
        let entries = std::fs::read_dir(&self.dir).map_err(|e| Error::io(self.dir.display(), e))?;
        let mut volumes = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(self.dir.display(), e))?;
            let name = entry.file_name();
            let Some(id) = name.to_str().and_then(|n| n.strip_suffix(".json")) else {
                continue;
            };
            if let Some(volume) = self.get(id)? {
                volumes.push(volume);
            }
        }
        volumes.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(volumes)
    }
}

/// Removes a file; one already gone is fine (the call is being repeated).
pub fn remove_file(path: &Path) -> Result<(), Error> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != ErrorKind::NotFound => Err(Error::io(path.display(), e)),
        _ => Ok(()),
    }
}
