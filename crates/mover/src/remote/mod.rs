//! Cross-node copies: a mover on the node that holds the old volume serves it (read only) and a
//! mover on the new volume's node pulls it, over mutual TLS with certificates that exist for that
//! one resize. See `serve` and `pull`; `wire` is what they say to each other, `tls` who they trust.

mod changes;
mod check;
mod fetch;
mod files;
mod peer;
pub mod pull;
pub mod serve;
mod standby;
mod tcp;
pub mod tls;
mod tracked;
pub mod wire;

pub use check::PullVerify;
pub use pull::{PullOptions, pull};
pub use serve::{ServeOptions, ServeReport, serve};
pub use standby::{InterimPulls, standby};
