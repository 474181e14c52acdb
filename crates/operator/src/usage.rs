//! Where volume usage comes from besides the kubelets' summaries (`autoscale::summaries`): a
//! Prometheus, the per-key rate limit both share, and the choice between them (`source`).

pub mod per_key;
pub mod prometheus;
pub mod source;
