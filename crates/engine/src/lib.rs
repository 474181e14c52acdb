//! ferry-engine: Ferry's pure planners, one folder per controller, each with one entry point:
//! [`resize::plan`], [`autoscale::plan::plan`], [`extended::plan::plan`], [`migration::plan`] and
//! [`trigger::decide`].
//! Each takes what the operator observed and decides the next status and actions. Shared by them:
//! the names Ferry gives ([`names`]), the guarded volume writes of a move by re-binding
//! ([`volume_writes`]), conditions, durations, pods' readiness, history, the default StorageClass
//! ([`storage_classes`]). No I/O: everything here
//! is unit-tested.

pub mod autoscale;
pub mod cluster_support;
pub mod conditions;
pub mod duration;
pub mod extended;
pub mod history;
pub mod kstatus;
pub mod migration;
pub mod names;
pub mod ordinals;
pub mod owners;
pub mod pods;
pub mod resize;
pub mod storage_classes;
pub mod trigger;
pub mod volume_writes;
pub mod webhook_probe;
pub mod windows;
