//! The chart grants exactly the permissions docs/rbac.md documents, each at its documented scope:
//! nothing beyond the tables, nothing wider (a ClusterRole where the table says a Role, any name
//! where it names some, another namespace), and nothing the tables list goes missing. That nothing
//! *needed* is missing is shown by every other test here, which runs the operator as the chart's
//! ServiceAccount.

use std::collections::{BTreeMap, BTreeSet};

/// Where a rule holds: everywhere (a ClusterRole bound by a ClusterRoleBinding) or in one
/// namespace (a Role bound by a RoleBinding there).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Scope {
    Cluster,
    Namespace(String),
}

/// One verb on one resource, where it holds and on which names (empty: any name).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Grant {
    group: String,
    resource: String,
    verb: String,
    scope: Scope,
    names: BTreeSet<String>,
}

/// The release every render here is made for.
const RELEASE: &str = "ferry";
const RELEASE_NAMESPACE: &str = "ferry-system";

fn repo_file(path: &str) -> String {
    let root = ferry_testenv::paths::repo_root();
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|error| panic!("{path}: {error}"))
}

fn documents(manifests: &str) -> Vec<yaml_serde::Value> {
    yaml_serde::Deserializer::from_str(manifests)
        .map(|document| serde::Deserialize::deserialize(document).unwrap())
        .filter(|value: &yaml_serde::Value| !value.is_null())
        .collect()
}

fn text<'a>(value: &'a yaml_serde::Value, key: &str) -> &'a str {
    value.get(key).and_then(|v| v.as_str()).unwrap_or_default()
}

fn strings(value: &yaml_serde::Value, key: &str) -> Vec<String> {
    value
        .get(key)
        .and_then(|v| v.as_sequence())
        .map(|items| {
            items
                .iter()
                .map(|item| item.as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Every grant the rendered manifests give a ServiceAccount: each binding's role's rules, at the
/// binding's scope (a role no binding names grants nothing).
pub(crate) fn granted(manifests: &str) -> BTreeSet<Grant> {
    let documents = documents(manifests);
    let kind = |document: &yaml_serde::Value| text(document, "kind").to_string();
    // Roles by (kind, namespace, name); a ClusterRole has no namespace.
    let mut roles: BTreeMap<(String, String, String), &yaml_serde::Value> = BTreeMap::new();
    for document in &documents {
        if kind(document) == "ClusterRole" || kind(document) == "Role" {
            let metadata = &document["metadata"];
            let key = (
                kind(document),
                text(metadata, "namespace").to_string(),
                text(metadata, "name").to_string(),
            );
            roles.insert(key, document);
        }
    }
    let mut out = BTreeSet::new();
    for binding in &documents {
        let scope = match kind(binding).as_str() {
            "ClusterRoleBinding" => Scope::Cluster,
            "RoleBinding" => Scope::Namespace(text(&binding["metadata"], "namespace").to_string()),
            _ => continue,
        };
        let service_account = binding["subjects"]
            .as_sequence()
            .unwrap()
            .iter()
            .any(|subject| text(subject, "kind") == "ServiceAccount");
        if !service_account {
            continue;
        }
        let role_kind = text(&binding["roleRef"], "kind").to_string();
        let role_namespace = match (&scope, role_kind.as_str()) {
            (Scope::Namespace(namespace), "Role") => namespace.clone(),
            _ => String::new(),
        };
        let key = (
            role_kind,
            role_namespace,
            text(&binding["roleRef"], "name").to_string(),
        );
        let role = roles
            .get(&key)
            .unwrap_or_else(|| panic!("a binding to a role not rendered: {key:?}"));
        for rule in role["rules"].as_sequence().unwrap() {
            let names: BTreeSet<String> = strings(rule, "resourceNames").into_iter().collect();
            for group in strings(rule, "apiGroups") {
                for resource in strings(rule, "resources") {
                    for verb in strings(rule, "verbs") {
                        assert!(
                            group != "*" && resource != "*" && verb != "*",
                            "a wildcard in {rule:?}"
                        );
                        out.insert(Grant {
                            group: group.clone(),
                            resource: resource.clone(),
                            verb,
                            scope: scope.clone(),
                            names: names.clone(),
                        });
                    }
                }
            }
        }
    }
    out
}

/// One row of docs/rbac.md's permission tables, one verb of it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Documented {
    group: String,
    resource: String,
    verb: String,
    /// `watched` (the watched namespaces: everywhere, or a Role in each listed one), `cluster`
    /// (cluster-scoped objects: always a ClusterRole) or `release` (a Role in the release's own
    /// namespace).
    scope: String,
    /// `<release>` and `<webhook>` stand for the release's and its webhook configurations' names.
    names: BTreeSet<String>,
    /// The chart value of the feature it serves alone (a reason starting "feature `<value>`:").
    feature: Option<String>,
    /// Granted only with `metrics.secure` (a reason starting "with `metrics.secure`:"), which is
    /// off by default.
    secure_metrics: bool,
}

/// Every verb of every row of the permission tables of docs/rbac.md.
fn documented(page: &str) -> Vec<Documented> {
    let mut out = Vec::new();
    // (Only the permission tables: their first cell is an API group, as `apps` or `""`.)
    for line in page
        .lines()
        .filter(|line| line.starts_with("| `") && !line.starts_with("| `features."))
    {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        assert!(cells.len() >= 8, "a table row without scope and names: {line}");
        let list = |cell: &str| -> Vec<String> {
            cell.split(',')
                .map(|item| item.trim().trim_matches('`').to_string())
                .filter(|item| !item.is_empty())
                .collect()
        };
        let group = cells[1].trim_matches('`').replace("\"\"", "");
        let scope = cells[4].trim_matches('`').to_string();
        assert!(
            ["watched", "cluster", "release"].contains(&scope.as_str()),
            "scope {scope:?} in: {line}"
        );
        let names: BTreeSet<String> = match cells[5] {
            "any" => BTreeSet::new(),
            named => list(named).into_iter().collect(),
        };
        let feature = cells[6]
            .strip_prefix("feature `")
            .and_then(|rest| rest.split_once('`'))
            .map(|(value, _)| value.to_string());
        let secure_metrics = cells[6].starts_with("with `metrics.secure`");
        for resource in list(cells[2]) {
            for verb in list(cells[3]) {
                out.push(Documented {
                    group: group.clone(),
                    resource: resource.clone(),
                    verb,
                    scope: scope.clone(),
                    names: names.clone(),
                    feature: feature.clone(),
                    secure_metrics,
                });
            }
        }
    }
    out
}

/// What `rows` must grant for a release watching `watched` (empty: every namespace).
fn expected(rows: &[&Documented], watched: &[&str]) -> BTreeSet<Grant> {
    let webhook = if watched.is_empty() {
        "ferry".to_string()
    } else {
        format!("ferry.{}", watched.join("."))
    };
    let mut out = BTreeSet::new();
    for row in rows {
        let scopes = match row.scope.as_str() {
            "cluster" => vec![Scope::Cluster],
            "release" => vec![Scope::Namespace(RELEASE_NAMESPACE.into())],
            _ if watched.is_empty() => vec![Scope::Cluster],
            _ => watched
                .iter()
                .map(|namespace| Scope::Namespace(namespace.to_string()))
                .collect(),
        };
        let names: BTreeSet<String> = row
            .names
            .iter()
            .map(|name| name.replace("<release>", RELEASE).replace("<webhook>", &webhook))
            .collect();
        for scope in scopes {
            out.insert(Grant {
                group: row.group.clone(),
                resource: row.resource.clone(),
                verb: row.verb.clone(),
                scope,
                names: names.clone(),
            });
        }
    }
    out
}

/// What differs between what is granted and what is expected, readably: empty when they agree.
fn differences(granted: &BTreeSet<Grant>, expected: &BTreeSet<Grant>) -> Vec<String> {
    let extra = granted
        .difference(expected)
        .map(|grant| format!("granted but not documented: {grant:?}"));
    let missing = expected
        .difference(granted)
        .map(|grant| format!("documented but not granted: {grant:?}"));
    extra.chain(missing).collect()
}

/// The chart's feature switches and their defaults, from its values.yaml.
fn feature_defaults() -> BTreeMap<String, bool> {
    let values: yaml_serde::Value =
        yaml_serde::from_str(&repo_file("deploy/helm/ferry/values.yaml")).unwrap();
    values["features"]
        .as_mapping()
        .unwrap()
        .iter()
        .map(|(name, on)| (name.as_str().unwrap().to_string(), on.as_bool().unwrap()))
        .collect()
}

/// The features that only serve a controller, switched off with it.
fn parts(feature: &str) -> &'static [&'static str] {
    match feature {
        "autoscale" => &["kubeletStats"],
        "extendedStatefulSets" => &[
            "secretReferences",
            "configMapReferences",
            "updateHooks",
            "blueGreenService",
        ],
        _ => &[],
    }
}

/// The key of [`rows_with`]'s switches that stands for the chart value `metrics.secure` (not a
/// feature: [`switches`] leaves it out).
const SECURE_METRICS: &str = "metrics.secure";

/// The documented rows a release with `on` switched on needs.
fn rows_with<'a>(documented: &'a [Documented], on: &BTreeMap<String, bool>) -> Vec<&'a Documented> {
    let is_on = |feature: &str| {
        on.get(feature).copied().unwrap_or(true)
            && on
                .iter()
                .all(|(controller, &on)| on || !parts(controller).contains(&feature))
    };
    let secure_metrics = on.get(SECURE_METRICS).copied().unwrap_or(false);
    documented
        .iter()
        .filter(|row| row.feature.as_deref().is_none_or(is_on))
        .filter(|row| secure_metrics || !row.secure_metrics)
        .collect()
}

fn assert_agree(granted: &BTreeSet<Grant>, expected: &BTreeSet<Grant>, what: &str) {
    let differences = differences(granted, expected);
    assert!(
        differences.is_empty(),
        "{what}: the chart and docs/rbac.md differ:\n{}",
        differences.join("\n")
    );
}

/// The chart rendered for release `ferry` in `ferry-system` with `values` (`key=value`).
async fn rendered(values: &[String]) -> String {
    let mut args = Vec::new();
    for value in values {
        args.extend(["--set", value.as_str()]);
    }
    ferry_testenv::chart::render(RELEASE, RELEASE_NAMESPACE, &args)
        .await
        .unwrap()
}

fn switches(on: &BTreeMap<String, bool>) -> Vec<String> {
    on.iter()
        .filter(|(feature, _)| feature.as_str() != SECURE_METRICS)
        .map(|(feature, on)| format!("features.{feature}={on}"))
        .collect()
}

#[test]
fn the_default_install_grants_only_the_documented_permissions_at_their_scope() {
    let granted = granted(&repo_file("deploy/manifests/ferry.yaml"));
    let documented = documented(&repo_file("docs/rbac.md"));
    assert!(granted.len() > 40, "too few permissions parsed: {granted:?}");
    let expected = expected(&rows_with(&documented, &feature_defaults()), &[]);
    assert_agree(&granted, &expected, "deploy/manifests/ferry.yaml");
}

/// Rules that reach further than the documented default does not: what a default install grants
/// cluster-wide on Secrets, ConfigMaps, Services and nodes.
#[test]
fn the_default_install_reads_no_secret_and_patches_no_service_or_node_proxy() {
    let granted = granted(&repo_file("deploy/manifests/ferry.yaml"));
    let wide: Vec<&Grant> = granted
        .iter()
        .filter(|grant| grant.names.is_empty() && grant.scope == Scope::Cluster)
        .filter(|grant| {
            matches!(
                (grant.resource.as_str(), grant.verb.as_str()),
                ("secrets", "get" | "list" | "watch" | "patch" | "update")
                    | ("services", "patch" | "update")
                    | ("nodes/proxy", _)
                    | ("configmaps", "list" | "watch")
            )
        })
        .collect();
    assert!(wide.is_empty(), "the default install grants {wide:?}");
}

#[tokio::test]
async fn a_release_watching_namespaces_grants_namespaced_rules_only_there() {
    let documented = documented(&repo_file("docs/rbac.md"));
    let on: BTreeMap<String, bool> = feature_defaults().into_keys().map(|f| (f, true)).collect();
    let mut values = switches(&on);
    values.push("watchNamespaces={team-a,team-b}".into());
    let granted = granted(&rendered(&values).await);
    let expected = expected(&rows_with(&documented, &on), &["team-a", "team-b"]);
    assert_agree(
        &granted,
        &expected,
        "watchNamespaces={team-a,team-b}, every feature on",
    );
}

#[tokio::test]
async fn each_switched_off_feature_withholds_exactly_its_rules() {
    let documented = documented(&repo_file("docs/rbac.md"));
    let defaults = feature_defaults();
    let marked: BTreeSet<&str> = documented
        .iter()
        .filter_map(|row| row.feature.as_deref())
        .collect();
    assert_eq!(
        marked.into_iter().collect::<Vec<_>>(),
        [
            "autoscale",
            "blueGreenService",
            "configMapReferences",
            "directGo",
            "extendedStatefulSets",
            "kubeletStats",
            "secretReferences",
            "updateHooks"
        ],
        "the features docs/rbac.md marks"
    );
    let all_on: BTreeMap<String, bool> = defaults.keys().map(|f| (f.clone(), true)).collect();
    let granted_all = granted(&rendered(&switches(&all_on)).await);
    assert_agree(
        &granted_all,
        &expected(&rows_with(&documented, &all_on), &[]),
        "every feature on",
    );
    for feature in defaults.keys() {
        let mut on = all_on.clone();
        on.insert(feature.clone(), false);
        let granted = granted(&rendered(&switches(&on)).await);
        let expected = expected(&rows_with(&documented, &on), &[]);
        assert_agree(&granted, &expected, &format!("{feature} off, the rest on"));
    }
}

/// `metrics.secure` adds exactly the TokenReview and SubjectAccessReview rules docs/rbac.md
/// lists for it, and the default install grants neither.
#[tokio::test]
async fn a_release_with_secure_metrics_grants_exactly_the_review_rules() {
    let documented = documented(&repo_file("docs/rbac.md"));
    let secure_rows: BTreeSet<&str> = documented
        .iter()
        .filter(|row| row.secure_metrics)
        .map(|row| row.resource.as_str())
        .collect();
    assert_eq!(
        secure_rows.into_iter().collect::<Vec<_>>(),
        ["subjectaccessreviews", "tokenreviews"]
    );
    let mut on = feature_defaults();
    let plain = granted(&rendered(&switches(&on)).await);
    assert_agree(
        &plain,
        &expected(&rows_with(&documented, &on), &[]),
        "metrics.secure off",
    );
    on.insert(SECURE_METRICS.to_string(), true);
    let mut values = switches(&on);
    values.push("metrics.secure=true".into());
    let secure = granted(&rendered(&values).await);
    assert_agree(
        &secure,
        &expected(&rows_with(&documented, &on), &[]),
        "metrics.secure on",
    );
    assert_eq!(secure.len(), plain.len() + 2, "{secure:#?}");
}

const SAMPLE_MANIFESTS: &str = r#"
kind: ClusterRole
metadata: {name: ferry}
rules:
  - {apiGroups: [""], resources: [nodes], verbs: [get]}
---
kind: ClusterRoleBinding
metadata: {name: ferry}
roleRef: {kind: ClusterRole, name: ferry}
subjects: [{kind: ServiceAccount, name: ferry, namespace: ferry-system}]
---
kind: Role
metadata: {name: ferry, namespace: team-a}
rules:
  - {apiGroups: [""], resources: [pods], verbs: [get]}
---
kind: RoleBinding
metadata: {name: ferry, namespace: team-a}
roleRef: {kind: Role, name: ferry}
subjects: [{kind: ServiceAccount, name: ferry, namespace: ferry-system}]
---
kind: Role
metadata: {name: ferry-self, namespace: ferry-system}
rules:
  - {apiGroups: [""], resources: [secrets], resourceNames: [ferry-webhook-ca], verbs: [get]}
---
kind: RoleBinding
metadata: {name: ferry-self, namespace: ferry-system}
roleRef: {kind: Role, name: ferry-self}
subjects: [{kind: ServiceAccount, name: ferry, namespace: ferry-system}]
"#;

const SAMPLE_PAGE: &str = "\
| `\"\"` | `nodes` | get | `cluster` | any | why |
| `\"\"` | `pods` | get | `watched` | any | why |
| `\"\"` | `secrets` | get | `release` | `<release>-webhook-ca` | why |
";

/// The comparison fails for each way a rule can reach further than documented (and each row
/// parses into what the chart would grant).
#[test]
fn a_rule_granted_wider_than_documented_is_caught() {
    let page = documented(SAMPLE_PAGE);
    let rows: Vec<&Documented> = page.iter().collect();
    let expected = expected(&rows, &["team-a"]);
    assert!(differences(&granted(SAMPLE_MANIFESTS), &expected).is_empty());
    for (wider, how) in [
        (
            SAMPLE_MANIFESTS
                .replace(
                    "kind: Role\nmetadata: {name: ferry, namespace: team-a}",
                    "kind: ClusterRole\nmetadata: {name: ferry-pods}",
                )
                .replace(
                    "roleRef: {kind: Role, name: ferry}",
                    "roleRef: {kind: ClusterRole, name: ferry-pods}",
                )
                .replace(
                    "kind: RoleBinding\nmetadata: {name: ferry, namespace: team-a}",
                    "kind: ClusterRoleBinding\nmetadata: {name: ferry-pods}",
                ),
            "a namespaced rule in a ClusterRole",
        ),
        (
            SAMPLE_MANIFESTS.replace("resourceNames: [ferry-webhook-ca], ", ""),
            "a rule's resourceNames dropped",
        ),
        (
            SAMPLE_MANIFESTS.replace("namespace: team-a", "namespace: team-b"),
            "a Role in a namespace not watched",
        ),
        (
            SAMPLE_MANIFESTS.replace(
                "roleRef: {kind: Role, name: ferry}",
                "roleRef: {kind: ClusterRole, name: ferry}",
            ),
            "a RoleBinding to the ClusterRole (its rules in that namespace)",
        ),
    ] {
        let differences = differences(&granted(&wider), &expected);
        assert!(!differences.is_empty(), "not caught: {how}");
    }
}

#[test]
fn the_table_parser_reads_groups_resources_verbs_scope_and_names() {
    let page = "| `\"\"` | `pods`, `pods/log` | get, list | `watched` | any | why |\n\
                | `apps` | `statefulsets` | patch | `cluster` | `a`, `b` | feature `updateHooks`: why |\n";
    let parsed = documented(page);
    assert_eq!(parsed.len(), 5);
    assert!(
        parsed
            .iter()
            .any(|row| row.resource == "pods/log" && row.verb == "list" && row.scope == "watched")
    );
    let named = parsed.iter().find(|row| row.group == "apps").unwrap();
    assert_eq!(named.names, BTreeSet::from(["a".into(), "b".into()]));
    assert_eq!(named.feature.as_deref(), Some("updateHooks"));
}
