//! Autoresize on the real node: real XFS volumes filled by real pods, usage read from the real
//! kubelet, grown in place by an ordinary VolumeResize (the operator here polls every 2 s).

use crate::real_node::{assert_nothing_lost, wait_phase, writer_shaped, writer_with};
use crate::support::Harness;
use crate::triggers::kubectl_file;
use ferry_api::names::{LABEL_AUTOSCALER_UID, LABEL_TRIGGER, SEED_ANNOTATION_AUTO_SCALED};
use ferry_api::quantity::requested_storage;
use ferry_api::{Phase, VolumeAutoscaler, VolumeAutoscalerStatus, VolumeResize};
use ferry_testenv::disruption::Allowed;
use ferry_testenv::workload::{BUSYBOX_IMAGE, df_bytes, writer_stateful_set};
use ferry_testenv::{CLASS_BLOCK, REAL_NODE_KEY, kubectl, wait_until};
use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetOrdinals};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use k8s_openapi::api::events::v1::Event;
use kube::ResourceExt;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

const MI: u64 = 1 << 20;

pub(crate) async fn create_autoscaler(harness: &Harness, name: &str, spec: serde_json::Value) {
    let vas: VolumeAutoscaler = serde_json::from_value(json!({
        "apiVersion": "ferry.dev/v1alpha1", "kind": "VolumeAutoscaler",
        "metadata": {"name": name}, "spec": spec,
    }))
    .unwrap();
    harness
        .ns
        .api::<VolumeAutoscaler>()
        .create(&PostParams::default(), &vas)
        .await
        .unwrap();
}

/// Waits until the autoscaler's status satisfies `done`.
pub(crate) async fn wait_status(
    harness: &Harness,
    name: &str,
    what: &str,
    seconds: u64,
    done: impl Fn(&VolumeAutoscalerStatus) -> bool,
) -> VolumeAutoscalerStatus {
    let found: VolumeAutoscaler = harness
        .wait_object(name, what, seconds, |object: &VolumeAutoscaler| {
            object.status.as_ref().is_some_and(&done)
        })
        .await;
    found.status.unwrap_or_default()
}

pub(crate) fn state_of(status: &VolumeAutoscalerStatus) -> Option<&str> {
    status.volumes.first().and_then(|v| v.state.as_deref())
}

pub(crate) async fn autoscale_resizes(harness: &Harness) -> Vec<VolumeResize> {
    harness
        .ns
        .api::<VolumeResize>()
        .list(&ListParams::default().labels(&format!("{LABEL_TRIGGER}=autoscale")))
        .await
        .unwrap()
        .items
}

/// The seed of the tests that expect the 20% step (320Mi to 384Mi): 200 MiB left the writer's
/// records and XFS's metadata less than a MiB before usage asked for more (seen: 391Mi).
pub(crate) const SEED_KIB: u64 = 170 << 10;

/// The one VolumeResize the autoscaler makes, once finished.
pub(crate) async fn the_grow(harness: &Harness) -> VolumeResize {
    let made = wait_until("the autoscaler to make a VolumeResize", 120, || async {
        autoscale_resizes(harness).await.into_iter().next()
    })
    .await
    .unwrap();
    wait_phase(harness, &made.name_any(), 240).await
}

pub(crate) async fn claim_size(harness: &Harness, claim: &str) -> String {
    let claim = harness
        .ns
        .api::<PersistentVolumeClaim>()
        .get(claim)
        .await
        .unwrap();
    requested_storage(claim.spec.as_ref()).unwrap().0.clone()
}

async fn template_size(harness: &Harness, sts: &str) -> String {
    let sts = harness.ns.api::<StatefulSet>().get(sts).await.unwrap();
    let template = &sts.spec.unwrap().volume_claim_templates.unwrap()[0];
    requested_storage(template.spec.as_ref()).unwrap().0.clone()
}

/// Runs a shell command in a pod; panics with its output if it fails.
async fn exec(harness: &Harness, pod: &str, script: &str) {
    let (code, out, err) = kubectl(&["-n", &harness.ns.name, "exec", pod, "--", "sh", "-c", script])
        .await
        .unwrap();
    assert_eq!(code, 0, "{script}: {out} {err}");
}

/// Events about the autoscaler with this reason, each with how many times it happened.
pub(crate) async fn event_counts(harness: &Harness, name: &str, reason: &str) -> Vec<i32> {
    harness
        .ns
        .api::<Event>()
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| {
            e.reason.as_deref() == Some(reason)
                && e.regarding.as_ref().is_some_and(|r| {
                    r.kind.as_deref() == Some("VolumeAutoscaler") && r.name.as_deref() == Some(name)
                })
        })
        .map(|e| e.series.map_or(1, |series| series.count))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_volume_filled_past_its_threshold_grows_in_place_and_the_cooldown_outlives_a_restart() {
    let mut harness = Harness::start_with_webhook("vas-grow").await;
    // 170 MiB of data on a 320Mi volume (256 MiB of file system): past the 60% threshold, and
    // well below the usage that would ask for more than the 20% step (230 MiB of 384Mi at 60%),
    // however long the writer appends before the autoscaler's poll.
    let seeds = writer_with(&harness, 1, CLASS_BLOCK, "320Mi", SEED_KIB, 0).await;
    create_autoscaler(
        &harness,
        "db",
        json!({"statefulSetName": "db", "volumes": [
            {"name": "data", "threshold": 60, "maxSize": "2Gi", "cooldown": "1h", "growAfter": "4s"},
        ]}),
    )
    .await;

    // Over its threshold, it waits out `growAfter` first, and says until when.
    let waiting = wait_status(&harness, "db", "the grow to wait out growAfter", 60, |s| {
        state_of(s) == Some("Stabilizing")
    })
    .await;
    let over_since = waiting.volumes[0]
        .over_threshold_since
        .clone()
        .unwrap()
        .0
        .as_second();
    let grow = the_grow(&harness).await;
    let made_at = grow.metadata.creation_timestamp.clone().unwrap().0.as_second();
    assert!(
        made_at >= over_since + 4,
        "grown {}s into the streak",
        made_at - over_since
    );
    let status = grow.status.clone().unwrap();
    assert_eq!(status.phase, Some(Phase::Succeeded), "{:?}", status.message);
    assert_eq!(grow.spec.volumes[0].size, "384Mi", "320Mi + 20%");
    assert_eq!(grow.spec.strategy, ferry_api::Strategy::InPlace);
    assert!(!grow.spec.force);
    assert_eq!(claim_size(&harness, "data-db-0").await, "384Mi");
    assert_eq!(
        template_size(&harness, "db").await,
        "384Mi",
        "the template grows too"
    );
    // XFS keeps 64 MiB of a disk this small for its log: 256 MiB before, 320 MiB after.
    let df = df_bytes(&harness.ns.name, "db-0", "/data").await.unwrap();
    assert!(df > 300 * MI && df <= 384 * MI, "df size {df}");
    assert_nothing_lost(&harness, 1, &seeds).await;

    let recorded = wait_status(&harness, "db", "the grow recorded in status", 60, |s| {
        s.volumes.first().is_some_and(|v| v.last_resize.is_some())
    })
    .await;
    let volume = &recorded.volumes[0];
    let last = volume.last_resize.as_ref().unwrap();
    assert_eq!(
        (last.from.as_str(), last.to.as_str(), last.reason.as_str()),
        ("320Mi", "384Mi", "threshold")
    );
    assert_eq!(last.volume_resize, grow.name_any());
    assert_eq!(volume.history.len(), 1);
    assert!(recorded.next_allowed_at.is_some());
    let metrics = harness.metrics().await;
    assert!(
        metrics.contains("ferry_autoscale_resizes_total{reason=\"threshold\"} 1"),
        "{metrics}"
    );
    assert!(metrics.contains("ferry_autoscale_usage_ratio{"), "{metrics}");

    // GitOps re-applies the manifest with its original 320Mi: accepted, kept aside, no shrink.
    let manifest = writer_stateful_set(
        "db",
        1,
        &[("data", CLASS_BLOCK, "320Mi")],
        &harness.ns.name,
        SEED_KIB,
        0,
    )
    .unwrap();
    let apply = [
        "apply",
        "--server-side",
        "--field-manager=argocd-controller",
        "--force-conflicts",
    ];
    let (code, _, stderr) = kubectl_file(&harness, &serde_json::to_value(&manifest).unwrap(), &apply).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("autoscaled by VolumeAutoscaler db") && stderr.contains("320Mi"),
        "{stderr}"
    );
    assert_eq!(template_size(&harness, "db").await, "384Mi");
    let live = harness.ns.api::<StatefulSet>().get("db").await.unwrap();
    assert!(
        !live
            .annotations()
            .contains_key(ferry_api::names::ANNOTATION_REQUESTED_TEMPLATES),
        "no request recorded: {:?}",
        live.annotations()
    );

    // Filled again inside the cooldown: no second grow, and status says until when.
    exec(
        &harness,
        "db-0",
        "head -c $((80 * 1024 * 1024)) /dev/urandom > /data/more",
    )
    .await;
    // Judged on a reading that shows the new file: the kubelet refreshes volume stats every 5 s, so
    // a Cooldown judged on the reading from before the growth (74 % of the old file system) can be
    // followed by one from between the growth and the write (59 %: below the threshold, rightly).
    let cooling = wait_status(
        &harness,
        "db",
        "the autoscaler to wait out the cooldown, with the new file in its reading",
        60,
        |s| {
            state_of(s) == Some("Cooldown")
                && s.volumes.first().is_some_and(|volume| {
                    volume
                        .replicas
                        .iter()
                        .any(|r| r.used_bytes.unwrap_or(0) >= 250 * MI as i64)
                })
        },
    )
    .await;
    let message = cooling.volumes[0].message.clone().unwrap_or_default();
    assert!(message.contains("next grow allowed at"), "{message}");

    // A fresh operator knows the cooldown from status alone.
    harness.restart_operator();
    let polled_before = cooling.last_polled_at.clone();
    let after_restart = wait_status(&harness, "db", "a poll by the restarted operator", 60, |s| {
        s.last_polled_at > polled_before && s.last_polled_at.is_some()
    })
    .await;
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    assert_eq!(state_of(&after_restart), Some("Cooldown"));
    assert_eq!(autoscale_resizes(&harness).await.len(), 1, "no second grow");
    let every_resize = harness
        .ns
        .api::<VolumeResize>()
        .list(&Default::default())
        .await
        .unwrap();
    assert_eq!(
        every_resize.items.len(),
        1,
        "and no shrink from the re-applied manifest"
    );
    assert_eq!(claim_size(&harness, "data-db-0").await, "384Mi");
    harness.finish().await;
}

/// `spec.ordinals.start`: the one replica is db-3, and the autoscaler reads and grows its claim
/// (not a claim of ordinal 0, which does not exist).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_numbered_from_ordinals_start_is_read_and_grown() {
    let harness = Harness::start("vas-ordinals").await;
    let seeds = writer_shaped(&harness, 1, CLASS_BLOCK, "320Mi", SEED_KIB, 0, |set| {
        set.spec.as_mut().unwrap().ordinals = Some(StatefulSetOrdinals { start: Some(3) });
    })
    .await;
    assert_eq!(seeds.keys().collect::<Vec<_>>(), ["data-db-3"]);
    create_autoscaler(
        &harness,
        "db",
        json!({"statefulSetName": "db", "volumes": [
            {"name": "data", "threshold": 60, "maxSize": "2Gi"},
        ]}),
    )
    .await;
    let grow = the_grow(&harness).await;
    let status = grow.status.clone().unwrap();
    assert_eq!(status.phase, Some(Phase::Succeeded), "{:?}", status.message);
    assert_eq!(grow.spec.volumes[0].size, "384Mi", "320Mi + 20%");
    assert_eq!(claim_size(&harness, "data-db-3").await, "384Mi");
    assert_nothing_lost(&harness, 1, &seeds).await;
    harness.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_max_size_nothing_grows_and_one_event_says_so() {
    let harness = Harness::start("vas-max").await;
    writer_with(&harness, 1, CLASS_BLOCK, "320Mi", 200 << 10, 0).await;
    // Nothing grows: nothing restarts.
    harness.allow_disruption(Allowed { at_once: 0, each: 0 });
    create_autoscaler(
        &harness,
        "db",
        json!({"statefulSetName": "db", "volumes": [
            {"name": "data", "threshold": 50, "maxSize": "320Mi"},
        ]}),
    )
    .await;
    let status = wait_status(&harness, "db", "the autoscaler to stop at maxSize", 60, |s| {
        state_of(s) == Some("AtMaxSize")
    })
    .await;
    let condition = status.conditions.iter().find(|c| c.type_ == "AtMaxSize").unwrap();
    assert_eq!(condition.status, "True", "{condition:?}");
    // Several more polls (every 2 s) at the limit: still one Event, happened once.
    let polled = status.last_polled_at.clone();
    wait_status(&harness, "db", "three more polls", 60, |s| {
        s.last_polled_at
            .as_ref()
            .zip(polled.as_ref())
            .is_some_and(|(now, then)| now.0.as_second() >= then.0.as_second() + 6)
    })
    .await;
    assert_eq!(event_counts(&harness, "db", "AtMaxSize").await, vec![1]);
    assert!(autoscale_resizes(&harness).await.is_empty());
    assert_eq!(claim_size(&harness, "data-db-0").await, "320Mi");
    // kstatus: at its maxSize the autoscaler is still Ready (watching); `kubectl wait` sees it.
    let (code, out, err) = kubectl(&[
        "-n",
        &harness.ns.name,
        "wait",
        "--for=condition=Ready",
        "--timeout=30s",
        "volumeautoscaler/db",
    ])
    .await
    .unwrap();
    assert_eq!(code, 0, "{out}{err}");
    harness.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inode_exhaustion_with_many_small_files_grows_the_volume() {
    let harness = Harness::start("vas-inodes").await;
    let seeds = writer_with(&harness, 1, CLASS_BLOCK, "320Mi", 1 << 10, 0).await;
    // Far below the bytes threshold; many empty files use inodes only.
    exec(
        &harness,
        "db-0",
        "mkdir -p /data/many && cd /data/many && i=0; while [ $i -lt 12000 ]; do : > f$i; i=$((i+1)); done",
    )
    .await;
    create_autoscaler(
        &harness,
        "db",
        json!({"statefulSetName": "db", "volumes": [
            {"name": "data", "threshold": 90, "inodesThreshold": 5, "maxSize": "2Gi"},
        ]}),
    )
    .await;
    let grow = the_grow(&harness).await;
    let status = grow.status.clone().unwrap();
    assert_eq!(status.phase, Some(Phase::Succeeded), "{:?}", status.message);
    // The pass that records the grow may have no usage reading (the pod restarting under it, the
    // kubelet's summary late on a loaded node): wait for a status with both.
    let recorded = wait_status(
        &harness,
        "db",
        "the grow and a usage reading in status",
        60,
        |s| {
            s.volumes.first().is_some_and(|v| {
                v.last_resize.is_some() && v.replicas.first().is_some_and(|r| r.used_bytes.is_some())
            })
        },
    )
    .await;
    let volume = &recorded.volumes[0];
    assert_eq!(
        volume.last_resize.as_ref().unwrap().reason,
        "inodes",
        "{:?}",
        volume.replicas
    );
    let used_bytes = volume.replicas[0].used_bytes.unwrap();
    assert!(
        used_bytes < 100 * (MI as i64),
        "bytes are not what filled it: {used_bytes}"
    );
    let grown = claim_size(&harness, "data-db-0").await;
    assert_ne!(grown, "320Mi");
    assert_eq!(template_size(&harness, "db").await, grown);
    assert_nothing_lost(&harness, 1, &seeds).await;
    harness.finish().await;
}

/// A database that cannot start on a full disk: the first start fills the volume, and every start
/// needs 8 MiB for its journal, failing with ENOSPC (in its log, which becomes the termination
/// message) until there is room.
fn full_disk_database() -> StatefulSet {
    let script = r#"
[ -e /data/fill ] || dd if=/dev/zero of=/data/fill bs=1M 2>/dev/null || true
if ! dd if=/dev/zero of=/data/journal bs=1M count=8; then rm -f /data/journal; exit 1; fi
trap 'exit 0' TERM
while true; do sleep 1; done
"#;
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "pg"},
        "spec": {
            "replicas": 1, "serviceName": "pg",
            "selector": {"matchLabels": {"app": "pg"}},
            "template": {
                "metadata": {"labels": {"app": "pg"}},
                "spec": {
                    "nodeSelector": {REAL_NODE_KEY: "true"},
                    "tolerations": [{"key": REAL_NODE_KEY, "operator": "Exists", "effect": "NoSchedule"}],
                    "terminationGracePeriodSeconds": 5,
                    "containers": [{
                        "name": "db", "image": BUSYBOX_IMAGE, "imagePullPolicy": "Never",
                        "command": ["sh", "-c", script],
                        "terminationMessagePolicy": "FallbackToLogsOnError",
                        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                        "startupProbe": {"exec": {"command": ["test", "-s", "/data/journal"]}, "periodSeconds": 1, "failureThreshold": 600},
                    }],
                },
            },
            "volumeClaimTemplates": ferry_testenv::fixtures::claim_templates(&[("data", CLASS_BLOCK, "320Mi")]),
        },
    }))
    .unwrap()
}

/// Creates StatefulSet `set` (pg), waits until pg-0's first container has ended saying "No space
/// left on device", then puts an autoscaler on its volume.
async fn crash_loop_under_an_autoscaler(harness: &Harness, set: &StatefulSet) {
    harness
        .ns
        .api::<StatefulSet>()
        .create(&PostParams::default(), set)
        .await
        .unwrap();
    let pods = harness.ns.api::<Pod>();
    wait_until("pg-0 to crash saying the disk is full", 120, || async {
        let pod = pods.get_opt("pg-0").await.ok().flatten()?;
        let container = pod.status?.container_statuses?.into_iter().next()?;
        let message = container.last_state?.terminated?.message?;
        message.contains("No space left on device").then_some(())
    })
    .await
    .unwrap();
    create_autoscaler(
        harness,
        "pg",
        json!({"statefulSetName": "pg", "volumes": [{"name": "data", "maxSize": "1Gi"}]}),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_crash_looping_on_a_full_disk_is_rescued() {
    let harness = Harness::start("vas-rescue").await;
    crash_loop_under_an_autoscaler(&harness, &full_disk_database()).await;
    let pods = harness.ns.api::<Pod>();
    let grow = the_grow(&harness).await;
    let status = grow.status.clone().unwrap();
    assert_eq!(status.phase, Some(Phase::Succeeded), "{:?}", status.message);
    assert!(grow.spec.force, "a rescue is not held back by the Ready gate");
    wait_until("pg-0 to run again", 180, || async {
        let pod = pods.get_opt("pg-0").await.ok().flatten()?;
        let ready = pod
            .status?
            .conditions?
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        ready.then_some(())
    })
    .await
    .unwrap();
    let recorded = wait_status(&harness, "pg", "the rescue recorded", 60, |s| {
        s.volumes.first().is_some_and(|v| v.last_resize.is_some())
    })
    .await;
    assert_eq!(recorded.volumes[0].last_resize.as_ref().unwrap().reason, "rescue");
    assert_eq!(event_counts(&harness, "pg", "AutoResizeRescue").await.len(), 1);
    harness.finish().await;
}

/// A container crash-looping with "No space left on device" about something else (here its own
/// file system, in its words only) while the kubelet reports the autoscaled volume with room (a
/// second container keeps the pod's volumes reported) is not rescued: growing the volume would not
/// help, and a rescue skips the cooldown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_disk_words_without_a_full_volume_grow_nothing() {
    let harness = Harness::start("vas-no-rescue").await;
    let mut set = full_disk_database();
    let pod = set.spec.as_mut().unwrap().template.spec.as_mut().unwrap();
    let script = "echo 'cannot write /tmp/spill: No space left on device' >&2; exit 1";
    pod.containers[0].command = Some(vec!["sh".into(), "-c".into(), script.into()]);
    let mut sidecar = pod.containers[0].clone();
    sidecar.name = "sidecar".into();
    sidecar.startup_probe = None;
    let idle = "trap 'exit 0' TERM; while true; do sleep 1; done";
    sidecar.command = Some(vec!["sh".into(), "-c".into(), idle.into()]);
    pod.containers.push(sidecar);
    crash_loop_under_an_autoscaler(&harness, &set).await;
    // Polled with the volume's reading (below the threshold), then three polls more (every 2 s).
    below_threshold_then_no_rescue(&harness, "a poll with a reading", 90).await;
    harness.finish().await;
}

/// Waits for a poll that finds pg's volume below its threshold (with a reading of it), then three
/// polls more (every 2 s), and checks nothing grew.
async fn below_threshold_then_no_rescue(harness: &Harness, what: &str, seconds: u64) {
    let status = wait_status(harness, "pg", what, seconds, |s| {
        state_of(s) == Some("BelowThreshold")
    })
    .await;
    // Mostly empty: recommended smaller, though nothing shrinks.
    let shrink = (status.conditions.iter())
        .find(|c| c.type_ == "ShrinkRecommended")
        .expect("the ShrinkRecommended condition");
    assert_eq!(
        (shrink.status.as_str(), shrink.reason.as_str()),
        ("True", "CouldShrink"),
        "{shrink:?}"
    );
    assert!(
        shrink.message.starts_with("data of pg could be ") && shrink.message.contains("instead of 320Mi"),
        "{shrink:?}"
    );
    let polled = status.last_polled_at.clone();
    wait_status(harness, "pg", "three more polls", 60, |s| {
        s.last_polled_at
            .as_ref()
            .zip(polled.as_ref())
            .is_some_and(|(now, then)| now.0.as_second() >= then.0.as_second() + 6)
    })
    .await;
    assert!(autoscale_resizes(harness).await.is_empty(), "no rescue");
    assert_eq!(claim_size(harness, "data-pg-0").await, "320Mi");
}

/// A pod whose only container crash-loops with "No space left on device" about something else
/// (its own file system) has no container running, so the kubelet reports nothing of its volumes:
/// the words alone used to grow the volume. Now the volume is measured first, by a read-only usage
/// pod on the replica's node, and found with room: nothing grows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_disk_words_with_no_container_running_are_measured_before_anything_grows() {
    let harness = Harness::start("vas-measure").await;
    let mut set = full_disk_database();
    let pod = set.spec.as_mut().unwrap().template.spec.as_mut().unwrap();
    let script = "echo 'cannot write /tmp/spill: No space left on device' >&2; exit 1";
    pod.containers[0].command = Some(vec!["sh".into(), "-c".into(), script.into()]);
    crash_loop_under_an_autoscaler(&harness, &set).await;
    // Only a measurement gives replica 0 a reading: with it, the volume is below the threshold.
    below_threshold_then_no_rescue(&harness, "a poll with the measured reading", 120).await;
    let measured = harness
        .ns
        .api::<Pod>()
        .list(&ListParams::default().labels("ferry.dev/mover-pass=usage,ferry.dev/autoscaler-uid"))
        .await
        .unwrap()
        .items;
    let replica_node = harness
        .ns
        .api::<Pod>()
        .get("pg-0")
        .await
        .unwrap()
        .spec
        .unwrap()
        .node_name;
    assert_eq!(measured.len(), 1, "one measurement, standing while fresh");
    assert_eq!(measured[0].spec.as_ref().unwrap().node_name, replica_node);
    harness.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seed_annotation_stands_for_a_default_autoscaler() {
    let harness = Harness::start("vas-seed").await;
    let mut sts = ferry_testenv::fixtures::stateful_set("web", 1, ferry_testenv::CLASS_EXPANDABLE, "1Gi");
    sts.metadata.annotations = Some([(SEED_ANNOTATION_AUTO_SCALED.to_string(), "true".to_string())].into());
    harness.healthy_stateful_set(sts).await;
    let autoscalers = harness.ns.api::<VolumeAutoscaler>();
    let made = wait_until("the default VolumeAutoscaler", 60, || async {
        autoscalers.get_opt("web-auto-scaled").await.ok().flatten()
    })
    .await
    .unwrap();
    assert_eq!(made.spec.stateful_set_name.as_deref(), Some("web"));
    assert_eq!(made.spec.volumes.len(), 1);
    assert_eq!(made.spec.volumes[0].max_size, "10Gi");
    let live = harness.ns.api::<StatefulSet>().get("web").await.unwrap();
    assert_eq!(made.owner_references()[0].uid, live.uid().unwrap());
    let events = harness
        .wait_event("StatefulSet", "web", "DefaultAutoscaler")
        .await;
    assert!(
        events.iter().any(|(_, _, note)| note.contains("web-auto-scaled")),
        "{events:?}"
    );

    // Any other value opts out again.
    harness
        .ns
        .api::<StatefulSet>()
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {SEED_ANNOTATION_AUTO_SCALED: "false"}}})),
        )
        .await
        .unwrap();
    wait_until("the default VolumeAutoscaler to go", 60, || async {
        autoscalers
            .get_opt("web-auto-scaled")
            .await
            .ok()
            .and_then(|found| found.is_none().then_some(()))
    })
    .await
    .unwrap();
    harness.finish().await;
}

/// A provider that allows one modification per 6 h holds a second grow back once the cooldown is
/// over: the volume, filled past its threshold again, stays as it is and status says until when.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_window_holds_a_second_grow_back_after_the_cooldown() {
    let harness = Harness::start("vas-provider").await;
    let seeds = writer_with(&harness, 1, CLASS_BLOCK, "320Mi", SEED_KIB, 0).await;
    create_autoscaler(
        &harness,
        "db",
        json!({"statefulSetName": "db", "volumes": [{
            "name": "data", "threshold": 60, "maxSize": "4Gi", "cooldown": "1s", "provider": "one-per-6h",
        }]}),
    )
    .await;
    let grow = the_grow(&harness).await;
    let status = grow.status.clone().unwrap();
    assert_eq!(status.phase, Some(Phase::Succeeded), "{:?}", status.message);
    assert_eq!(grow.spec.volumes[0].size, "1Gi", "the provider's unit is the GiB");
    assert_eq!(claim_size(&harness, "data-db-0").await, "1Gi");

    // 670 MiB of the grown file system's ~960 MiB: past 60% again, long after the 1 s cooldown.
    exec(
        &harness,
        "db-0",
        "dd if=/dev/zero of=/data/more bs=1M count=500 2>/dev/null && sync",
    )
    .await;
    let held = wait_status(
        &harness,
        "db",
        "the provider window to hold the grow back",
        90,
        |s| state_of(s) == Some("ProviderLimit"),
    )
    .await;
    let message = held.volumes[0].message.clone().unwrap_or_default();
    assert!(
        message.contains("allows 1 modification(s) per 6h; next at"),
        "{message}"
    );
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    assert_eq!(autoscale_resizes(&harness).await.len(), 1, "no second grow");
    assert_eq!(claim_size(&harness, "data-db-0").await, "1Gi");
    assert_nothing_lost(&harness, 1, &seeds).await;
    harness.finish().await;
}

/// The seed operator's annotation alone grows a real volume: the default autoscaler it stands for
/// (threshold 80%, +20%) reads the real kubelet's usage and grows the volume in place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seed_annotation_alone_grows_a_real_volume_past_eighty_percent() {
    let harness = Harness::start("vas-seed-real").await;
    // 210 MiB of the 256 MiB file system of a 320Mi XFS volume: 82%.
    let seeds = writer_shaped(&harness, 1, CLASS_BLOCK, "320Mi", 210 << 10, 0, |set| {
        set.metadata.annotations =
            Some([(SEED_ANNOTATION_AUTO_SCALED.to_string(), "true".to_string())].into());
    })
    .await;
    let grow = the_grow(&harness).await;
    let status = grow.status.clone().unwrap();
    assert_eq!(status.phase, Some(Phase::Succeeded), "{:?}", status.message);
    assert_eq!(grow.spec.volumes[0].size, "384Mi", "320Mi + 20%");
    assert!(
        grow.labels().get(LABEL_AUTOSCALER_UID).is_some(),
        "made by an autoscaler: {:?}",
        grow.labels()
    );
    // The default autoscaler follows the re-created StatefulSet and counts the grow. (The garbage
    // collector may take it for an orphan of the old StatefulSet and delete it: made again, with a
    // new UID and no status, it still counts the grow, so a cooldown or provider window holds.)
    let autoscalers = harness.ns.api::<VolumeAutoscaler>();
    let sets = harness.ns.api::<StatefulSet>();
    wait_until(
        "the default autoscaler owned by the live StatefulSet, counting the grow",
        60,
        || async {
            let made = autoscalers.get_opt("db-auto-scaled").await.ok()??;
            let live = sets.get("db").await.ok()?;
            let owned = made.owner_references().first()?.uid == live.uid()?;
            let counted = made.status?.volumes.first()?.history.len() == 1;
            (owned && counted).then_some(())
        },
    )
    .await
    .unwrap();
    assert_eq!(claim_size(&harness, "data-db-0").await, "384Mi");
    let df = df_bytes(&harness.ns.name, "db-0", "/data").await.unwrap();
    assert!(df > 300 * MI && df <= 384 * MI, "df size {df}");
    assert_nothing_lost(&harness, 1, &seeds).await;
    harness.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_selector_covers_every_matching_stateful_set_and_what_cannot_work_is_reported() {
    let harness = Harness::start("vas-select").await;
    for (name, labelled) in [("a", true), ("b", true), ("c", false)] {
        let mut sts = ferry_testenv::fixtures::stateful_set(name, 1, ferry_testenv::CLASS_EXPANDABLE, "1Gi");
        if labelled {
            sts.metadata.labels = Some([("tier".to_string(), "db".to_string())].into());
        }
        harness.healthy_stateful_set(sts).await;
    }
    create_autoscaler(
        &harness,
        "dbs",
        json!({"selector": {"matchLabels": {"tier": "db"}}, "volumes": [
            {"name": "data", "maxSize": "10Gi"},
            {"name": "nope", "maxSize": "10Gi"},
        ]}),
    )
    .await;
    create_autoscaler(
        &harness,
        "missing",
        json!({"statefulSetName": "gone", "volumes": [{"name": "data", "maxSize": "10Gi"}]}),
    )
    .await;
    let status = wait_status(
        &harness,
        "dbs",
        "status for every matching StatefulSet",
        60,
        |s| s.volumes.len() == 4,
    )
    .await;
    let mut seen: Vec<(String, String, String)> = status
        .volumes
        .iter()
        .map(|v| {
            (
                v.stateful_set.clone(),
                v.name.clone(),
                v.state.clone().unwrap_or_default(),
            )
        })
        .collect();
    seen.sort();
    let states: Vec<(&str, &str)> = seen.iter().map(|(s, v, _)| (s.as_str(), v.as_str())).collect();
    assert_eq!(
        states,
        vec![("a", "data"), ("a", "nope"), ("b", "data"), ("b", "nope")]
    );
    for volume in &status.volumes {
        if volume.name == "nope" {
            assert_eq!(volume.state.as_deref(), Some("Invalid"));
            let message = volume.message.clone().unwrap_or_default();
            assert!(message.contains("no volume claim template \"nope\""), "{message}");
        } else {
            // kwok nodes have no kubelet to report usage.
            assert_eq!(volume.state.as_deref(), Some("UsageUnknown"), "{volume:?}");
        }
    }
    let missing = wait_status(&harness, "missing", "the missing StatefulSet reported", 60, |s| {
        !s.volumes.is_empty()
    })
    .await;
    assert_eq!(missing.volumes[0].state.as_deref(), Some("Invalid"));
    assert!(
        missing.volumes[0]
            .message
            .as_deref()
            .unwrap_or_default()
            .contains("StatefulSet \"gone\" does not exist"),
        "{missing:?}"
    );
    assert!(autoscale_resizes(&harness).await.is_empty());
    harness.finish().await;
}
