//! The disruption oracle: for the whole of a test it watches every pod of one application (the
//! label `app=<app>`, whatever StatefulSets hold them: zones, versions) and keeps two records: the
//! moment when most of its members were unavailable at once (a member whose pod is missing,
//! terminating or not Ready), and how many times each member went down (a resize restarts a
//! replica once; a second outage is a restart nobody asked for). It follows a watch, event by
//! event, so a dip between two polls is never missed.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::error::Error;

/// What a test allows its application.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allowed {
    /// Members unavailable at one moment.
    pub at_once: usize,
    /// Times each member may go down.
    pub each: usize,
}

impl Allowed {
    /// `at_once` members down at one moment, each of them once.
    pub fn at_once(at_once: usize) -> Self {
        Allowed { at_once, each: 1 }
    }
}

/// The worst the oracle saw.
#[derive(Debug, Clone, Default)]
pub struct Disruption {
    /// Most members unavailable at once.
    pub most: usize,
    /// When that was, since the oracle started.
    pub at_seconds: f64,
    /// The pods present and unavailable then (the rest of `most` were missing).
    pub pods: Vec<String>,
    /// Per member that went down: how many times it did, and when each outage began (seconds
    /// since the oracle started).
    pub outages: BTreeMap<String, Vec<f64>>,
}

impl Disruption {
    /// What went beyond `allowed`, said for a failing test; `None` when nothing did.
    pub fn beyond(&self, app: &str, allowed: Allowed) -> Option<String> {
        let mut said = Vec::new();
        if self.most > allowed.at_once {
            said.push(format!(
                "{} members of {app} unavailable at once (at most {} allowed) {:.1} s after the \
                 oracle started; unavailable pods then: {:?} (the rest missing)",
                self.most, allowed.at_once, self.at_seconds, self.pods
            ));
        }
        for (pod, began) in &self.outages {
            if began.len() > allowed.each {
                said.push(format!(
                    "{pod} went down {} times (at most {} allowed), at {:.1?} s",
                    began.len(),
                    allowed.each,
                    began
                ));
            }
        }
        (!said.is_empty()).then(|| said.join("; "))
    }
}

/// Watches an application's pods until [`DisruptionOracle::finish`].
pub struct DisruptionOracle {
    stop: Arc<Notify>,
    task: JoinHandle<Disruption>,
    app: String,
}

/// The oracle's view while it watches.
struct Watching {
    started: Instant,
    members: usize,
    /// Each present pod: available or not.
    available: BTreeMap<String, bool>,
    worst: Disruption,
}

impl Watching {
    /// Takes a pod's new state (`None`: gone) and keeps the records.
    fn observe(&mut self, pod: String, now: Option<bool>) {
        let was = self.available.get(&pod).copied();
        if was == Some(true) && now != Some(true) {
            let at = self.started.elapsed().as_secs_f64();
            self.worst.outages.entry(pod.clone()).or_default().push(at);
        }
        match now {
            Some(up) => self.available.insert(pod, up),
            None => self.available.remove(&pod),
        };
        self.count();
    }

    /// The first list: where the records start from.
    fn first_list(&mut self, listed: BTreeMap<String, bool>) {
        self.available = listed;
        self.count();
    }

    /// Replaces the whole view by a later list (a pod that vanished while the watch was away
    /// counts as one outage if it was up).
    fn relist(&mut self, listed: BTreeMap<String, bool>) {
        let gone: Vec<String> = self
            .available
            .keys()
            .filter(|pod| !listed.contains_key(*pod))
            .cloned()
            .collect();
        for pod in gone {
            self.observe(pod, None);
        }
        for (pod, up) in listed {
            self.observe(pod, Some(up));
        }
    }

    fn count(&mut self) {
        let up = self.available.values().filter(|up| **up).count();
        let down = self.members.saturating_sub(up);
        if down > self.worst.most {
            self.worst.most = down;
            self.worst.at_seconds = self.started.elapsed().as_secs_f64();
            self.worst.pods = self
                .available
                .iter()
                .filter(|(_, up)| !**up)
                .map(|(name, _)| name.clone())
                .collect();
        }
    }
}

impl DisruptionOracle {
    /// Starts watching the `members` pods of `app`; returns once its first list is in (from then
    /// on every change counts).
    pub async fn start(pods: Api<Pod>, app: &str, members: usize) -> Result<Self, Error> {
        let stop = Arc::new(Notify::new());
        let (listed_tx, listed_rx) = tokio::sync::oneshot::channel::<()>();
        let config = watcher::Config::default().labels(&format!("app={app}"));
        let task = tokio::spawn(watch(pods, config, members, stop.clone(), listed_tx));
        // A watch that never lists ends the test here rather than counting nothing.
        let what = format!("the disruption oracle's first list of app={app}");
        match tokio::time::timeout(Duration::from_secs(60), listed_rx).await {
            Ok(Ok(())) => Ok(DisruptionOracle {
                stop,
                task,
                app: app.to_string(),
            }),
            Ok(Err(_)) => Err(Error::Setup(format!("{what}: the watch ended"))),
            Err(_) => Err(Error::Timeout { what, seconds: 60 }),
        }
    }

    /// The application watched.
    pub fn app(&self) -> &str {
        &self.app
    }

    /// Stops watching; the worst seen.
    pub async fn finish(self) -> Result<Disruption, Error> {
        self.stop.notify_one();
        self.task
            .await
            .map_err(|error| Error::Setup(format!("the disruption oracle's task: {error}")))
    }
}

async fn watch(
    pods: Api<Pod>,
    config: watcher::Config,
    members: usize,
    stopped: Arc<Notify>,
    listed_tx: tokio::sync::oneshot::Sender<()>,
) -> Disruption {
    let mut listed_tx = Some(listed_tx);
    let mut events = watcher::watcher(pods, config).default_backoff().boxed();
    let mut view = Watching {
        started: Instant::now(),
        members,
        available: BTreeMap::new(),
        worst: Disruption::default(),
    };
    let mut listing: BTreeMap<String, bool> = BTreeMap::new();
    let mut listed = false;
    loop {
        // Events already in are taken before the stop, so a finish right after a change still
        // counts it.
        let event = tokio::select! {
            biased;
            event = events.next() => event,
            _ = stopped.notified() => break,
        };
        match event {
            Some(Ok(watcher::Event::Apply(pod))) if listed => view.observe(name(&pod), Some(available(&pod))),
            Some(Ok(watcher::Event::Delete(pod))) if listed => view.observe(name(&pod), None),
            Some(Ok(watcher::Event::Init)) => listing.clear(),
            Some(Ok(watcher::Event::InitApply(pod))) => {
                listing.insert(name(&pod), available(&pod));
            }
            Some(Ok(watcher::Event::InitDone)) => {
                if listed {
                    view.relist(std::mem::take(&mut listing));
                } else {
                    view.first_list(std::mem::take(&mut listing));
                    listed = true;
                }
                if let Some(tx) = listed_tx.take() {
                    let _ = tx.send(());
                }
            }
            // The watcher lists again after its backoff; a dip inside such a gap shows in that
            // list only if it lasts until then.
            Some(Ok(_)) | Some(Err(_)) => continue,
            None => break,
        }
    }
    view.worst
}

fn name(pod: &Pod) -> String {
    pod.metadata.name.clone().unwrap_or_default()
}

/// Ready and not terminating.
fn available(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none() && ferry_engine::pods::ready(pod)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watching(members: usize) -> Watching {
        Watching {
            started: Instant::now(),
            members,
            available: BTreeMap::new(),
            worst: Disruption::default(),
        }
    }

    #[test]
    fn a_member_restarted_once_is_one_outage_and_a_second_restart_is_another() {
        let mut view = watching(2);
        view.first_list(BTreeMap::from([("db-0".into(), true), ("db-1".into(), true)]));
        view.observe("db-0".into(), Some(false));
        view.observe("db-0".into(), None);
        view.observe("db-0".into(), Some(false));
        view.observe("db-0".into(), Some(true));
        assert_eq!(view.worst.most, 1);
        assert_eq!(view.worst.outages["db-0"].len(), 1);
        assert!(view.worst.beyond("db", Allowed::at_once(1)).is_none());

        view.observe("db-0".into(), None);
        view.observe("db-0".into(), Some(true));
        let said = view.worst.beyond("db", Allowed::at_once(1));
        assert!(
            said.as_deref()
                .is_some_and(|said| said.contains("db-0 went down 2 times")),
            "{said:?}"
        );
    }

    #[test]
    fn two_members_down_at_once_are_named_and_a_missing_one_counts() {
        let mut view = watching(3);
        view.first_list(BTreeMap::from([
            ("db-0".into(), true),
            ("db-1".into(), true),
            ("db-2".into(), true),
        ]));
        view.observe("db-2".into(), None);
        view.observe("db-1".into(), Some(false));
        assert_eq!(view.worst.most, 2);
        assert_eq!(view.worst.pods, vec!["db-1".to_string()]);
        let said = view.worst.beyond("db", Allowed::at_once(1));
        assert!(
            said.as_deref()
                .is_some_and(|said| said.contains("2 members of db")),
            "{said:?}"
        );
        assert!(view.worst.beyond("db", Allowed { at_once: 2, each: 1 }).is_none());
    }

    #[test]
    fn a_member_gone_while_the_watch_was_away_counts_once_on_the_next_list() {
        let mut view = watching(2);
        view.first_list(BTreeMap::from([("db-0".into(), true), ("db-1".into(), true)]));
        view.relist(BTreeMap::from([("db-1".into(), true)]));
        assert_eq!(view.worst.outages["db-0"].len(), 1);
        view.relist(BTreeMap::from([("db-0".into(), true), ("db-1".into(), true)]));
        assert_eq!(view.worst.outages["db-0"].len(), 1);
        assert_eq!(view.worst.most, 1);
    }
}
