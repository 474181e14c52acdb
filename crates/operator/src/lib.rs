//! ferry-operator: the controllers that carry out VolumeResizes, the HTTP endpoints for health and
//! metrics, and the CRD generator. Kubernetes I/O lives here; decisions live in `ferry-engine`.

pub mod api_requests;
pub mod autoscale;
pub mod context;
pub mod crd;
pub mod digest_key;
pub mod error;
pub mod events;
pub mod extended;
pub mod features;
pub mod http;
pub mod leader;
pub mod listing;
pub mod metrics;
pub mod migration;
pub use ferry_engine::ordinals;
pub mod resize;
pub mod resize_cache;
pub mod resize_create;
pub mod run;
pub mod secure_metrics;
pub mod shared_secret;
pub mod smoke;
pub mod trigger;
pub mod usage;
pub mod volume_writes;
pub mod watch_backoff;
pub mod watches;
pub mod webhook;
pub mod writes;

pub use error::Error;
pub use run::{Settings, run};
