//! The driver's records on disk, one directory per kind: `<state>/volumes/` and
//! `<state>/snapshots/`, each entry `<id>.json` (the record, written last when creating and removed
//! last when deleting, so it says the entry is whole) and `<id>.img` (the sparse file holding its
//! bytes). A record is replaced by writing a new file and renaming it, so a killed driver leaves the
//! old record or the new one, never half of one.

use crate::Error;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::io::ErrorKind;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

/// What a [`Store`] keeps: a record named by its id.
pub trait Record: Serialize + DeserializeOwned {
    /// What the CSI spec calls it, for NOT_FOUND messages ("volume", "snapshot").
    const KIND: &'static str;
    /// Its directory under the state directory.
    const DIR: &'static str;
    fn id(&self) -> &str;
}

#[derive(Debug, Clone)]
pub struct Store<T> {
    dir: PathBuf,
    kind: PhantomData<T>,
}

impl<T: Record> Store<T> {
    pub fn open(state_dir: &Path) -> Result<Store<T>, Error> {
        let dir = state_dir.join(T::DIR);
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(dir.display(), e))?;
        Ok(Store {
            dir,
            kind: PhantomData,
        })
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

    pub fn get(&self, id: &str) -> Result<Option<T>, Error> {
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

    /// The record, or NOT_FOUND.
    pub fn require(&self, id: &str) -> Result<T, Error> {
        self.get(id)?
            .ok_or_else(|| Error::NotFound(format!("{} {id} does not exist", T::KIND)))
    }

    pub fn put(&self, record: &T) -> Result<(), Error> {
        let path = self.record(record.id());
        let next = self.dir.join(format!("{}.json.new", record.id()));
        let text = serde_json::to_vec_pretty(record).map_err(|source| Error::Record {
            path: path.display().to_string(),
            source,
        })?;
        std::fs::write(&next, text).map_err(|e| Error::io(next.display(), e))?;
        std::fs::rename(&next, &path).map_err(|e| Error::io(path.display(), e))
    }

    /// Removes an entry: its images, then its record (so a killed driver leaves a record that
    /// still says the entry exists, and the repeated call finishes the job).
    pub fn remove(&self, id: &str) -> Result<(), Error> {
        remove_file(&self.image_in_progress(id))?;
        remove_file(&self.image(id))?;
        remove_file(&self.record(id))
    }

    /// Every record, by id.
    pub fn list(&self) -> Result<Vec<T>, Error> {
        let entries = std::fs::read_dir(&self.dir).map_err(|e| Error::io(self.dir.display(), e))?;
        let mut records = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(self.dir.display(), e))?;
            let name = entry.file_name();
            let Some(id) = name.to_str().and_then(|n| n.strip_suffix(".json")) else {
                continue;
            };
            if let Some(record) = self.get(id)? {
                records.push(record);
            }
        }
        records.sort_by(|a, b| a.id().cmp(b.id()));
        Ok(records)
    }
}

/// Removes a file; one already gone is fine (the call is being repeated).
pub fn remove_file(path: &Path) -> Result<(), Error> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != ErrorKind::NotFound => Err(Error::io(path.display(), e)),
        _ => Ok(()),
    }
}
