//! The real `kubectl-ferry` binary against the local control plane (`scripts/testenv`): every
//! command without the operator, and `plan` / `status --follow` with it. One test binary.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

mod alone;
mod commands;
mod import;
mod import_autoresizer;
mod migrate;
mod owned;
mod report;
mod user_roles;
mod with_operator;
