//! The seed operator's opt-in, `resize-statefulset-operator/auto-scaled: "true"` on a StatefulSet,
//! stands for a default `VolumeAutoscaler`: every volume claim template with Ferry's default policy
//! (80 % threshold, 90 % inodes, +20 %, 1 h cooldown) and, because growing without a limit is how a
//! runaway log fills a cloud bill, a `maxSize` of ten times the template's size.

use ferry_api::quantity::requested_storage;
use ferry_api::{AutoscaledVolume, VolumeAutoscalerSpec, format_bytes, parse_bytes};
use k8s_openapi::api::apps::v1::StatefulSet;

/// How many times its size a default policy lets a volume grow to.
pub const DEFAULT_MAX_SIZE_FACTOR: u64 = 10;

/// The name of the default `VolumeAutoscaler` of StatefulSet `stateful_set`.
pub fn default_autoscaler_name(stateful_set: &str) -> String {
    let prefix: String = stateful_set.chars().take(240).collect();
    format!("{}-auto-scaled", prefix.trim_end_matches(['-', '.']))
}

/// Whether the annotation's value opts in (`"true"`, any case); anything else opts out.
pub fn opted_in(value: &str) -> bool {
    value.trim().eq_ignore_ascii_case("true")
}

/// The default policy for `sts`, or why it has none (no template with a size).
pub fn default_spec(sts: &StatefulSet) -> Result<VolumeAutoscalerSpec, String> {
    let name = sts.metadata.name.clone().unwrap_or_default();
    let templates = sts
        .spec
        .as_ref()
        .and_then(|spec| spec.volume_claim_templates.as_ref())
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut volumes = Vec::new();
    for template in templates {
        let template_name = template.metadata.name.clone().unwrap_or_default();
        let Some(size) = requested_storage(template.spec.as_ref()) else {
            continue;
        };
        let bytes = parse_bytes(&size.0)
            .map_err(|error| format!("template {template_name:?} asks for {:?}: {error}", size.0))?;
        volumes.push(AutoscaledVolume {
            name: template_name,
            threshold: None,
            inodes_threshold: None,
            increase: None,
            min_increase: None,
            max_increase: None,
            max_size: format_bytes(bytes.saturating_mul(DEFAULT_MAX_SIZE_FACTOR)),
            cooldown: None,
            provider: None,
            strategy: None,
            grow_after: None,
            shrink: None,
        });
    }
    if volumes.is_empty() {
        return Err(format!(
            "StatefulSet {name:?} has no volume claim template with a storage request to autoscale"
        ));
    }
    Ok(VolumeAutoscalerSpec {
        stateful_set_name: Some(name),
        selector: None,
        owner: None,
        volumes,
        maintenance_windows: Vec::new(),
        rescue_outside_windows: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_template_gets_the_default_policy_up_to_ten_times_its_size() {
        let sts: StatefulSet = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "db"},
            "spec": {
                "selector": {}, "serviceName": "db", "template": {},
                "volumeClaimTemplates": [
                    {"metadata": {"name": "data"}, "spec": {"resources": {"requests": {"storage": "1Gi"}}}},
                    {"metadata": {"name": "wal"}, "spec": {"resources": {"requests": {"storage": "300Mi"}}}},
                ],
            },
        }))
        .unwrap();
        let spec = default_spec(&sts).unwrap();
        assert_eq!(spec.stateful_set_name.as_deref(), Some("db"));
        let sizes: Vec<(&str, &str)> = spec
            .volumes
            .iter()
            .map(|v| (v.name.as_str(), v.max_size.as_str()))
            .collect();
        assert_eq!(sizes, vec![("data", "10Gi"), ("wal", "3000Mi")]);
        assert_eq!(default_autoscaler_name("db"), "db-auto-scaled");
    }

    #[test]
    fn a_stateful_set_without_templates_has_no_default_policy() {
        let sts: StatefulSet = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web"},
            "spec": {"selector": {}, "serviceName": "web", "template": {}},
        }))
        .unwrap();
        assert!(
            default_spec(&sts)
                .unwrap_err()
                .contains("no volume claim template")
        );
        assert!(opted_in("True") && !opted_in("false") && !opted_in(""));
    }
}
