//! The rollout of a new version over the StatefulSets of an ExtendedStatefulSet (one per zone):
//! first `canaries` pods in all (the highest ordinals, through the StatefulSet partitions) must
//! become Ready within the canary watch time, then the rest within the update watch time. Pods take
//! the version one at a time across every StatefulSet, each only once every member is Ready
//! ([`one_more`]): with one member per zone, a per-StatefulSet rollout would restart them all at once. A step that does not make it
//! marks the version stale and stops there: the pods not yet updated stay on the old version and
//! the canaries are not rolled back (Ferry cannot know whether the old version still works with
//! what the new one may have written); a new template change is the way forward (with
//! `updateNotReady: true` if pods are not Ready). The record lives in status, so a restarted
//! operator goes on where it stood.

/// Where an update stands (the API's `status.updateStep`).
pub use ferry_api::UpdateStep as Step;

use ferry_api::ExtendedStatefulSet;

/// The rollout's record (kept in status).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    pub version: i64,
    /// The digest of the version rolled out (see `desired::version_digest`).
    pub digest: Option<String>,
    pub step: Step,
    /// When the step began (Unix seconds).
    pub step_started: Option<i64>,
    /// For `Stale`: the step that failed (`Canaries` or `Rest`) and why.
    pub stale_at: Option<String>,
}

/// The update rules, defaults applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rules {
    pub canaries: i32,
    pub canary_watch_seconds: i64,
    pub update_watch_seconds: i64,
    pub update_not_ready: bool,
    pub pre_update: bool,
    pub post_update: bool,
}

/// Where the current version's pre- or post-update Job stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum JobState {
    #[default]
    Absent,
    Running,
    Succeeded,
    Failed,
}

/// Which Job to create.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook {
    PreUpdate,
    PostUpdate,
}

impl Rules {
    pub const DEFAULT_CANARY_WATCH_SECONDS: i64 = 60;
    pub const DEFAULT_UPDATE_WATCH_SECONDS: i64 = 300;
}

/// The rollout's rules as an ExtendedStatefulSet's spec sets them, defaults for what it leaves out.
pub(super) fn rules(ests: &ExtendedStatefulSet) -> Rules {
    let strategy = ests.spec.update_strategy.clone().unwrap_or_default();
    let seconds = |text: Option<&String>, default: i64| {
        text.and_then(|text| crate::duration::seconds(text))
            .unwrap_or(default)
    };
    Rules {
        canaries: strategy.canaries.unwrap_or(0),
        canary_watch_seconds: seconds(
            strategy.canary_watch_time.as_ref(),
            Rules::DEFAULT_CANARY_WATCH_SECONDS,
        ),
        update_watch_seconds: seconds(
            strategy.update_watch_time.as_ref(),
            Rules::DEFAULT_UPDATE_WATCH_SECONDS,
        ),
        update_not_ready: strategy.update_not_ready.unwrap_or(false),
        pre_update: ests.spec.pre_update.is_some(),
        post_update: ests.spec.post_update.is_some(),
    }
}

/// One StatefulSet as the rollout sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observed {
    pub name: String,
    pub exists: bool,
    /// The replicas it should have.
    pub replicas: i32,
    /// The replicas it has now (`spec.replicas` of the live StatefulSet): a new version that
    /// changes the spread (zones added or removed) is what brings `replicas` about.
    pub live_replicas: i32,
    pub ready: i32,
    /// Pods on the newest revision that are Ready.
    pub updated_ready: i32,
    /// Pods on the newest revision.
    pub updated: i32,
    /// The live partition (`spec.updateStrategy.rollingUpdate.partition`; 0 when it does not exist):
    /// the pods let through to the version so far, kept by the StatefulSet itself.
    pub partition: i32,
    /// The members whose pods are missing, not Ready or terminating, by index (ordinal less the
    /// first ordinal), as far as its pods were read.
    pub unavailable: Vec<i32>,
}

impl Observed {
    /// Its live partition within its replicas (0 for one not made yet, which starts on the version).
    fn held_partition(&self) -> i32 {
        if self.exists {
            self.partition.clamp(0, self.replicas)
        } else {
            0
        }
    }

    /// Members down now: from its status's Ready count or its pods, whichever says more.
    pub(super) fn members_down(&self) -> i32 {
        if !self.exists {
            return 0;
        }
        let by_status = self.replicas.min(self.live_replicas) - self.ready;
        by_status.max(i32::try_from(self.unavailable.len()).unwrap_or(i32::MAX))
    }
}

/// What to do now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub progress: Progress,
    /// Apply the desired StatefulSets now (false: leave them as they are).
    pub apply: bool,
    /// The partition of each StatefulSet, by name, when applied.
    pub partitions: Vec<(String, i32)>,
    /// Why nothing moves, when nothing moves (for the Progressing condition).
    pub waiting: Option<String>,
    /// Events: (warning, reason, message).
    pub notices: Vec<(bool, &'static str, String)>,
    /// A Job of the current version to create now.
    pub create_job: Option<Hook>,
}

/// Partitions that let no pod of an existing StatefulSet take a new version yet (one not made yet
/// starts on it).
fn hold_all(observed: &[Observed]) -> Vec<(String, i32)> {
    observed
        .iter()
        .map(|sts| (sts.name.clone(), if sts.exists { sts.replicas } else { 0 }))
        .collect()
}

/// Partitions that keep every pod where it is now.
fn held(observed: &[Observed]) -> Vec<(String, i32)> {
    observed
        .iter()
        .map(|sts| (sts.name.clone(), sts.held_partition()))
        .collect()
}

/// Partitions that let one more pod take the version, in the first StatefulSet (in zone order) not
/// done with it: only while every member of every StatefulSet is Ready (the pods let through before
/// among them) and fewer than `limit` pods run it. Otherwise every partition holds, and the plan
/// says what it waits for. A StatefulSet's own rolling update would wait only for its own pods.
fn one_more(plan: &mut Plan, observed: &[Observed], limit: i32) {
    let not_ready: Vec<&str> = observed
        .iter()
        .filter(|sts| sts.members_down() > 0)
        .map(|sts| sts.name.as_str())
        .collect();
    let down: i32 = observed.iter().map(Observed::members_down).sum();
    let updated: i32 = observed.iter().map(|sts| sts.updated.min(sts.replicas)).sum();
    let mut decided = updated >= limit;
    let mut partitions = Vec::new();
    for sts in observed {
        let partition = sts.held_partition();
        let settled = !sts.exists || sts.updated_ready >= sts.replicas - partition;
        let finished = partition == 0 && settled;
        let mut next = partition;
        if !decided && !finished {
            // The first StatefulSet not finished; the ones after it wait for it.
            decided = true;
            // The member let through next may be the one down (a broken version being
            // replaced): restarting it takes no one else down.
            let only_the_next_down = down == 1 && sts.unavailable == [partition - 1];
            if settled && partition > 0 && (not_ready.is_empty() || only_the_next_down) {
                next = partition - 1;
            } else {
                let waiting_on = if not_ready.is_empty() {
                    vec![sts.name.as_str()]
                } else {
                    not_ready.clone()
                };
                plan.waiting = Some(format!(
                    "the next pod takes the version once every pod is Ready (not yet: {})",
                    waiting_on.join(", ")
                ));
            }
        }
        partitions.push((sts.name.clone(), next));
    }
    plan.partitions = partitions;
}

/// Decides the next step of the rollout of version `digest`.
/// The step that updates pods, after the pre-update Job.
fn first_pod_step(rules: &Rules) -> Step {
    if rules.canaries > 0 {
        Step::Canaries
    } else {
        Step::Rest
    }
}

/// Decides the next step of the rollout of version `digest`; `job` is the current version's Job
/// for the step it is in (pre- or post-update).
pub fn next(
    previous: &Progress,
    digest: &str,
    rules: &Rules,
    observed: &[Observed],
    job: JobState,
    now: i64,
) -> Plan {
    let mut plan = Plan {
        progress: previous.clone(),
        apply: true,
        partitions: held(observed),
        waiting: None,
        notices: Vec::new(),
        create_job: None,
    };
    if previous.digest.as_deref() != Some(digest) {
        start_version(&mut plan, previous, digest, rules, observed, now);
        return plan;
    }
    let started = previous.step_started.unwrap_or(now);
    match previous.step {
        Step::Done => {}
        Step::Stale => stay_stale(&mut plan, previous),
        Step::PreUpdate => pre_update(&mut plan, rules, observed, job, now),
        Step::PostUpdate => post_update(&mut plan, job, now),
        Step::Canaries => canaries(&mut plan, rules, observed, started, now),
        Step::Rest => rest(&mut plan, rules, observed, started, now),
    }
    plan
}

/// A new configuration: a new version, applied at once to StatefulSets that do not exist yet,
/// otherwise once every pod is Ready (unless `updateNotReady`), after the pre-update Job if any,
/// canaries first if any.
fn start_version(
    plan: &mut Plan,
    previous: &Progress,
    digest: &str,
    rules: &Rules,
    observed: &[Observed],
    now: i64,
) {
    let version = previous.version.max(0) + 1;
    let begin = |step| Progress {
        version,
        digest: Some(digest.to_string()),
        step,
        step_started: Some(now),
        stale_at: None,
    };
    if observed.iter().all(|sts| !sts.exists) {
        plan.progress = begin(Step::Done);
        plan.notices
            .push((false, "VersionCreated", format!("version {version} created")));
        return;
    }
    // Every pod that runs now is Ready; pods the new version itself adds do not count.
    let not_ready: Vec<&str> = observed
        .iter()
        .filter(|sts| sts.ready < sts.replicas.min(sts.live_replicas))
        .map(|sts| sts.name.as_str())
        .collect();
    if !rules.update_not_ready && !not_ready.is_empty() {
        plan.apply = false;
        plan.waiting = Some(format!(
            "a new version waits until every pod is Ready (not yet: {}); set updateStrategy.updateNotReady: true to update anyway",
            not_ready.join(", ")
        ));
        return;
    }
    if rules.pre_update {
        plan.progress = begin(Step::PreUpdate);
        plan.apply = false;
        plan.create_job = Some(Hook::PreUpdate);
        plan.notices.push((
            false,
            "PreUpdateStarted",
            format!("version {version}: running the pre-update Job first"),
        ));
        return;
    }
    let canaries = rules.canaries.max(0);
    let step = first_pod_step(rules);
    plan.progress = begin(step);
    // The next passes let the pods through one at a time.
    plan.partitions = hold_all(observed);
    plan.notices.push((
        false,
        "UpdateStarted",
        if step == Step::Canaries {
            format!("version {version}: updating {canaries} canary pod(s) first, one at a time across the StatefulSets")
        } else {
            format!("version {version}: updating every pod, one at a time across the StatefulSets")
        },
    ));
}

/// The rollout enters `step` now.
fn enter(plan: &mut Plan, step: Step, now: i64) {
    plan.progress.step = step;
    plan.progress.step_started = Some(now);
}

/// The version runs on every pod: the update is done.
fn done(plan: &mut Plan, now: i64) {
    enter(plan, Step::Done, now);
    plan.notices.push((
        false,
        "UpdateDone",
        format!("version {} runs on every pod", plan.progress.version),
    ));
}

/// The version goes stale with `message` (and `consequence` after it in the Event).
fn go_stale(plan: &mut Plan, message: String, consequence: &str) {
    let version = plan.progress.version;
    plan.progress.step = Step::Stale;
    plan.notices.push((
        true,
        "VersionStale",
        format!("version {version} is stale: {message}{consequence}"),
    ));
    plan.progress.stale_at = Some(message);
}

/// Stale: stay where the update stopped; before the pre-update Job succeeded, the StatefulSets were
/// never touched and stay so.
fn stay_stale(plan: &mut Plan, previous: &Progress) {
    let stopped_at = previous.stale_at.as_deref().unwrap_or_default();
    if stopped_at.starts_with("PreUpdate") {
        plan.apply = false;
    }
}

/// The pre-update Job runs before any pod updates; its failure leaves the StatefulSets unchanged.
fn pre_update(plan: &mut Plan, rules: &Rules, observed: &[Observed], job: JobState, now: i64) {
    let version = plan.progress.version;
    match job {
        JobState::Absent => {
            plan.apply = false;
            plan.create_job = Some(Hook::PreUpdate);
        }
        JobState::Running => plan.apply = false,
        JobState::Succeeded => {
            // Nothing updated yet; the next passes let the pods through one at a time.
            enter(plan, first_pod_step(rules), now);
            plan.partitions = hold_all(observed);
            plan.notices.push((
                false,
                "UpdateStarted",
                format!("version {version}: pre-update Job succeeded; updating pods"),
            ));
        }
        JobState::Failed => {
            plan.apply = false;
            go_stale(
                plan,
                "PreUpdate: the pre-update Job failed; the StatefulSets are unchanged".to_string(),
                "",
            );
        }
    }
}

/// The post-update Job runs once every pod runs the version.
fn post_update(plan: &mut Plan, job: JobState, now: i64) {
    match job {
        JobState::Absent => plan.create_job = Some(Hook::PostUpdate),
        JobState::Running => {}
        JobState::Succeeded => done(plan, now),
        JobState::Failed => go_stale(plan, "PostUpdate: the post-update Job failed".to_string(), ""),
    }
}

/// Canaries: the rest follow once the canaries are Ready, or the version goes stale after the
/// canary watch time.
fn canaries(plan: &mut Plan, rules: &Rules, observed: &[Observed], started: i64, now: i64) {
    let version = plan.progress.version;
    let canaries = rules.canaries.max(0);
    one_more(plan, observed, canaries);
    let members: i32 = observed.iter().map(|sts| sts.replicas).sum();
    let updated_ready: i32 = observed.iter().map(|sts| sts.updated_ready).sum();
    if updated_ready >= canaries.min(members) {
        enter(plan, Step::Rest, now);
        plan.waiting = None;
        one_more(plan, observed, i32::MAX);
        plan.notices.push((
            false,
            "CanariesReady",
            format!("version {version}: canaries Ready; updating the rest"),
        ));
    } else if now - started >= rules.canary_watch_seconds {
        let message = format!(
            "Canaries: not Ready within the canary watch time ({}s)",
            rules.canary_watch_seconds
        );
        go_stale(plan, message, "; the other pods keep the old version");
    }
}

/// The rest: done (or the post-update Job) once every pod runs the version Ready, or stale after
/// the update watch time.
fn rest(plan: &mut Plan, rules: &Rules, observed: &[Observed], started: i64, now: i64) {
    one_more(plan, observed, i32::MAX);
    let all_updated = observed.iter().all(|sts| sts.updated_ready >= sts.replicas);
    if all_updated && rules.post_update {
        enter(plan, Step::PostUpdate, now);
        plan.create_job = Some(Hook::PostUpdate);
    } else if all_updated {
        done(plan, now);
    } else if now - started >= rules.update_watch_seconds {
        let message = format!(
            "Rest: not every pod Ready within the update watch time ({}s)",
            rules.update_watch_seconds
        );
        go_stale(plan, message, "");
    }
}

/// Each version and whether it runs (at least one pod of it), as in the seed.
pub fn versions(progress: &Progress, observed: &[Observed]) -> Vec<(i64, bool)> {
    let updated = observed.iter().map(|sts| sts.updated).sum::<i32>();
    let total = observed.iter().map(|sts| sts.replicas).sum::<i32>();
    let mut versions = Vec::new();
    if progress.step != Step::Done && progress.version > 1 && updated < total {
        versions.push((progress.version - 1, true));
    }
    versions.push((
        progress.version,
        updated > 0 || progress.step == Step::Done && total == 0,
    ));
    versions
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULES: Rules = Rules {
        canaries: 1,
        canary_watch_seconds: 60,
        update_watch_seconds: 300,
        update_not_ready: false,
        pre_update: false,
        post_update: false,
    };

    fn sts(replicas: i32, ready: i32, updated_ready: i32) -> Observed {
        Observed {
            name: "db".into(),
            exists: true,
            replicas,
            live_replicas: replicas,
            ready,
            updated_ready,
            updated: updated_ready,
            // As far as the pods let through so far.
            partition: replicas - updated_ready,
            unavailable: Vec::new(),
        }
    }

    fn at(step: Step, version: i64, started: i64) -> Progress {
        Progress {
            version,
            digest: Some("v".into()),
            step,
            step_started: Some(started),
            stale_at: None,
        }
    }

    #[test]
    fn the_first_version_is_applied_at_once() {
        let empty = Progress {
            version: 0,
            digest: None,
            step: Step::Done,
            step_started: None,
            stale_at: None,
        };
        let absent = Observed {
            exists: false,
            ..sts(3, 0, 0)
        };
        let plan = next(&empty, "v", &RULES, &[absent], JobState::Absent, 10);
        assert!(plan.apply);
        assert_eq!(plan.progress.version, 1);
        assert_eq!(plan.progress.step, Step::Done);
        assert_eq!(plan.partitions, vec![("db".to_string(), 0)]);
    }

    #[test]
    fn a_change_updates_the_canaries_first_then_the_rest_one_pod_at_a_time() {
        let done = Progress {
            digest: Some("old".into()),
            ..at(Step::Done, 1, 0)
        };
        // The version is applied with no pod let through yet.
        let plan = next(&done, "v", &RULES, &[sts(3, 3, 0)], JobState::Absent, 100);
        assert_eq!(plan.progress.step, Step::Canaries);
        assert_eq!(plan.progress.version, 2);
        assert_eq!(plan.partitions, vec![("db".to_string(), 3)]);
        // Every pod Ready: the canary goes through.
        let canary = next(
            &plan.progress,
            "v",
            &RULES,
            &[sts(3, 3, 0)],
            JobState::Absent,
            110,
        );
        assert_eq!(canary.partitions, vec![("db".to_string(), 2)]);

        // The canary restarting: held there.
        let restarting = Observed {
            partition: 2,
            updated: 1,
            ..sts(3, 2, 0)
        };
        let waiting = next(&plan.progress, "v", &RULES, &[restarting], JobState::Absent, 130);
        assert_eq!(waiting.progress.step, Step::Canaries);
        assert_eq!(waiting.partitions, vec![("db".to_string(), 2)]);

        let canaries_ready = next(
            &plan.progress,
            "v",
            &RULES,
            &[sts(3, 3, 1)],
            JobState::Absent,
            130,
        );
        assert_eq!(canaries_ready.progress.step, Step::Rest);
        assert_eq!(canaries_ready.partitions, vec![("db".to_string(), 1)]);
        let rest = next(
            &canaries_ready.progress,
            "v",
            &RULES,
            &[sts(3, 3, 2)],
            JobState::Absent,
            140,
        );
        assert_eq!(rest.partitions, vec![("db".to_string(), 0)]);

        let finished = next(
            &canaries_ready.progress,
            "v",
            &RULES,
            &[sts(3, 3, 3)],
            JobState::Absent,
            200,
        );
        assert_eq!(finished.progress.step, Step::Done);
        assert_eq!(versions(&finished.progress, &[sts(3, 3, 3)]), vec![(2, true)]);
    }

    /// A member down on the old version is let through first (the fix for a broken release
    /// replaces it), but only when no other member is down.
    #[test]
    fn a_member_down_is_let_through_when_it_is_the_next_and_the_only_one() {
        let rest = at(Step::Rest, 4, 100);
        let broken_top = Observed {
            unavailable: vec![2],
            ..sts(3, 2, 0)
        };
        let plan = next(&rest, "v", &RULES, &[broken_top], JobState::Absent, 101);
        assert_eq!(plan.partitions, vec![("db".to_string(), 2)]);
        let broken_bottom = Observed {
            unavailable: vec![0],
            ..sts(3, 2, 0)
        };
        let plan = next(&rest, "v", &RULES, &[broken_bottom], JobState::Absent, 101);
        assert_eq!(plan.partitions, vec![("db".to_string(), 3)]);
        let two_down = Observed {
            unavailable: vec![1, 2],
            ..sts(3, 1, 0)
        };
        let plan = next(&rest, "v", &RULES, &[two_down], JobState::Absent, 101);
        assert_eq!(plan.partitions, vec![("db".to_string(), 3)]);
    }

    fn zone(name: &str, ready: i32, updated_ready: i32, partition: i32) -> Observed {
        Observed {
            name: name.into(),
            updated: 1 - partition,
            partition,
            ..sts(1, ready, updated_ready)
        }
    }

    /// One member per zone: the zones' StatefulSets take the version one pod at a time in zone
    /// order, the next only once the one before runs it Ready; canaries count across zones.
    #[test]
    fn zones_take_the_version_one_member_at_a_time() {
        let rules = Rules { canaries: 1, ..RULES };
        let canaries = at(Step::Canaries, 2, 100);
        let partitions = |plan: &Plan| plan.partitions.iter().map(|(_, p)| *p).collect::<Vec<_>>();
        let fresh = [zone("z0", 1, 0, 1), zone("z1", 1, 0, 1), zone("z2", 1, 0, 1)];
        let first = next(&canaries, "v", &rules, &fresh, JobState::Absent, 101);
        assert_eq!(partitions(&first), [0, 1, 1], "one canary, in the first zone");
        // z0's member restarting: nothing else moves.
        let restarting = [zone("z0", 0, 0, 0), zone("z1", 1, 0, 1), zone("z2", 1, 0, 1)];
        let held = next(&canaries, "v", &rules, &restarting, JobState::Absent, 102);
        assert_eq!(held.progress.step, Step::Canaries);
        assert_eq!(partitions(&held), [0, 1, 1]);
        // Ready on the version: the rest, the next zone only.
        let canary_ready = [zone("z0", 1, 1, 0), zone("z1", 1, 0, 1), zone("z2", 1, 0, 1)];
        let rest = next(&canaries, "v", &rules, &canary_ready, JobState::Absent, 103);
        assert_eq!(rest.progress.step, Step::Rest);
        assert_eq!(partitions(&rest), [0, 0, 1]);
        // A member of another zone down (not the rollout's doing): the next one waits for it.
        let other_down = [zone("z0", 0, 0, 0), zone("z1", 1, 1, 0), zone("z2", 1, 0, 1)];
        let waits = next(&rest.progress, "v", &rules, &other_down, JobState::Absent, 104);
        assert_eq!(partitions(&waits), [0, 0, 1]);
        assert!(waits.waiting.unwrap().contains("z0"));
        let z1_ready = [zone("z0", 1, 1, 0), zone("z1", 1, 1, 0), zone("z2", 1, 0, 1)];
        let last = next(&rest.progress, "v", &rules, &z1_ready, JobState::Absent, 105);
        assert_eq!(partitions(&last), [0, 0, 0]);
    }

    #[test]
    fn a_canary_not_ready_in_time_makes_the_version_stale_and_holds_the_rest_back() {
        let canaries = at(Step::Canaries, 2, 100);
        // The canary let through and not Ready.
        let canary_down = Observed {
            partition: 2,
            updated: 1,
            ..sts(3, 2, 0)
        };
        let stale = next(
            &canaries,
            "v",
            &RULES,
            std::slice::from_ref(&canary_down),
            JobState::Absent,
            160,
        );
        assert_eq!(stale.progress.step, Step::Stale);
        assert!(
            stale
                .progress
                .stale_at
                .as_deref()
                .unwrap()
                .starts_with("Canaries")
        );
        assert_eq!(stale.notices[0].1, "VersionStale");
        // Later passes keep the partition where it stopped.
        let later = next(
            &stale.progress,
            "v",
            &RULES,
            &[canary_down],
            JobState::Absent,
            500,
        );
        assert_eq!(later.progress.step, Step::Stale);
        assert_eq!(later.partitions, vec![("db".to_string(), 2)]);
        assert_eq!(
            versions(
                &later.progress,
                &[Observed {
                    updated: 1,
                    ..sts(3, 2, 0)
                }]
            ),
            vec![(1, true), (2, true)]
        );
    }

    #[test]
    fn a_failed_pre_update_job_leaves_the_stateful_sets_untouched() {
        let rules = Rules {
            pre_update: true,
            post_update: true,
            ..RULES
        };
        let done = Progress {
            digest: Some("old".into()),
            ..at(Step::Done, 1, 0)
        };
        let plan = next(&done, "v", &rules, &[sts(3, 3, 0)], JobState::Absent, 100);
        assert_eq!(plan.progress.step, Step::PreUpdate);
        assert_eq!(plan.create_job, Some(Hook::PreUpdate));
        assert!(!plan.apply);
        let running = next(
            &plan.progress,
            "v",
            &rules,
            &[sts(3, 3, 0)],
            JobState::Running,
            110,
        );
        assert!(!running.apply && running.create_job.is_none());
        let failed = next(
            &plan.progress,
            "v",
            &rules,
            &[sts(3, 3, 0)],
            JobState::Failed,
            120,
        );
        assert_eq!(failed.progress.step, Step::Stale);
        assert!(!failed.apply);
        let later = next(
            &failed.progress,
            "v",
            &rules,
            &[sts(3, 3, 0)],
            JobState::Failed,
            900,
        );
        assert!(!later.apply, "still untouched");

        let passed = next(
            &plan.progress,
            "v",
            &rules,
            &[sts(3, 3, 0)],
            JobState::Succeeded,
            120,
        );
        assert_eq!(passed.progress.step, Step::Canaries);
        assert!(passed.apply);
        let rest = next(
            &passed.progress,
            "v",
            &rules,
            &[sts(3, 3, 1)],
            JobState::Absent,
            130,
        );
        let post = next(
            &rest.progress,
            "v",
            &rules,
            &[sts(3, 3, 3)],
            JobState::Absent,
            140,
        );
        assert_eq!(post.progress.step, Step::PostUpdate);
        assert_eq!(post.create_job, Some(Hook::PostUpdate));
        let post_failed = next(
            &post.progress,
            "v",
            &rules,
            &[sts(3, 3, 3)],
            JobState::Failed,
            150,
        );
        assert_eq!(post_failed.progress.step, Step::Stale);
        assert!(post_failed.apply);
    }

    #[test]
    fn a_new_version_waits_for_ready_pods_unless_update_not_ready() {
        let stale = Progress {
            stale_at: Some("Canaries: …".into()),
            ..at(Step::Stale, 2, 100)
        };
        let fix = next(&stale, "fixed", &RULES, &[sts(3, 2, 0)], JobState::Absent, 200);
        assert!(!fix.apply);
        assert!(fix.waiting.unwrap().contains("updateNotReady"));
        let rules = Rules {
            update_not_ready: true,
            ..RULES
        };
        let fix = next(&stale, "fixed", &rules, &[sts(3, 2, 0)], JobState::Absent, 200);
        assert!(fix.apply);
        assert_eq!(fix.progress.version, 3);
        assert_eq!(fix.progress.step, Step::Canaries);
    }

    /// A zone removed: the version that moves its replicas to the other zones' StatefulSets is what
    /// grows them, so their pods to come never hold it back (it waited for them forever).
    #[test]
    fn pods_the_new_version_adds_do_not_hold_it_back() {
        let done = at(Step::Done, 1, 100);
        let growing = Observed {
            live_replicas: 1,
            ..sts(2, 1, 1)
        };
        let plan = next(
            &done,
            "two zones",
            &RULES,
            std::slice::from_ref(&growing),
            JobState::Absent,
            200,
        );
        assert!(plan.apply, "{:?}", plan.waiting);
        assert_eq!(plan.progress.version, 2);
        // A pod that runs and is not Ready still holds it back.
        let not_ready = Observed { ready: 0, ..growing };
        let plan = next(&done, "two zones", &RULES, &[not_ready], JobState::Absent, 200);
        assert!(!plan.apply);
    }
}
