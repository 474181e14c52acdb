//! kubectl-ferry: the command-line front end of Ferry (`kubectl ferry …`).
//!
//! Pure logic — turning flags into a `VolumeResize` spec, formatting tables, progress and durations,
//! choosing exit codes — lives in small modules with unit tests ([`request`], [`format`], [`render`],
//! [`table`], [`style`], [`exit`]). Talking to Kubernetes lives in [`kube_io`]; the commands that
//! combine both live in [`commands`] and [`watch`].

pub mod args;
pub mod commands;
pub mod completion;
pub mod drain;
pub mod duration;
pub mod exit;
pub mod format;
pub mod import;
pub mod jsonpath;
pub mod kube_io;
pub mod migrate;
pub mod output;
pub mod rate;
pub mod render;
pub mod report;
pub mod request;
pub mod style;
pub mod table;
pub mod version;
pub mod watch;

pub use args::Cli;
pub use exit::{CliError, ExitCode};

/// Annotation asking the operator to roll a VolumeResize back (re-bind the retained old volumes and
/// restore the StatefulSet from its backup).
pub use ferry_api::names::ANNOTATION_ROLLBACK_REQUESTED;

/// Field manager the CLI uses for its writes.
pub const FIELD_MANAGER: &str = "kubectl-ferry";
