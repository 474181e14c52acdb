//! VolumeAttributesClasses on the real node's CSI driver behind the upstream external-resizer (its
//! one mutable parameter, `readOnly`, applied to the mounted file system for real): a change of
//! class made in place, one the driver refuses taken back, and a copy that keeps a volume's class
//! (the PV controller binds a claim only to a volume of the same attributes class, so a rollback
//! onto the old volume depends on it too).

use crate::real_node::{assert_nothing_lost, seed_checksum, wait_phase, writer_shaped};
use crate::support::Harness;
use ferry_api::Phase;
use ferry_testenv::disruption::Allowed;
use ferry_testenv::fixtures::claim_directory;
use ferry_testenv::workload::{acknowledged, records};
use ferry_testenv::{ATTRIBUTES_READ_ONLY, ATTRIBUTES_WRITABLE, CLASS_BLOCK, CSI_DRIVER, wait_until};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::storage::v1::VolumeAttributesClass;
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
    // A copy, then its rollback: the replica goes down once for each.
    harness.allow_disruption(Allowed { at_once: 1, each: 2 });
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

/// A VolumeAttributesClass of the real node's driver with `parameters`, named after the test's
/// namespace and `suffix` (cluster-scoped: tests beside it never share it). Its name.
async fn attributes_class(harness: &Harness, suffix: &str, parameters: serde_json::Value) -> String {
    let name = format!("{}-{suffix}", harness.ns.name);
    let class: VolumeAttributesClass = serde_json::from_value(json!({
        "metadata": {"name": name},
        "driverName": CSI_DRIVER,
        "parameters": parameters,
    }))
    .unwrap();
    Api::<VolumeAttributesClass>::all(harness.client.clone())
        .create(&Default::default(), &class)
        .await
        .unwrap();
    name
}

/// Deletes a class [`attributes_class`] made (the API server keeps it until no claim or volume
/// names it).
async fn delete_attributes_class(client: kube::Client, name: &str) {
    Api::<VolumeAttributesClass>::all(client)
        .delete(name, &Default::default())
        .await
        .unwrap();
}

/// Runs the VolumeResize `name` giving volume `data` (at `size`) the attributes class `class`, to
/// its end.
async fn change_attributes(
    harness: &Harness,
    name: &str,
    size: &str,
    class: &str,
) -> ferry_api::VolumeResize {
    harness
        .create_resize(
            name,
            json!({"statefulSetName": "db", "volumes": [
                {"name": "data", "size": size, "volumeAttributesClassName": class}
            ]}),
        )
        .await;
    wait_phase(harness, name, 180).await
}

/// A write in the replica's pod: its exit code and what it said.
async fn write_in_pod(harness: &Harness, file: &str) -> (i32, String) {
    let script = format!("echo x > /data/{file}");
    let (code, _, stderr) =
        ferry_testenv::kubectl(&["-n", &harness.ns.name, "exec", "db-0", "--", "sh", "-c", &script])
            .await
            .unwrap();
    (code, stderr)
}

/// The template's attributes class.
async fn template_attributes(harness: &Harness) -> Option<String> {
    let sts = harness.ns.api::<StatefulSet>().get("db").await.unwrap();
    sts.spec.unwrap().volume_claim_templates.unwrap()[0]
        .spec
        .clone()
        .unwrap()
        .volume_attributes_class_name
}

/// Another attributes class is given to the running replica's volume in place (its file system
/// turns read-only under the running pod, which is never restarted), the StatefulSet's template
/// names it; a class the driver refuses is taken back, the resize failing saying why; and back to
/// writable, every acknowledged write is there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attributes_class_changes_in_place_and_one_the_driver_refuses_is_taken_back() {
    let harness = Harness::start("attrs-modify").await;
    let seeds = writer_with_attributes(&harness, 1, "300Mi", ATTRIBUTES_WRITABLE).await;
    let pod_uid = harness.pod_uids("db").await;
    let read_only = Some(ATTRIBUTES_READ_ONLY.to_string());

    let done = change_attributes(&harness, "read-only", "300Mi", ATTRIBUTES_READ_ONLY).await;
    assert_eq!(done.phase(), Phase::Succeeded, "{:?}", done.status);
    let row = &done.status.as_ref().unwrap().plan[0];
    assert_eq!(row.strategy, Some(ferry_api::ChosenStrategy::InPlace));
    assert_eq!(row.step, Some(ferry_api::RowStep::Modified));
    assert_eq!(
        attributes_of(&harness, "data-db-0").await,
        (read_only.clone(), read_only.clone(), read_only.clone())
    );
    let (code, stderr) = write_in_pod(&harness, "refused").await;
    assert!(
        code != 0 && stderr.contains("Read-only file system"),
        "{code} {stderr}"
    );
    assert_eq!(template_attributes(&harness).await, read_only);
    assert_eq!(harness.pod_uids("db").await, pod_uid, "no pod restarted");

    // A parameter the driver does not have: Infeasible, taken back, the resize fails.
    let unknown = attributes_class(&harness, "iops", json!({"iops": "9000"})).await;
    let refused = change_attributes(&harness, "iops", "300Mi", &unknown).await;
    let status = refused.status.clone().unwrap();
    assert_eq!(status.phase, Some(Phase::Failed), "{:?}", status.message);
    let message = status.message.unwrap_or_default();
    assert!(
        message.contains(&format!(
            "cannot give data-db-0 the VolumeAttributesClass {unknown}"
        )) && message.contains("Infeasible"),
        "{message}"
    );
    assert!(
        status.plan[0].modification_refused.is_some(),
        "{:?}",
        status.plan[0]
    );
    // Said on the StatefulSet too, where its owner looks.
    let events = harness.wait_event("StatefulSet", "db", "RolledBack").await;
    assert!(
        events
            .iter()
            .any(|(kind, _, note)| kind == "Warning" && note.contains("cannot give data-db-0")),
        "{events:?}"
    );
    assert_eq!(
        attributes_of(&harness, "data-db-0").await,
        (read_only.clone(), read_only.clone(), read_only.clone()),
        "asks for the class it had, which its volume kept"
    );
    assert_eq!(template_attributes(&harness).await, read_only);

    let writable = Some(ATTRIBUTES_WRITABLE.to_string());
    let back = change_attributes(&harness, "writable", "300Mi", ATTRIBUTES_WRITABLE).await;
    assert_eq!(back.phase(), Phase::Succeeded, "{:?}", back.status);
    assert_eq!(
        attributes_of(&harness, "data-db-0").await,
        (writable.clone(), writable.clone(), writable.clone())
    );
    assert_eq!(write_in_pod(&harness, "accepted").await.0, 0);
    assert_eq!(harness.pod_uids("db").await, pod_uid, "no pod restarted");
    assert_nothing_lost(&harness, 1, &seeds).await;
    let client = harness.client.clone();
    harness.finish().await;
    delete_attributes_class(client, &unknown).await;
}

/// The triggers: a `kubectl patch` of the template's attributes class (the admission webhook keeps
/// it aside, the operator resizes) gives the running volume that class in place, and the annotation
/// `ferry.dev/attributes-class.data` gives it back; each ends with the template naming the class.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_template_edit_and_an_annotation_change_the_attributes_class_in_place() {
    let harness = Harness::start_with_webhook("attrs-trigger").await;
    let seeds = writer_with_attributes(&harness, 1, "300Mi", ATTRIBUTES_WRITABLE).await;
    let pod_uid = harness.pod_uids("db").await;
    let patch = format!(
        r#"[{{"op":"replace","path":"/spec/volumeClaimTemplates/0/spec/volumeAttributesClassName","value":"{ATTRIBUTES_READ_ONLY}"}}]"#
    );
    let (code, _, stderr) = ferry_testenv::kubectl(&[
        "-n",
        &harness.ns.name,
        "patch",
        "statefulset",
        "db",
        "--type",
        "json",
        "-p",
        &patch,
    ])
    .await
    .unwrap();
    assert_eq!(code, 0, "the edit is accepted: {stderr}");
    assert!(
        stderr.contains(&format!("with VolumeAttributesClass {ATTRIBUTES_READ_ONLY}")),
        "{stderr}"
    );
    let name = crate::triggers::named_in_warning(&stderr);
    let done = wait_phase(&harness, &name, 180).await;
    assert_eq!(done.phase(), Phase::Succeeded, "{:?}", done.status);
    crate::triggers::wait_request_done(&harness, "db", 60).await;
    let read_only = Some(ATTRIBUTES_READ_ONLY.to_string());
    assert_eq!(
        attributes_of(&harness, "data-db-0").await,
        (read_only.clone(), read_only.clone(), read_only.clone())
    );
    assert_eq!(template_attributes(&harness).await, read_only);

    let annotate = format!("ferry.dev/attributes-class.data={ATTRIBUTES_WRITABLE}");
    let (code, _, stderr) =
        ferry_testenv::kubectl(&["-n", &harness.ns.name, "annotate", "statefulset", "db", &annotate])
            .await
            .unwrap();
    assert_eq!(code, 0, "{stderr}");
    crate::triggers::wait_request_done(&harness, "db", 180).await;
    let writable = Some(ATTRIBUTES_WRITABLE.to_string());
    assert_eq!(
        attributes_of(&harness, "data-db-0").await,
        (writable.clone(), writable.clone(), writable.clone())
    );
    assert_eq!(template_attributes(&harness).await, writable);
    assert_eq!(harness.pod_uids("db").await, pod_uid, "no pod restarted");
    assert_nothing_lost(&harness, 1, &seeds).await;
    harness.finish().await;
}

/// A growth and another attributes class in one request are one in-place change (the pod never
/// restarts); a copy asked for with yet another class makes the new volume with that class, and
/// the data follows. (The second class has the same `readOnly: "false"` under another name: a growth
/// of a file system the class makes read-only cannot finish while mounted, a quirk of this driver's
/// one parameter, not of attributes classes.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_growth_with_a_new_class_is_in_place_and_a_copy_makes_its_volume_with_the_class_asked() {
    let harness = Harness::start("attrs-combined").await;
    let seeds = writer_with_attributes(&harness, 1, "300Mi", ATTRIBUTES_WRITABLE).await;
    let pod_uid = harness.pod_uids("db").await;
    let also_writable = attributes_class(&harness, "writable", json!({"readOnly": "false"})).await;
    let grown = change_attributes(&harness, "grow", "320Mi", &also_writable).await;
    assert_eq!(grown.phase(), Phase::Succeeded, "{:?}", grown.status);
    let row = &grown.status.as_ref().unwrap().plan[0];
    assert_eq!(row.strategy, Some(ferry_api::ChosenStrategy::InPlace));
    assert_eq!(row.step, Some(ferry_api::RowStep::Expanded));
    let claims: Api<PersistentVolumeClaim> = harness.ns.api();
    let capacity = claims
        .get("data-db-0")
        .await
        .unwrap()
        .status
        .unwrap()
        .capacity
        .unwrap()["storage"]
        .0
        .clone();
    assert!(
        ferry_api::parse_bytes(&capacity).unwrap() >= 320 << 20,
        "capacity {capacity}"
    );
    let asked = Some(also_writable.clone());
    assert_eq!(
        attributes_of(&harness, "data-db-0").await,
        (asked.clone(), asked.clone(), asked.clone())
    );
    assert_eq!(template_attributes(&harness).await, asked);
    assert_eq!(harness.pod_uids("db").await, pod_uid, "no pod restarted");

    harness
        .create_resize(
            "copy",
            json!({"statefulSetName": "db", "strategy": "Copy", "volumes": [
                {"name": "data", "size": "340Mi", "volumeAttributesClassName": ATTRIBUTES_WRITABLE}
            ]}),
        )
        .await;
    let copied = wait_phase(&harness, "copy", 240).await;
    assert_eq!(copied.phase(), Phase::Succeeded, "{:?}", copied.status);
    let row = &copied.status.as_ref().unwrap().plan[0];
    assert_eq!(row.strategy, Some(ferry_api::ChosenStrategy::Copy));
    assert_eq!(row.current_attributes_class, asked);
    let writable = Some(ATTRIBUTES_WRITABLE.to_string());
    assert_eq!(
        attributes_of(&harness, "data-db-0").await,
        (writable.clone(), writable.clone(), writable.clone()),
        "the new volume is made with the class asked for"
    );
    assert_eq!(template_attributes(&harness).await, writable);
    assert_nothing_lost(&harness, 1, &seeds).await;
    let client = harness.client.clone();
    harness.finish().await;
    delete_attributes_class(client, &also_writable).await;
}
