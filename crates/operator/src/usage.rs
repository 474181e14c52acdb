//! Where volume usage comes from: the kubelets' summaries (`summaries`), a Prometheus, the
//! per-key rate limit both share, and the choice between them (`source`).

pub mod per_key;
pub mod prometheus;
pub mod source;
pub mod summaries;
