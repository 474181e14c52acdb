//! `kubectl ferry import` of topolvm pvc-autoresizer's annotations from a real StatefulSet and its
//! claims on the local control plane, exported as the docs say (`kubectl get sts,pvc` and the
//! StorageClass): the VolumeAutoscaler it applies has the claims' policy in Ferry's terms.

use crate::support::Env;
use ferry_api::VolumeAutoscaler;
use ferry_testenv::fixtures::stateful_set;
use ferry_testenv::{CLASS_EXPANDABLE, kubectl, wait_until};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use k8s_openapi::api::storage::v1::StorageClass;
use kube::Api;
use kube::api::PostParams;
use std::collections::BTreeMap;

const ENABLED: &str = "resize.topolvm.io/enabled";

/// A copy of the expandable test class annotated for pvc-autoresizer, named after the test's
/// namespace (cluster-scoped: no other test sees it).
async fn autoresizer_class(env: &Env) -> String {
    ferry_testenv::fixtures::annotated_class_copy(
        &env.client,
        CLASS_EXPANDABLE,
        &format!("{}-autoresizer", env.ns.name),
        BTreeMap::from([(ENABLED.to_string(), "true".to_string())]),
    )
    .await
    .unwrap()
}

/// `kubectl get` of this namespace's StatefulSets and claims, and of `class`, as one file.
async fn export(env: &Env, class: &str) -> std::path::PathBuf {
    let ns = env.ns.name.as_str();
    let (code, workloads, err) = kubectl(&["-n", ns, "get", "sts,pvc", "-o", "yaml"])
        .await
        .unwrap();
    assert_eq!(code, 0, "{err}");
    let (code, class, err) = kubectl(&["get", "storageclass", class, "-o", "yaml"])
        .await
        .unwrap();
    assert_eq!(code, 0, "{err}");
    let path = std::env::temp_dir().join(format!("{ns}-autoresizer.yaml"));
    std::fs::write(&path, format!("{workloads}\n---\n{class}")).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pvc_autoresizers_claim_annotations_are_applied_as_a_volume_autoscaler() {
    let env = Env::start("cli-import-autoresizer").await;
    let class = autoresizer_class(&env).await;
    // The template gives its claims pvc-autoresizer's policy, as its README sets it up.
    let mut sts = stateful_set("db", 2, &class, "1Gi");
    let template = &mut sts
        .spec
        .as_mut()
        .unwrap()
        .volume_claim_templates
        .as_mut()
        .unwrap()[0];
    template.metadata.annotations = Some(BTreeMap::from([
        ("resize.topolvm.io/storage_limit".to_string(), "10Gi".to_string()),
        ("resize.topolvm.io/threshold".to_string(), "20%".to_string()),
        ("resize.topolvm.io/increase".to_string(), "512Mi".to_string()),
    ]));
    let template_name = template.metadata.name.clone().unwrap();
    // Both claims at once: the test's class is not one the test provisioner serves, and import
    // reads claims whether bound or not.
    sts.spec.as_mut().unwrap().pod_management_policy = Some("Parallel".into());
    let sets: Api<StatefulSet> = env.ns.api();
    sets.create(&PostParams::default(), &sts).await.unwrap();
    let claims: Api<PersistentVolumeClaim> = env.ns.api();
    let names: Vec<String> = (0..2).map(|i| format!("{template_name}-db-{i}")).collect();
    wait_until("the StatefulSet's two claims", 60, || async {
        let listed = claims.list(&Default::default()).await.ok()?;
        (listed.items.len() == 2).then_some(())
    })
    .await
    .unwrap();
    // Then someone tuned the claims themselves: pvc-autoresizer reads the claims, so does import.
    for claim in &names {
        let args = [
            "-n",
            &env.ns.name,
            "annotate",
            "pvc",
            claim,
            "resize.topolvm.io/threshold=15%",
            "--overwrite",
        ];
        let (code, _, err) = kubectl(&args).await.unwrap();
        assert_eq!(code, 0, "{err}");
    }

    let file = export(&env, &class).await;
    let run = env
        .ferry(&["import", "-f", file.to_str().unwrap(), "--apply"])
        .await;
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stdout,
        "volumeautoscaler.ferry.dev/db-autoresizer serverside-applied\n"
    );
    assert!(
        run.stderr.contains("topolvm's pvc-autoresizer: carried over"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("ManagedByPvcAutoresizer"), "{}", run.stderr);

    let autoscaler = env
        .ns
        .api::<VolumeAutoscaler>()
        .get("db-autoresizer")
        .await
        .unwrap();
    assert_eq!(autoscaler.spec.stateful_set_name.as_deref(), Some("db"));
    let [volume] = autoscaler.spec.volumes.as_slice() else {
        panic!("{:?}", autoscaler.spec)
    };
    // 15% free (the claims') is 85% used; 10% free inodes by default is 90% used.
    assert_eq!(
        (volume.name.as_str(), volume.threshold, volume.inodes_threshold),
        (template_name.as_str(), Some(85), Some(90))
    );
    assert_eq!(
        (volume.increase.as_deref(), volume.max_size.as_str()),
        (Some("512Mi"), "10Gi")
    );
    let annotations = autoscaler.metadata.annotations.unwrap_or_default();
    assert_eq!(
        annotations.get("ferry.dev/imported-from").map(String::as_str),
        Some(format!("apps/v1 StatefulSet {}/db", env.ns.name).as_str())
    );

    std::fs::remove_file(&file).unwrap();
    Api::<StorageClass>::all(env.client.clone())
        .delete(&class, &Default::default())
        .await
        .unwrap();
    env.finish().await;
}
