//! Benchmark, not a test (`#[ignore]`, never run by `scripts/test`; run it with
//! `scripts/bench-real-node`): replica downtime on the real node (real kubelet, containerd, ext4 on
//! loop devices) with a writer that really writes, for a warm, a cold and a clone copy resize and a
//! move to another node, against the physical floor: a plain `kubectl delete pod` restart of the
//! same replica. It prints numbers and asserts only that the data is intact.
//!
//! One run, in a fresh namespace: the writer StatefulSet `db` (one replica, `ferry-block-fixed`
//! 1536Mi; 4 MiB checkpoint and 1 s of writes on SIGTERM, in every measurement alike) with ~1 GiB
//! written from the host onto its volume, then
//! 1. plain restart ×3, 5 s apart: from the `delete pod db-0` call to a db-0 of another UID Ready;
//! 2. warm copy onto `ferry-block-fixed` 1280Mi (a shrink by copy): a PodDisruptionBudget
//!    (`maxUnavailable: 0`) holds the resize at `StoppingReplica` after the warm pass; 1% of the
//!    files change, `sync`, the budget goes;
//! 3. cold copy (`warmCopy: false`) back onto 1536Mi, gated the same way;
//! 4. clone copy (`warmCopyMethod: Clone`) at 1536Mi onto `ferry-block-fixed-other`, another ext4
//!    class of the same CSI driver: the new volume starts as the driver's clone of the old one, the
//!    standby final mover its first consumer; gated and changed as the warm copy;
//! 5. move to another real node (`placement: {}`) at 1536Mi back onto `ferry-block-fixed` (bound to
//!    its node's zone: one real node per zone): a mover on the old node serves the volume, one on
//!    the new node pulls it; gated and changed as the warm copy.
//!
//! A resize's downtime runs from the first watch event showing the original pod deleting or not
//! Ready to the first showing a pod of another UID Ready; every milestone is a watch event,
//! timestamped as it arrives. After each resize the new volume must hold what the retained old one
//! holds (the records file aside, which must start with the old one's) and no acknowledged record
//! may be lost. One `BENCH_REAL_NODE {json}` line per measurement. Settings (environment):
//! `FERRY_BENCH_RUNS` (default 2), `FERRY_BENCH_FILES` (default 4750, ~1 GiB).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../tests/e2e/support/mod.rs"]
mod support;

use ferry_api::names::{ANNOTATION_FINAL_PASS, FINAL_PASS_GO};
use ferry_api::{Phase, RowStep, VolumeResize};
use ferry_testenv::fixtures::{claim_directory, wait_ready};
use ferry_testenv::volume_dir::VolumeDir;
use ferry_testenv::workload::{RECORDS_FILE, acknowledged, lost_records, writer_stateful_set};
use ferry_testenv::{CLASS_BLOCK_FIXED, CLASS_BLOCK_FIXED_OTHER, wait_until};
use futures::{AsyncBufReadExt, StreamExt};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{DeleteParams, LogParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher::{self, Event};
use kube::{Api, Resource, ResourceExt};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::Harness;

const POD: &str = "db-0";
const CLAIM: &str = "data-db-0";
const SOURCE_SIZE: &str = "1536Mi";
const WARM_TARGET: &str = "1280Mi";
const RESTARTS: usize = 3;
const KIB: u64 = 1024;

// ---------------------------------------------------------------------------------------------
// The dataset: deterministic (SplitMix64), the file sizes of bench_downtime's, written from the host.

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn random_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed;
    let mut buf: Vec<u8> = (0..len.div_ceil(8))
        .flat_map(|_| splitmix(&mut state).to_le_bytes())
        .collect();
    buf.truncate(len);
    buf
}

/// File `index`: 48 directories; 90% of the files 64–384 KiB, 8% 1–16 KiB, 2% 0.5–1.5 MiB.
fn file_spec(index: usize) -> (PathBuf, u64) {
    let mut state = index as u64 ^ 0x5eed_fe44;
    let mut between = |low: u64, high: u64| low + splitmix(&mut state) % (high - low + 1);
    let size = match between(0, 99) {
        0..=7 => between(KIB, 16 * KIB),
        8..=9 => between(512 * KIB, 1536 * KIB),
        _ => between(64 * KIB, 384 * KIB),
    };
    let path = format!("t{}/s{}/f{index:05}.bin", index % 6, (index / 6) % 8);
    (PathBuf::from(path), size)
}

fn write_dataset(root: &Path, files: usize) -> u64 {
    let mut total = 0;
    for index in 0..files {
        let (relative, size) = file_spec(index);
        let path = root.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, random_bytes(0xda7a_0000 + index as u64, size as usize)).unwrap();
        total += size;
    }
    sync_disks();
    total
}

/// Changes every hundredth file: a quarter rewritten whole, the rest appended 8 KiB; then `sync`.
/// Returns (files, bytes written).
fn change_one_percent(root: &Path, files: usize, seed: u64) -> (usize, u64) {
    let (mut changed, mut written) = (0, 0);
    for (nth, index) in (37..files).step_by(100).enumerate() {
        let (relative, size) = file_spec(index);
        let path = root.join(relative);
        let seed = seed ^ ((index as u64) << 20);
        if nth % 4 == 0 {
            std::fs::write(&path, random_bytes(seed, size as usize)).unwrap();
            written += size;
        } else {
            use std::io::Write;
            let mut file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
            file.write_all(&random_bytes(seed, 8 * KIB as usize)).unwrap();
            written += 8 * KIB;
        }
        changed += 1;
    }
    sync_disks();
    (changed, written)
}

fn sync_disks() {
    assert!(std::process::Command::new("sync").status().unwrap().success());
}

/// `sync` and drop the page, dentry and inode caches when allowed; whether they were dropped.
fn drop_caches() -> bool {
    sync_disks();
    std::fs::write("/proc/sys/vm/drop_caches", b"3\n").is_ok()
}

/// A checksum of every file's path and content under `dir` but the writer's records file (the new
/// replica appends to it), by `find` and `sha256sum`.
fn checksum_without_records(dir: &Path) -> String {
    let script = format!(
        "find . -type f ! -path ./{RECORDS_FILE} -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum | sha256sum"
    );
    let out = std::process::Command::new("sh")
        .args(["-c", &script])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "checksum of {}", dir.display());
    String::from_utf8_lossy(&out.stdout)[..64].to_string()
}

// ---------------------------------------------------------------------------------------------
// What the watchers see (pods, claims, StatefulSets, VolumeResizes), timestamped as it arrives.

#[derive(Clone, Default)]
struct Seen {
    at: Option<Instant>,
    /// When it was seen, by the wall clock (ms since the epoch), to set beside the mover's own.
    wall_ms: u64,
    kind: &'static str,
    name: String,
    uid: String,
    gone: bool,
    deleting: bool,
    ready: bool,
    /// A pod's first container has terminated (before the pod's phase says so).
    exited: bool,
    /// Pod phase, claim phase, or the VolumeResize's first row's step.
    phase: String,
    /// A pod's termination message (a mover's result).
    message: Option<String>,
    /// A final mover's go was given (its `ferry.dev/final-pass` annotation says so).
    go: bool,
}

fn seen<K: Resource>(kind: &'static str, object: &K) -> Seen {
    let meta = object.meta();
    Seen {
        kind,
        name: meta.name.clone().unwrap_or_default(),
        uid: meta.uid.clone().unwrap_or_default(),
        deleting: meta.deletion_timestamp.is_some(),
        ..Seen::default()
    }
}

fn seen_pod(pod: &Pod) -> Seen {
    let status = pod.status.clone().unwrap_or_default();
    let terminated =
        (status.container_statuses.iter().flatten().next()).and_then(|c| c.state.clone()?.terminated);
    Seen {
        phase: status.phase.unwrap_or_default(),
        ready: (status.conditions.iter().flatten()).any(|c| c.type_ == "Ready" && c.status == "True"),
        exited: terminated.is_some(),
        message: terminated.and_then(|t| t.message),
        go: pod
            .annotations()
            .get(ANNOTATION_FINAL_PASS)
            .is_some_and(|go| go == FINAL_PASS_GO),
        ..seen("pod", pod)
    }
}

type Log = Arc<Mutex<Vec<Seen>>>;

fn spawn_watch<K>(api: Api<K>, log: Log, map: fn(&K) -> Seen) -> tokio::task::JoinHandle<()>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(watcher::watcher(api, watcher::Config::default()));
        while let Some(event) = stream.next().await {
            let at = Some(Instant::now());
            let (gone, object) = match event {
                Ok(Event::Apply(object) | Event::InitApply(object)) => (false, object),
                Ok(Event::Delete(object)) => (true, object),
                Ok(_) => continue,
                Err(error) => {
                    eprintln!("watch error (the watcher retries): {error}");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                }
            };
            let wall_ms = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |since| since.as_millis() as u64);
            log.lock().unwrap().push(Seen {
                at,
                wall_ms,
                gone,
                ..map(&object)
            });
        }
    })
}

/// Follows the log of each final mover once its go is given, as the operator does, and logs its
/// result line (kind `result`) when it comes: the mover's end, as seen through its log.
fn spawn_result_follower(pods: Api<Pod>, log: Log) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut followed = std::collections::HashSet::new();
        let mut stream = std::pin::pin!(watcher::watcher(pods.clone(), watcher::Config::default()));
        while let Some(event) = stream.next().await {
            let Ok(Event::Apply(pod) | Event::InitApply(pod)) = event else {
                continue;
            };
            let view = seen_pod(&pod);
            if !(view.name.ends_with("-final") && view.go && followed.insert(view.uid.clone())) {
                continue;
            }
            let (pods, log) = (pods.clone(), log.clone());
            tokio::spawn(async move {
                let params = LogParams {
                    follow: true,
                    ..LogParams::default()
                };
                let Ok(stream) = pods.log_stream(&view.name, &params).await else {
                    return;
                };
                let mut lines = stream.lines();
                while let Some(Ok(line)) = lines.next().await {
                    if ferry_engine::resize::copy::is_result_line(&line) {
                        let wall_ms = std::time::SystemTime::now()
                            .duration_since(std::time::UNIX_EPOCH)
                            .map_or(0, |since| since.as_millis() as u64);
                        log.lock().unwrap().push(Seen {
                            at: Some(Instant::now()),
                            wall_ms,
                            kind: "result",
                            message: Some(line),
                            ..view
                        });
                        break;
                    }
                }
            });
        }
    })
}

struct Watches {
    log: Log,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Watches {
    fn start(harness: &Harness) -> Watches {
        let log = Log::default();
        let tasks = vec![
            spawn_watch::<Pod>(harness.ns.api(), log.clone(), seen_pod),
            spawn_result_follower(harness.ns.api(), log.clone()),
            spawn_watch::<StatefulSet>(harness.ns.api(), log.clone(), |s| seen("set", s)),
            spawn_watch::<PersistentVolumeClaim>(harness.ns.api(), log.clone(), |c| Seen {
                phase: c
                    .status
                    .as_ref()
                    .and_then(|s| s.phase.clone())
                    .unwrap_or_default(),
                ..seen("claim", c)
            }),
            spawn_watch::<PersistentVolume>(Api::all(harness.client.clone()), log.clone(), |v| Seen {
                phase: v
                    .status
                    .as_ref()
                    .and_then(|s| s.phase.clone())
                    .unwrap_or_default(),
                ..seen("volume", v)
            }),
            spawn_watch::<VolumeResize>(harness.ns.api(), log.clone(), |r| Seen {
                phase: (r.status.as_ref().and_then(|s| s.plan.first()))
                    .and_then(|row| row.step)
                    .map_or_else(String::new, |step| step.as_str().to_string()),
                ..seen("resize", r)
            }),
        ];
        Watches { log, tasks }
    }

    fn snapshot(&self) -> Vec<Seen> {
        self.log.lock().unwrap().clone()
    }

    /// Waits until a db-0 of another UID than `old` is seen Ready after `after`; the log then.
    async fn new_pod_ready(&self, old: &str, after: Instant) -> Vec<Seen> {
        wait_until("a new db-0 Ready", 300, || async {
            let log = self.snapshot();
            replica(&log, old, after)[3].map(|_| log)
        })
        .await
        .unwrap()
    }
}

impl Drop for Watches {
    fn drop(&mut self) {
        self.tasks.iter().for_each(|task| task.abort());
    }
}

/// The first event seen at or after `after` that passes `test`.
fn first_seen(log: &[Seen], after: Instant, test: impl Fn(&Seen) -> bool) -> Option<&Seen> {
    log.iter().find(|s| s.at >= Some(after) && test(s))
}

fn first(log: &[Seen], after: Instant, test: impl Fn(&Seen) -> bool) -> Option<Instant> {
    first_seen(log, after, test).and_then(|s| s.at)
}

fn is_pod(s: &Seen, name: &str) -> bool {
    s.kind == "pod" && s.name == name
}

/// The replica's milestones after `after`: pod `old` gone, a pod of another UID created, Running,
/// Ready.
fn replica(log: &[Seen], old: &str, after: Instant) -> [Option<Instant>; 4] {
    let new = |s: &Seen| is_pod(s, POD) && s.uid != old && !s.gone && !s.deleting;
    [
        first(log, after, |s| is_pod(s, POD) && s.uid == old && s.gone),
        first(log, after, new),
        first(log, after, |s| new(s) && s.phase == "Running"),
        first(log, after, |s| new(s) && s.ready),
    ]
}

/// What the writer itself sees of a stop: its acknowledgements file (outside the volume), read
/// every 2 ms from the host, and the instants it grew. The longest pause between two of them is the
/// gap between the last write before the stop and the first one after.
struct WriterClock {
    stop: Arc<std::sync::atomic::AtomicBool>,
    task: std::thread::JoinHandle<Vec<Instant>>,
}

impl WriterClock {
    fn start(namespace: &str) -> WriterClock {
        let path = ferry_testenv::workload::acks_dir(namespace).join(POD);
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = stop.clone();
        let task = std::thread::spawn(move || {
            let mut grew = Vec::new();
            let mut last = std::fs::metadata(&path).map_or(0, |m| m.len());
            while !stopped.load(std::sync::atomic::Ordering::Relaxed) {
                let len = std::fs::metadata(&path).map_or(last, |m| m.len());
                if len != last {
                    grew.push(Instant::now());
                    last = len;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            grew
        });
        WriterClock { stop, task }
    }

    /// The longest pause in the writer's acknowledgements, in ms.
    fn longest_gap(self) -> Option<u64> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let grew = self.task.join().unwrap();
        grew.windows(2)
            .map(|pair| pair[1].duration_since(pair[0]).as_millis() as u64)
            .max()
    }
}

fn ms(from: Option<Instant>, to: Option<Instant>) -> Option<u64> {
    Some(to?.checked_duration_since(from?)?.as_millis() as u64)
}

// ---------------------------------------------------------------------------------------------
// Measurements.

fn emit(line: Value) -> Value {
    println!("BENCH_REAL_NODE {line}");
    line
}

async fn plain_restart(harness: &Harness, watches: &Watches, run: usize, nth: usize) -> Value {
    let pods: Api<Pod> = harness.ns.api();
    let old = pods.get(POD).await.unwrap().uid().unwrap();
    let writer = WriterClock::start(&harness.ns.name);
    let start = Instant::now();
    pods.delete(POD, &DeleteParams::default()).await.unwrap();
    let log = watches.new_pod_ready(&old, start).await;
    let [gone, created, running, ready] = replica(&log, &old, start);
    // The writer's first records on the restarted pod.
    tokio::time::sleep(Duration::from_millis(500)).await;
    emit(json!({
        "run": run, "kind": "restart", "nth": nth,
        "downtimeMs": ms(Some(start), ready),
        "writerGapMs": writer.longest_gap(),
        "stagesMs": {"stopToGone": ms(Some(start), gone), "toPodCreated": ms(gone, created),
                     "toRunning": ms(created, running), "toReady": ms(running, ready)},
    }))
}

/// Creates the budget that holds a copy at `StoppingReplica` until the test lets it go.
async fn create_gate(budgets: &Api<PodDisruptionBudget>) {
    let gate = json!({"metadata": {"name": "gate"},
                      "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "db"}}}});
    let gate = serde_json::from_value(gate).unwrap();
    budgets.create(&PostParams::default(), &gate).await.unwrap();
    wait_until("the budget to count the replica", 60, || async {
        let status = budgets.get_opt("gate").await.ok().flatten()?.status?;
        (status.current_healthy == 1 && status.disruptions_allowed == 0).then_some(())
    })
    .await
    .unwrap();
}

async fn resize(
    harness: &Harness,
    watches: &Watches,
    run: usize,
    kind: &'static str,
    size: &str,
    files: usize,
) -> Value {
    let warm = kind != "cold";
    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    let volumes: Api<PersistentVolume> = Api::all(harness.client.clone());
    let (budgets, resizes) = (harness.ns.api(), harness.ns.api::<VolumeResize>());
    let claim = claims.get(CLAIM).await.unwrap();
    let (old_claim, old_volume) = (claim.uid().unwrap(), claim.spec.unwrap().volume_name.unwrap());
    let old_pod = harness.ns.api::<Pod>().get(POD).await.unwrap().uid().unwrap();
    let sets: Api<StatefulSet> = harness.ns.api();
    let old_set = sets.get("db").await.unwrap().uid().unwrap();

    create_gate(&budgets).await;
    let dropped = tokio::task::spawn_blocking(drop_caches).await.unwrap();
    let class = if kind == "clone" {
        CLASS_BLOCK_FIXED_OTHER
    } else {
        CLASS_BLOCK_FIXED
    };
    let volume = json!({"name": "data", "size": size, "storageClassName": class});
    let mut spec = json!({"statefulSetName": "db", "warmCopy": warm, "retainOldVolumes": "Forever", "volumes": [volume]});
    if kind == "clone" {
        spec["warmCopyMethod"] = json!("Clone");
    }
    if kind == "move" {
        spec["placement"] = json!({});
    }
    harness.create_resize(kind, spec).await;
    wait_until("the resize to be held by the budget", 900, || async {
        let status = resizes.get_opt(kind).await.ok().flatten()?.status?;
        assert!(
            !status.phase.is_some_and(Phase::is_terminal),
            "ended early: {status:?}"
        );
        let held = status
            .message
            .as_deref()
            .unwrap_or_default()
            .contains("PodDisruptionBudget");
        (status.plan.first()?.step == Some(RowStep::StoppingReplica) && held).then_some(())
    })
    .await
    .unwrap();
    // The host mounts a CSI volume only while it changes it: a mount of its own held through the
    // resize would be one more user of the volume in every stage measured.
    let dir = claim_directory(&claims, &volumes, CLAIM).await.unwrap();
    let seed = 0xc4a9_0000
        + run as u64 * 3
        + ["warm", "cold", "clone", "move"]
            .iter()
            .position(|k| *k == kind)
            .unwrap_or(0) as u64;
    let changed = tokio::task::spawn_blocking(move || change_one_percent(&dir, files, seed));
    let (changed, changed_bytes) = changed.await.unwrap();
    let writer = WriterClock::start(&harness.ns.name);
    budgets.delete("gate", &DeleteParams::default()).await.unwrap();
    let release = Instant::now();

    let done = wait_until("the resize to finish", 900, || async {
        let resize = resizes.get_opt(kind).await.ok().flatten()?;
        resize.phase().is_terminal().then_some(resize)
    })
    .await
    .unwrap();
    assert_eq!(done.phase(), Phase::Succeeded, "{:?}", done.status);
    watches.new_pod_ready(&old_pod, release).await;
    let acked = acknowledged(&harness.ns.name, POD).unwrap().len();
    wait_until("db-0 to write on, on its new volume", 60, || async {
        (acknowledged(&harness.ns.name, POD).ok()?.len() > acked + 10).then_some(())
    })
    .await
    .unwrap();
    let writer_gap = writer.longest_gap();

    // Milestones, from the watch log.
    let log = watches.snapshot();
    let at = |test: &dyn Fn(&Seen) -> bool| first(&log, release, test);
    let mover = |s: &Seen| s.kind == "pod" && s.name.ends_with("-final");
    let step = |name: &str| at(&|s| s.kind == "resize" && s.name == kind && s.phase == name);
    let [gone, created, running, ready] = replica(&log, &old_pod, release);
    let new_claim = claims.get(CLAIM).await.unwrap();
    let new_volume = new_claim.spec.and_then(|s| s.volume_name).unwrap_or_default();
    let temp_claim = |s: &Seen| s.kind == "claim" && s.name.starts_with(&format!("{CLAIM}-ferry-"));
    let old_claim_gone = at(&|s| s.kind == "claim" && s.uid == old_claim && s.gone);
    let claims_gone = old_claim_gone.max(at(&|s| temp_claim(s) && s.gone));
    let marks = [
        ("budgetDeleted", Some(release)),
        (
            "down",
            at(&|s| is_pod(s, POD) && s.uid == old_pod && (s.gone || s.deleting || !s.ready)),
        ),
        ("gone", gone),
        ("goGiven", at(&|s| mover(s) && s.go)),
        ("resultSeen", at(&|s| s.kind == "result")),
        ("moverExited", at(&|s| mover(s) && s.exited)),
        ("stepSwapping", step(RowStep::Swapping.as_str())),
        ("moverGone", at(&|s| mover(s) && s.gone)),
        ("claimsGone", claims_gone),
        (
            "volumeAvailable",
            at(&|s| s.kind == "volume" && s.name == new_volume && s.phase == "Available"),
        ),
        (
            "claimCreated",
            at(&|s| s.kind == "claim" && s.uid != old_claim && s.name == CLAIM && !s.gone),
        ),
        (
            "claimBound",
            at(&|s| s.kind == "claim" && s.uid != old_claim && s.name == CLAIM && s.phase == "Bound"),
        ),
        (
            "setRecreated",
            at(&|s| s.kind == "set" && s.uid != old_set && !s.gone),
        ),
        ("stepStartingReplica", step(RowStep::StartingReplica.as_str())),
        ("podCreated", created),
        ("podRunning", running),
        ("podReady", ready),
        ("stepCopied", step(RowStep::Copied.as_str())),
    ];
    let mark = |name: &str| marks.iter().find(|(n, _)| *n == name).and_then(|(_, at)| *at);
    // The result as the log gave it (the operator acts on it; the pod is then gone before the
    // kubelet reports the exit), else the termination message.
    let result: Value = (log.iter())
        .filter(|s| s.at >= Some(release) && (s.kind == "result" || (mover(s) && s.exited)))
        .find_map(|s| serde_json::from_str(s.message.as_deref()?).ok())
        .unwrap_or_default();
    let sync_ms = result["seconds"].as_f64().map(|s| (s * 1000.0).round() as u64);
    // Each stage ends at what gates the next one.
    let mut stages: serde_json::Map<String, Value> = [
        ("stopToGone", "down", "gone"),
        ("goneToGo", "gone", "goGiven"),
        ("goToResult", "goGiven", "resultSeen"),
        ("resultToMoverGone", "resultSeen", "moverGone"),
        ("moverGoneToClaimsGone", "moverGone", "claimsGone"),
        ("claimsGoneToVolumeAvailable", "claimsGone", "volumeAvailable"),
        ("availableToClaimCreated", "volumeAvailable", "claimCreated"),
        ("claimCreatedToBound", "claimCreated", "claimBound"),
        ("boundToSetRecreated", "claimBound", "setRecreated"),
        ("setToPodCreated", "setRecreated", "podCreated"),
        ("toPodCreated", "gone", "podCreated"),
        ("toRunning", "podCreated", "podRunning"),
        ("toReady", "podRunning", "podReady"),
    ]
    .into_iter()
    .map(|(key, from, to)| (key.to_string(), json!(ms(mark(from), mark(to)))))
    .collect();
    // From the go to the result in the log: the kubelet showing the go to the mover, its pass, and
    // the line reaching a follower of the log. Without the pass: those two latencies.
    let go_to_result = ms(mark("goGiven"), mark("resultSeen"));
    stages.insert(
        "goToResultWithoutSync".into(),
        json!(go_to_result.zip(sync_ms).map(|(a, b)| a.saturating_sub(b))),
    );
    stages.insert("finalSync".into(), json!(sync_ms));
    // The two kubelet latencies apart, by the wall clock: the go given → seen by the mover (the
    // downward API file rewritten), and the mover's end → its exit seen (the next relist).
    let wall = |test: &dyn Fn(&Seen) -> bool| first_seen(&log, release, test).map(|s| s.wall_ms);
    let go_given = wall(&|s| mover(s) && s.go);
    let result_seen = wall(&|s| s.kind == "result");
    let go_seen = result["goAtUnixMs"].as_u64();
    let ended = go_seen.zip(sync_ms).map(|(at, sync)| at + sync);
    stages.insert(
        "goDelivered".into(),
        json!(go_given.zip(go_seen).map(|(a, b)| b.saturating_sub(a))),
    );
    stages.insert(
        "resultDelivered".into(),
        json!(ended.zip(result_seen).map(|(a, b)| b.saturating_sub(a))),
    );
    let down = mark("down").unwrap();
    let offset = |at: Instant| match at.checked_duration_since(down) {
        Some(after) => after.as_millis() as i64,
        None => -(down.duration_since(at).as_millis() as i64),
    };
    let timeline: Vec<_> = (marks.iter()).map(|(name, at)| (*name, at.map(offset))).collect();
    eprintln!("[run {run} {kind}] ms from the old pod deleting: {timeline:?}");

    // The data: the new volume holds what the retained old one holds, and every acknowledged record.
    let new_dir = claim_directory(&claims, &volumes, CLAIM).await.unwrap();
    let lost = lost_records(&harness.ns.name, POD, &new_dir).unwrap();
    let retained = volumes.get(&old_volume).await.unwrap();
    let old_dir = VolumeDir::of(&old_volume, &retained.spec.unwrap_or_default()).unwrap();
    let (old, new) = (old_dir, new_dir);
    let (same, records_kept) = tokio::task::spawn_blocking(move || {
        let records = |dir: &Path| std::fs::read(dir.join(RECORDS_FILE)).unwrap();
        let same = checksum_without_records(&old) == checksum_without_records(&new);
        (same, records(&new).starts_with(&records(&old)))
    })
    .await
    .unwrap();

    // The resize and the old volume go; the new volume serves the next measurement.
    let _ = resizes.delete(kind, &DeleteParams::default()).await;
    wait_until("the resize to be deleted", 60, || async {
        resizes.get_opt(kind).await.ok()?.is_none().then_some(())
    })
    .await
    .unwrap();
    let delete = Patch::Merge(json!({"spec": {"persistentVolumeReclaimPolicy": "Delete"}}));
    volumes
        .patch(&old_volume, &PatchParams::default(), &delete)
        .await
        .unwrap();
    let old_gone = wait_until("the old volume to be deleted", 180, || async {
        volumes.get_opt(&old_volume).await.ok()?.is_none().then_some(())
    });
    if old_gone.await.is_err() {
        eprintln!("warning: the old volume {old_volume} is still there");
    }

    let line = emit(json!({
        "run": run, "kind": kind, "targetSize": size, "files": files,
        "changedFiles": changed, "changedBytes": changed_bytes, "cachesDropped": dropped,
        "downtimeMs": ms(Some(down), ready),
        "writerGapMs": writer_gap,
        "downtimeMsStatus": done.status.as_ref().and_then(|s| s.plan.first()?.downtime_milliseconds),
        "downtimeStepsStatus": done.status.as_ref().and_then(|s| s.plan.first()?.downtime_steps.clone()),
        "cloned": done.status.as_ref().and_then(|s| s.plan.first()?.cloned),
        "sourceNode": done.status.as_ref().and_then(|s| s.plan.first()?.source_node.clone()),
        "targetNode": done.status.as_ref().and_then(|s| s.plan.first()?.target_node.clone()),
        "moverBytes": done.status.as_ref().and_then(|s| s.plan.first()?.bytes_copied),
        "finalPass": {"seconds": result["seconds"], "bytes": result["bytes"], "files": result["files"],
                      "bytesCopied": result["bytesCopied"], "filesCopied": result["filesCopied"],
                      "goBy": result["goBy"]},
        "stagesMs": stages, "timelineMs": timeline,
        "dataOk": same && records_kept, "lostRecords": lost.len(),
    }));
    assert!(same, "{kind}: the new volume differs from the old one");
    assert!(
        records_kept,
        "{kind}: the records file does not start with the old one's"
    );
    assert!(lost.is_empty(), "{kind}: acknowledged records lost: {lost:?}");
    line
}

async fn run_once(run: usize, files: usize) -> Vec<Value> {
    let harness = Harness::start("bench-real").await;
    let watches = Watches::start(&harness);
    let sets: Api<StatefulSet> = harness.ns.api();
    let templates = [("data", CLASS_BLOCK_FIXED, SOURCE_SIZE)];
    let set = writer_stateful_set("db", 1, &templates, &harness.ns.name, 1024, 4096).unwrap();
    sets.create(&PostParams::default(), &set).await.unwrap();
    wait_ready(&sets, "db", 1, 180).await.unwrap();
    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    let volumes: Api<PersistentVolume> = Api::all(harness.client.clone());
    let dir = claim_directory(&claims, &volumes, CLAIM).await.unwrap();
    let written = Instant::now();
    let bytes = tokio::task::spawn_blocking(move || write_dataset(&dir, files))
        .await
        .unwrap();
    eprintln!(
        "[run {run}] dataset: {files} files, {:.2} GiB written in {:.1}s",
        bytes as f64 / f64::from(1 << 30),
        written.elapsed().as_secs_f64()
    );
    let mut out = vec![emit(
        json!({"run": run, "kind": "dataset", "files": files, "bytes": bytes}),
    )];
    for nth in 1..=RESTARTS {
        // A settled replica, as the one a resize stops.
        tokio::time::sleep(Duration::from_secs(5)).await;
        out.push(plain_restart(&harness, &watches, run, nth).await);
    }
    // The host's view of the volume goes before the resizes: held, it keeps the old volume staged
    // on the node after the swap (the kubelet refuses to unstage a device mounted elsewhere).
    let lost = {
        let dir = claim_directory(&claims, &volumes, CLAIM).await.unwrap();
        lost_records(&harness.ns.name, POD, &dir).unwrap()
    };
    assert!(lost.is_empty(), "restarts: acknowledged records lost: {lost:?}");
    out.push(resize(&harness, &watches, run, "warm", WARM_TARGET, files).await);
    out.push(resize(&harness, &watches, run, "cold", SOURCE_SIZE, files).await);
    out.push(resize(&harness, &watches, run, "clone", SOURCE_SIZE, files).await);
    out.push(resize(&harness, &watches, run, "move", SOURCE_SIZE, files).await);
    drop(watches);
    let acks = ferry_testenv::workload::acks_dir(&harness.ns.name);
    harness.finish().await;
    let _ = std::fs::remove_dir_all(acks);
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: minutes of real I/O on the real node; run with scripts/bench-real-node"]
async fn replica_downtime_on_the_real_node() {
    let setting = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let (runs, files) = (
        setting("FERRY_BENCH_RUNS", 2).max(1),
        setting("FERRY_BENCH_FILES", 4750).max(100),
    );
    for run in 1..=runs {
        for line in run_once(run, files).await {
            if let Some(ms) = line["downtimeMs"].as_u64() {
                let sync = line["finalPass"]["seconds"]
                    .as_f64()
                    .map_or(String::new(), |s| format!(", final sync {s:.2} s"));
                eprintln!(
                    "[run {run}] {}: down {:.2} s{sync}",
                    line["kind"],
                    ms as f64 / 1000.0
                );
            }
        }
    }
}
