//! The disruption oracle (`ferry_testenv::disruption`) as the tests use it: started and asserted
//! with a panic that names the moment and the pods. Every real-node writer runs under one the
//! harness keeps ([`super::Harness::watch_disruption`]); tests that watch another application, or
//! one stretch of the test only, start their own.

use ferry_testenv::disruption::{Allowed, Disruption};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;

pub struct DisruptionOracle(ferry_testenv::disruption::DisruptionOracle);

impl DisruptionOracle {
    /// Starts watching the `members` pods of `app`; returns once its first list is in.
    pub async fn start(pods: Api<Pod>, app: &str, members: usize) -> Self {
        DisruptionOracle(
            ferry_testenv::disruption::DisruptionOracle::start(pods, app, members)
                .await
                .unwrap(),
        )
    }

    /// The application watched.
    pub fn app(&self) -> &str {
        self.0.app()
    }

    /// Stops watching; the worst seen.
    pub async fn finish(self) -> Disruption {
        self.0.finish().await.unwrap()
    }

    /// Stops watching and fails the test when more than `at_once` members were unavailable at one
    /// moment or any member went down more than once.
    pub async fn assert_at_most(self, at_once: usize) -> Disruption {
        self.assert_within(Allowed::at_once(at_once)).await
    }

    /// Stops watching and fails the test when the application was disrupted beyond `allowed`.
    pub async fn assert_within(self, allowed: Allowed) -> Disruption {
        let app = self.0.app().to_string();
        let worst = self.finish().await;
        if let Some(said) = worst.beyond(&app, allowed) {
            panic!("the disruption oracle: {said}");
        }
        worst
    }
}
