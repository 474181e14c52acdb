//! A `VolumeAutoscaler`'s volume policy as the decision reads it, defaults applied. The API server
//! validates the same fields (CEL); this refuses what slips past it with the same words.

use super::{Increase, Policy, Provider};
use ferry_api::{AutoscaledVolume, ProviderPreset, parse_bytes};

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
        Some(text) => crate::duration::seconds(text)
            .ok_or_else(|| format!("cooldown must be a duration such as 30m, 1h or 1d, not {text:?}"))?,
    };
    Ok(Policy {
        threshold_percent: percent("threshold", volume.threshold, Policy::DEFAULT_THRESHOLD)?,
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
            }
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
        ] {
            let error = from_spec(&volume(json)).unwrap_err();
            assert!(error.contains(says), "{error}");
        }
    }
}
