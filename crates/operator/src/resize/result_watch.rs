//! Following a mover's log while it makes its pass. Its last line, the result, is printed the
//! moment the pass is over (synced and verified); the kubelet notices the container's exit only
//! on its next relist, up to a second later, and for a final pass all of that is the replica's
//! downtime. The line wakes the resize's reconcile, which reads it as the outcome
//! ([`is_result_line`]); nothing is decided here. The line is handed to that reconcile as read, so
//! it need not fetch the log's tail through the kubelet once more. The log is stdout and stderr
//! together; the mover prints nothing else that could read as a result line: its JSON lines are
//! serialized, and its warnings and errors, which name files, escape every control character
//! (`ferry_mover::one_line`), so no file name can start a line of its own.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use futures::channel::mpsc::{UnboundedReceiver, UnboundedSender, unbounded};
use futures::{AsyncBufReadExt, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::LogParams;
use kube::runtime::reflector::ObjectRef;

use crate::resize::apply::objects::MOVER_CONTAINER;
use crate::resize_cache::GuardedResize;
use ferry_engine::resize::copy::is_result_line;

/// Result lines kept for reconciles at most; more means most were never taken.
const UNTAKEN_MAX: usize = 64;

/// The movers whose logs are followed, and where their results wake the resize controller.
#[derive(Default)]
pub struct ResultWatch {
    /// `None` in a context built without the resize controller (unit and e2e helpers).
    wake: Option<UnboundedSender<ObjectRef<GuardedResize>>>,
    /// Pod UIDs followed now: one follower per pod.
    followed: Arc<Mutex<HashSet<String>>>,
    /// Result lines read and not yet taken by a reconcile, by pod UID.
    seen: Arc<Mutex<HashMap<String, String>>>,
}

impl ResultWatch {
    /// A watch and the stream of resizes to reconcile that its followers send.
    pub fn new() -> (Self, UnboundedReceiver<ObjectRef<GuardedResize>>) {
        let (wake, woken) = unbounded();
        let watch = ResultWatch {
            wake: Some(wake),
            followed: Arc::default(),
            seen: Arc::default(),
        };
        (watch, woken)
    }

    /// Where others wake the resize controller (`None` in a context built without it).
    pub fn waker(&self) -> Option<UnboundedSender<ObjectRef<GuardedResize>>> {
        self.wake.clone()
    }

    /// Follows the log of mover `pod` (UID `uid`), once, until its result line, which wakes
    /// `resize`; or until the log ends (the container exited without a result, the pod went),
    /// after which a later reconcile may follow it again.
    pub fn follow(&self, pods: &Api<Pod>, pod: &str, uid: &str, resize: ObjectRef<GuardedResize>) {
        let Some(wake) = self.wake.clone() else {
            return;
        };
        let first = self
            .followed
            .lock()
            .is_ok_and(|mut followed| followed.insert(uid.to_string()));
        if !first {
            return;
        }
        let (pods, pod, uid, followed, seen) = (
            pods.clone(),
            pod.to_string(),
            uid.to_string(),
            self.followed.clone(),
            self.seen.clone(),
        );
        tokio::spawn(async move {
            let params = LogParams {
                container: Some(MOVER_CONTAINER.to_string()),
                follow: true,
                ..LogParams::default()
            };
            match pods.log_stream(&pod, &params).await {
                Ok(log) => {
                    let mut lines = log.lines();
                    while let Some(Ok(line)) = lines.next().await {
                        if is_result_line(&line) {
                            tracing::debug!(pod, "mover result in its log; reconciling");
                            if let Ok(mut seen) = seen.lock() {
                                // A result no reconcile took (its mover was seen ended first) is
                                // only a shortcut lost: bounded, not kept for ever.
                                if seen.len() >= UNTAKEN_MAX {
                                    seen.clear();
                                }
                                seen.insert(uid.clone(), line);
                            }
                            let _ = wake.unbounded_send(resize);
                            break;
                        }
                    }
                }
                Err(error) => tracing::debug!(pod, %error, "mover log not followable yet"),
            }
            if let Ok(mut followed) = followed.lock() {
                followed.remove(&uid);
            }
        });
    }

    /// The result line the follower of pod `uid` read, once: a reconcile that fails after taking
    /// it reads the log's tail instead, as it would without a follower.
    pub fn take_result(&self, uid: &str) -> Option<String> {
        self.seen.lock().ok()?.remove(uid)
    }
}
