//! The scripted kill run: an ExtendedStatefulSet with one member per real node's zone, each member a
//! writer on its own volume, is created and then updated blue/green while its operator is killed at
//! random moments (a new one started each time, knowing only what the cluster says). The moments come
//! from a seed the test prints; `FERRY_KILL_SEED=<seed>` replays a run. It never has two members down,
//! each member goes down once for the update, and every write a member acknowledged, under any
//! version, is on the volume it ends on.

use crate::extended::create;
use crate::support::Harness;
use ferry_api::{ExtendedStatefulSet, ExtendedStatefulSetStatus};
use ferry_testenv::fixtures::{bound_volume, claim_directory, wait_ready};
use ferry_testenv::workload::{acknowledged, lost_records, writer_stateful_set};
use ferry_testenv::{CLASS_BLOCK, REAL_ZONES, wait_until};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const APP: &str = "db";

/// Operators live between these many milliseconds: from a kill mid-startup (its watches not yet
/// listed) to one that sees a member's move through a step or two.
const LIFETIME_MS: std::ops::Range<u64> = 200..3_000;

/// The writer's StatefulSet spec with `VERSION` in its environment (a new version's pod template).
fn writer_spec(harness: &Harness, version: &str) -> Value {
    let members = i32::try_from(REAL_ZONES.len()).unwrap();
    let writer = writer_stateful_set(
        APP,
        members,
        &[("data", CLASS_BLOCK, "320Mi")],
        &harness.ns.name,
        64,
        0,
    )
    .unwrap();
    let mut spec = serde_json::to_value(&writer.spec).unwrap();
    spec["template"]["spec"]["containers"][0]["env"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "VERSION", "value": version}));
    spec
}

async fn status(harness: &Harness) -> ExtendedStatefulSetStatus {
    let ests = harness.ns.api::<ExtendedStatefulSet>().get(APP).await.unwrap();
    ests.status.unwrap_or_default()
}

/// Kills the operator and starts a new one after a random lifetime, again and again, until the
/// status says `done`; returns how many times it killed.
async fn kill_at_random_until(
    harness: &mut Harness,
    random: &mut rand::rngs::StdRng,
    seed: u64,
    what: &str,
    seconds: u64,
    done: impl Fn(&ExtendedStatefulSetStatus) -> bool,
) -> usize {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut kills = 0;
    loop {
        let now = status(harness).await;
        if done(&now) {
            return kills;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not within {seconds}s, {kills} kills (FERRY_KILL_SEED={seed}): {now:?}"
        );
        tokio::time::sleep(Duration::from_millis(random.random_range(LIFETIME_MS))).await;
        harness.restart_operator();
        kills += 1;
    }
}

async fn volume_of(harness: &Harness, claim: &str) -> String {
    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    let volumes: Api<PersistentVolume> = Api::all(harness.client.clone());
    bound_volume(&claims, &volumes, claim).await.unwrap().name_any()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zoned_blue_green_update_with_the_operator_killed_at_random_loses_nothing() {
    let seed = std::env::var("FERRY_KILL_SEED")
        .ok()
        .and_then(|seed| seed.parse().ok())
        .unwrap_or_else(rand::random);
    eprintln!("FERRY_KILL_SEED={seed}");
    let mut random = rand::rngs::StdRng::seed_from_u64(seed);
    let mut harness = Harness::start("ests-zoned-kills").await;
    let ests: ExtendedStatefulSet = serde_json::from_value(json!({
        "apiVersion": "ferry.dev/v1alpha1", "kind": "ExtendedStatefulSet",
        "metadata": {"name": APP},
        "spec": {
            "replicas": REAL_ZONES.len(),
            "zones": REAL_ZONES,
            "updateStrategy": {"type": "BlueGreen", "updateWatchTime": "5m"},
            "template": {"spec": writer_spec(&harness, "1")},
        },
    }))
    .unwrap();
    create(&harness, &ests).await;
    let mut kills = kill_at_random_until(&mut harness, &mut random, seed, "version 1 made", 240, |s| {
        s.version == 1 && s.update_step.as_deref() == Some("Done")
    })
    .await;
    let sets = harness.ns.api::<StatefulSet>();
    let mut volumes = Vec::new();
    for index in 0..REAL_ZONES.len() {
        wait_ready(&sets, &format!("{APP}-z{index}-v1"), 1, 180)
            .await
            .unwrap();
        volumes.push(volume_of(&harness, &format!("data-{APP}-z{index}-v1-0")).await);
    }
    // From here on, at most one member down at a time, and each down once.
    harness.watch_disruption(APP, REAL_ZONES.len()).await;

    let update = json!({"spec": {"template": {"spec": writer_spec(&harness, "2")}}});
    harness
        .ns
        .api::<ExtendedStatefulSet>()
        .patch(APP, &PatchParams::default(), &Patch::Merge(&update))
        .await
        .unwrap();
    kills += kill_at_random_until(
        &mut harness,
        &mut random,
        seed,
        "version 2 in every zone",
        420,
        |s| s.version == 2 && s.update_step.as_deref() == Some("Done") && s.handover.is_none(),
    )
    .await;
    eprintln!("the operator killed {kills} times (FERRY_KILL_SEED={seed})");
    assert!(kills >= 5, "killed only {kills} times (FERRY_KILL_SEED={seed})");

    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    let pvs: Api<PersistentVolume> = Api::all(harness.client.clone());
    for (index, volume) in volumes.iter().enumerate() {
        let set = format!("{APP}-z{index}-v2");
        wait_ready(&sets, &set, 1, 120).await.unwrap();
        let claim = format!("data-{set}-0");
        assert_eq!(
            &volume_of(&harness, &claim).await,
            volume,
            "{claim}: the member's own volume (FERRY_KILL_SEED={seed})"
        );
        let pod = format!("{set}-0");
        wait_until(&format!("{pod} to write"), 90, || async {
            (acknowledged(&harness.ns.name, &pod).ok()?.len() > 10).then_some(())
        })
        .await
        .unwrap();
        let dir = claim_directory(&claims, &pvs, &claim).await.unwrap();
        for version in ["v1", "v2"] {
            let writer = format!("{APP}-z{index}-{version}-0");
            assert_eq!(
                lost_records(&harness.ns.name, &writer, &dir).unwrap(),
                Vec::<u64>::new(),
                "{claim}: records {writer} acknowledged are missing (FERRY_KILL_SEED={seed})"
            );
        }
    }
    harness.finish().await;
}
