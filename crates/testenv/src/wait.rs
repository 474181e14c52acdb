//! Waiting until a condition holds, for tests and the harness: on a watch of the one object
//! ([`wait_for_object`]) where the condition is about one object, else by polling ([`wait_until`]).

use crate::Error;
use futures::StreamExt;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;
use std::fmt::Debug;
use std::future::Future;
use std::time::{Duration, Instant};

/// Waits until the object `name` of `api` exists and satisfies `check`, returning it; fails after
/// `seconds`. It watches that one object (a field selector on its name) and checks every version
/// the API server sends, so it sees each change at once and asks nothing while nothing changes:
/// the tests' GETs every 200 ms were a sixth of the API server's requests in the end-to-end run.
/// A watch that fails (an API server restarting) is started again after a back-off.
pub async fn wait_for_object<K>(
    api: &Api<K>,
    name: &str,
    what: &str,
    seconds: u64,
    check: impl Fn(&K) -> bool,
) -> Result<K, Error>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
{
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let stream = watcher(api.clone(), config).default_backoff().applied_objects();
    // The watch runs as a task of its own: its objects are decoded there, on a worker thread's
    // stack, not under a test's deeply nested futures (a debug build's decoder of a pod template
    // takes kilobytes of stack per level, and the test threads overflowed).
    let (sender, mut versions) = tokio::sync::mpsc::unbounded_channel();
    let watch = tokio::spawn(async move {
        let mut stream = Box::pin(stream);
        while let Some(version) = stream.next().await {
            if let Ok(object) = version
                && sender.send(object).is_err()
            {
                return;
            }
        }
    });
    let _stop_watching = AbortOnDrop(watch);
    let found = async {
        while let Some(object) = versions.recv().await {
            if check(&object) {
                return Some(object);
            }
        }
        None
    };
    match tokio::time::timeout(Duration::from_secs(seconds), found).await {
        Ok(Some(object)) => Ok(object),
        _ => Err(Error::Timeout {
            what: what.to_string(),
            seconds,
        }),
    }
}

/// Calls `check` every 200 ms until it returns `Some`, or fails after `seconds`.
pub async fn wait_until<T, F, Fut>(what: &str, seconds: u64, mut check: F) -> Result<T, Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + Duration::from_secs(seconds);
    loop {
        if let Some(value) = check().await {
            return Ok(value);
        }
        if Instant::now() >= deadline {
            return Err(Error::Timeout {
                what: what.to_string(),
                seconds,
            });
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Stops a task when dropped (a wait that ended or timed out leaves no watch behind).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
