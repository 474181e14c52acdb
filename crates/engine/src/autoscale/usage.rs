//! Volume usage from the kubelet's stats summary (`/stats/summary`, read through the API server's
//! node proxy: one request per node covers every pod on it). Pure: the operator fetches it.

use super::Reading;
use serde::Deserialize;
use std::collections::BTreeMap;

/// The part of the kubelet's summary Ferry reads.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    #[serde(default)]
    pub pods: Vec<PodStats>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodStats {
    #[serde(default)]
    pub volume: Vec<VolumeStats>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct VolumeStats {
    pub pvc_ref: Option<ClaimRef>,
    pub used_bytes: Option<u64>,
    pub capacity_bytes: Option<u64>,
    pub inodes_used: Option<u64>,
    pub inodes: Option<u64>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct ClaimRef {
    pub name: String,
    pub namespace: String,
}

/// The readings of the claims given (claim name → replica) in `namespace`. A claim the summary
/// does not report, or reports without bytes, has no reading (its usage is unknown). A claim two
/// pods report (the replica and a pod still being torn down, or one of Ferry's) is read as the
/// fuller of the two: growing a little early is safe, missing a full disk is not.
pub fn readings(summary: &Summary, namespace: &str, claims: &BTreeMap<String, i32>) -> Vec<Reading> {
    let mut found: BTreeMap<i32, Reading> = BTreeMap::new();
    for volume in summary.pods.iter().flat_map(|pod| pod.volume.iter()) {
        let Some(claim) = volume.pvc_ref.as_ref().filter(|c| c.namespace == namespace) else {
            continue;
        };
        let (Some(&replica), Some(used), Some(capacity)) =
            (claims.get(&claim.name), volume.used_bytes, volume.capacity_bytes)
        else {
            continue;
        };
        let reading = Reading {
            replica,
            used_bytes: used,
            capacity_bytes: capacity,
            inodes: volume.inodes_used.zip(volume.inodes),
        };
        let fuller = found
            .get(&replica)
            .is_none_or(|seen| share(&reading) > share(seen));
        if fuller {
            found.insert(replica, reading);
        }
    }
    found.into_values().collect()
}

/// Bytes in use per claim of `namespace` across the summaries (the fullest report of each), for a
/// dry run's plan: a claim two pods report (a replica and one being torn down) counts as the fuller.
pub fn used_bytes<'a>(
    summaries: impl IntoIterator<Item = &'a Summary>,
    namespace: &str,
) -> BTreeMap<String, u64> {
    let mut usage = BTreeMap::new();
    let volumes = summaries
        .into_iter()
        .flat_map(|summary| summary.pods.iter())
        .flat_map(|pod| pod.volume.iter());
    for volume in volumes {
        let (Some(claim), Some(used)) = (volume.pvc_ref.as_ref(), volume.used_bytes) else {
            continue;
        };
        if claim.namespace == namespace {
            let entry = usage.entry(claim.name.clone()).or_insert(0);
            *entry = used.max(*entry);
        }
    }
    usage
}

/// How full a reading says its volume is, comparable across readings (used bytes per total).
pub(super) fn share(reading: &Reading) -> f64 {
    if reading.capacity_bytes == 0 {
        return 0.0;
    }
    reading.used_bytes as f64 / reading.capacity_bytes as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_two_pods_report_is_read_as_the_fuller_whatever_the_order() {
        let claims = BTreeMap::from([("data-db-0".to_string(), 0)]);
        let report = |used: u64| {
            serde_json::json!({"podRef": {"name": "p"}, "volume": [
                {"name": "data", "pvcRef": {"name": "data-db-0", "namespace": "apps"},
                 "usedBytes": used, "capacityBytes": 1000},
            ]})
        };
        for pods in [[report(590), report(840)], [report(840), report(590)]] {
            let summary: Summary = serde_json::from_value(serde_json::json!({"pods": pods})).unwrap();
            let found = readings(&summary, "apps", &claims);
            assert_eq!(found.len(), 1);
            assert_eq!(found[0].used_bytes, 840);
        }
    }

    #[test]
    fn used_bytes_takes_the_fullest_report_across_summaries_and_only_the_namespace() {
        let summary = |pods: serde_json::Value| -> Summary {
            serde_json::from_value(serde_json::json!({"pods": pods})).unwrap()
        };
        let volume = |claim: &str, namespace: &str, used: u64| serde_json::json!({"name": "data", "pvcRef": {"name": claim, "namespace": namespace}, "usedBytes": used});
        let node_a = summary(serde_json::json!([{"volume": [volume("data-db-0", "apps", 590)]}]));
        let node_b = summary(serde_json::json!([
            {"volume": [volume("data-db-0", "apps", 840), volume("data-db-1", "apps", 7)]},
            {"volume": [volume("data-db-0", "elsewhere", 999), {"name": "tmp", "usedBytes": 5}]},
        ]));
        let expected = BTreeMap::from([("data-db-0".to_string(), 840), ("data-db-1".to_string(), 7)]);
        assert_eq!(used_bytes(&[node_a.clone(), node_b.clone()], "apps"), expected);
        assert_eq!(used_bytes(&[node_b, node_a], "apps"), expected);
        assert!(used_bytes(&[], "apps").is_empty());
    }

    #[test]
    fn claims_are_read_from_every_pod_and_others_ignored() {
        let summary: Summary = serde_json::from_value(serde_json::json!({
            "node": {"nodeName": "node-real"},
            "pods": [
                {"podRef": {"name": "db-0"}, "volume": [
                    {"name": "kube-api-access", "usedBytes": 12},
                    {"name": "data", "pvcRef": {"name": "data-db-0", "namespace": "apps"},
                     "usedBytes": 900, "capacityBytes": 1000, "inodesUsed": 10, "inodes": 100},
                ]},
                {"podRef": {"name": "db-1"}, "volume": [
                    {"name": "data", "pvcRef": {"name": "data-db-1", "namespace": "apps"}, "capacityBytes": 1000},
                ]},
                {"podRef": {"name": "other"}, "volume": [
                    {"name": "data", "pvcRef": {"name": "data-db-0", "namespace": "elsewhere"},
                     "usedBytes": 1, "capacityBytes": 1000},
                ]},
            ],
        }))
        .unwrap();
        let claims = BTreeMap::from([("data-db-0".to_string(), 0), ("data-db-1".to_string(), 1)]);
        assert_eq!(
            readings(&summary, "apps", &claims),
            vec![Reading {
                replica: 0,
                used_bytes: 900,
                capacity_bytes: 1000,
                inodes: Some((10, 100)),
            }]
        );
        assert!(readings(&Summary::default(), "apps", &claims).is_empty());
    }
}
