//! A snapshot as the driver keeps it (`<state>/snapshots/`, see [`crate::store`]): its image is a
//! sparse copy of the volume's, taken with the volume's file system frozen when mounted.

use crate::store::Record;
use crate::volume::FileSystem;
use serde::{Deserialize, Serialize};

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

impl Record for Snapshot {
    const KIND: &'static str = "snapshot";
    const DIR: &'static str = "snapshots";
    fn id(&self) -> &str {
        &self.id
    }
}
