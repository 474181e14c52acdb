//! Where volume usage comes from besides the kubelets' summaries (`autoscale::summaries`): a
//! Prometheus, and the per-key rate limit both share.

pub mod per_key;
pub mod prometheus;
