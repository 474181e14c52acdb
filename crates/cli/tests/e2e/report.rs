//! `kubectl ferry report` on the real node: a writer's volume with a known amount of data is
//! reported with that usage (read from its kubelet's stats), the size that holds it at most 80 %
//! full, and the saving at the price of its class per GiB and month, from a ConfigMap labelled as
//! the chart's `storagePrices` makes it, or from `--price` over it; as a table, JSON and CSV.

use crate::support::{Env, Run};
use ferry_testenv::fixtures::wait_ready;
use ferry_testenv::workload::writer_stateful_set;
use ferry_testenv::{CLASS_BLOCK_FIXED, wait_until};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::PostParams;
use serde_json::{Value, json};

const MI: u64 = 1 << 20;

fn report_of(run: &Run) -> Value {
    assert_eq!(run.code, 0, "{run:?}");
    serde_json::from_str(&run.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_shows_a_volumes_usage_the_size_that_holds_it_and_the_saving_at_its_price() {
    let env = Env::start("cli-report").await;
    let sets: Api<StatefulSet> = env.ns.api();
    // 40 MiB of data on a 96Mi volume.
    let templates = [("data", CLASS_BLOCK_FIXED, "96Mi")];
    let set = writer_stateful_set("db", 1, &templates, &env.ns.name, 40 << 10, 0).unwrap();
    sets.create(&PostParams::default(), &set).await.unwrap();
    wait_ready(&sets, "db", 1, 180).await.unwrap();
    // The chart's storagePrices: 5 a GiB-month on the class.
    let prices: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "ferry-storage-prices", "labels": {"ferry.dev/storage-prices": "true"}},
        "data": {CLASS_BLOCK_FIXED: "5"},
    }))
    .unwrap();
    env.ns
        .api::<ConfigMap>()
        .create(&PostParams::default(), &prices)
        .await
        .unwrap();

    // The kubelet measures volumes now and then: wait until it has the seeded data.
    let report = wait_until("the kubelet to report the seeded data", 120, || async {
        let report = report_of(&env.ferry(&["report", "-o", "json"]).await);
        let used = report["volumes"][0]["usedBytes"].as_u64()?;
        (used >= 40 * MI).then_some(report)
    })
    .await
    .unwrap();
    let rows = report["volumes"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{report:#}");
    let row = &rows[0];
    assert_eq!(row["claim"], "data-db-0");
    assert_eq!(row["statefulSet"], "db");
    assert_eq!(row["storageClass"], CLASS_BLOCK_FIXED);
    assert_eq!(row["sizeBytes"], 96 * MI);
    let used = row["usedBytes"].as_u64().unwrap();
    assert!(used < 96 * MI, "{row:#}");
    // The smallest whole MiB that holds it at most 80 % full.
    let recommended = row["recommendedBytes"].as_u64().unwrap();
    assert_eq!(
        recommended,
        (used * 100).div_ceil(80).div_ceil(MI) * MI,
        "{row:#}"
    );
    assert_eq!(row["pricePerGibMonth"], 5.0);
    let saving = (96 * MI - recommended) as f64 / (1u64 << 30) as f64 * 5.0;
    assert!(
        (row["savingPerMonth"].as_f64().unwrap() - saving).abs() < 1e-9,
        "{row:#}"
    );
    assert!(report["notes"].as_array().unwrap().is_empty(), "{report:#}");

    // --price over the chart's; CSV.
    let csv = env
        .ferry(&[
            "report",
            "--price",
            &format!("{CLASS_BLOCK_FIXED}=10"),
            "-o",
            "csv",
        ])
        .await;
    assert_eq!(csv.code, 0, "{csv:?}");
    let lines: Vec<&str> = csv.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{csv:?}");
    assert!(
        lines[0].starts_with("namespace,statefulSet,claim,storageClass,sizeBytes"),
        "{csv:?}"
    );
    let cells: Vec<&str> = lines[1].split(',').collect();
    assert_eq!(
        cells[..4],
        [env.ns.name.as_str(), "db", "data-db-0", CLASS_BLOCK_FIXED]
    );
    assert_eq!(cells[7], "10.0000", "{csv:?}");

    // The table names it; a price that is not one is refused before anything is read.
    let table = env.ferry(&["report"]).await;
    assert_eq!(table.code, 0, "{table:?}");
    assert!(
        table.stdout.contains("SAVING/MONTH") && table.stdout.contains("data-db-0"),
        "{table:?}"
    );
    let refused = env.ferry(&["report", "--price", "cheap"]).await;
    assert_eq!(refused.code, 2, "{refused:?}");
    assert!(refused.stderr.contains("CLASS=AMOUNT"), "{refused:?}");
    env.finish().await;
}
