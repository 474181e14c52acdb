use super::*;
use crate::resize_cache::GuardedResize;
use kube::runtime::reflector;
use kube::runtime::watcher::Event;
use serde_json::json;

#[path = "../../tests/common/dashboard.rs"]
mod dashboard;

/// The dashboard has panels for every part of Ferry: fewer queries means it lost some.
const LEAST_QUERIES: usize = 20;
const LEAST_METRICS: usize = 15;

#[test]
fn every_metric_the_dashboard_queries_is_declared_by_a_fresh_operator() {
    let board = dashboard::load().unwrap();
    let queries = dashboard::queries(&board);
    assert!(
        queries.len() >= LEAST_QUERIES,
        "only {} queries: {queries:#?}",
        queries.len()
    );
    let queried = dashboard::series_names(&queries);
    assert!(
        queried.len() >= LEAST_METRICS,
        "only {} metrics: {queried:?}",
        queried.len()
    );
    let exposition = Metrics::default().encode().unwrap();
    let missing = dashboard::missing(&queried, &exposition);
    assert!(
        missing.is_empty(),
        "the dashboard queries {missing:?}, which /metrics does not declare:\n{exposition}"
    );
}

#[test]
fn every_metric_the_chart_alerts_on_is_declared_and_the_downtime_bound_is_a_bucket() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../deploy/helm/ferry/templates/prometheusrule.yaml"
    );
    let rules = std::fs::read_to_string(path).unwrap();
    let queries: Vec<String> = rules
        .lines()
        .skip_while(|line| !line.contains("rules:"))
        .filter(|line| {
            !line.trim_start().starts_with("summary:") && !line.trim_start().starts_with("description:")
        })
        .map(str::to_string)
        .collect();
    let queried = dashboard::series_names(&queries);
    assert!(queried.len() >= 5, "{queried:?}");
    let metrics = Metrics::default();
    // FerryReplicaDownLong subtracts the bucket at the chart's bound (64 by default, printed as
    // `%.1f`): that bucket must exist, with the label text the rule names.
    metrics.replica_downtime.observe(100.0);
    let exposition = metrics.encode().unwrap();
    let missing = dashboard::missing(&queried, &exposition);
    assert!(missing.is_empty(), "the alerts query {missing:?}:\n{exposition}");
    assert!(
        exposition.contains("ferry_replica_downtime_seconds_bucket{le=\"64.0\"} 0"),
        "{exposition}"
    );
}

#[test]
fn the_checker_maps_types_to_scraped_series_and_finds_names_in_queries() {
    let exposition =
        "# HELP ferry_a A.\n# TYPE ferry_a counter\n# TYPE ferry_b histogram\n# TYPE ferry_c gauge\n";
    let declared = dashboard::declared_series(exposition);
    let expected = [
        "ferry_a_total",
        "ferry_b_bucket",
        "ferry_b_count",
        "ferry_b_sum",
        "ferry_c",
    ];
    assert_eq!(declared.iter().map(String::as_str).collect::<Vec<_>>(), expected);
    let queries = [
        "histogram_quantile(0.5, sum by (le) (rate(ferry_b_bucket[5m]))) / ferry_a".to_string(),
        r#"label_values({__name__=~"ferry_c|ferry_d"}, namespace)"#.to_string(),
    ];
    let queried = dashboard::series_names(&queries);
    assert_eq!(
        queried.iter().map(String::as_str).collect::<Vec<_>>(),
        ["ferry_a", "ferry_b_bucket", "ferry_c", "ferry_d"]
    );
    // A counter queried without `_total`, or a metric that does not exist, is missing.
    assert_eq!(dashboard::missing(&queried, exposition), ["ferry_a", "ferry_d"]);
}

#[test]
fn the_dashboard_uses_its_datasource_variable_and_stable_unique_panel_ids() {
    let board = dashboard::load().unwrap();
    assert_eq!(board["schemaVersion"], 39);
    let variables: Vec<&str> = board["templating"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v["name"].as_str())
        .collect();
    assert_eq!(variables, ["datasource", "namespace"]);
    let panels = board["panels"].as_array().unwrap();
    let mut ids: Vec<i64> = panels.iter().map(|p| p["id"].as_i64().unwrap()).collect();
    let count = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), count, "panel ids are unique");
    // Every datasource reference is the variable: no UID of someone's Grafana.
    fn uids(value: &serde_json::Value, found: &mut Vec<String>) {
        match value {
            serde_json::Value::Object(map) => {
                if let Some(uid) = map.get("datasource").and_then(|d| d.get("uid")) {
                    found.push(uid.to_string());
                }
                map.values().for_each(|v| uids(v, found));
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| uids(v, found)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    uids(&board, &mut found);
    assert!(found.len() >= LEAST_QUERIES, "{found:?}");
    assert!(found.iter().all(|uid| uid == "\"${datasource}\""), "{found:?}");
    for panel in panels.iter().filter(|p| p["type"] != "row") {
        assert_eq!(
            panel["datasource"]["uid"], "${datasource}",
            "panel {}",
            panel["title"]
        );
        assert!(
            !panel["targets"].as_array().unwrap().is_empty(),
            "panel {}",
            panel["title"]
        );
    }
}

#[test]
fn a_fresh_operator_declares_every_family_and_does_not_lead_yet() {
    let text = Metrics::default().encode().unwrap();
    for declared in [
        "# TYPE ferry_volume_resizes counter",
        "# TYPE ferry_reconcile_errors counter",
        "# TYPE ferry_prechecks counter",
        "# TYPE ferry_step_duration_seconds histogram",
        "# TYPE ferry_autoscale_usage_ratio gauge",
        "# TYPE ferry_autoscale_resizes counter",
        "# TYPE ferry_autoscale_skipped counter",
        "# TYPE ferry_volume_resizes_in_flight gauge",
        "# TYPE ferry_copy_done_bytes gauge",
        "# TYPE ferry_copy_size_bytes gauge",
    ] {
        assert!(text.contains(declared), "{declared}:\n{text}");
    }
    assert!(text.contains("\nferry_leader 0\n"), "{text}");
    assert!(!text.contains("ferry_volume_resizes_in_flight{"), "{text}");
}

fn resize(namespace: &str, name: &str, status: serde_json::Value) -> VolumeResize {
    serde_json::from_value(json!({
        "apiVersion": "ferry.dev/v1alpha1", "kind": "VolumeResize",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"statefulSetName": "db", "volumes": [{"name": "data", "size": "2Gi"}]},
        "status": status,
    }))
    .unwrap()
}

fn readable(resize: VolumeResize) -> GuardedResize {
    kube::core::DeserializeGuard(Ok(resize))
}

fn copy_row(replica: i32, done: u64, total: u64) -> serde_json::Value {
    json!({
        "replica": replica, "volume": "data", "claimName": format!("data-db-{replica}"),
        "targetSize": "2Gi", "strategy": "Copy", "bytesDone": done, "bytesTotal": total,
    })
}

#[test]
fn resizes_in_the_cache_are_in_flight_with_their_copy_progress_until_they_finish() {
    let metrics = Metrics::default();
    let (store, mut writer) = reflector::store();
    metrics.count_resizes(Resizes::new(vec![store]));
    let copying = resize(
        "a",
        "grow",
        json!({"phase": "Running", "plan": [copy_row(0, 5, 10), copy_row(1, 0, 8)]}),
    );
    writer.apply_watcher_event(&Event::Apply(readable(copying.clone())));
    writer.apply_watcher_event(&Event::Apply(readable(resize("a", "waits", json!({})))));
    // One this Ferry cannot read is in the cache but in no gauge.
    let unreadable: GuardedResize = serde_json::from_value(json!({
        "metadata": {"name": "future", "namespace": "c"},
        "spec": {"statefulSetName": "db", "volumes": "all of them"},
    }))
    .unwrap();
    writer.apply_watcher_event(&Event::Apply(unreadable));
    writer.apply_watcher_event(&Event::Apply(readable(resize(
        "b",
        "done",
        json!({"phase": "Succeeded", "plan": [copy_row(0, 9, 9)]}),
    ))));
    let text = metrics.encode().unwrap();
    for line in [
        r#"ferry_volume_resizes_in_flight{namespace="a",phase="Pending"} 1"#,
        r#"ferry_volume_resizes_in_flight{namespace="a",phase="Running"} 1"#,
        r#"ferry_copy_done_bytes{namespace="a",volume_resize="grow",replica="0",volume="data"} 5"#,
        r#"ferry_copy_size_bytes{namespace="a",volume_resize="grow",replica="0",volume="data"} 10"#,
        r#"ferry_copy_done_bytes{namespace="a",volume_resize="grow",replica="1",volume="data"} 0"#,
        r#"ferry_copy_size_bytes{namespace="a",volume_resize="grow",replica="1",volume="data"} 8"#,
    ] {
        assert!(text.contains(&format!("\n{line}\n")), "{line}:\n{text}");
    }
    assert!(
        !text.contains(r#"namespace="b""#),
        "a finished resize is not shown:\n{text}"
    );
    assert!(!text.contains(r#"namespace="c""#), "{text}");

    // Once it finishes, its series are gone (nothing is kept between scrapes).
    let mut finished = copying;
    if let Some(status) = finished.status.as_mut() {
        status.phase = Some(ferry_api::Phase::Succeeded);
    }
    writer.apply_watcher_event(&Event::Apply(readable(finished)));
    let text = metrics.encode().unwrap();
    assert!(!text.contains("volume_resize=\"grow\""), "{text}");
    assert!(!text.contains("phase=\"Running\""), "{text}");
    assert!(text.contains(r#"ferry_volume_resizes_in_flight{namespace="a",phase="Pending"} 1"#));
}

#[test]
fn the_build_and_the_api_requests_are_exposed() {
    let requests = crate::api_requests::ApiRequests::default();
    let metrics = Metrics::default().with_api_requests(Some(requests.clone()));
    let fresh = metrics.encode().unwrap();
    assert!(fresh.contains("# TYPE ferry_api_requests counter"), "{fresh}");
    assert!(
        fresh.contains(&format!(
            "ferry_build_info{{version=\"{}\"}} 1",
            env!("CARGO_PKG_VERSION")
        )),
        "{fresh}"
    );
    requests
        .get_or_create(&crate::api_requests::VerbLabels { verb: "watch".into() })
        .inc();
    let after = metrics.encode().unwrap();
    assert!(
        after.contains("ferry_api_requests_total{verb=\"watch\"} 1"),
        "{after}"
    );
    let without = Metrics::default().encode().unwrap();
    assert!(
        !without.contains("ferry_api_requests"),
        "no client counts: {without}"
    );
}

#[test]
fn the_exposition_has_this_process_metrics_unprefixed_and_ends_once() {
    let exposition = Metrics::default().encode().unwrap();
    for name in [
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "process_virtual_memory_bytes",
        "process_open_fds",
        "process_max_fds",
        "process_start_time_seconds",
        "process_threads",
    ] {
        let sample = exposition
            .lines()
            .find(|line| line.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} in:\n{exposition}"));
        let value: f64 = sample.rsplit(' ').next().unwrap().parse().unwrap();
        assert!(value > 0.0 || name == "process_cpu_seconds_total", "{sample}");
    }
    assert!(exposition.contains("ferry_build_info{"), "{exposition}");
    assert_eq!(exposition.matches("# EOF").count(), 1);
    assert!(exposition.trim_end().ends_with("# EOF"));
}
