//! A `VolumeAutoscaler`'s volume policy as the decision reads it, defaults applied. The API server
//! validates the same fields (CEL); this refuses what slips past it with the same words.

use super::shrink::Shrink;
use super::{Increase, Policy, Provider};
use ferry_api::{AutoscaledVolume, ProviderPreset, ShrinkPolicy, parse_bytes};

fn quantity(field: &str, text: &str) -> Result<u64, String> {
    parse_bytes(text).map_err(|error| format!("{field}: {error}"))
}

fn percent(field: &str, value: Option<i32>, default: u8) -> Result<u8, String> {
    match value {
        None => Ok(default),
        Some(value @ 1..=99) => u8::try_from(value).map_err(|_| format!("{field}: {value} is not 1-99")),
        Some(value) => Err(format!("{field} must be a percent from 1 to 99, not {value}")),
    }
}

pub fn from_spec(volume: &AutoscaledVolume) -> Result<Policy, String> {
    let increase = match volume.increase.as_deref() {
        None => Policy::DEFAULT_INCREASE,
        Some(text) => match text.strip_suffix('%') {
            Some(number) => match number.parse::<u32>() {
                Ok(value) if value > 0 => Increase::Percent(value),
                _ => {
                    return Err(format!(
                        "increase must be a percent such as 20% or a positive quantity such as 5Gi, not {text:?}"
                    ));
                }
            },
            None => Increase::Bytes(quantity("increase", text)?),
        },
    };
    let min_increase = volume
        .min_increase
        .as_deref()
        .map(|text| quantity("minIncrease", text))
        .transpose()?;
    let max_increase = volume
        .max_increase
        .as_deref()
        .map(|text| quantity("maxIncrease", text))
        .transpose()?;
    if let (Some(min), Some(max)) = (min_increase, max_increase)
        && min > max
    {
        return Err("minIncrease must not be larger than maxIncrease".to_string());
    }
    let cooldown_seconds = match volume.cooldown.as_deref() {
        None => Policy::DEFAULT_COOLDOWN_SECONDS,
        Some(text) => duration("cooldown", text, "30m, 1h or 1d")?,
    };
    let threshold_percent = percent("threshold", volume.threshold, Policy::DEFAULT_THRESHOLD)?;
    let grow_after_seconds = match volume.grow_after.as_deref() {
        None => 0,
        Some(text) => duration("growAfter", text, "10m")?,
    };
    let shrink = volume
        .shrink
        .as_ref()
        .map(|spec| shrink_from_spec(spec, threshold_percent))
        .transpose()?;
    Ok(Policy {
        threshold_percent,
        inodes_threshold_percent: percent(
            "inodesThreshold",
            volume.inodes_threshold,
            Policy::DEFAULT_INODES_THRESHOLD,
        )?,
        increase,
        min_increase,
        max_increase,
        max_size: quantity("maxSize", &volume.max_size)?,
        cooldown_seconds,
        provider: match volume.provider {
            None | Some(ProviderPreset::Generic) => Provider::Generic,
            Some(ProviderPreset::AwsEbs) => Provider::AwsEbs,
            Some(ProviderPreset::OnePerSixHours) => Provider::OnePerSixHours,
        },
        grow_after_seconds,
        shrink,
    })
}

fn duration(field: &str, text: &str, example: &str) -> Result<i64, String> {
    crate::duration::seconds(text)
        .ok_or_else(|| format!("{field} must be a duration such as {example}, not {text:?}"))
}

/// The shrink policy, defaults applied: `below` < `target` < the grow threshold, so a shrink is
/// neither followed by a grow nor by another shrink.
fn shrink_from_spec(spec: &ShrinkPolicy, threshold_percent: u8) -> Result<Shrink, String> {
    let below_percent = percent("shrink.below", spec.below, Shrink::DEFAULT_BELOW)?;
    let target_percent = percent("shrink.target", spec.target, Shrink::DEFAULT_TARGET)?;
    if below_percent >= target_percent {
        return Err(format!(
            "shrink.below ({below_percent}%) must be less than shrink.target ({target_percent}%)"
        ));
    }
    if target_percent >= threshold_percent {
        return Err(format!(
            "shrink.target ({target_percent}%) must be less than threshold ({threshold_percent}%): a volume shrunk to it would grow again"
        ));
    }
    Ok(Shrink {
        below_percent,
        lasting_seconds: match spec.lasting.as_deref() {
            None => Shrink::DEFAULT_LASTING_SECONDS,
            Some(text) => duration("shrink.for", text, "24h")?,
        },
        target_percent,
        min_size: match spec.min_size.as_deref() {
            None => Shrink::DEFAULT_MIN_SIZE,
            Some(text) => quantity("shrink.minSize", text)?,
        },
        every_seconds: match spec.every.as_deref() {
            None => Shrink::DEFAULT_EVERY_SECONDS,
            Some(text) => duration("shrink.every", text, "7d")?,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn volume(json: serde_json::Value) -> AutoscaledVolume {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn defaults_fill_what_is_not_given() {
        let policy = from_spec(&volume(serde_json::json!({"name": "data", "maxSize": "100Gi"}))).unwrap();
        assert_eq!(policy.threshold_percent, 80);
        assert_eq!(policy.inodes_threshold_percent, 90);
        assert_eq!(policy.increase, Increase::Percent(20));
        assert_eq!(policy.cooldown_seconds, 3600);
        assert_eq!(policy.max_size, 100 << 30);
        assert_eq!(policy.provider, Provider::Generic);
    }

    #[test]
    fn every_field_is_read() {
        let policy = from_spec(&volume(serde_json::json!({
            "name": "data", "maxSize": "1Ti", "threshold": 70, "inodesThreshold": 85,
            "increase": "5Gi", "minIncrease": "1Gi", "maxIncrease": "10Gi", "cooldown": "6h",
            "provider": "aws-ebs",
        })))
        .unwrap();
        assert_eq!(
            policy,
            Policy {
                threshold_percent: 70,
                inodes_threshold_percent: 85,
                increase: Increase::Bytes(5 << 30),
                min_increase: Some(1 << 30),
                max_increase: Some(10 << 30),
                max_size: 1 << 40,
                cooldown_seconds: 6 * 3600,
                provider: Provider::AwsEbs,
                grow_after_seconds: 0,
                shrink: None,
            }
        );
    }

    #[test]
    fn a_shrink_policy_is_read_with_its_defaults() {
        let policy = from_spec(&volume(serde_json::json!({
            "name": "data", "maxSize": "1Ti", "growAfter": "10m", "shrink": {"for": "2h", "minSize": "5Gi"},
        })))
        .unwrap();
        assert_eq!(policy.grow_after_seconds, 600);
        assert_eq!(
            policy.shrink,
            Some(Shrink {
                below_percent: 30,
                lasting_seconds: 7200,
                target_percent: 60,
                min_size: 5 << 30,
                every_seconds: 7 * 86_400,
            })
        );
    }

    #[test]
    fn bad_values_say_which_field() {
        for (json, says) in [
            (serde_json::json!({"name": "d", "maxSize": "lots"}), "maxSize"),
            (
                serde_json::json!({"name": "d", "maxSize": "1Gi", "threshold": 100}),
                "threshold",
            ),
            (
                serde_json::json!({"name": "d", "maxSize": "1Gi", "increase": "0%"}),
                "increase",
            ),
            (
                serde_json::json!({"name": "d", "maxSize": "1Gi", "cooldown": "soon"}),
                "cooldown",
            ),
            (
                serde_json::json!({"name": "d", "maxSize": "1Gi", "minIncrease": "2Gi", "maxIncrease": "1Gi"}),
                "minIncrease must not be larger",
            ),
            (
                serde_json::json!({"name": "d", "maxSize": "1Gi", "growAfter": "a while"}),
                "growAfter",
            ),
            (
                serde_json::json!({"name": "d", "maxSize": "1Gi", "shrink": {"below": 70, "target": 60}}),
                "shrink.below (70%) must be less than shrink.target (60%)",
            ),
            (
                serde_json::json!({"name": "d", "maxSize": "1Gi", "threshold": 50, "shrink": {}}),
                "shrink.target (60%) must be less than threshold (50%)",
            ),
            (
                serde_json::json!({"name": "d", "maxSize": "1Gi", "shrink": {"every": "weekly"}}),
                "shrink.every",
            ),
        ] {
            let error = from_spec(&volume(json)).unwrap_err();
            assert!(error.contains(says), "{error}");
        }
    }
}
