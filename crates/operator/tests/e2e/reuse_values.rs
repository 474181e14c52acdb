//! `helm upgrade --reuse-values` (the upgrade docs/upgrade.md documents) renders the new chart's
//! templates with the release's old values: the old chart's values.yaml under the user's, so every
//! key added since is missing. Rendered that way here without a cluster (`helm template` of this
//! chart with its values.yaml replaced by an old one), the chart must give exactly what it gives
//! with its own defaults under the same values: a missing key reads as its default, so every
//! feature on by default stays on, with its RBAC, and only an explicit `false` switches one off
//! (and one off by default stays off unless the old values switched it on).

use crate::rbac::granted;
use ferry_testenv::chart::{chart_dir, helm_offline, render_chart};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Values for a second render of each kind: the objects off by default on too, so that the keys
/// added to them are read as well.
const ALL_ON: &[&str] = &[
    "--set",
    "namespace.create=true,dashboard.enabled=true,webhook.certificates=cert-manager",
    "--set",
    "metrics.serviceMonitor.enabled=true,metrics.prometheusRule.enabled=true",
];

/// Templates left out of both renders: none now that every template reads its switches through
/// `ferry.feature` (kept for a template that cannot render offline).
const LEFT_OUT: &[&str] = &[];

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/chart")
        .join(name)
}

/// The values.yaml of each older chart a release may have been installed from: the previous
/// chart (the one the installed tests upgrade from) and the chart's first complete version.
async fn old_values() -> Vec<(&'static str, String)> {
    let previous = fixture("ferry-0.1.0-8acf592.tgz");
    let (code, shown, err) = helm_offline(&["show", "values", &previous.to_string_lossy()])
        .await
        .unwrap();
    assert_eq!(code, 0, "helm show values: {err}");
    let first = std::fs::read_to_string(fixture("values-2f6a800.yaml")).unwrap();
    vec![("8acf592", shown), ("2f6a800", first)]
}

fn copy_tree(from: &Path, to: &Path, within: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let path = within.join(entry.file_name());
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target, &path);
        } else if !LEFT_OUT.iter().any(|left_out| path == Path::new(left_out)) {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// This chart (but [`LEFT_OUT`]) copied into `dir`, with `values` as its values.yaml if given.
fn chart_copy(dir: &Path, values: Option<&str>) -> PathBuf {
    let chart = dir.join("ferry");
    copy_tree(&chart_dir(), &chart, Path::new(""));
    if let Some(values) = values {
        std::fs::write(chart.join("values.yaml"), values).unwrap();
    }
    chart
}

/// The chart as `helm upgrade --reuse-values` renders it over a release installed with
/// `old_values`: this chart's templates, the old chart's values.yaml in place of its own.
async fn render_reusing(old_values: &str, extra: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let chart = chart_copy(dir.path(), Some(old_values));
    render_chart(&chart, "ferry", "ferry-system", extra)
        .await
        .unwrap()
}

/// The chart with its own defaults under `old_values` (a fresh install given them; `helm upgrade
/// --reset-then-reuse-values`).
async fn render_fresh(old_values: &str, extra: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let chart = chart_copy(dir.path(), None);
    let values = dir.path().join("old-values.yaml");
    std::fs::write(&values, old_values).unwrap();
    let values = values.to_string_lossy();
    let args = [&["--values", values.as_ref()][..], extra].concat();
    render_chart(&chart, "ferry", "ferry-system", &args)
        .await
        .unwrap()
}

/// Rendered documents by the template they come from (helm's `# Source:` line), in order.
fn by_source(rendered: &str) -> Vec<(String, String)> {
    rendered
        .split("\n---\n")
        .filter_map(|document| {
            let source = document
                .lines()
                .find_map(|line| line.strip_prefix("# Source: "))?
                .to_string();
            Some((source, document.trim().to_string()))
        })
        .collect()
}

/// The lines of `expected` missing from `made` (-) and those only in `made` (+), in order.
fn line_diff(expected: &str, made: &str) -> String {
    let expected_lines: BTreeSet<&str> = expected.lines().collect();
    let made_lines: BTreeSet<&str> = made.lines().collect();
    let gone = expected
        .lines()
        .filter(|line| !made_lines.contains(line))
        .map(|line| format!("-{line}"));
    let added = made
        .lines()
        .filter(|line| !expected_lines.contains(line))
        .map(|line| format!("+{line}"));
    gone.chain(added).collect::<Vec<_>>().join("\n")
}

#[tokio::test]
async fn reuse_values_renders_what_the_new_defaults_render() {
    for (commit, old) in old_values().await {
        for extra in [&[][..], ALL_ON] {
            let fresh = by_source(&render_fresh(&old, extra).await);
            let reused = by_source(&render_reusing(&old, extra).await);
            assert!(fresh.len() > 10, "too few documents: {}", fresh.len());
            for ((_, made), (source, expected)) in reused.iter().zip(&fresh) {
                assert!(
                    made == expected,
                    "with the values of {commit} reused ({extra:?}), {source} differs from the new \
                     defaults' render (-new defaults, +reused):\n{}",
                    line_diff(expected, made)
                );
            }
            assert_eq!(
                reused.iter().map(|(source, _)| source).collect::<Vec<_>>(),
                fresh.iter().map(|(source, _)| source).collect::<Vec<_>>(),
                "with the values of {commit} reused ({extra:?}), other objects than with the new defaults"
            );
        }
    }
}

/// The chart's features on by default, from its values.yaml.
fn default_on_features() -> Vec<String> {
    let values = std::fs::read_to_string(chart_dir().join("values.yaml")).unwrap();
    let values: yaml_serde::Value = yaml_serde::from_str(&values).unwrap();
    let features = values["features"].as_mapping().unwrap();
    let on: Vec<String> = features
        .iter()
        .filter(|(_, on)| on.as_bool() == Some(true))
        .map(|(name, _)| name.as_str().unwrap().to_string())
        .collect();
    assert!(on.len() >= 5, "too few features on by default: {on:?}");
    on
}

/// `directGo` -> `direct-go`: the name `--disable-features` takes.
fn flag_name(feature: &str) -> String {
    let mut out = String::new();
    for c in feature.chars() {
        if c.is_ascii_uppercase() {
            out.push('-');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// The operator's `FERRY_DISABLE_FEATURES` (`--disable-features`) in a render, if set.
fn disabled_features(rendered: &str) -> Option<String> {
    let mut lines = rendered.lines();
    lines.find(|line| line.trim() == "- name: FERRY_DISABLE_FEATURES")?;
    let value = lines.next()?.trim().strip_prefix("value: ")?;
    Some(value.trim_matches('"').to_string())
}

#[tokio::test]
async fn default_on_features_stay_on_with_reuse_values_unless_set_false() {
    let features = default_on_features();
    for (commit, old) in old_values().await {
        let fresh = render_fresh(&old, &[]).await;
        let all_rules = granted(&fresh);
        let reused = render_reusing(&old, &[]).await;
        // Only the features off by default may be off (those the old values set stay as set).
        let off = disabled_features(&reused).unwrap_or_default();
        assert_eq!(
            Some(off.clone()).filter(|off| !off.is_empty()),
            disabled_features(&fresh)
        );
        for feature in &features {
            assert!(
                !off.split(',').any(|flag| flag == flag_name(feature)),
                "with the values of {commit} reused, {feature} (on by default) is off: {off:?}"
            );
        }
        let reused_rules = granted(&reused);
        let missing: BTreeSet<_> = all_rules.difference(&reused_rules).collect();
        assert!(
            missing.is_empty(),
            "with the values of {commit} reused, the chart no longer grants {missing:?}"
        );
        // The mutating webhook of triggers and the policy bounding directGo's attach.
        assert!(
            reused.contains("- name: statefulsets.ferry.dev"),
            "{commit}: no triggers webhook"
        );
        assert!(
            reused.contains("name: ferry-operator-attach\n"),
            "{commit}: no attach policy"
        );
        // An explicit false still switches each one off, its rules with it.
        for feature in &features {
            let off = format!("features.{feature}=false");
            let reused_off = render_reusing(&old, &["--set", &off]).await;
            let flags = disabled_features(&reused_off).unwrap_or_default();
            assert!(
                flags.split(',').any(|flag| flag == flag_name(feature)),
                "with the values of {commit} reused and {off}, the operator's disabled features are {flags:?}"
            );
            let fresh_off = render_fresh(&old, &["--set", &off]).await;
            assert_eq!(
                granted(&reused_off),
                granted(&fresh_off),
                "with the values of {commit} reused and {off}, other rules than a fresh install's"
            );
        }
    }
}

/// `defaultTimeoutSeconds` reaches the operator as `FERRY_DEFAULT_TIMEOUT_SECONDS`; unset, the
/// operator keeps its own default (so an upgrade reusing older values renders the same), and a
/// value that is not a whole number of seconds above zero is refused by the chart's schema.
#[tokio::test]
async fn a_default_timeout_in_the_values_reaches_the_operator_and_a_bad_one_is_refused() {
    let chart = chart_dir();
    let set = render_chart(
        &chart,
        "ferry",
        "ferry-system",
        &["--set", "defaultTimeoutSeconds=120"],
    )
    .await
    .unwrap();
    assert!(
        set.contains("- name: FERRY_DEFAULT_TIMEOUT_SECONDS\n              value: \"120\""),
        "{set}"
    );
    let unset = render_chart(&chart, "ferry", "ferry-system", &[]).await.unwrap();
    assert!(!unset.contains("FERRY_DEFAULT_TIMEOUT_SECONDS"));
    for bad in ["defaultTimeoutSeconds=0", "defaultTimeoutSeconds=ten"] {
        let refused = render_chart(&chart, "ferry", "ferry-system", &["--set", bad]).await;
        let error = refused.expect_err(bad).to_string();
        assert!(error.contains("defaultTimeoutSeconds"), "{bad}: {error}");
    }
}
