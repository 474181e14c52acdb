//! Volume usage from a Prometheus that scrapes the kubelets (`kubelet_volume_stats_*`), for
//! clusters that do not grant `nodes/proxy`: one instant query per namespace covers every claim in
//! it. Pure: the operator sends the query and hands the answer here.

use super::Reading;
use super::usage::share;
use serde::Deserialize;
use std::collections::BTreeMap;

const USED: &str = "kubelet_volume_stats_used_bytes";
const CAPACITY: &str = "kubelet_volume_stats_capacity_bytes";
const INODES_USED: &str = "kubelet_volume_stats_inodes_used";
const INODES: &str = "kubelet_volume_stats_inodes";

/// The PromQL instant query for the volume stats of every claim in `namespace` (the kubelet's own
/// labels: `namespace`, `persistentvolumeclaim`).
pub fn query(namespace: &str) -> String {
    let escaped = namespace.replace('\\', "\\\\").replace('"', "\\\"");
    format!(
        "{{__name__=~\"{USED}|{CAPACITY}|{INODES_USED}|{INODES}\",namespace=\"{escaped}\",persistentvolumeclaim!=\"\"}}"
    )
}

/// One series of an instant vector: its labels and its value.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Sample {
    pub metric: BTreeMap<String, String>,
    /// `[unix time, "value"]`, as the HTTP API gives it.
    pub value: (f64, String),
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Answer {
    status: String,
    data: Option<AnswerData>,
    error_type: Option<String>,
    error: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AnswerData {
    result_type: String,
    result: Vec<Sample>,
}

/// The samples of an answer of `/api/v1/query`, or why it holds none (an error the server
/// reported, a body that is not its API's).
pub fn samples(body: &[u8]) -> Result<Vec<Sample>, String> {
    let answer: Answer = serde_json::from_slice(body)
        .map_err(|error| format!("not an answer of Prometheus's HTTP API: {error}"))?;
    if answer.status != "success" {
        return Err(format!(
            "the query failed: {} ({})",
            answer.error.unwrap_or_default(),
            answer.error_type.unwrap_or_default()
        ));
    }
    let data = answer.data.ok_or("a successful answer without data")?;
    if data.result_type != "vector" {
        return Err(format!(
            "an answer of type {} where an instant vector was asked",
            data.result_type
        ));
    }
    Ok(data.result)
}

/// The four figures of one scraped volume (one series set: same labels but the name).
#[derive(Debug, Default)]
struct Series {
    used: Option<u64>,
    capacity: Option<u64>,
    inodes_used: Option<u64>,
    inodes: Option<u64>,
}

/// A sample's value as a whole number, if it is one a volume can have.
fn whole(sample: &Sample) -> Option<u64> {
    let value: f64 = sample.value.1.parse().ok()?;
    (value.is_finite() && value >= 0.0).then(|| value.round() as u64)
}

/// The samples of `namespace` grouped by what scraped them, by claim name.
fn by_claim(samples: &[Sample], namespace: &str) -> BTreeMap<String, Vec<Series>> {
    let mut grouped: BTreeMap<(String, Vec<(String, String)>), Series> = BTreeMap::new();
    for sample in samples {
        let labels = &sample.metric;
        if labels.get("namespace").map(String::as_str) != Some(namespace) {
            continue;
        }
        let (Some(claim), Some(name)) = (labels.get("persistentvolumeclaim"), labels.get("__name__")) else {
            continue;
        };
        let identity = labels
            .iter()
            .filter(|(key, _)| key.as_str() != "__name__")
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        let series = grouped.entry((claim.clone(), identity)).or_default();
        let figure = whole(sample);
        match name.as_str() {
            USED => series.used = figure,
            CAPACITY => series.capacity = figure,
            INODES_USED => series.inodes_used = figure,
            INODES => series.inodes = figure,
            _ => {}
        }
    }
    let mut claims: BTreeMap<String, Vec<Series>> = BTreeMap::new();
    for ((claim, _), series) in grouped {
        claims.entry(claim).or_default().push(series);
    }
    claims
}

/// The readings of the claims given (claim name → replica). A claim no series reports with both
/// used and capacity bytes has no reading (its usage is unknown). A claim reported by several
/// series (two kubelets during a move, two scrape jobs) is read as the fuller, as from the
/// kubelet's summary: growing a little early is safe, missing a full disk is not.
pub fn readings(samples: &[Sample], namespace: &str, claims: &BTreeMap<String, i32>) -> Vec<Reading> {
    let mut found = Vec::new();
    for (claim, series) in by_claim(samples, namespace) {
        let Some(&replica) = claims.get(&claim) else {
            continue;
        };
        let fullest = series
            .iter()
            .filter_map(|s| {
                Some(Reading {
                    replica,
                    used_bytes: s.used?,
                    capacity_bytes: s.capacity?,
                    inodes: s.inodes_used.zip(s.inodes),
                })
            })
            .max_by(|a, b| share(a).total_cmp(&share(b)));
        found.extend(fullest);
    }
    found
}

/// Bytes in use per claim of `namespace` (the fullest series of each), for a dry run's plan.
pub fn used_bytes(samples: &[Sample], namespace: &str) -> BTreeMap<String, u64> {
    by_claim(samples, namespace)
        .into_iter()
        .filter_map(|(claim, series)| Some((claim, series.iter().filter_map(|s| s.used).max()?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample(name: &str, namespace: &str, claim: &str, instance: &str, value: &str) -> serde_json::Value {
        json!({"metric": {"__name__": name, "namespace": namespace, "persistentvolumeclaim": claim,
            "instance": instance, "job": "kubelet"}, "value": [1764252000.123, value]})
    }

    fn answer(result: Vec<serde_json::Value>) -> Vec<u8> {
        serde_json::to_vec(&json!({"status": "success", "data": {"resultType": "vector", "result": result}}))
            .unwrap()
    }

    #[test]
    fn the_query_asks_for_the_four_figures_of_one_namespace() {
        assert_eq!(
            query("apps"),
            r#"{__name__=~"kubelet_volume_stats_used_bytes|kubelet_volume_stats_capacity_bytes|kubelet_volume_stats_inodes_used|kubelet_volume_stats_inodes",namespace="apps",persistentvolumeclaim!=""}"#
        );
        assert!(query(r#"a"b\c"#).contains(r#"namespace="a\"b\\c""#));
    }

    #[test]
    fn each_claim_is_read_from_its_series_and_others_ignored() {
        let body = answer(vec![
            sample(USED, "apps", "data-db-0", "node-a", "9.0e+08"),
            sample(CAPACITY, "apps", "data-db-0", "node-a", "1000000000"),
            sample(INODES_USED, "apps", "data-db-0", "node-a", "10"),
            sample(INODES, "apps", "data-db-0", "node-a", "100"),
            // Capacity unknown: no reading.
            sample(USED, "apps", "data-db-1", "node-b", "5"),
            // Another namespace, and a claim of no replica.
            sample(USED, "other", "data-db-2", "node-b", "5"),
            sample(CAPACITY, "other", "data-db-2", "node-b", "10"),
            sample(USED, "apps", "logs-x", "node-b", "5"),
            sample(CAPACITY, "apps", "logs-x", "node-b", "10"),
        ]);
        let found = samples(&body).unwrap();
        let claims = BTreeMap::from([
            ("data-db-0".to_string(), 0),
            ("data-db-1".to_string(), 1),
            ("data-db-2".to_string(), 2),
        ]);
        assert_eq!(
            readings(&found, "apps", &claims),
            vec![Reading {
                replica: 0,
                used_bytes: 900_000_000,
                capacity_bytes: 1_000_000_000,
                inodes: Some((10, 100)),
            }]
        );
        assert_eq!(
            used_bytes(&found, "apps"),
            BTreeMap::from([
                ("data-db-0".to_string(), 900_000_000),
                ("data-db-1".to_string(), 5),
                ("logs-x".to_string(), 5)
            ])
        );
    }

    #[test]
    fn a_claim_two_series_report_is_read_as_the_fuller_and_never_mixed() {
        // The old node still reports the claim after the replica moved: 840 of 1000 there, 590 of
        // 1000 on the new one. The fuller is taken whole (never used from one, capacity from the other).
        for order in [["node-a", "node-b"], ["node-b", "node-a"]] {
            let figures = |node: &str| match node {
                "node-a" => ("840", "1000"),
                _ => ("590", "1000"),
            };
            let mut result = Vec::new();
            for node in order {
                let (used, capacity) = figures(node);
                result.push(sample(USED, "apps", "data-db-0", node, used));
                result.push(sample(CAPACITY, "apps", "data-db-0", node, capacity));
            }
            let found = samples(&answer(result)).unwrap();
            let claims = BTreeMap::from([("data-db-0".to_string(), 0)]);
            let read = readings(&found, "apps", &claims);
            assert_eq!(read.len(), 1);
            assert_eq!((read[0].used_bytes, read[0].capacity_bytes), (840, 1000));
        }
    }

    #[test]
    fn values_no_volume_can_have_are_no_figures() {
        let found = samples(&answer(vec![
            sample(USED, "apps", "data-db-0", "n", "NaN"),
            sample(CAPACITY, "apps", "data-db-0", "n", "1000"),
            sample(USED, "apps", "data-db-1", "n", "-1"),
            sample(CAPACITY, "apps", "data-db-1", "n", "+Inf"),
        ]))
        .unwrap();
        let claims = BTreeMap::from([("data-db-0".to_string(), 0), ("data-db-1".to_string(), 1)]);
        assert!(readings(&found, "apps", &claims).is_empty());
    }

    #[test]
    fn errors_and_other_answers_say_what_they_are() {
        let failed = json!({"status": "error", "errorType": "bad_data", "error": "parse error at char 3"});
        let message = samples(&serde_json::to_vec(&failed).unwrap()).unwrap_err();
        assert!(
            message.contains("parse error at char 3") && message.contains("bad_data"),
            "{message}"
        );
        let matrix = json!({"status": "success", "data": {"resultType": "matrix", "result": []}});
        assert!(
            samples(&serde_json::to_vec(&matrix).unwrap())
                .unwrap_err()
                .contains("matrix")
        );
        assert!(
            samples(b"<html>login</html>")
                .unwrap_err()
                .contains("not an answer")
        );
    }
}
