//! The go of a standby final mover as a line on its stdin (feature `directGo`). The annotation it
//! also gets stays the record of the go; the kubelet shows it to the mover through a downward API
//! file 0.1–0.2 s later, all of it the replica's downtime. The line only wakes the mover sooner.
//!
//! Each final mover gets a key when it is made, kept in this operator's memory alone (the pod
//! carries the key's SHA-256, so no one else allowed to attach can start its pass). An attach
//! stream to its stdin is opened once it runs, while the replica still serves; the go writes the
//! key on it after the annotation. An operator restarted in between has no key and no stream: the
//! annotation alone gives the go, as it does when the attach is refused. The replica is stopped
//! only once the stream is open or given up (at most [`ATTACH_WAIT`] after it began opening), so a
//! go that comes right after the mover started still comes by the line.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ferry_engine::names::hex_digest;
use futures::channel::mpsc::UnboundedSender;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{AttachParams, AttachedProcess};
use kube::runtime::reflector::ObjectRef;
use rand::Rng;
use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;

use crate::resize::apply::objects::MOVER_CONTAINER;
use crate::resize_cache::GuardedResize;

/// A key's length: 64 letters and digits, about 380 bits.
const KEY_LENGTH: usize = 64;
/// How long a key is kept for a mover never given its go (its resize cancelled or failed).
const FORGET_AFTER: Duration = Duration::from_secs(24 * 3600);
/// How long the stream is kept open after the key is written, so its bytes leave before it closes.
const LINGER: Duration = Duration::from_secs(5);
/// The longest the go waits for its line to be taken (a full buffer means a stalled stream).
const WRITE_TIMEOUT: Duration = Duration::from_millis(500);
/// The longest an attach may take to open before the annotation alone is left to give the go
/// (the replica waits for it to open, still serving).
pub const ATTACH_WAIT: Duration = Duration::from_secs(10);

/// A mover pod: its namespace and name.
type MoverName = (String, String);

/// A mover's key, and the SHA-256 of it the mover is started with.
pub struct Key {
    key: String,
    pub digest: String,
}

/// The keys and streams of standby final movers this operator made.
#[derive(Default)]
pub struct DirectGo {
    enabled: bool,
    movers: Arc<Mutex<HashMap<MoverName, Standby>>>,
    /// Wakes the resize a stream opened (or was given up) for; `None` outside the controller.
    wake: Option<UnboundedSender<ObjectRef<GuardedResize>>>,
}

/// A mover's key and stream (`P`: the attached process; another type in unit tests).
struct Standby<P = AttachedProcess> {
    key: String,
    made: Instant,
    stream: Stream<P>,
    /// Streams that ended before the go (an API server restart, the kubelet's idle timeout).
    ended: u32,
}

/// How many ended streams are opened again before the annotation alone is left to give the go.
const REOPENS: u32 = 3;

impl<P> Standby<P> {
    /// Its open stream ended before the go: closed, so the next reconcile opens another, unless
    /// too many have ended.
    fn stream_ended(&mut self) {
        if matches!(self.stream, Stream::Open(_)) {
            self.ended += 1;
            self.stream = if self.ended > REOPENS {
                Stream::Refused
            } else {
                Stream::Closed
            };
        }
    }
}

enum Stream<P = AttachedProcess> {
    /// Not opened yet (the container not running when last seen), or opened again.
    Closed,
    Opening,
    Open(P),
    /// The attach failed: the annotation alone gives this mover its go.
    Refused,
}

impl DirectGo {
    /// `enabled`: the feature is on (the operator may attach to pods).
    pub fn new(enabled: bool) -> Self {
        DirectGo {
            enabled,
            movers: Arc::default(),
            wake: None,
        }
    }

    /// Streams that open (or are given up) wake their resize through `wake`.
    pub fn waking(mut self, wake: Option<UnboundedSender<ObjectRef<GuardedResize>>>) -> Self {
        self.wake = wake;
        self
    }

    /// Whether the stream to standby mover `pod` is being opened: its replica waits for it.
    pub fn opening(&self, namespace: &str, pod: &str) -> bool {
        let name = (namespace.to_string(), pod.to_string());
        self.movers.lock().ok().is_some_and(|movers| {
            movers
                .get(&name)
                .is_some_and(|s| matches!(s.stream, Stream::Opening))
        })
    }

    /// A new key for a final mover about to be made (it is started with the key's digest);
    /// `None` with the feature off.
    pub fn new_key(&self) -> Option<Key> {
        if !self.enabled {
            return None;
        }
        let key: String = (rand::rng().sample_iter(rand::distr::Alphanumeric))
            .take(KEY_LENGTH)
            .map(char::from)
            .collect();
        let digest = hex_digest(Sha256::new_with_prefix(key.as_bytes()), 32);
        Some(Key { key, digest })
    }

    /// Keeps `key` for final mover `pod`, just made with its digest.
    pub fn remember(&self, namespace: &str, pod: &str, key: Key) {
        let Ok(mut movers) = self.movers.lock() else {
            return;
        };
        movers.retain(|_, standby| standby.made.elapsed() < FORGET_AFTER);
        let standby = Standby {
            key: key.key,
            made: Instant::now(),
            stream: Stream::Closed,
            ended: 0,
        };
        movers.insert((namespace.to_string(), pod.to_string()), standby);
    }

    /// Opens the stream to running standby mover `pod`, once, in the background; `resize` is woken
    /// once it is open or given up.
    pub fn attach(&self, pods: &Api<Pod>, namespace: &str, pod: &str, resize: ObjectRef<GuardedResize>) {
        let name = (namespace.to_string(), pod.to_string());
        let Ok(mut movers) = self.movers.lock() else {
            return;
        };
        let Some(standby) = movers.get_mut(&name) else {
            return;
        };
        if !matches!(standby.stream, Stream::Closed) {
            return;
        }
        standby.stream = Stream::Opening;
        // The mover this stream is for: a pod made again under the name has another key.
        let key = standby.key.clone();
        drop(movers);
        let (pods, movers, wake) = (pods.clone(), self.movers.clone(), self.wake.clone());
        tokio::spawn(async move {
            let params = AttachParams::default()
                .container(MOVER_CONTAINER)
                .stdin(true)
                .stdout(false)
                .stderr(false);
            let (stream, ended) = match tokio::time::timeout(ATTACH_WAIT, pods.attach(&name.1, &params)).await
            {
                Ok(Ok(mut process)) => {
                    let ended = process.take_status();
                    (Stream::Open(process), ended)
                }
                Ok(Err(error)) => {
                    tracing::info!(pod = name.1, %error, "no attach to the standby mover: its go comes by its annotation");
                    (Stream::Refused, None)
                }
                Err(_) => {
                    tracing::info!(
                        pod = name.1,
                        "the attach to the standby mover did not open in time: its go comes by its annotation"
                    );
                    (Stream::Refused, None)
                }
            };
            let kept = match movers.lock() {
                Ok(mut movers) => match movers.get_mut(&name) {
                    Some(standby) if standby.key == key && matches!(standby.stream, Stream::Opening) => {
                        standby.stream = stream;
                        true
                    }
                    // Given its go meanwhile, or made again: this stream is dropped (closed) here.
                    _ => false,
                },
                Err(_) => false,
            };
            if let Some(wake) = &wake {
                let _ = wake.unbounded_send(resize);
            }
            // Its end before the go (the entry is gone once the go is given).
            if kept && let Some(ended) = ended {
                let _ = ended.await;
                if let Ok(mut movers) = movers.lock()
                    && let Some(standby) = movers.get_mut(&name)
                    && standby.key == key
                {
                    tracing::debug!(pod = name.1, "the standby mover's stream ended before its go");
                    standby.stream_ended();
                }
            }
        });
    }

    /// Writes the key on mover `pod`'s stream, if one is open; called once its annotation says go.
    pub async fn give(&self, namespace: &str, pod: &str) {
        let name = (namespace.to_string(), pod.to_string());
        let standby = self
            .movers
            .lock()
            .ok()
            .and_then(|mut movers| movers.remove(&name));
        let Some(Standby {
            key,
            stream: Stream::Open(mut process),
            ..
        }) = standby
        else {
            return;
        };
        let Some(mut stdin) = process.stdin() else {
            return;
        };
        let line = format!("{key}\n");
        let written = tokio::time::timeout(WRITE_TIMEOUT, async {
            stdin.write_all(line.as_bytes()).await?;
            stdin.flush().await
        })
        .await;
        if !matches!(written, Ok(Ok(()))) {
            tracing::info!(pod, "the go's line was not taken: its annotation gives it");
        }
        // Dropping the stream at once would abort the task that sends the line.
        tokio::spawn(async move {
            drop(stdin);
            let _ = tokio::time::timeout(LINGER, process.join()).await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_made_only_with_the_feature_on_and_its_digest_is_its_sha256() {
        assert!(DirectGo::new(false).new_key().is_none());
        let go = DirectGo::new(true);
        let key = go.new_key().unwrap();
        assert_eq!(key.key.len(), 64);
        let sha256: String = (Sha256::digest(key.key.as_bytes()).iter())
            .map(|byte| format!("{byte:02x}"))
            .collect();
        assert_eq!(key.digest, sha256);
        assert_ne!(go.new_key().unwrap().digest, key.digest, "each mover its own key");
        go.remember("ns", "m", key);
        let movers = go.movers.lock().unwrap();
        assert!(matches!(
            movers[&("ns".to_string(), "m".to_string())].stream,
            Stream::Closed
        ));
    }

    #[test]
    fn a_stream_that_ends_before_the_go_is_opened_again_a_few_times_then_left_to_the_annotation() {
        let mut standby = Standby::<()> {
            key: "k".into(),
            made: Instant::now(),
            stream: Stream::Closed,
            ended: 0,
        };
        standby.stream_ended();
        assert!(
            matches!(standby.stream, Stream::Closed),
            "a closed stream did not end"
        );
        assert_eq!(standby.ended, 0);
        for _ in 0..REOPENS {
            standby.stream = Stream::Open(());
            standby.stream_ended();
            assert!(
                matches!(standby.stream, Stream::Closed),
                "opened again by the next reconcile"
            );
        }
        standby.stream = Stream::Open(());
        standby.stream_ended();
        assert!(
            matches!(standby.stream, Stream::Refused),
            "after {REOPENS} ends, the file gives the go"
        );
    }
}
