//! Polling until a condition holds, for tests and the harness.

use crate::Error;
use std::future::Future;
use std::time::{Duration, Instant};

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
