//! `kubectl ferry migrate` without `--plan`: one VolumeMigration in each namespace where the plan
//! moves something (the operator carries each out, a few StatefulSets at a time:
//! docs/volume-migration.md), then, with `--watch`, their progress until every one ended. The
//! objects are decided here from the plan (pure); `carry_out` creates and follows them.

use super::MigrationPlan;
use crate::exit::{CliError, ExitCode};
use crate::kube_io::Cluster;
use ferry_api::{MigrationFailurePolicy, MigrationPhase, VolumeMigration, VolumeMigrationSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::PostParams;
use kube::{Api, ResourceExt};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

const POLL: Duration = Duration::from_secs(2);

/// How the migrations are made.
#[derive(Debug, Clone)]
pub struct Carry<'a> {
    /// `--name`, else `<from>-to-<to>`.
    pub name: Option<&'a str>,
    pub selector: Option<&'a str>,
    pub max_concurrent: i32,
    pub failure_policy: MigrationFailurePolicy,
    pub watch: bool,
}

/// The VolumeMigrations to create: one per namespace with a StatefulSet that moves.
pub fn migrations(plan: &MigrationPlan, carry: &Carry) -> Result<Vec<VolumeMigration>, String> {
    let selector = carry.selector.map(label_selector).transpose()?;
    let name = match carry.name {
        Some(name) => name.to_string(),
        None => default_name(&plan.from_class, &plan.to_class),
    };
    let namespaces: BTreeSet<&str> = plan.stateful_sets.iter().map(|s| s.namespace.as_str()).collect();
    Ok((namespaces.into_iter())
        .map(|namespace| {
            let mut migration = VolumeMigration::new(
                &name,
                VolumeMigrationSpec {
                    from_storage_class_name: plan.from_class.clone(),
                    to_storage_class_name: plan.to_class.clone(),
                    selector: selector.clone(),
                    max_concurrent: Some(carry.max_concurrent),
                    failure_policy: carry.failure_policy,
                },
            );
            migration.metadata.namespace = Some(namespace.to_string());
            migration
        })
        .collect())
}

/// `<from>-to-<to>`, made a valid object name (lower case, at most 63 characters).
pub fn default_name(from: &str, to: &str) -> String {
    let raw = format!("{from}-to-{to}").to_ascii_lowercase();
    let cleaned: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let trimmed: String = cleaned.chars().take(63).collect();
    trimmed.trim_matches('-').to_string()
}

/// `-l` as a VolumeMigration's selector: equality terms only (`a=b,c==d`), which are what a
/// selector's `matchLabels` can hold.
pub fn label_selector(text: &str) -> Result<LabelSelector, String> {
    let mut labels = BTreeMap::new();
    for term in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let (key, value) = term
            .split_once("==")
            .or_else(|| term.split_once('='))
            .filter(|(key, _)| !key.ends_with('!'))
            .ok_or_else(|| {
                format!(
                    "-l {text:?}: a migration carries only equality terms (key=value); {term:?} is \
                     not one (plan it with --plan, which takes any selector)"
                )
            })?;
        labels.insert(key.trim().to_string(), value.trim().to_string());
    }
    Ok(LabelSelector {
        match_labels: Some(labels),
        ..LabelSelector::default()
    })
}

/// Creates the migrations, then with `watch` follows them until every one ended: exit 0 only if
/// every StatefulSet of every one moved.
pub async fn carry_out(
    cluster: &Cluster,
    migrations: Vec<VolumeMigration>,
    watch: bool,
) -> Result<ExitCode, CliError> {
    if migrations.is_empty() {
        crate::outln!("nothing to migrate: no StatefulSet has a volume on the class");
        return Ok(ExitCode::Ok);
    }
    let mut made = Vec::new();
    for migration in migrations {
        let namespace = migration.namespace().unwrap_or_default();
        let api: Api<VolumeMigration> = Api::namespaced(cluster.client.clone(), &namespace);
        let created = api
            .create(&PostParams::default(), &migration)
            .await
            .map_err(|e| match e {
                kube::Error::Api(status) if status.code == 409 => CliError::Failed(format!(
                    "VolumeMigration {} already exists in namespace {namespace} (it ran or runs: follow \
                 it with kubectl get vmig -n {namespace}, or give another --name)",
                    migration.name_any()
                )),
                other => CliError::Failed(format!("cannot create a VolumeMigration in {namespace}: {other}")),
            })?;
        crate::outln!(
            "volumemigration.ferry.dev/{} created in {namespace}",
            created.name_any()
        );
        made.push((namespace, created.name_any()));
    }
    if !watch {
        return Ok(ExitCode::Ok);
    }
    follow(cluster, &made).await
}

/// Polls the migrations, printing each change of phase or progress, until all ended.
async fn follow(cluster: &Cluster, made: &[(String, String)]) -> Result<ExitCode, CliError> {
    let mut said: BTreeMap<String, String> = BTreeMap::new();
    loop {
        let mut ended = Vec::new();
        for (namespace, name) in made {
            let api: Api<VolumeMigration> = Api::namespaced(cluster.client.clone(), namespace);
            let migration = api.get(name).await.map_err(|e| CliError::Failed(e.to_string()))?;
            let status = migration.status.unwrap_or_default();
            let line = format!(
                "{namespace}/{name}: {:?} {} {}",
                status.phase,
                status.progress.as_deref().unwrap_or("-"),
                status.message.as_deref().unwrap_or("")
            );
            let key = format!("{namespace}/{name}");
            if said.get(&key) != Some(&line) {
                crate::outln!("{line}");
                said.insert(key.clone(), line);
            }
            match status.phase {
                MigrationPhase::Succeeded | MigrationPhase::Failed => ended.push((key, status.phase)),
                MigrationPhase::Pending | MigrationPhase::Running => {}
            }
        }
        if ended.len() == made.len() {
            let failed: Vec<&str> = (ended.iter())
                .filter(|(_, phase)| *phase != MigrationPhase::Succeeded)
                .map(|(key, _)| key.as_str())
                .collect();
            if failed.is_empty() {
                return Ok(ExitCode::Ok);
            }
            return Err(CliError::Failed(format!(
                "not every StatefulSet moved: {} (kubectl get vmig -o yaml says which and why)",
                failed.join(", ")
            )));
        }
        tokio::time::sleep(POLL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migrate::SetMove;

    fn plan(namespaces: &[&str]) -> MigrationPlan {
        MigrationPlan {
            from_class: "gp2".into(),
            to_class: "gp3".into(),
            stateful_sets: (namespaces.iter())
                .map(|ns| SetMove {
                    namespace: (*ns).into(),
                    name: "db".into(),
                    ..SetMove::default()
                })
                .collect(),
            ..MigrationPlan::default()
        }
    }

    fn carry() -> Carry<'static> {
        Carry {
            name: None,
            selector: Some("tier=db, app==pg"),
            max_concurrent: 2,
            failure_policy: MigrationFailurePolicy::Continue,
            watch: false,
        }
    }

    #[test]
    fn one_migration_per_namespace_that_moves_something_with_the_request_in_it() {
        let made = migrations(&plan(&["b", "a", "b"]), &carry()).unwrap();
        let namespaces: Vec<_> = made.iter().map(|m| m.namespace().unwrap()).collect();
        assert_eq!(namespaces, vec!["a", "b"]);
        let spec = &made[0].spec;
        assert_eq!(made[0].name_any(), "gp2-to-gp3");
        assert_eq!(
            (
                spec.from_storage_class_name.as_str(),
                spec.to_storage_class_name.as_str()
            ),
            ("gp2", "gp3")
        );
        assert_eq!(spec.max_concurrent, Some(2));
        assert_eq!(spec.failure_policy, MigrationFailurePolicy::Continue);
        let labels = spec.selector.as_ref().unwrap().match_labels.clone().unwrap();
        assert_eq!(labels.get("tier").map(String::as_str), Some("db"));
        assert_eq!(labels.get("app").map(String::as_str), Some("pg"));
        assert!(migrations(&plan(&[]), &carry()).unwrap().is_empty());
    }

    #[test]
    fn only_equality_selectors_are_carried_and_names_are_valid() {
        for refused in ["tier!=db", "tier in (a,b)", "!tier", "tier"] {
            assert!(label_selector(refused).is_err(), "{refused}");
        }
        assert_eq!(default_name("Old.Class", "new_class"), "old-class-to-new-class");
        assert!(default_name(&"x".repeat(60), &"y".repeat(60)).len() <= 63);
    }
}
