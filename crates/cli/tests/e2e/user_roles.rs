//! The chart's roles for the people who use Ferry (`templates/aggregated-roles.yaml`): Kubernetes'
//! default `view` and `edit` ClusterRoles take them in, so a namespace user bound to `edit` runs
//! `kubectl ferry resize`, and one bound to `view` lists but cannot create.

use crate::support::Env;
use ferry_testenv::CLASS_EXPANDABLE;
use k8s_openapi::api::rbac::v1::{ClusterRole, RoleBinding};
use kube::Api;
use kube::api::PostParams;
use serde_json::json;

/// The chart's release whose aggregated roles the test applies (cluster-wide objects, one name for
/// every run; applying them again is a no-op).
const RELEASE: &str = "ferry-user-roles";

/// Whether the aggregated ClusterRole `role` grants `verb` on VolumeResizes yet (the
/// controller-manager's aggregation fills it in after the chart's roles appear).
fn grants(role: &ClusterRole, verb: &str) -> bool {
    role.rules.iter().flatten().any(|rule| {
        rule.api_groups.iter().flatten().any(|group| group == "ferry.dev")
            && rule
                .resources
                .iter()
                .flatten()
                .any(|resource| resource == "volumeresizes")
            && rule.verbs.iter().any(|granted| granted == verb)
    })
}

async fn bind(env: &Env, user: &str, role: &str) {
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": format!("{user}-{role}")},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    }))
    .unwrap();
    env.ns
        .api::<RoleBinding>()
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_editor_resizes_and_a_viewer_only_lists() {
    let env = Env::start("cli-roles").await;
    let rendered = ferry_testenv::chart::render(
        RELEASE,
        RELEASE,
        &["--show-only", "templates/aggregated-roles.yaml"],
    )
    .await
    .unwrap();
    ferry_testenv::chart::apply(&rendered).await.unwrap();
    let roles: Api<ClusterRole> = Api::all(env.client.clone());
    for (role, verb) in [("edit", "create"), ("view", "list")] {
        ferry_testenv::wait::wait_for_object(
            &roles,
            role,
            &format!("{role} to aggregate Ferry's roles"),
            60,
            |r| grants(r, verb),
        )
        .await
        .unwrap();
    }
    assert!(!grants(&roles.get("view").await.unwrap(), "create"));
    env.stateful_set("db", 1, CLASS_EXPANDABLE, false).await;
    bind(&env, "ferry-test-editor", "edit").await;
    bind(&env, "ferry-test-viewer", "view").await;

    let edited = env
        .ferry(&[
            "--as",
            "ferry-test-editor",
            "resize",
            "db",
            "--volume",
            "data=2Gi",
            "--name",
            "grow",
        ])
        .await;
    assert_eq!(edited.code, 0, "{edited:?}");
    assert!(env.resizes().get_opt("grow").await.unwrap().is_some());
    let listed = env.ferry(&["--as", "ferry-test-viewer", "list"]).await;
    assert_eq!(listed.code, 0, "{listed:?}");
    assert!(listed.stdout.contains("grow"), "{listed:?}");
    let refused = env
        .ferry(&[
            "--as",
            "ferry-test-viewer",
            "resize",
            "db",
            "--volume",
            "data=3Gi",
            "--name",
            "again",
        ])
        .await;
    assert_ne!(refused.code, 0, "{refused:?}");
    assert!(refused.stderr.to_lowercase().contains("forbidden"), "{refused:?}");
    assert!(env.resizes().get_opt("again").await.unwrap().is_none());

    // Cluster-wide: gone with the test (the default roles drop their rules with them).
    ferry_testenv::chart::remove_release(RELEASE).await.unwrap();
    env.finish().await;
}
