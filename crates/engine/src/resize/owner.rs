//! A StatefulSet another controller owns: the prechecks that accept it only through an owner
//! Ferry knows (or as a plain one, when the request says so), and the steps around the run that
//! pause the owner, write the result into it, let it go and confirm it took it.

mod check;
mod steps;
#[cfg(test)]
mod tests;

pub use check::owner_of;
pub(crate) use steps::{Before, Clock, after_run, again_for_rollback, before_run, recorded_end};
