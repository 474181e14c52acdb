//! VolumeAttributesClasses on the real node's CSI driver behind the upstream external-resizer (its
//! one mutable parameter, `readOnly`, applied to the mounted file system for real): a copy keeps a
//! volume's class (the PV controller binds a claim only to a volume of the same attributes class,
//! so a rollback onto the old volume depends on it too).

use crate::real_node::{assert_nothing_lost, seed_checksum, wait_phase, writer_shaped};
use crate::support::Harness;
use ferry_api::Phase;
use ferry_testenv::fixtures::claim_directory;
use ferry_testenv::workload::{acknowledged, records};
use ferry_testenv::{ATTRIBUTES_WRITABLE, CLASS_BLOCK, wait_until};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;

/// A writer StatefulSet of `replicas` on [`CLASS_BLOCK`] whose template names `attributes`.
async fn writer_with_attributes(
    harness: &Harness,
    replicas: i32,
    size: &str,
    attributes: &str,
) -> std::collections::BTreeMap<String, String> {
    writer_shaped(
        harness,
        replicas,
        CLASS_BLOCK,
        size,
        8 << 10,
        0,
        |set: &mut StatefulSet| {
            for template in set
                .spec
                .as_mut()
                .and_then(|spec| spec.volume_claim_templates.as_mut())
                .into_iter()
                .flatten()
            {
                if let Some(spec) = template.spec.as_mut() {
                    spec.volume_attributes_class_name = Some(attributes.to_string());
                }
            }
        },
    )
    .await
}

/// The attributes class a claim asks for, the one its status reports, and its volume's.
async fn attributes_of(harness: &Harness, claim: &str) -> (Option<String>, Option<String>, Option<String>) {
    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    let claim = claims.get(claim).await.unwrap();
    let spec = claim.spec.unwrap_or_default();
    let volume = match spec.volume_name.as_deref() {
        Some(name) => Api::<PersistentVolume>::all(harness.client.clone())
            .get(name)
            .await
            .unwrap()
            .spec
            .and_then(|spec| spec.volume_attributes_class_name),
        None => None,
    };
    (
        spec.volume_attributes_class_name,
        claim.status.and_then(|s| s.current_volume_attributes_class_name),
        volume,
    )
}

/// A grow by copy of a volume with an attributes class gives the new volume the same class, and a
/// rollback on request binds the claim to its old volume again (which it could not, were the
/// re-made claim's class not the old volume's).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_keeps_the_attributes_class_and_a_rollback_binds_the_old_volume_again() {
    let harness = Harness::start("attrs-copy").await;
    let seeds = writer_with_attributes(&harness, 1, "300Mi", ATTRIBUTES_WRITABLE).await;
    let writable = Some(ATTRIBUTES_WRITABLE.to_string());
    assert_eq!(
        attributes_of(&harness, "data-db-0").await,
        (writable.clone(), writable.clone(), writable.clone())
    );
    let acked_before = acknowledged(&harness.ns.name, "db-0").unwrap();
    harness
        .create_resize(
            "grow",
            json!({"statefulSetName": "db", "strategy": "Copy", "retainOldVolumes": "1h",
                   "volumes": [{"name": "data", "size": "320Mi"}]}),
        )
        .await;
    let done = wait_phase(&harness, "grow", 240).await;
    assert_eq!(done.phase(), Phase::Succeeded, "{:?}", done.status);
    let old_volume = done.status.as_ref().unwrap().plan[0]
        .source_volume
        .clone()
        .unwrap();
    assert_eq!(
        attributes_of(&harness, "data-db-0").await,
        (writable.clone(), writable.clone(), writable.clone()),
        "the new claim and volume keep the attributes class"
    );
    assert_nothing_lost(&harness, 1, &seeds).await;

    let api = harness.ns.api::<ferry_api::VolumeResize>();
    let request =
        json!({"metadata": {"annotations": {ferry_api::names::ANNOTATION_ROLLBACK_REQUESTED: "true"}}});
    api.patch("grow", &PatchParams::default(), &Patch::Merge(request))
        .await
        .unwrap();
    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    wait_until("the rollback to bind the old volume", 180, || async {
        let resize = api.get_opt("grow").await.ok().flatten()?;
        let message = resize.status.as_ref()?.message.clone()?;
        let claim = claims.get("data-db-0").await.ok()?;
        let bound = claim.status.as_ref()?.phase.as_deref() == Some("Bound");
        let on_old = claim.spec.as_ref()?.volume_name.as_deref() == Some(old_volume.as_str());
        (message.starts_with("rolled back on request") && bound && on_old).then_some(())
    })
    .await
    .unwrap_or_else(|error| panic!("{error:?}"));
    assert_eq!(
        attributes_of(&harness, "data-db-0").await,
        (writable.clone(), writable.clone(), writable),
        "back on the old volume, with its class"
    );
    // Back on the old volume: what was written before the copy is there (what the replica wrote
    // on the new volume stays on it, retained: a rollback on request goes back in time).
    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    let volumes: Api<PersistentVolume> = Api::all(harness.client.clone());
    let dir = claim_directory(&claims, &volumes, "data-db-0").await.unwrap();
    let on_old = records(&dir).unwrap();
    let missing: Vec<&u64> = acked_before.difference(&on_old).collect();
    assert!(
        missing.is_empty(),
        "records missing from the old volume: {missing:?}"
    );
    assert_eq!(
        Some(&seed_checksum(&harness, "data-db-0").await),
        seeds.get("data-db-0")
    );
    harness.finish().await;
}
