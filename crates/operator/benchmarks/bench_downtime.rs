//! Benchmark, not a test (`#[ignore]`, never run by `scripts/test`): the replica downtime of a copy
//! resize on the real local control plane, with the warm copy (`warmCopy: true`, the default) and
//! without it (`warmCopy: false`), on a dataset of 1 GiB+ in many files with 1% of the files changed
//! between the warm copy and the final sync; and, on the same data and disk, what a by-hand
//! migration would cost (`rsync -aHAXS` and `cp -a` into an empty directory, the replica down for
//! the whole copy). Prints one `BENCH_RESIZE {json}` line per measurement and a table.
//!
//! Run it with `scripts/bench-resize` (release operator in-process, release mover in the agent).
//! By hand: `cargo test --release -p ferry-operator --test bench_downtime -- --ignored --nocapture`.
//!
//! One run (warm or cold, a fresh namespace and StatefulSet each time):
//! 1. StatefulSet `db`, one replica, class `ferry-fixed` (cannot expand → copy), 2Gi; the dataset is
//!    written straight into the replica's hostPath volume, then `sync`.
//! 2. A PodDisruptionBudget with `maxUnavailable: 0` (the gate), page caches dropped (when
//!    `/proc/sys/vm/drop_caches` is writable), watchers started, the VolumeResize created (3Gi).
//! 3. Gate: the row reaches `StoppingReplica` held by the budget — warm run: the warm copy is done;
//!    cold run: the target claim exists. Both runs then change the same 1% of the files, `sync`,
//!    optionally drop caches again (`FERRY_BENCH_DROP_BEFORE_FINAL=1`), and delete the budget.
//! 4. Downtime = from the first watch event showing the original pod not Ready or deleting, to the
//!    first showing a pod of another UID Ready. Everything in between is timed from watch events
//!    (ms), next to `status.plan[0].downtimeSeconds` (whole seconds, from the operator).
//! 5. The new volume is checked against the old one (retained, untouched since the change) by
//!    checksum (`find | sha256sum`); then both volumes are released and deleted.
//!
//! Settings (environment): `FERRY_BENCH_RUNS` (runs of each kind, default 2),
//! `FERRY_BENCH_FILES` (default 5000 → 1.05 GiB), `FERRY_BENCH_DROP_BEFORE_FINAL` (0/1).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../tests/e2e/support/mod.rs"]
mod support;

use ferry_api::{Phase, RowStep, VolumeResize};
use ferry_testenv::fixtures::{claim_directory, stateful_set, tree_checksum, wait_ready};
use ferry_testenv::{CLASS_FIXED, wait_until};
use futures::StreamExt;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher::{self, Event};
use kube::{Api, Resource, ResourceExt};
use serde_json::{Value, json};
use std::fmt::Debug;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::Harness;

const SUMMARY_PREFIX: &str = "BENCH_RESIZE ";
const CLAIM: &str = "data-db-0";
const POD: &str = "db-0";
const SOURCE_SIZE: &str = "2Gi";
const TARGET_SIZE: &str = "3Gi";
const KIB: u64 = 1024;

struct Config {
    runs: usize,
    files: usize,
    drop_before_final: bool,
}

impl Config {
    fn from_env() -> Config {
        let number = |name: &str, default: usize| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(default)
        };
        Config {
            runs: number("FERRY_BENCH_RUNS", 2).max(1),
            files: number("FERRY_BENCH_FILES", 5000).max(100),
            drop_before_final: number("FERRY_BENCH_DROP_BEFORE_FINAL", 0) == 1,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The dataset: deterministic (SplitMix64), written straight into the volume's directory.

struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5eed_fe44)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn between(&mut self, low: u64, high: u64) -> u64 {
        low + self.next() % (high - low + 1)
    }

    fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let word = self.next().to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
    }
}

/// File `index`: 48 directories (6 × 8); 90% of the files 64–384 KiB, 8% 1–16 KiB, 2% 0.5–1.5 MiB.
fn file_spec(index: usize) -> (PathBuf, u64) {
    let mut rng = Rng::new(index as u64);
    let size = match rng.next() % 100 {
        0..=7 => rng.between(KIB, 16 * KIB),
        8..=9 => rng.between(512 * KIB, 1536 * KIB),
        _ => rng.between(64 * KIB, 384 * KIB),
    };
    let path = PathBuf::from(format!("t{}", index % 6))
        .join(format!("s{}", (index / 6) % 8))
        .join(format!("f{index:05}.bin"));
    (path, size)
}

/// Writes the dataset; returns (files, bytes).
fn write_dataset(root: &Path, files: usize) -> (usize, u64) {
    let mut total = 0;
    let mut buf = Vec::new();
    for index in 0..files {
        let (relative, size) = file_spec(index);
        let path = root.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        buf.resize(size as usize, 0);
        Rng::new(0xda7a_0000 + index as u64).fill(&mut buf);
        std::fs::write(&path, &buf).unwrap();
        total += size;
    }
    (files, total)
}

/// Bytes the dataset of `files` files holds.
fn dataset_bytes(files: usize) -> u64 {
    (0..files).map(|index| file_spec(index).1).sum()
}

/// Bytes free for an unprivileged writer on the file system holding `path` (`df`).
fn free_bytes(path: &Path) -> u64 {
    let output = std::process::Command::new("df")
        .args(["--output=avail", "-B1"])
        .arg(path)
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .nth(1)
        .and_then(|line| line.trim().parse().ok())
        .unwrap_or(0)
}

/// Changes 1% of the files (every hundredth, from the 37th): a quarter rewritten with new content
/// of the same size, the rest appended 8 KiB to. Returns (files, bytes written).
fn change_one_percent(root: &Path, files: usize, seed: u64) -> (usize, u64) {
    let mut changed = 0;
    let mut written = 0;
    for (nth, index) in (37..files).step_by(100).enumerate() {
        let (relative, size) = file_spec(index);
        let path = root.join(relative);
        let mut rng = Rng::new(seed ^ ((index as u64) << 20));
        if nth % 4 == 0 {
            let mut buf = vec![0u8; size as usize];
            rng.fill(&mut buf);
            std::fs::write(&path, &buf).unwrap();
            written += size;
        } else {
            let mut buf = vec![0u8; 8 * KIB as usize];
            rng.fill(&mut buf);
            let mut file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
            file.write_all(&buf).unwrap();
            written += buf.len() as u64;
        }
        changed += 1;
    }
    (changed, written)
}

fn sync_disks() {
    let status = std::process::Command::new("sync").status().unwrap();
    assert!(status.success(), "sync failed");
}

/// `sync` and drop the page, dentry and inode caches when allowed; whether they were dropped.
fn drop_caches() -> bool {
    sync_disks();
    std::fs::write("/proc/sys/vm/drop_caches", b"3\n").is_ok()
}

// ---------------------------------------------------------------------------------------------
// What the watchers see, with the instant each event arrived.

#[derive(Clone, Debug)]
enum Seen {
    Pod {
        name: String,
        uid: String,
        ready: bool,
        deleting: bool,
        phase: String,
        result: Option<String>,
    },
    Set {
        uid: String,
    },
    Claim {
        name: String,
        uid: String,
        bound: bool,
    },
    Resize {
        step: Option<RowStep>,
        phase: Option<Phase>,
    },
}

struct Record {
    at: Instant,
    gone: bool,
    seen: Seen,
}

type Records = Arc<Mutex<Vec<Record>>>;

struct Watches {
    records: Records,
    synced: Arc<AtomicUsize>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

fn seen_pod(pod: &Pod) -> Seen {
    let status = pod.status.as_ref();
    Seen::Pod {
        name: pod.name_any(),
        uid: pod.uid().unwrap_or_default(),
        ready: ferry_engine::pods::ready(pod),
        deleting: pod.metadata.deletion_timestamp.is_some(),
        phase: status.and_then(|s| s.phase.clone()).unwrap_or_default(),
        result: status
            .and_then(|s| s.container_statuses.as_ref())
            .and_then(|c| c.first())
            .and_then(|c| c.state.as_ref())
            .and_then(|s| s.terminated.as_ref())
            .and_then(|t| t.message.clone()),
    }
}

fn spawn_watch<K>(
    api: Api<K>,
    records: Records,
    synced: Arc<AtomicUsize>,
    map: fn(&K) -> Seen,
) -> tokio::task::JoinHandle<()>
where
    K: Resource + Clone + serde::de::DeserializeOwned + Debug + Send + Sync + 'static,
{
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(watcher::watcher(api, watcher::Config::default()));
        let mut initial = true;
        while let Some(event) = stream.next().await {
            let at = Instant::now();
            let (gone, object) = match event {
                Ok(Event::Apply(object) | Event::InitApply(object)) => (false, object),
                Ok(Event::Delete(object)) => (true, object),
                Ok(Event::InitDone) => {
                    if initial {
                        initial = false;
                        synced.fetch_add(1, Ordering::SeqCst);
                    }
                    continue;
                }
                Ok(Event::Init) => continue,
                Err(error) => {
                    eprintln!("watch error (the watcher retries): {error}");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                }
            };
            let seen = map(&object);
            records.lock().unwrap().push(Record { at, gone, seen });
        }
    })
}

impl Watches {
    async fn start(harness: &Harness) -> Watches {
        let records: Records = Arc::default();
        let synced = Arc::new(AtomicUsize::new(0));
        let tasks = vec![
            spawn_watch::<Pod>(harness.ns.api(), records.clone(), synced.clone(), seen_pod),
            spawn_watch::<StatefulSet>(harness.ns.api(), records.clone(), synced.clone(), |s| Seen::Set {
                uid: s.uid().unwrap_or_default(),
            }),
            spawn_watch::<PersistentVolumeClaim>(harness.ns.api(), records.clone(), synced.clone(), |c| {
                Seen::Claim {
                    name: c.name_any(),
                    uid: c.uid().unwrap_or_default(),
                    bound: c.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound"),
                }
            }),
            spawn_watch::<VolumeResize>(harness.ns.api(), records.clone(), synced.clone(), |r| {
                let status = r.status.as_ref();
                Seen::Resize {
                    step: status.and_then(|s| s.plan.first()).and_then(|row| row.step),
                    phase: status.and_then(|s| s.phase),
                }
            }),
        ];
        let count = tasks.len();
        let watches = Watches {
            records,
            synced,
            tasks,
        };
        wait_until("the watchers' initial lists", 30, || async {
            (watches.synced.load(Ordering::SeqCst) >= count).then_some(())
        })
        .await
        .unwrap();
        watches
    }

    fn stop(self) -> Vec<Record> {
        for task in &self.tasks {
            task.abort();
        }
        let mut records = std::mem::take(&mut *self.records.lock().unwrap());
        records.sort_by_key(|r| r.at);
        records
    }
}

/// First record at or after `after` that satisfies `test`.
fn first(records: &[Record], after: Instant, test: impl Fn(&Record) -> bool) -> Option<Instant> {
    records
        .iter()
        .filter(|r| r.at >= after)
        .find(|r| test(r))
        .map(|r| r.at)
}

fn mover_result(records: &[Record], suffix: &str) -> Option<Value> {
    records.iter().find_map(|r| match &r.seen {
        Seen::Pod {
            name,
            phase,
            result: Some(result),
            ..
        } if name.ends_with(suffix) && phase == "Succeeded" => serde_json::from_str(result).ok(),
        _ => None,
    })
}

// ---------------------------------------------------------------------------------------------
// One run.

struct Originals {
    pod: String,
    set: String,
    claim: String,
}

struct Milestones {
    list: Vec<(String, Option<Instant>)>,
}

impl Milestones {
    fn get(&self, name: &str) -> Option<Instant> {
        self.list.iter().find(|(n, _)| n == name).and_then(|(_, at)| *at)
    }
}

/// A pod record as (name, uid, ready, deleting, gone), or `None`.
fn pod_of(r: &Record) -> Option<(&str, &str, bool, bool, bool)> {
    match &r.seen {
        Seen::Pod {
            name,
            uid,
            ready,
            deleting,
            ..
        } => Some((name, uid, *ready, *deleting, r.gone)),
        _ => None,
    }
}

fn milestones(records: &[Record], orig: &Originals, start: Instant, release: Instant) -> Milestones {
    let mover = |suffix: &'static str, phase_wanted: Option<&'static str>| {
        move |r: &Record| match &r.seen {
            Seen::Pod { name, phase, .. } => {
                name.ends_with(suffix) && !r.gone && phase_wanted.is_none_or(|p| p == phase)
            }
            _ => false,
        }
    };
    let step = |wanted: RowStep| move |r: &Record| matches!(&r.seen, Seen::Resize { step: Some(s), .. } if *s == wanted);
    let down = first(records, release, |r| {
        pod_of(r).is_some_and(|(name, uid, ready, deleting, gone)| {
            name == POD && uid == orig.pod && (!ready || deleting || gone)
        })
    });
    let after_down = down.unwrap_or(release);
    let list = vec![
        (
            "warm mover created".to_string(),
            first(records, start, mover("-warm", None)),
        ),
        (
            "warm mover running".into(),
            first(records, start, mover("-warm", Some("Running"))),
        ),
        (
            "warm mover succeeded".into(),
            first(records, start, mover("-warm", Some("Succeeded"))),
        ),
        ("budget deleted (gate released)".into(), Some(release)),
        (
            "StatefulSet orphan-deleted".into(),
            first(records, release, |r| {
                r.gone && matches!(&r.seen, Seen::Set { uid } if *uid == orig.set)
            }),
        ),
        ("old pod stopping (downtime starts)".into(), down),
        (
            "old pod gone".into(),
            first(records, release, |r| {
                pod_of(r).is_some_and(|(name, uid, _, _, gone)| name == POD && uid == orig.pod && gone)
            }),
        ),
        (
            "final mover created".into(),
            first(records, release, mover("-final", None)),
        ),
        (
            "final mover running".into(),
            first(records, release, mover("-final", Some("Running"))),
        ),
        (
            "final mover succeeded".into(),
            first(records, release, mover("-final", Some("Succeeded"))),
        ),
        (
            "step Swapping".into(),
            first(records, release, step(RowStep::Swapping)),
        ),
        (
            "old claim gone".into(),
            first(records, after_down, |r| {
                r.gone
                    && matches!(&r.seen, Seen::Claim { name, uid, .. } if name == CLAIM && *uid == orig.claim)
            }),
        ),
        (
            "claim re-created".into(),
            first(records, after_down, |r| {
                !r.gone
                    && matches!(&r.seen, Seen::Claim { name, uid, .. } if name == CLAIM && *uid != orig.claim)
            }),
        ),
        (
            "claim bound to new volume".into(),
            first(records, after_down, |r| {
                !r.gone
                    && matches!(&r.seen, Seen::Claim { name, uid, bound: true } if name == CLAIM && *uid != orig.claim)
            }),
        ),
        (
            "step StartingReplica".into(),
            first(records, release, step(RowStep::StartingReplica)),
        ),
        (
            "StatefulSet re-created".into(),
            first(records, after_down, |r| {
                !r.gone && matches!(&r.seen, Seen::Set { uid } if *uid != orig.set)
            }),
        ),
        (
            "new pod created".into(),
            first(records, after_down, |r| {
                pod_of(r).is_some_and(|(name, uid, _, _, gone)| name == POD && uid != orig.pod && !gone)
            }),
        ),
        (
            "new pod Ready (downtime ends)".into(),
            first(records, after_down, |r| {
                pod_of(r).is_some_and(|(name, uid, ready, deleting, gone)| {
                    name == POD && uid != orig.pod && ready && !deleting && !gone
                })
            }),
        ),
        (
            "step Copied".into(),
            first(records, release, step(RowStep::Copied)),
        ),
        (
            "resize Succeeded".into(),
            first(records, release, |r| {
                matches!(
                    &r.seen,
                    Seen::Resize {
                        phase: Some(Phase::Succeeded),
                        ..
                    }
                )
            }),
        ),
    ];
    Milestones { list }
}

fn ms_between(a: Option<Instant>, b: Option<Instant>) -> Option<u64> {
    Some(b?.checked_duration_since(a?)?.as_millis() as u64)
}

fn pass_json(result: Option<&Value>) -> Value {
    match result {
        None => Value::Null,
        Some(r) => json!({
            "files": r.get("files"),
            "bytes": r.get("bytes"),
            "bytesCopied": r.get("bytesCopied"),
            "filesCopied": r.get("filesCopied"),
            "seconds": r.get("seconds"),
            "verify": r.get("verify"),
        }),
    }
}

/// By-hand copies of `source` onto an empty directory on the same disk, caches dropped first,
/// each followed by `sync`; (label, seconds).
fn by_hand(source: &Path, scratch: &Path) -> Vec<(&'static str, f64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::create_dir_all(scratch).unwrap();
    let same_disk = std::fs::metadata(source).unwrap().dev() == std::fs::metadata(scratch).unwrap().dev();
    if !same_disk {
        eprintln!(
            "warning: {} is not on the same file system as {}",
            scratch.display(),
            source.display()
        );
    }
    let target = scratch.join("copy");
    let commands: [(&'static str, String); 2] = [
        (
            "rsync",
            format!("rsync -aHAXS '{}/' '{}/'", source.display(), target.display()),
        ),
        (
            "cp",
            format!("cp -a '{}' '{}'", source.display(), target.display()),
        ),
    ];
    let mut out = Vec::new();
    for (label, command) in commands {
        let _ = std::fs::remove_dir_all(&target);
        drop_caches();
        let started = Instant::now();
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("{command} && sync"))
            .status()
            .unwrap();
        let seconds = started.elapsed().as_secs_f64();
        assert!(status.success(), "{command} failed");
        out.push((label, seconds));
        std::fs::remove_dir_all(&target).unwrap();
        sync_disks();
    }
    let _ = std::fs::remove_dir(scratch);
    out
}

async fn run_once(config: &Config, run: usize, warm: bool, hand: bool) -> Vec<Value> {
    let kind = if warm { "warm" } else { "cold" };
    let harness = Harness::start(&format!("bench-{kind}")).await;
    let sets: Api<StatefulSet> = harness.ns.api();
    sets.create(
        &PostParams::default(),
        &stateful_set("db", 1, CLASS_FIXED, SOURCE_SIZE),
    )
    .await
    .unwrap();
    wait_ready(&sets, "db", 1, 120).await.unwrap();
    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    let volumes: Api<PersistentVolume> = Api::all(harness.client.clone());
    let source_dir = claim_directory(&claims, &volumes, CLAIM).await.unwrap();
    let source_volume = claims
        .get(CLAIM)
        .await
        .unwrap()
        .spec
        .unwrap()
        .volume_name
        .unwrap();

    let files = config.files;
    // Two copies of the data exist at once (old and new volume, or old volume and a by-hand copy);
    // refuse to fill the disk others use too.
    let needed = 2 * dataset_bytes(files) + (256 << 20);
    let free = free_bytes(&source_dir);
    assert!(
        free >= needed,
        "not enough free space on {}: {free} bytes, {needed} needed",
        source_dir.display()
    );
    let dir = source_dir.to_path_buf();
    let generated = Instant::now();
    let (count, bytes) = tokio::task::spawn_blocking(move || {
        let written = write_dataset(&dir, files);
        sync_disks();
        written
    })
    .await
    .unwrap();
    eprintln!(
        "[run {run} {kind}] dataset: {count} files, {:.2} GiB in {:.1}s",
        bytes as f64 / (1u64 << 30) as f64,
        generated.elapsed().as_secs_f64()
    );

    let budgets: Api<PodDisruptionBudget> = harness.ns.api();
    let budget = serde_json::from_value(json!({
        "metadata": {"name": "gate"},
        "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "db"}}},
    }))
    .unwrap();
    budgets.create(&PostParams::default(), &budget).await.unwrap();
    wait_until("the budget to count the pod", 60, || async {
        let status = budgets.get_opt("gate").await.ok().flatten()?.status?;
        (status.current_healthy == 1 && status.disruptions_allowed == 0).then_some(())
    })
    .await
    .unwrap();

    let pods: Api<Pod> = harness.ns.api();
    let orig = Originals {
        pod: pods.get(POD).await.unwrap().uid().unwrap(),
        set: sets.get("db").await.unwrap().uid().unwrap(),
        claim: claims.get(CLAIM).await.unwrap().uid().unwrap(),
    };
    let dropped = tokio::task::spawn_blocking(drop_caches).await.unwrap();
    let watches = Watches::start(&harness).await;

    let start = Instant::now();
    harness
        .create_resize(
            "bench",
            json!({
                "statefulSetName": "db",
                "warmCopy": warm,
                "retainOldVolumes": "Forever",
                "volumes": [{"name": "data", "size": TARGET_SIZE}],
            }),
        )
        .await;
    let resizes: Api<VolumeResize> = harness.ns.api();
    let held = wait_until(
        "the copy to be held by the budget at StoppingReplica",
        900,
        || async {
            let resize = resizes.get_opt("bench").await.ok().flatten()?;
            if resize.phase().is_terminal() {
                panic!("resize ended early: {:?}", resize.status);
            }
            let status = resize.status.as_ref()?;
            let at_gate = status.plan.first()?.step == Some(RowStep::StoppingReplica)
                && status
                    .message
                    .as_deref()
                    .unwrap_or_default()
                    .contains("PodDisruptionBudget");
            at_gate.then_some(resize)
        },
    )
    .await
    .unwrap();
    let gate = Instant::now();
    let pod_now = pods.get(POD).await.unwrap();
    assert_eq!(
        pod_now.uid().as_deref(),
        Some(orig.pod.as_str()),
        "held: replica not stopped"
    );
    assert!(ferry_engine::pods::ready(&pod_now), "held: replica still Ready");
    let gate_row = held.status.unwrap().plan.remove(0);

    let dir = source_dir.to_path_buf();
    let drop_again = config.drop_before_final;
    let (changed, changed_bytes) = tokio::task::spawn_blocking(move || {
        let changed = change_one_percent(&dir, files, 0xc4a9_0000 + run as u64);
        sync_disks();
        if drop_again {
            drop_caches();
        }
        changed
    })
    .await
    .unwrap();
    budgets.delete("gate", &DeleteParams::default()).await.unwrap();
    let release = Instant::now();

    let done = wait_until("the resize to finish", 900, || async {
        let resize = resizes.get_opt("bench").await.ok().flatten()?;
        resize.phase().is_terminal().then_some(resize)
    })
    .await
    .unwrap();
    let status = done.status.clone().unwrap();
    assert_eq!(done.phase(), Phase::Succeeded, "{:?}", status.message);
    wait_until("the new pod to be Ready", 60, || async {
        let pod = pods.get_opt(POD).await.ok().flatten()?;
        (pod.uid().as_deref() != Some(orig.pod.as_str()) && ferry_engine::pods::ready(&pod)).then_some(())
    })
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let records = watches.stop();
    let marks = milestones(&records, &orig, start, release);
    let down = marks.get("old pod stopping (downtime starts)");
    let up = marks.get("new pod Ready (downtime ends)");
    let downtime_ms = ms_between(down, up).expect("downtime observed");
    let wall = ms_between(Some(start), marks.get("resize Succeeded"));
    let row = status.plan[0].clone();

    // The new volume holds exactly what the old one held after the change.
    let claim_dir = source_dir.to_path_buf();
    let new_sum = harness.checksum(CLAIM).await;
    let old_sum = tokio::task::spawn_blocking(move || tree_checksum(&claim_dir).unwrap())
        .await
        .unwrap();
    let checksum_ok = new_sum == old_sum;

    // The namespace goes (its claim, so the new volume, with it); the old volume stays retained for
    // the by-hand copies, then goes back to Delete. At most two copies of the data exist at a time.
    let new_dir = claim_directory(&claims, &volumes, CLAIM).await.unwrap();
    let _ = resizes.delete("bench", &DeleteParams::default()).await;
    let _ = wait_until("the VolumeResize to be deleted", 60, || async {
        resizes.get_opt("bench").await.ok()?.is_none().then_some(())
    })
    .await;
    harness.finish().await;
    if wait_until("the new volume to be deleted", 180, || async {
        (!new_dir.exists()).then_some(())
    })
    .await
    .is_err()
    {
        eprintln!("warning: the new volume of run {run} {kind} is still present");
    }
    let hand_results = if hand && checksum_ok {
        let scratch = ferry_testenv::paths::state_dir().join("bench-scratch");
        let source = source_dir.to_path_buf();
        tokio::task::spawn_blocking(move || by_hand(&source, &scratch))
            .await
            .unwrap()
    } else {
        Vec::new()
    };
    volumes
        .patch(
            &source_volume,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"persistentVolumeReclaimPolicy": "Delete"}})),
        )
        .await
        .unwrap();
    if wait_until("the old volume to be deleted", 180, || async {
        (!source_dir.exists()).then_some(())
    })
    .await
    .is_err()
    {
        eprintln!("warning: the old volume of run {run} {kind} is still present");
    }
    tokio::task::spawn_blocking(sync_disks).await.unwrap();

    // Timeline, relative to the start of the downtime.
    eprintln!("[run {run} {kind}] timeline (ms from the old pod stopping; negative = before):");
    for (name, at) in &marks.list {
        let Some(at) = at else {
            eprintln!("    {:>9}  {name}", "-");
            continue;
        };
        let base = down.unwrap_or(release);
        let offset = if *at >= base {
            at.duration_since(base).as_millis() as i64
        } else {
            -(base.duration_since(*at).as_millis() as i64)
        };
        eprintln!("    {offset:>9}  {name}");
    }

    let phase = |a: &str, b: &str| ms_between(marks.get(a), marks.get(b));
    let mut out = vec![json!({
        "run": run,
        "kind": kind,
        "files": count,
        "bytes": bytes,
        "changedFiles": changed,
        "changedBytes": changed_bytes,
        "cachesDropped": dropped,
        "droppedBeforeFinal": config.drop_before_final,
        "downtimeMs": downtime_ms,
        "downtimeSecondsStatus": row.downtime_seconds,
        "wallSeconds": wall.map(|ms| ms as f64 / 1000.0),
        "gateHoldMs": release.duration_since(gate).as_millis() as u64,
        "releaseToStopMs": ms_between(Some(release), down),
        "phasesMs": {
            "stop": phase("old pod stopping (downtime starts)", "final mover created"),
            "moverStart": phase("final mover created", "final mover running"),
            "finalSync": phase("final mover running", "final mover succeeded"),
            "swap": phase("final mover succeeded", "claim bound to new volume"),
            "restart": phase("claim bound to new volume", "new pod Ready (downtime ends)"),
        },
        "warmPass": pass_json(mover_result(&records, "-warm").as_ref()),
        "finalPass": pass_json(mover_result(&records, "-final").as_ref()),
        "statusBytesDoneAtGate": gate_row.bytes_done,
        "statusBytesDone": row.bytes_done,
        "statusFilesDone": row.files_done,
        "checksumOk": checksum_ok,
    })];
    for (label, seconds) in hand_results {
        out.push(json!({"run": run, "kind": label, "files": count, "bytes": bytes, "seconds": seconds}));
    }
    for line in &out {
        println!("{SUMMARY_PREFIX}{line}");
    }
    assert!(
        checksum_ok,
        "run {run} {kind}: new volume differs from the source ({new_sum} vs {old_sum})"
    );

    out
}

// ---------------------------------------------------------------------------------------------
// Report.

fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    Some(if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    })
}

fn field(value: &Value, path: &[&str]) -> Option<f64> {
    let mut v = value;
    for key in path {
        v = v.get(key)?;
    }
    v.as_f64()
}

fn cell(value: Option<f64>, scale: f64, digits: usize) -> String {
    value.map_or("-".into(), |v| format!("{:.*}", digits, v * scale))
}

/// Seconds the replica was down in each run of `kind`: the watched downtime of a Ferry run, the
/// copy time of a by-hand one.
fn seconds_of(results: &[Value], kind: &str) -> Vec<f64> {
    results
        .iter()
        .filter(|r| r["kind"] == kind)
        .filter_map(|r| match kind {
            "warm" | "cold" => field(r, &["downtimeMs"]).map(|ms| ms / 1000.0),
            _ => field(r, &["seconds"]),
        })
        .collect()
}

fn report(results: &[Value]) {
    println!();
    println!(
        "| run | kind | downtime s (watched) | downtimeSeconds (status) | stop s | mover start s | final sync s (mover's own) | swap s | restart s | final pass copied MiB | warm pass copied MiB | resize wall s | data ok |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    for r in results
        .iter()
        .filter(|r| r["kind"] == "warm" || r["kind"] == "cold")
    {
        let mib = 1.0 / (1u64 << 20) as f64;
        println!(
            "| {} | {} | {} | {} | {} | {} | {} ({}) | {} | {} | {} | {} | {} | {} |",
            r["run"],
            r["kind"].as_str().unwrap_or_default(),
            cell(field(r, &["downtimeMs"]), 0.001, 2),
            r["downtimeSecondsStatus"],
            cell(field(r, &["phasesMs", "stop"]), 0.001, 2),
            cell(field(r, &["phasesMs", "moverStart"]), 0.001, 2),
            cell(field(r, &["phasesMs", "finalSync"]), 0.001, 2),
            cell(field(r, &["finalPass", "seconds"]), 1.0, 2),
            cell(field(r, &["phasesMs", "swap"]), 0.001, 2),
            cell(field(r, &["phasesMs", "restart"]), 0.001, 2),
            cell(field(r, &["finalPass", "bytesCopied"]), mib, 1),
            cell(field(r, &["warmPass", "bytesCopied"]), mib, 1),
            cell(field(r, &["wallSeconds"]), 1.0, 1),
            if r["checksumOk"] == true { "yes" } else { "NO" },
        );
    }
    println!();
    let (warm, cold) = (
        median(seconds_of(results, "warm")),
        median(seconds_of(results, "cold")),
    );
    println!("| replica down for | median s | min s | max s |");
    println!("|---|---:|---:|---:|");
    for (label, values) in [
        ("Ferry, warm copy (final sync only)", seconds_of(results, "warm")),
        ("Ferry, cold copy (warmCopy: false)", seconds_of(results, "cold")),
        (
            "by hand: rsync -aHAXS + sync (copy only)",
            seconds_of(results, "rsync"),
        ),
        ("by hand: cp -a + sync (copy only)", seconds_of(results, "cp")),
    ] {
        let min = values.iter().copied().reduce(f64::min);
        let max = values.iter().copied().reduce(f64::max);
        println!(
            "| {label} | {} | {} | {} |",
            cell(median(values), 1.0, 2),
            cell(min, 1.0, 2),
            cell(max, 1.0, 2)
        );
    }
    if let (Some(w), Some(c)) = (warm, cold) {
        let ratio = w / c;
        println!();
        println!(
            "warm / cold downtime (medians): {:.0}% — target ≤ 10%: {}",
            ratio * 100.0,
            if ratio <= 0.10 { "met" } else { "NOT met" }
        );
        if let Some(r) = median(seconds_of(results, "rsync")) {
            println!("warm downtime / rsync copy time: {:.0}%", w / r * 100.0);
        }
        if let Some(c) = median(seconds_of(results, "cp")) {
            println!("warm downtime / cp copy time: {:.0}%", w / c * 100.0);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: minutes of I/O on 1 GiB+; run with scripts/bench-resize"]
async fn replica_downtime_warm_versus_cold_copy() {
    let config = Config::from_env();
    eprintln!(
        "bench: {} run(s) of each kind, {} files, drop caches before the final sync: {}",
        config.runs, config.files, config.drop_before_final
    );
    let mut results = Vec::new();
    for run in 1..=config.runs {
        // Alternate which kind goes first, so neither always follows the previous run's cleanup.
        let order = if run % 2 == 1 {
            [true, false]
        } else {
            [false, true]
        };
        for (position, warm) in order.into_iter().enumerate() {
            // The by-hand copies use the second run's source of each round (the same dataset).
            results.extend(run_once(&config, run, warm, position == 1).await);
        }
    }
    report(&results);
}
