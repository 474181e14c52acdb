//! The disruption oracle: for the whole of a test it watches every pod of one application (the
//! label `app=<app>`, whatever StatefulSets hold them: zones, versions) and keeps the moment when
//! most of its members were unavailable at once: a member whose pod is missing, terminating or not
//! Ready. It follows a watch, event by event, so a dip between two polls is never missed.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// The worst moment the oracle saw.
#[derive(Debug, Clone, Default)]
pub struct Disruption {
    /// Most members unavailable at once.
    pub most: usize,
    /// When that was, since the oracle started.
    pub at_seconds: f64,
    /// The pods present and unavailable then (the rest of `most` were missing).
    pub pods: Vec<String>,
}

/// Watches an application's pods until [`DisruptionOracle::finish`].
pub struct DisruptionOracle {
    stop: Arc<Notify>,
    task: JoinHandle<Disruption>,
    app: String,
}

impl DisruptionOracle {
    /// Starts watching the `members` pods of `app`; returns once its first list is in (from then
    /// on every change counts).
    pub async fn start(pods: Api<Pod>, app: &str, members: usize) -> Self {
        let stop = Arc::new(Notify::new());
        let (listed_tx, listed_rx) = tokio::sync::oneshot::channel::<()>();
        let mut listed_tx = Some(listed_tx);
        let config = watcher::Config::default().labels(&format!("app={app}"));
        let stopped = stop.clone();
        let task = tokio::spawn(async move {
            let started = Instant::now();
            let mut events = watcher::watcher(pods, config).default_backoff().boxed();
            let mut ready: BTreeMap<String, bool> = BTreeMap::new();
            let mut listing: BTreeMap<String, bool> = BTreeMap::new();
            let mut listed = false;
            let mut worst = Disruption::default();
            loop {
                // Events already in are taken before the stop, so a finish right after a change
                // still counts it.
                let event = tokio::select! {
                    biased;
                    event = events.next() => event,
                    _ = stopped.notified() => break,
                };
                match event {
                    Some(Ok(watcher::Event::Apply(pod))) => {
                        ready.insert(name(&pod), available(&pod));
                    }
                    Some(Ok(watcher::Event::Delete(pod))) => {
                        ready.remove(&name(&pod));
                    }
                    Some(Ok(watcher::Event::Init)) => listing.clear(),
                    Some(Ok(watcher::Event::InitApply(pod))) => {
                        listing.insert(name(&pod), available(&pod));
                    }
                    Some(Ok(watcher::Event::InitDone)) => {
                        ready = std::mem::take(&mut listing);
                        listed = true;
                        if let Some(tx) = listed_tx.take() {
                            let _ = tx.send(());
                        }
                    }
                    // The watcher lists again after its backoff; a dip inside such a gap shows in
                    // that list only if it lasts until then.
                    Some(Err(_)) => continue,
                    None => break,
                }
                if !listed {
                    continue;
                }
                let up = ready.values().filter(|up| **up).count();
                let down = members.saturating_sub(up);
                if down > worst.most {
                    worst = Disruption {
                        most: down,
                        at_seconds: started.elapsed().as_secs_f64(),
                        pods: ready
                            .iter()
                            .filter(|(_, up)| !**up)
                            .map(|(name, _)| name.clone())
                            .collect(),
                    };
                }
            }
            worst
        });
        // A watch that never lists ends the test here rather than counting nothing.
        tokio::time::timeout(std::time::Duration::from_secs(60), listed_rx)
            .await
            .expect("the disruption oracle's first list within a minute")
            .expect("the disruption oracle's first list");
        DisruptionOracle {
            stop,
            task,
            app: app.to_string(),
        }
    }

    /// Stops watching; the worst moment seen.
    pub async fn finish(self) -> Disruption {
        self.stop.notify_one();
        self.task.await.expect("the disruption oracle's task")
    }

    /// Stops watching and fails the test when more than `allowed` members were unavailable at
    /// one moment, naming the moment and the pods.
    pub async fn assert_at_most(self, allowed: usize) -> Disruption {
        let app = self.app.clone();
        let worst = self.finish().await;
        assert!(
            worst.most <= allowed,
            "{} members of {app} unavailable at once (at most {allowed} allowed) {:.1} s after \
             the oracle started; unavailable pods then: {:?} (the rest missing)",
            worst.most,
            worst.at_seconds,
            worst.pods
        );
        worst
    }
}

fn name(pod: &Pod) -> String {
    pod.metadata.name.clone().unwrap_or_default()
}

/// Ready and not terminating.
fn available(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none() && ferry_engine::pods::ready(pod)
}
