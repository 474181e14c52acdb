//! The migration plan: what moves, what is refused, what is left alone, and the totals. What
//! `-o json|yaml` prints, in camelCase.

use serde::Serialize;

/// How long copying takes: unknown, or seconds; an upper bound when a claim's data in use is not
/// known and its whole size was counted instead.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Estimate {
    pub seconds: Option<u64>,
    pub upper_bound: bool,
}

impl Estimate {
    pub fn exact(seconds: u64) -> Estimate {
        Estimate {
            seconds: Some(seconds),
            upper_bound: false,
        }
    }

    pub fn plus(self, other: Estimate) -> Estimate {
        Estimate {
            seconds: self.seconds.zip(other.seconds).map(|(a, b)| a + b),
            upper_bound: self.upper_bound || other.upper_bound,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MigrationPlan {
    pub from_class: String,
    pub to_class: String,
    pub bytes_per_second: u64,
    pub stateful_sets: Vec<SetMove>,
    pub refused: Vec<Refusal>,
    pub not_handled: Vec<NotHandled>,
    pub notes: Vec<String>,
    pub totals: Totals,
}

/// One StatefulSet that moves: the templates that move and stay, and every replica's claims.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SetMove {
    pub namespace: String,
    pub name: String,
    pub replicas: i32,
    pub moving_templates: Vec<String>,
    pub staying_templates: Vec<StayingTemplate>,
    pub claims: Vec<ClaimMove>,
    pub warnings: Vec<String>,
    pub estimate: Estimate,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StayingTemplate {
    pub name: String,
    /// The class it is on; `None`: no class.
    pub storage_class: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaimMove {
    pub replica: i32,
    pub template: String,
    pub claim: String,
    pub size_bytes: Option<u64>,
    pub bytes_in_use: Option<u64>,
    pub estimate: Estimate,
    /// Why nothing is copied for it, when nothing is.
    pub note: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Refusal {
    pub namespace: String,
    pub name: String,
    pub reasons: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NotHandled {
    pub namespace: String,
    pub claim: String,
    pub reason: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Totals {
    pub stateful_sets: usize,
    pub claims: usize,
    /// The data in use of the claims whose usage is known.
    pub bytes_in_use: u64,
    pub claims_in_use_unknown: usize,
    /// One StatefulSet at a time, one replica at a time.
    pub estimate: Estimate,
}
