//! Live progress of a copy on the real control plane: while a mover runs, the operator reads its
//! progress lines from the pod's log (`pods/log`, served by the test agent as a kubelet would) into
//! status, and from status into the copy-progress gauges; a bandwidth limit slows the mover enough
//! to watch it. Afterwards the step durations are in the metrics and the gauges are gone.

use crate::support;

use ferry_api::{Phase, RowStep, VolumeResize};
use ferry_testenv::CLASS_FIXED;
use ferry_testenv::fixtures::stateful_set;
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use serde_json::json;
use support::Harness;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_copy_shows_live_bytes_and_its_steps_are_timed() {
    let harness = Harness::start("copy-progress").await;
    let seeded = harness
        .seeded(stateful_set("db", 1, CLASS_FIXED, "256Mi"), &["data"], 150)
        .await;
    let spec = json!({
        "statefulSetName": "db",
        "volumes": [{"name": "data", "size": "512Mi"}],
        // About 5 MiB of data at 1 MiB/s: the warm copy runs for several seconds.
        "mover": {"bandwidthLimit": "1Mi"},
    });
    harness.create_resize("copy", spec).await;
    let api = harness.ns.api::<VolumeResize>();

    // Mid-copy: the row shows bytes done, strictly between nothing and everything, with a rate.
    let partial = ferry_testenv::wait_until("live progress of the warm copy", 120, || async {
        let resize = api.get_opt("copy").await.ok().flatten()?;
        let row = resize.status?.plan.into_iter().next()?;
        let (done, total) = (row.bytes_done?, row.bytes_total?);
        (row.step == Some(RowStep::WarmCopy) && done > 0 && done < total).then_some(row)
    })
    .await
    .unwrap();
    assert!(partial.bytes_per_second.unwrap_or(0) > 0, "{partial:?}");
    assert!(partial.step_started_at.is_some(), "{partial:?}");

    // The same progress on /metrics: the replica's copy gauges and the resize in flight, Running.
    let series = format!(
        "{{namespace=\"{}\",volume_resize=\"copy\",replica=\"0\",volume=\"data\"}}",
        harness.ns.name
    );
    let running = format!(
        "\nferry_volume_resizes_in_flight{{namespace=\"{}\",phase=\"Running\"}} 1\n",
        harness.ns.name
    );
    ferry_testenv::wait_until("the copy's progress on /metrics", 60, || async {
        let metrics = harness.metrics().await;
        let value = |name: &str| -> Option<u64> {
            let prefix = format!("{name}{series} ");
            metrics
                .lines()
                .find_map(|l| l.strip_prefix(&prefix))?
                .parse()
                .ok()
        };
        let (done, size) = (value("ferry_copy_done_bytes")?, value("ferry_copy_size_bytes")?);
        (done > 0 && done < size && metrics.contains(&running)).then_some(())
    })
    .await
    .unwrap();

    // The mover was given the limit, and its own log is what status showed.
    let pods = harness.ns.api::<Pod>();
    let movers = pods
        .list(&ListParams::default().labels("ferry.dev/mover-pass=warm"))
        .await
        .unwrap();
    let command = movers.items[0].spec.as_ref().unwrap().containers[0]
        .command
        .clone()
        .unwrap();
    assert!(
        command.windows(2).any(|pair| pair == ["--bwlimit", "1048576"]),
        "{command:?}"
    );

    let resize = harness.wait_terminal("copy", "the copy to finish", 180).await;
    assert_eq!(resize.phase(), Phase::Succeeded, "{:?}", resize.status);
    harness.assert_data_intact(&seeded).await;

    // A finished resize leaves no copy-progress series and is no longer in flight.
    let metrics = ferry_testenv::wait_until("the finished copy off /metrics", 30, || async {
        let metrics = harness.metrics().await;
        (!metrics.contains("volume_resize=\"copy\"") && !metrics.contains(&running)).then_some(metrics)
    })
    .await
    .unwrap();
    for step in [
        "CreatingTarget",
        "WarmCopy",
        "StoppingReplica",
        "FinalSync",
        "Swapping",
    ] {
        let line = format!("ferry_step_duration_seconds_count{{step=\"{step}\"}} ");
        assert!(metrics.contains(&line), "{step} timed: {metrics}");
    }
    // The warm copy took at least the time its bandwidth limit allows.
    let warm_seconds: f64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("ferry_step_duration_seconds_sum{step=\"WarmCopy\"} "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(warm_seconds >= 2.0, "warm copy took {warm_seconds}s");
    harness.finish().await;
}
