//! The last answer for each key (a node's stats summary, a namespace's Prometheus query), asked
//! again once it is an interval old: one request per key per interval however many reconciles
//! want it. A failed request also waits out the interval, so a broken source is not hammered.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

type Fetched<T> = Option<(Instant, Result<Arc<T>, String>)>;

pub struct PerKey<T> {
    interval: Duration,
    keys: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Fetched<T>>>>>,
}

impl<T> PerKey<T> {
    pub fn new(interval: Duration) -> Self {
        PerKey {
            interval,
            keys: Mutex::new(HashMap::new()),
        }
    }

    fn slot(&self, key: &str) -> Arc<tokio::sync::Mutex<Fetched<T>>> {
        // A poisoned lock only means another reconcile panicked; the map itself is still whole.
        let mut keys = self
            .keys
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        keys.entry(key.to_string()).or_default().clone()
    }

    /// The answer for `key`, at most an interval old, asked with `fetch` when it is older (or why
    /// there is none).
    pub async fn of<F, Fut>(&self, key: &str, fetch: F) -> Result<Arc<T>, String>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<T, String>>,
    {
        let slot = self.slot(key);
        // Held across the request, so concurrent reconciles wait for one request instead of each
        // making their own.
        let mut fetched = slot.lock().await;
        if let Some((at, result)) = fetched.as_ref()
            && at.elapsed() < self.interval
        {
            return result.clone();
        }
        let result = fetch().await.map(Arc::new);
        if let Err(error) = &result {
            tracing::warn!(%key, %error, "volume usage unavailable");
        }
        *fetched = Some((Instant::now(), result.clone()));
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn one_request_per_key_per_interval_failures_included() {
        let cache = PerKey::<u32>::new(Duration::from_secs(3600));
        let asked = AtomicUsize::new(0);
        let fetch = |value: Result<u32, String>| {
            asked.fetch_add(1, Ordering::SeqCst);
            async move { value }
        };
        assert_eq!(*cache.of("a", || fetch(Ok(1))).await.unwrap(), 1);
        assert_eq!(*cache.of("a", || fetch(Ok(2))).await.unwrap(), 1, "kept");
        assert_eq!(
            cache.of("b", || fetch(Err("down".into()))).await.unwrap_err(),
            "down"
        );
        assert_eq!(
            cache.of("b", || fetch(Ok(3))).await.unwrap_err(),
            "down",
            "kept too"
        );
        assert_eq!(asked.load(Ordering::SeqCst), 2);
        let fresh = PerKey::<u32>::new(Duration::ZERO);
        assert_eq!(*fresh.of("a", || fetch(Ok(4))).await.unwrap(), 4);
        assert_eq!(
            *fresh.of("a", || fetch(Ok(5))).await.unwrap(),
            5,
            "asked again once old"
        );
    }
}
