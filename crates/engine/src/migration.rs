//! Fleet migration decisions (a `VolumeMigration`): which StatefulSets of the namespace move from
//! one StorageClass to another, which start now (at most `maxConcurrent` at once, never one another
//! VolumeResize holds), and where each stands, read back from the VolumeResizes the migration
//! made. Pure: the operator observes and carries out.
//!
//! The selection is made once, at the first pass, and kept in status (a StatefulSet that moved is
//! no longer on the old class, and must stay in the list). Each move is an ordinary VolumeResize
//! under a name derived from the migration's UID and the StatefulSet, so a pass repeated after a
//! kill asks for the same one (AlreadyExists) and a StatefulSet is never moved twice by one
//! migration.

pub mod notices;
pub mod observed;
pub mod origin;
pub mod plan;
pub mod select;

#[cfg(test)]
mod tests;

pub use notices::{MigrationNotice, notices};
pub use observed::{ClaimView, Observed, ResizeView, SetView, TemplateView};
pub use plan::{Decision, MigrationAction, plan};
