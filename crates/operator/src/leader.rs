//! Leader election with a `coordination.k8s.io/v1` Lease, as client-go does it: one replica acts,
//! the others wait. Time is never compared across machines: a follower takes over only after it
//! has seen the same Lease record, unchanged, for a whole lease duration on its own clock, and the
//! leader stops acting (the operator exits) when it has not renewed within the renew deadline,
//! which is shorter than the lease duration by the margin an in-flight write needs.

use crate::Error;
use ferry_api::names::{APP_NAME, LABEL_APP_NAME};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::{Api, Client};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// Where the Lease lives and how long it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderElection {
    pub namespace: String,
    pub name: String,
    pub lease_duration: Duration,
}

impl LeaderElection {
    /// A leader that has not renewed for this long stops acting (two thirds of the lease, as
    /// client-go's 10 s of 15 s).
    pub fn renew_deadline(&self) -> Duration {
        self.lease_duration * 2 / 3
    }

    /// How often the leader renews and a follower looks again.
    pub fn retry_period(&self) -> Duration {
        (self.lease_duration / 7).max(Duration::from_millis(200))
    }
}

/// What a Lease says, as far as the election cares: who holds it and the renewal it last wrote.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Record {
    pub holder: Option<String>,
    pub renewed: Option<String>,
    pub transitions: i32,
}

impl Record {
    fn of(lease: &Lease) -> Record {
        let spec = lease.spec.clone().unwrap_or_default();
        Record {
            holder: spec.holder_identity.filter(|holder| !holder.is_empty()),
            renewed: spec.renew_time.map(|time| time.0.to_string()),
            transitions: spec.lease_transitions.unwrap_or(0),
        }
    }
}

/// What a follower does with the record it sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Nobody holds it, it is ours (a restart with the same identity), or its holder stopped
    /// renewing a whole lease duration ago.
    Take,
    /// Someone else holds it and renewed it recently: look again later.
    Wait,
}

/// The follower's decision. `unchanged_for` is how long this replica has seen `record` without
/// any change (by its own clock).
pub fn verdict(record: &Record, me: &str, unchanged_for: Duration, lease_duration: Duration) -> Verdict {
    match record.holder.as_deref() {
        None => Verdict::Take,
        Some(holder) if holder == me => Verdict::Take,
        Some(_) if unchanged_for >= lease_duration => Verdict::Take,
        Some(_) => Verdict::Wait,
    }
}

/// Leadership held: `lost` fires when it can no longer be renewed in time. Dropping it stops the
/// renewals (the Lease then expires for the others).
pub struct Leadership {
    pub lost: oneshot::Receiver<String>,
    renewer: tokio::task::JoinHandle<()>,
}

impl Drop for Leadership {
    fn drop(&mut self) {
        self.renewer.abort();
    }
}

/// Waits until this replica holds the Lease, then keeps renewing it in the background.
pub async fn acquire(client: Client, election: &LeaderElection, me: &str) -> Result<Leadership, Error> {
    let leases: Api<Lease> = Api::namespaced(client, &election.namespace);
    let mut seen: Option<(Record, Instant)> = None;
    loop {
        let attempt = Instant::now();
        let current = leases.get_opt(&election.name).await?;
        let taken = match current {
            None => create(&leases, election, me).await?,
            Some(lease) => {
                let record = Record::of(&lease);
                let since = match &seen {
                    Some((previous, at)) if *previous == record => *at,
                    _ => attempt,
                };
                seen = Some((record.clone(), since));
                match verdict(
                    &record,
                    me,
                    attempt.duration_since(since),
                    election.lease_duration,
                ) {
                    Verdict::Take => take(&leases, lease, &record, election, me).await?,
                    Verdict::Wait => false,
                }
            }
        };
        if taken {
            tracing::info!(lease = %election.name, identity = me, "became the leader");
            let (tell_lost, lost) = oneshot::channel();
            let renewer = tokio::spawn(keep_renewing(
                leases,
                election.clone(),
                me.to_string(),
                attempt,
                tell_lost,
            ));
            return Ok(Leadership { lost, renewer });
        }
        tokio::time::sleep(election.retry_period()).await;
    }
}

fn spec_for(
    me: &str,
    election: &LeaderElection,
    transitions: i32,
    acquired: bool,
    base: Option<LeaseSpec>,
) -> LeaseSpec {
    let now = MicroTime(jiff::Timestamp::now());
    let mut spec = base.unwrap_or_default();
    spec.holder_identity = Some(me.to_string());
    spec.lease_duration_seconds = Some(i32::try_from(election.lease_duration.as_secs()).unwrap_or(i32::MAX));
    spec.renew_time = Some(now.clone());
    if acquired {
        spec.acquire_time = Some(now);
        spec.lease_transitions = Some(transitions);
    }
    spec
}

/// Creates the Lease held by `me`; false when another replica created it first.
async fn create(leases: &Api<Lease>, election: &LeaderElection, me: &str) -> Result<bool, Error> {
    let lease = Lease {
        metadata: ObjectMeta {
            name: Some(election.name.clone()),
            labels: Some([(LABEL_APP_NAME.to_string(), APP_NAME.to_string())].into()),
            ..ObjectMeta::default()
        },
        spec: Some(spec_for(me, election, 0, true, None)),
    };
    match leases.create(&crate::writes::create(), &lease).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
        Err(error) => Err(error.into()),
    }
}

/// Writes `me` as holder over the record seen, guarded by its resourceVersion; false when someone
/// else wrote it first.
async fn take(
    leases: &Api<Lease>,
    mut lease: Lease,
    record: &Record,
    election: &LeaderElection,
    me: &str,
) -> Result<bool, Error> {
    let changes_hands = record.holder.as_deref() != Some(me);
    let transitions = record.transitions + i32::from(changes_hands);
    // (A Lease an older release made has no label: it gets it from its next holder.)
    lease
        .metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert(LABEL_APP_NAME.to_string(), APP_NAME.to_string());
    lease.spec = Some(spec_for(
        me,
        election,
        transitions,
        changes_hands,
        lease.spec.take(),
    ));
    match leases
        .replace(&election.name, &crate::writes::create(), &lease)
        .await
    {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
        Err(error) => Err(error.into()),
    }
}

/// Renews every retry period; reports loss (and stops) when the Lease names someone else or no
/// renewal succeeded within the renew deadline (a hung request counts as failed at the deadline).
async fn keep_renewing(
    leases: Api<Lease>,
    election: LeaderElection,
    me: String,
    mut renewed_at: Instant,
    lost: oneshot::Sender<String>,
) {
    loop {
        tokio::time::sleep(election.retry_period()).await;
        let attempt = Instant::now();
        let remaining = election.renew_deadline().saturating_sub(renewed_at.elapsed());
        let outcome = match tokio::time::timeout(remaining, renew_once(&leases, &election, &me)).await {
            Ok(outcome) => outcome,
            Err(_) => Err(Renewal::Failed("the renewal did not answer in time".into())),
        };
        match outcome {
            Ok(()) => renewed_at = attempt,
            Err(Renewal::Taken(reason)) => {
                let _ = lost.send(reason);
                return;
            }
            Err(Renewal::Failed(reason)) if renewed_at.elapsed() >= election.renew_deadline() => {
                let _ = lost.send(format!("not renewed for {:?}: {reason}", renewed_at.elapsed()));
                return;
            }
            Err(Renewal::Failed(reason)) => tracing::warn!(%reason, "Lease renewal failed; retrying"),
        }
    }
}

enum Renewal {
    /// Someone else holds the Lease now.
    Taken(String),
    /// This attempt failed; a later one may still succeed.
    Failed(String),
}

async fn renew_once(leases: &Api<Lease>, election: &LeaderElection, me: &str) -> Result<(), Renewal> {
    match leases.get_opt(&election.name).await {
        Ok(Some(lease)) => {
            let record = Record::of(&lease);
            if record.holder.as_deref() != Some(me) {
                let holder = record.holder.unwrap_or_default();
                return Err(Renewal::Taken(format!(
                    "the Lease {} is now held by {holder:?}",
                    election.name
                )));
            }
            match take(leases, lease, &record, election, me).await {
                Ok(true) => Ok(()),
                Ok(false) => Err(Renewal::Failed("the Lease changed under this replica".into())),
                Err(error) => Err(Renewal::Failed(error.to_string())),
            }
        }
        Ok(None) => Err(Renewal::Failed(format!("the Lease {} is gone", election.name))),
        Err(error) => Err(Renewal::Failed(error.to_string())),
    }
}

/// Gives the Lease up, if this replica still holds it, so that a replica stopped on purpose (a
/// rollout, a drain) is replaced at once rather than after a lease duration. Called only after the
/// controllers have stopped.
pub async fn release(client: Client, election: &LeaderElection, me: &str) {
    let leases: Api<Lease> = Api::namespaced(client, &election.namespace);
    let Ok(Some(mut lease)) = leases.get_opt(&election.name).await else {
        return;
    };
    if Record::of(&lease).holder.as_deref() != Some(me) {
        return;
    }
    if let Some(spec) = lease.spec.as_mut() {
        spec.holder_identity = None;
        spec.renew_time = None;
    }
    match leases
        .replace(&election.name, &crate::writes::create(), &lease)
        .await
    {
        Ok(_) => tracing::info!(lease = %election.name, "released the leader Lease"),
        Err(error) => tracing::warn!(%error, "cannot release the leader Lease; it expires instead"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEASE: Duration = Duration::from_secs(15);

    fn held_by(holder: &str) -> Record {
        Record {
            holder: Some(holder.into()),
            renewed: Some("2026-11-23T10:00:00Z".into()),
            transitions: 3,
        }
    }

    #[test]
    fn a_free_or_own_lease_is_taken_at_once() {
        assert_eq!(
            verdict(&Record::default(), "a", Duration::ZERO, LEASE),
            Verdict::Take
        );
        assert_eq!(verdict(&held_by("a"), "a", Duration::ZERO, LEASE), Verdict::Take);
    }

    #[test]
    fn another_holder_is_waited_out_for_a_whole_lease_on_the_followers_clock() {
        assert_eq!(verdict(&held_by("b"), "a", Duration::ZERO, LEASE), Verdict::Wait);
        assert_eq!(
            verdict(&held_by("b"), "a", LEASE - Duration::from_millis(1), LEASE),
            Verdict::Wait
        );
        assert_eq!(verdict(&held_by("b"), "a", LEASE, LEASE), Verdict::Take);
    }

    #[test]
    fn the_leader_stops_before_a_follower_may_take_over() {
        let election = LeaderElection {
            namespace: "ferry-system".into(),
            name: "ferry-leader".into(),
            lease_duration: LEASE,
        };
        assert!(election.renew_deadline() + election.retry_period() < election.lease_duration);
        assert!(election.retry_period() < election.renew_deadline() / 3);
    }
}
