//! The copy rate a plan's estimate uses: measured by the copies this namespace already finished
//! (the median of their rows' rates), else the one the user assumed (`--rate`).

use ferry_api::{ChosenStrategy, RowStep, VolumeResize};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    pub bytes_per_second: u64,
    /// How many finished copies measured it; `None`: assumed (`--rate`).
    pub measured_by: Option<usize>,
}

impl Rate {
    pub fn assumed(bytes_per_second: u64) -> Self {
        Rate {
            bytes_per_second,
            measured_by: None,
        }
    }

    /// The median rate of every finished copy among `resizes`, else `assumed`.
    pub fn measured_or(resizes: &[VolumeResize], assumed: u64) -> Self {
        let mut rates: Vec<u64> = resizes
            .iter()
            .filter_map(|resize| resize.status.as_ref())
            .flat_map(|status| status.plan.iter())
            .filter(|row| row.strategy == Some(ChosenStrategy::Copy) && row.step == Some(RowStep::Copied))
            .filter_map(|row| row.bytes_per_second.filter(|rate| *rate > 0))
            .collect();
        if rates.is_empty() {
            return Rate::assumed(assumed);
        }
        rates.sort_unstable();
        Rate {
            bytes_per_second: rates[rates.len() / 2],
            measured_by: Some(rates.len()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn finished(rows: serde_json::Value) -> VolumeResize {
        serde_json::from_value(json!({
            "apiVersion": "ferry.dev/v1alpha1", "kind": "VolumeResize", "metadata": {"name": "r"},
            "spec": {"statefulSetName": "db", "volumes": [{"name": "data", "size": "1Gi"}]},
            "status": {"phase": "Succeeded", "plan": rows},
        }))
        .unwrap()
    }

    #[test]
    fn the_median_of_finished_copies_else_the_assumed_rate() {
        let row = |step: &str, strategy: &str, rate: u64| {
            json!({"replica": 0, "volume": "data", "claimName": "c", "targetSize": "1Gi",
                   "strategy": strategy, "step": step, "bytesPerSecond": rate})
        };
        let resizes = [
            finished(json!([row("Copied", "Copy", 10), row("Copied", "Copy", 30)])),
            finished(json!([
                row("Copied", "Copy", 20),
                row("WarmCopy", "Copy", 999),
                row("Copied", "InPlace", 999)
            ])),
        ];
        assert_eq!(
            Rate::measured_or(&resizes, 5),
            Rate {
                bytes_per_second: 20,
                measured_by: Some(3)
            }
        );
        assert_eq!(Rate::measured_or(&resizes[..0], 5), Rate::assumed(5));
        let unmeasured = [finished(json!([row("Copied", "Copy", 0)]))];
        assert_eq!(Rate::measured_or(&unmeasured, 5), Rate::assumed(5));
    }
}
