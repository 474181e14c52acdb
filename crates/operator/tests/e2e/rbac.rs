//! The chart grants exactly the permissions docs/rbac.md documents: nothing beyond the table (and
//! nothing the table lists goes missing). That nothing *needed* is missing is shown by every other
//! test here, which runs the operator as the chart's ServiceAccount.

use std::collections::{BTreeMap, BTreeSet};

type Permission = (String, String, String);

fn repo_file(path: &str) -> String {
    let root = ferry_testenv::paths::repo_root();
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|error| panic!("{path}: {error}"))
}

/// (API group, resource, verb) of every rule of the ClusterRoles and Roles in rendered manifests.
pub(crate) fn granted(manifests: &str) -> BTreeSet<Permission> {
    let mut out = BTreeSet::new();
    for document in yaml_serde::Deserializer::from_str(manifests) {
        let value: yaml_serde::Value = serde::Deserialize::deserialize(document).unwrap();
        let kind = value
            .get("kind")
            .and_then(|kind| kind.as_str())
            .unwrap_or_default();
        if kind != "ClusterRole" && kind != "Role" {
            continue;
        }
        for rule in value["rules"].as_sequence().unwrap() {
            let strings = |key: &str| -> Vec<String> {
                rule[key]
                    .as_sequence()
                    .unwrap()
                    .iter()
                    .map(|item| item.as_str().unwrap().to_string())
                    .collect()
            };
            for group in strings("apiGroups") {
                for resource in strings("resources") {
                    for verb in strings("verbs") {
                        assert!(
                            group != "*" && resource != "*" && verb != "*",
                            "a wildcard in {rule:?}"
                        );
                        out.insert((group.clone(), resource.clone(), verb));
                    }
                }
            }
        }
    }
    out
}

/// (API group, resource, verb) of every row of the tables in docs/rbac.md.
fn documented(page: &str) -> BTreeSet<Permission> {
    documented_with_features(page).into_keys().collect()
}

/// Every documented permission, with the chart value of the feature it serves alone (a row whose
/// reason starts "feature `<value>`:"), if any.
fn documented_with_features(page: &str) -> BTreeMap<Permission, Option<String>> {
    let mut out = BTreeMap::new();
    // (Only the permission tables: their first cell is an API group, as `apps` or `""`.)
    for line in page
        .lines()
        .filter(|line| line.starts_with("| `") && !line.starts_with("| `features."))
    {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let group = cells[1].trim_matches('`').replace("\"\"", "");
        let feature = cells[4]
            .strip_prefix("feature `")
            .and_then(|rest| rest.split_once('`'))
            .map(|(value, _)| value.to_string());
        for resource in cells[2].split(',') {
            for verb in cells[3].split(',') {
                out.insert(
                    (
                        group.clone(),
                        resource.trim().trim_matches('`').to_string(),
                        verb.trim().to_string(),
                    ),
                    feature.clone(),
                );
            }
        }
    }
    out
}

#[test]
fn the_cluster_role_grants_only_the_documented_permissions() {
    let granted = granted(&repo_file("deploy/manifests/ferry.yaml"));
    let documented = documented(&repo_file("docs/rbac.md"));
    assert!(granted.len() > 40, "too few permissions parsed: {granted:?}");
    let undocumented: Vec<_> = granted.difference(&documented).collect();
    assert!(
        undocumented.is_empty(),
        "granted by the chart but not in docs/rbac.md: {undocumented:?}"
    );
    let not_granted: Vec<_> = documented.difference(&granted).collect();
    assert!(
        not_granted.is_empty(),
        "in docs/rbac.md but not granted by the chart: {not_granted:?}"
    );
}

/// The chart rendered for a cluster-wide install with `features.<value>=false`.
async fn rendered_without(value: &str) -> String {
    let off = format!("features.{value}=false");
    ferry_testenv::chart::render("ferry", "ferry-system", &["--set", &off])
        .await
        .unwrap()
}

#[tokio::test]
async fn each_switched_off_feature_withholds_exactly_its_rules() {
    let documented = documented_with_features(&repo_file("docs/rbac.md"));
    let features: BTreeSet<&String> = documented.values().flatten().collect();
    assert_eq!(
        features.iter().map(|f| f.as_str()).collect::<Vec<_>>(),
        [
            "autoscale",
            "directGo",
            "extendedStatefulSets",
            "kubeletStats",
            "secretReferences",
            "updateHooks"
        ],
        "the features docs/rbac.md marks"
    );
    // A controller switched off takes the features that only serve it.
    let parts = |feature: &str| -> &[&str] {
        match feature {
            "autoscale" => &["kubeletStats"],
            "extendedStatefulSets" => &["secretReferences", "updateHooks"],
            _ => &[],
        }
    };
    for feature in features {
        let granted = granted(&rendered_without(feature).await);
        let withheld = |only_for: &Option<String>| {
            only_for
                .as_deref()
                .is_some_and(|f| f == feature.as_str() || parts(feature).contains(&f))
        };
        let needed: BTreeSet<Permission> = documented
            .iter()
            .filter(|(_, only_for)| !withheld(only_for))
            .map(|(permission, _)| permission.clone())
            .collect();
        let extra: Vec<_> = granted.difference(&needed).collect();
        assert!(
            extra.is_empty(),
            "with {feature} off the chart still grants {extra:?}"
        );
        let missing: Vec<_> = needed.difference(&granted).collect();
        assert!(
            missing.is_empty(),
            "with {feature} off the chart lacks {missing:?}"
        );
    }
}

#[test]
fn the_table_parser_reads_groups_resources_and_verbs() {
    let page =
        "| `\"\"` | `pods`, `pods/log` | get, list | why |\n| `apps` | `statefulsets` | patch | why |\n";
    let parsed = documented(page);
    assert!(parsed.contains(&("".into(), "pods/log".into(), "list".into())));
    assert!(parsed.contains(&("apps".into(), "statefulsets".into(), "patch".into())));
    assert_eq!(parsed.len(), 5);
    let marked = documented_with_features("| `batch` | `jobs` | get | feature `updateHooks`: hooks |\n");
    assert_eq!(
        marked[&("batch".into(), "jobs".into(), "get".into())].as_deref(),
        Some("updateHooks")
    );
}
