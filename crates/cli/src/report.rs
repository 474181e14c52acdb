//! `kubectl ferry report`: for each StatefulSet volume, what it is given, what it holds, the size
//! that would hold it below the fill the autoscaler aims for, and what that smaller size would
//! save a month at the price per GiB the admin set for its class, largest saving first. Pure:
//! `run.rs` reads the cluster, `render.rs` prints.

pub mod render;
pub mod run;

use ferry_engine::autoscale::{Policy, smallest_size};
use serde::Serialize;
use std::collections::BTreeMap;

const MI: u64 = 1 << 20;
const GI: f64 = (1u64 << 30) as f64;

/// One replica's claim of a StatefulSet, as read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VolumeFacts {
    pub namespace: String,
    pub stateful_set: String,
    pub template: String,
    pub claim: String,
    /// The class it is on (the default resolved), `None`: no class.
    pub storage_class: Option<String>,
    /// Its capacity once bound, else what it requests.
    pub size_bytes: Option<u64>,
    /// The bytes in use its kubelet reports, where one was read.
    pub used_bytes: Option<u64>,
}

/// What the report is made from.
#[derive(Debug, Clone)]
pub struct ReportFacts {
    pub volumes: Vec<VolumeFacts>,
    /// Price per GiB and month, by class.
    pub prices: BTreeMap<String, f64>,
    /// The fullest a recommended size may be (percent): the autoscaler's default threshold.
    pub fill_percent: u8,
    /// Why usage is unknown where it is (e.g. no right to read the kubelets' stats).
    pub notes: Vec<String>,
}

/// One volume's line.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ReportRow {
    pub namespace: String,
    pub stateful_set: String,
    pub claim: String,
    pub storage_class: Option<String>,
    pub size_bytes: Option<u64>,
    pub used_bytes: Option<u64>,
    /// The smallest size (whole MiB) that holds its data below `fillPercent`.
    pub recommended_bytes: Option<u64>,
    /// The class's price per GiB-month, if the admin set one.
    pub price_per_gib_month: Option<f64>,
    /// `(size − recommended)` at that price; 0 where the volume is no bigger than recommended.
    pub saving_per_month: Option<f64>,
}

/// The whole report.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub fill_percent: u8,
    pub volumes: Vec<ReportRow>,
    pub total_size_bytes: u64,
    pub total_used_bytes: u64,
    pub total_recommended_bytes: u64,
    pub total_saving_per_month: f64,
    pub notes: Vec<String>,
}

impl Default for ReportFacts {
    fn default() -> Self {
        ReportFacts {
            volumes: Vec::new(),
            prices: BTreeMap::new(),
            fill_percent: Policy::DEFAULT_THRESHOLD,
            notes: Vec::new(),
        }
    }
}

/// The report: a row per volume, largest saving first (then by namespace, StatefulSet, claim).
pub fn report(facts: &ReportFacts) -> Report {
    let mut volumes: Vec<ReportRow> = facts.volumes.iter().map(|v| row(facts, v)).collect();
    volumes.sort_by(|a, b| {
        let saving = |r: &ReportRow| r.saving_per_month.unwrap_or(0.0);
        saving(b).total_cmp(&saving(a)).then_with(|| {
            (&a.namespace, &a.stateful_set, &a.claim).cmp(&(&b.namespace, &b.stateful_set, &b.claim))
        })
    });
    let sum = |f: fn(&ReportRow) -> Option<u64>| volumes.iter().filter_map(f).sum();
    let mut notes = facts.notes.clone();
    let unpriced: std::collections::BTreeSet<&str> = (volumes.iter())
        .filter(|r| r.price_per_gib_month.is_none())
        .map(|r| r.storage_class.as_deref().unwrap_or("(no class)"))
        .collect();
    if !unpriced.is_empty() {
        notes.push(format!(
            "no price set for {}: no saving shown for their volumes (--price CLASS=AMOUNT, or the chart's storagePrices)",
            unpriced.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    Report {
        fill_percent: facts.fill_percent,
        total_size_bytes: sum(|r| r.size_bytes),
        total_used_bytes: sum(|r| r.used_bytes),
        total_recommended_bytes: sum(|r| r.recommended_bytes),
        total_saving_per_month: volumes.iter().filter_map(|r| r.saving_per_month).sum(),
        volumes,
        notes,
    }
}

fn row(facts: &ReportFacts, volume: &VolumeFacts) -> ReportRow {
    let recommended = volume
        .used_bytes
        .map(|used| smallest_size(used, facts.fill_percent, MI).max(MI));
    let price = (volume.storage_class.as_ref()).and_then(|class| facts.prices.get(class).copied());
    let saving = match (volume.size_bytes, recommended, price) {
        (Some(size), Some(recommended), Some(price)) => {
            Some(size.saturating_sub(recommended) as f64 / GI * price)
        }
        _ => None,
    };
    ReportRow {
        namespace: volume.namespace.clone(),
        stateful_set: volume.stateful_set.clone(),
        claim: volume.claim.clone(),
        storage_class: volume.storage_class.clone(),
        size_bytes: volume.size_bytes,
        used_bytes: volume.used_bytes,
        recommended_bytes: recommended,
        price_per_gib_month: price,
        saving_per_month: saving,
    }
}

#[cfg(test)]
mod tests;
