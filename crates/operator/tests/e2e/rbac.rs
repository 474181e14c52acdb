//! The chart grants exactly the permissions docs/rbac.md documents: nothing beyond the table (and
//! nothing the table lists goes missing). That nothing *needed* is missing is shown by every other
//! test here, which runs the operator as the chart's ServiceAccount.

use std::collections::BTreeSet;

type Permission = (String, String, String);

fn repo_file(path: &str) -> String {
    let root = ferry_testenv::paths::repo_root();
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|error| panic!("{path}: {error}"))
}

/// (API group, resource, verb) of every rule of the ClusterRoles and Roles in rendered manifests.
fn granted(manifests: &str) -> BTreeSet<Permission> {
    let mut out = BTreeSet::new();
    for document in serde_yaml::Deserializer::from_str(manifests) {
        let value: serde_yaml::Value = serde::Deserialize::deserialize(document).unwrap();
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
    let mut out = BTreeSet::new();
    for line in page.lines().filter(|line| line.starts_with("| `")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let group = cells[1].trim_matches('`').replace("\"\"", "");
        for resource in cells[2].split(',') {
            for verb in cells[3].split(',') {
                out.insert((
                    group.clone(),
                    resource.trim().trim_matches('`').to_string(),
                    verb.trim().to_string(),
                ));
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

#[test]
fn the_table_parser_reads_groups_resources_and_verbs() {
    let page =
        "| `\"\"` | `pods`, `pods/log` | get, list | why |\n| `apps` | `statefulsets` | patch | why |\n";
    let parsed = documented(page);
    assert!(parsed.contains(&("".into(), "pods/log".into(), "list".into())));
    assert!(parsed.contains(&("apps".into(), "statefulsets".into(), "patch".into())));
    assert_eq!(parsed.len(), 5);
}
