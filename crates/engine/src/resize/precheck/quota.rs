//! The namespace's own rules, checked before anything is touched: the API server enforces a
//! LimitRange on every claim create and update, a ResourceQuota on every claim create and growth,
//! and Pod Security on every pod, so a resize they would stop half-way is refused at the start
//! instead of retrying a refused write for ever.

use super::Precheck;
use crate::resize::observed::Observed;
use ferry_api::quantity::format_bytes;
use ferry_api::{ChosenStrategy, Mode, VolumePlan, VolumeResizeSpec, condition::*};
use std::collections::BTreeMap;

const STORAGE: &str = "requests.storage";
const CLAIMS: &str = "persistentvolumeclaims";

fn per_class(class: &str, resource: &str) -> String {
    format!("{class}.storageclass.storage.k8s.io/{resource}")
}

/// A copy needs pods that keep files' owners. Where Pod Security `restricted` admits no root pod,
/// Ferry's pods run as the StatefulSet's own (non-root) user with no capability, so its files keep
/// their owner as they are (the measuring pod then says whether anything is owned otherwise); a
/// StatefulSet whose pods name no such user is refused: owners are never dropped to fit.
pub(super) fn pods_admitted(observed: &Observed, plan: &[VolumePlan]) -> Result<(), Precheck> {
    if observed.pod_security.as_deref() != Some("restricted") {
        return Ok(());
    }
    let runs_as_user = (observed.stateful_set.as_ref()).is_some_and(|sts| sts.run_as.is_some());
    if runs_as_user {
        return Ok(());
    }
    let Some(row) = (plan.iter()).find(|row| row.strategy == Some(ChosenStrategy::Copy)) else {
        return Ok(());
    };
    Err(Precheck::reject(
        REASON_POD_SECURITY,
        format!(
            "this namespace enforces Pod Security \"restricted\", which admits no pod running as root with the capabilities that keep files' owners and modes; replica {}'s volume {:?} needs a copy, which runs there as the StatefulSet's own user, and its pods name none (runAsUser other than 0 in the pod's or its first container's securityContext; fsGroup for the new volume to be writable). Ferry never copies with owners dropped: name the user, let this namespace enforce \"baseline\" for the copy, or grow in place where the StorageClass allows it",
            row.replica, row.volume
        ),
    ))
}

/// Every claim the resize makes or grows is within the namespace's LimitRanges' bounds.
pub(super) fn within_limit_ranges(observed: &Observed, plan: &[VolumePlan]) -> Result<(), Precheck> {
    for row in plan.iter().filter(|row| row.strategy.is_some()) {
        let Some(bytes) = row.target_bytes else {
            continue;
        };
        for limit in &observed.claim_limits {
            let (bound, word) = match (limit.min, limit.max) {
                (_, Some(max)) if bytes > max => (max, "at most"),
                (Some(min), _) if bytes < min => (min, "at least"),
                _ => continue,
            };
            return Err(Precheck::reject(
                REASON_CLAIM_SIZE_LIMIT,
                format!(
                    "LimitRange {:?} allows claims of {word} {} in this namespace; replica {}'s volume {:?} (claim {}) would be {}, which the API server would refuse half-way through",
                    limit.name,
                    format_bytes(bound),
                    row.replica,
                    row.volume,
                    row.claim_name,
                    format_bytes(bytes)
                ),
            ));
        }
    }
    Ok(())
}

/// What one row changes in a quota's usage, by resource: for good once it is done, and on top of
/// that while it copies (its new claim beside the old one until the swap).
#[derive(Debug, Default, Clone, PartialEq)]
struct Usage {
    lasting: BTreeMap<String, i128>,
    while_copying: BTreeMap<String, i128>,
}

fn add(into: &mut BTreeMap<String, i128>, resource: String, amount: i128) {
    *into.entry(resource).or_default() += amount;
}

fn usage(row: &VolumePlan, current: u64) -> Usage {
    let mut usage = Usage::default();
    let (Some(strategy), Some(target)) = (row.strategy, row.target_bytes) else {
        return usage;
    };
    let (target, current) = (i128::from(target), i128::from(current));
    let old_class = row.current_storage_class.as_deref();
    let new_class = row.target_storage_class.as_deref().or(old_class);
    add(&mut usage.lasting, STORAGE.to_string(), target - current);
    match strategy {
        ChosenStrategy::InPlace => {
            if let Some(class) = old_class {
                add(&mut usage.lasting, per_class(class, STORAGE), target - current);
            }
        }
        ChosenStrategy::Copy => {
            // Swapped, the claim is the new volume's: its size and class.
            if let Some(class) = old_class {
                add(&mut usage.lasting, per_class(class, STORAGE), -current);
                add(&mut usage.lasting, per_class(class, CLAIMS), -1);
            }
            if let Some(class) = new_class {
                add(&mut usage.lasting, per_class(class, STORAGE), target);
                add(&mut usage.lasting, per_class(class, CLAIMS), 1);
                add(&mut usage.while_copying, per_class(class, STORAGE), target);
                add(&mut usage.while_copying, per_class(class, CLAIMS), 1);
            }
            add(&mut usage.while_copying, STORAGE.to_string(), target);
            add(&mut usage.while_copying, CLAIMS.to_string(), 1);
        }
    }
    usage
}

/// What one replica's rows change: for good (shrinks not counted as room), for good by in-place
/// growth alone, and while its copies run.
#[derive(Default)]
struct Replica {
    lasting: BTreeMap<String, i128>,
    grown_in_place: BTreeMap<String, i128>,
    copying: BTreeMap<String, i128>,
}

/// The most the resize adds to each resource at any moment, counted high. In Rolling, replica `r`
/// copies beside the lasting changes of at most every other replica (whatever the order) and its
/// own in-place growth; Offline, every replica's copies and in-place growths run at once, before
/// any swap. Once done, every lasting change.
fn peak(spec: &VolumeResizeSpec, observed: &Observed, plan: &[VolumePlan]) -> BTreeMap<String, i128> {
    let mut replicas: BTreeMap<i32, Replica> = BTreeMap::new();
    for row in plan {
        let current = (observed.claims.get(&row.claim_name)).map_or(0, |claim| claim.requested_bytes);
        let usage = usage(row, current);
        let replica = replicas.entry(row.replica).or_default();
        for (resource, amount) in usage.lasting {
            add(&mut replica.lasting, resource.clone(), amount.max(0));
            if row.strategy == Some(ChosenStrategy::InPlace) {
                add(&mut replica.grown_in_place, resource, amount.max(0));
            }
        }
        for (resource, amount) in usage.while_copying {
            add(&mut replica.copying, resource, amount);
        }
    }
    let mut done: BTreeMap<String, i128> = BTreeMap::new();
    for replica in replicas.values() {
        for (resource, amount) in &replica.lasting {
            add(&mut done, resource.clone(), *amount);
        }
    }
    let mut peak = done.clone();
    let mut offline: BTreeMap<String, i128> = BTreeMap::new();
    for replica in replicas.values() {
        let mut during = BTreeMap::new();
        for (resource, amount) in replica.grown_in_place.iter().chain(&replica.copying) {
            add(&mut during, resource.clone(), *amount);
        }
        for (resource, amount) in during {
            add(&mut offline, resource.clone(), amount);
            let others = done.get(&resource).copied().unwrap_or(0)
                - replica.lasting.get(&resource).copied().unwrap_or(0);
            if spec.mode == Mode::Rolling {
                let slot = peak.entry(resource).or_default();
                *slot = (*slot).max(others + amount);
            }
        }
    }
    if spec.mode == Mode::Offline {
        for (resource, amount) in offline {
            let slot = peak.entry(resource).or_default();
            *slot = (*slot).max(amount);
        }
    }
    peak
}

/// The namespace's ResourceQuotas hold what the resize adds at its peak.
pub(super) fn within_quotas(
    spec: &VolumeResizeSpec,
    observed: &Observed,
    plan: &[VolumePlan],
) -> Result<(), Precheck> {
    if observed.quotas.is_empty() {
        return Ok(());
    }
    let peak = peak(spec, observed, plan);
    for quota in &observed.quotas {
        for (resource, hard) in &quota.hard {
            let needed = peak.get(resource).copied().unwrap_or(0);
            let used = quota.used.get(resource).copied().unwrap_or(0);
            if needed <= 0 || i128::from(used) + needed <= i128::from(*hard) {
                continue;
            }
            let storage = resource.ends_with(STORAGE);
            let amount = |n: i128| match storage {
                true => format_bytes(u64::try_from(n).unwrap_or(u64::MAX)),
                false => n.to_string(),
            };
            return Err(Precheck::reject(
                REASON_QUOTA_EXCEEDED,
                format!(
                    "ResourceQuota {:?} allows {resource} up to {} in this namespace and {} is in use; this resize needs {} more at its peak (a copy makes each new volume's claim beside the old one until the swap{}), which the API server would refuse half-way through: raise the quota, or resize fewer volumes at once",
                    quota.name,
                    amount(i128::from(*hard)),
                    amount(i128::from(used)),
                    amount(needed),
                    match spec.mode {
                        Mode::Rolling => ", one replica at a time",
                        Mode::Offline => ", every replica at once Offline",
                    }
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resize::observed::{ClaimLimitView, ClaimView, QuotaView};

    const GI: u64 = 1 << 30;

    fn row(replica: i32, strategy: ChosenStrategy, target: u64, class: &str, new_class: &str) -> VolumePlan {
        VolumePlan {
            replica,
            volume: "data".into(),
            claim_name: format!("data-db-{replica}"),
            strategy: Some(strategy),
            target_bytes: Some(target),
            current_storage_class: Some(class.into()),
            target_storage_class: Some(new_class.into()),
            ..VolumePlan::default()
        }
    }

    fn observed(current: u64, replicas: i32) -> Observed {
        let mut observed = Observed::default();
        for replica in 0..replicas {
            let claim = ClaimView {
                requested_bytes: current,
                ..ClaimView::default()
            };
            observed.claims.insert(format!("data-db-{replica}"), claim);
        }
        observed
    }

    fn quota(resource: &str, hard: u64, used: u64) -> QuotaView {
        QuotaView {
            name: "team".into(),
            hard: [(resource.to_string(), hard)].into(),
            used: [(resource.to_string(), used)].into(),
        }
    }

    fn spec(mode: Mode) -> VolumeResizeSpec {
        VolumeResizeSpec {
            mode,
            ..VolumeResizeSpec::for_volumes("db", Vec::new())
        }
    }

    fn refused(result: Result<(), Precheck>) -> Option<String> {
        match result.err()?.verdict {
            super::super::Verdict::Reject { reason, message } => Some(format!("{reason}: {message}")),
            _ => None,
        }
    }

    #[test]
    fn a_rolling_copy_needs_room_for_one_replicas_new_claims_beside_the_old_and_every_growth() {
        // Three replicas of 2Gi copied to 5Gi: at the last one, two are grown (+3Gi each) and its
        // new 5Gi claim stands beside its old 2Gi one: 6Gi + 5Gi = 11Gi more than now.
        let plan: Vec<_> = (0..3)
            .map(|r| row(r, ChosenStrategy::Copy, 5 * GI, "fast", "fast"))
            .collect();
        let mut observed = observed(2 * GI, 3);
        assert_eq!(
            peak(&spec(Mode::Rolling), &observed, &plan)[STORAGE],
            i128::from(11 * GI)
        );
        observed.quotas = vec![quota(STORAGE, 6 * GI + 11 * GI, 6 * GI)];
        assert!(within_quotas(&spec(Mode::Rolling), &observed, &plan).is_ok());
        observed.quotas = vec![quota(STORAGE, 6 * GI + 11 * GI - 1, 6 * GI)];
        let message = refused(within_quotas(&spec(Mode::Rolling), &observed, &plan)).unwrap();
        assert!(
            message.starts_with("QuotaExceeded: ResourceQuota \"team\" allows requests.storage up to"),
            "{message}"
        );
        assert!(message.contains("needs 11Gi more at its peak"), "{message}");
        // Offline, the three new claims at once: 15Gi.
        assert_eq!(
            peak(&spec(Mode::Offline), &observed, &plan)[STORAGE],
            i128::from(15 * GI)
        );
        // One more claim at a time in Rolling, three at once Offline.
        observed.quotas = vec![quota(CLAIMS, 4, 3)];
        assert!(within_quotas(&spec(Mode::Rolling), &observed, &plan).is_ok());
        let message = refused(within_quotas(&spec(Mode::Offline), &observed, &plan)).unwrap();
        assert!(
            message.contains(
                "persistentvolumeclaims up to 4 in this namespace and 3 is in use; this resize needs 3 more"
            ),
            "{message}"
        );
    }

    #[test]
    fn a_move_to_another_class_counts_against_the_new_class_and_a_shrink_needs_only_its_new_claim() {
        let plan = vec![row(0, ChosenStrategy::Copy, GI, "slow", "fast")];
        let mut observed = observed(8 * GI, 1);
        let fast = per_class("fast", STORAGE);
        observed.quotas = vec![quota(&fast, GI - 1, 0)];
        let message = refused(within_quotas(&spec(Mode::Rolling), &observed, &plan)).unwrap();
        assert!(
            message.contains("fast.storageclass.storage.k8s.io/requests.storage"),
            "{message}"
        );
        // The old class loses its claim: no room needed there; overall the 1Gi new claim beside
        // the 8Gi old one is all.
        observed.quotas = vec![
            quota(&per_class("slow", STORAGE), 8 * GI, 8 * GI),
            quota(STORAGE, 9 * GI, 8 * GI),
        ];
        assert!(within_quotas(&spec(Mode::Rolling), &observed, &plan).is_ok());
    }

    #[test]
    fn an_in_place_growth_counts_its_growth_and_nothing_else() {
        let plan: Vec<_> = (0..2)
            .map(|r| row(r, ChosenStrategy::InPlace, 3 * GI, "fast", "fast"))
            .collect();
        let mut observed = observed(2 * GI, 2);
        observed.quotas = vec![quota(STORAGE, 6 * GI, 4 * GI), quota(CLAIMS, 2, 2)];
        assert!(within_quotas(&spec(Mode::Rolling), &observed, &plan).is_ok());
        observed.quotas = vec![quota(&per_class("fast", STORAGE), 6 * GI - 1, 4 * GI)];
        assert!(refused(within_quotas(&spec(Mode::Offline), &observed, &plan)).is_some());
    }

    #[test]
    fn a_copy_in_a_restricted_namespace_is_refused_and_a_growth_in_place_is_not() {
        let copy = vec![row(1, ChosenStrategy::Copy, 2 * GI, "fast", "fast")];
        let grow = vec![row(1, ChosenStrategy::InPlace, 2 * GI, "fast", "fast")];
        let mut observed = observed(GI, 2);
        for level in [None, Some("baseline"), Some("privileged")] {
            observed.pod_security = level.map(String::from);
            assert!(pods_admitted(&observed, &copy).is_ok(), "{level:?}");
        }
        observed.pod_security = Some("restricted".into());
        assert!(pods_admitted(&observed, &grow).is_ok());
        let message = refused(pods_admitted(&observed, &copy)).unwrap();
        assert!(
            message.starts_with("PodSecurityRestricted: this namespace enforces Pod Security \"restricted\""),
            "{message}"
        );
        assert!(
            message.contains("replica 1's volume \"data\" needs a copy"),
            "{message}"
        );
    }

    /// A StatefulSet whose pods run as a non-root user: its copy runs as that user (no capability
    /// needed to keep its files' owners), so `restricted` admits it.
    #[test]
    fn a_copy_in_a_restricted_namespace_runs_as_the_stateful_sets_own_user() {
        let copy = vec![row(1, ChosenStrategy::Copy, 2 * GI, "fast", "fast")];
        let mut observed = observed(GI, 2);
        observed.pod_security = Some("restricted".into());
        let sts = observed.stateful_set.get_or_insert_with(Default::default);
        sts.run_as = Some(crate::pods::RunAs {
            user: 999,
            fs_group: Some(999),
            ..Default::default()
        });
        assert!(pods_admitted(&observed, &copy).is_ok());
    }

    #[test]
    fn a_claim_outside_a_limit_ranges_bounds_is_refused_naming_it() {
        let plan = vec![row(1, ChosenStrategy::Copy, 20 * GI, "fast", "fast")];
        let mut observed = observed(2 * GI, 2);
        observed.claim_limits = vec![ClaimLimitView {
            name: "claims".into(),
            min: Some(GI),
            max: Some(10 * GI),
        }];
        let message = refused(within_limit_ranges(&observed, &plan)).unwrap();
        assert_eq!(
            message,
            "ClaimSizeOutsideLimitRange: LimitRange \"claims\" allows claims of at most 10Gi in this namespace; replica 1's volume \"data\" (claim data-db-1) would be 20Gi, which the API server would refuse half-way through"
        );
        let small = vec![row(0, ChosenStrategy::Copy, GI / 2, "fast", "fast")];
        assert!(
            refused(within_limit_ranges(&observed, &small))
                .unwrap()
                .contains("at least 1Gi")
        );
        let fits = vec![row(0, ChosenStrategy::InPlace, 10 * GI, "fast", "fast")];
        assert!(within_limit_ranges(&observed, &fits).is_ok());
    }
}
