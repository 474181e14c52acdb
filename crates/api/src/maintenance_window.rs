//! A maintenance window, as Ferry's resources that act on their own name it: days of the week, an
//! opening time and a length, in a time zone. Outside every window such a resource starts nothing
//! that stops a replica.

use kube::KubeSchema;
use serde::{Deserialize, Serialize};

/// A day of the week.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, schemars::JsonSchema)]
pub enum Weekday {
    Mon,
    Tue,
    Wed,
    Thu,
    Fri,
    Sat,
    Sun,
}

/// Open from `start` for `duration` on each of `days`, in `timeZone`.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct MaintenanceWindow {
    /// The days it opens on (`Mon` … `Sun`); every day when empty. A window that opens late on
    /// a Sunday and lasts past midnight is open on Monday morning too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 7))]
    pub days: Vec<Weekday>,
    /// When it opens, `HH:MM` on a 24-hour clock in `timeZone`.
    #[schemars(length(max = 5))]
    #[x_kube(validation = Rule::new("self.matches('^([01][0-9]|2[0-3]):[0-5][0-9]$')").message("start must be a time such as 02:30"))]
    pub start: String,
    /// How long it stays open, a duration such as `4h` (at most `7d`).
    #[schemars(length(max = 32))]
    #[x_kube(validation = Rule::new("self.matches('^([0-9]+(s|m|h|d))+$')").message("duration must be a duration such as 4h"))]
    pub duration: String,
    /// An IANA time zone such as `Europe/Berlin` (its daylight saving time included); UTC when
    /// not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub time_zone: Option<String>,
}
