//! The operator end to end on the real local control plane (`scripts/testenv`): kwok nodes, the
//! real node, the real mover. One test binary for all of it: every binary links kube, tokio and
//! the operator, so one instead of thirteen saves minutes of linking and gigabytes of disk.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

mod alone;
mod api_outage;
mod applied_again;
mod attributes;
mod authors;
mod autoscale;
mod autoscale_autoresizer;
mod autoscale_prometheus;
mod autoscale_shrink;
mod autoscale_usage;
mod autoscaler_validation;
mod availability;
mod blue_green;
mod clone_copy;
mod copy;
mod copy_budget;
mod copy_deleted;
mod copy_killed;
mod copy_offline;
mod copy_progress;
mod copy_refused;
mod copy_rollback;
mod disruption;
mod endpoints;
mod extended;
mod extended_admission;
mod faults;
mod features;
mod in_place;
mod installed;
mod migration;
mod move_node;
mod network_policy;
mod owned;
mod owned_eck;
mod pod_policy;
mod prechecks;
mod pull_secrets;
mod rbac;
mod real_csi;
mod real_node;
mod restricted;
mod reuse_values;
mod secure_metrics;
mod stop_race;
mod timeouts;
mod triggers;
mod update_strategies;
mod validation;
mod webhook_cache;
mod webhook_reach;
mod zoned_kills;
