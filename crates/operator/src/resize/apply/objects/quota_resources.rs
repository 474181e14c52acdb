//! Compute resources of mover and usage pods where a ResourceQuota of their namespace constrains
//! one their settings leave unset: the API server refuses every pod that does not declare a
//! resource such a quota counts, so each missing one gets a default (a limit equal to the request
//! where the settings give a request, so the pod stays valid).

use k8s_openapi::api::core::v1::ResourceRequirements;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use std::collections::{BTreeMap, BTreeSet};

/// A request filled in for a quota: `cpu`, `memory`.
pub const DEFAULT_REQUESTS: [(&str, &str); 2] = [("cpu", "100m"), ("memory", "128Mi")];
/// A limit filled in for a quota (a mover's memory grows with the entries of the tree it copies:
/// about 300 bytes each).
pub const DEFAULT_LIMITS: [(&str, &str); 2] = [("cpu", "2"), ("memory", "2Gi")];

/// The (kind, resource) a quota's resource name makes every pod declare: `requests.cpu` or
/// `cpu` → (requests, cpu); `limits.memory` → (limits, memory).
fn declared(quota_resource: &str) -> Option<(&'static str, &'static str)> {
    match quota_resource {
        "cpu" | "requests.cpu" => Some(("requests", "cpu")),
        "memory" | "requests.memory" => Some(("requests", "memory")),
        "limits.cpu" => Some(("limits", "cpu")),
        "limits.memory" => Some(("limits", "memory")),
        _ => None,
    }
}

fn default_of(table: &[(&str, &str)], resource: &str) -> Quantity {
    let value = table
        .iter()
        .find(|(name, _)| *name == resource)
        .map_or("0", |(_, v)| v);
    Quantity(value.to_string())
}

/// `resources` with every compute resource the namespace's quotas constrain (their `hard`
/// resource names, `constrained`) declared.
pub fn filled_for_quotas(
    resources: Option<ResourceRequirements>,
    constrained: &BTreeSet<String>,
) -> Option<ResourceRequirements> {
    let needed: BTreeSet<(&str, &str)> = constrained.iter().filter_map(|r| declared(r)).collect();
    if needed.is_empty() {
        return resources;
    }
    let mut resources = resources.unwrap_or_default();
    for (kind, resource) in needed {
        let requests = resources.requests.get_or_insert_with(BTreeMap::new);
        match kind {
            // A limit alone makes the API server default the request to it.
            "requests" => {
                let limited = resources
                    .limits
                    .as_ref()
                    .is_some_and(|l| l.contains_key(resource));
                if !limited && !requests.contains_key(resource) {
                    requests.insert(resource.to_string(), default_of(&DEFAULT_REQUESTS, resource));
                }
            }
            _ => {
                let limit = (requests.get(resource).cloned())
                    .unwrap_or_else(|| default_of(&DEFAULT_LIMITS, resource));
                let limits = resources.limits.get_or_insert_with(BTreeMap::new);
                limits.entry(resource.to_string()).or_insert(limit);
            }
        }
    }
    // An empty map is no declaration: left out.
    if resources.requests.as_ref().is_some_and(BTreeMap::is_empty) {
        resources.requests = None;
    }
    Some(resources)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(v: &str) -> Quantity {
        Quantity(v.to_string())
    }

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn without_a_compute_quota_the_settings_stay_as_they_are() {
        assert_eq!(filled_for_quotas(None, &set(&["requests.storage", "pods"])), None);
    }

    #[test]
    fn each_constrained_resource_the_settings_lack_gets_a_default() {
        let filled = filled_for_quotas(None, &set(&["requests.cpu", "limits.memory", "pods"])).unwrap();
        assert_eq!(filled.requests, Some([("cpu".to_string(), q("100m"))].into()));
        assert_eq!(filled.limits, Some([("memory".to_string(), q("2Gi"))].into()));
    }

    #[test]
    fn a_setting_is_kept_and_a_limit_follows_a_request_given() {
        let given = ResourceRequirements {
            requests: Some([("memory".to_string(), q("4Gi"))].into()),
            limits: Some([("cpu".to_string(), q("500m"))].into()),
            ..ResourceRequirements::default()
        };
        let filled = filled_for_quotas(
            Some(given),
            &set(&["memory", "limits.memory", "cpu", "limits.cpu"]),
        )
        .unwrap();
        // memory: the request given, its limit equal to it (the default 2Gi would be below it);
        // cpu: the limit given, no request added (the API server makes it the limit).
        assert_eq!(filled.requests, Some([("memory".to_string(), q("4Gi"))].into()));
        assert_eq!(
            filled.limits,
            Some([("cpu".to_string(), q("500m")), ("memory".to_string(), q("4Gi"))].into())
        );
    }
}
