//! An ExtendedStatefulSet deleted and applied again without status (helm uninstall and install,
//! `kubectl replace --force`, a restore from backup): its StatefulSets went with it, its claims
//! stayed. On the real nodes, blue/green over two zones: applied again, it runs at the version its
//! claims are in, on them, each member with its data; applied again with its zones in another
//! order, it refuses and makes nothing.

use crate::extended::{create, set_version, wait_status, zoned_with_volumes};
use crate::support::Harness;
use ferry_api::{ExtendedStatefulSet, ExtendedStatefulSetStatus};
use ferry_testenv::fixtures::wait_ready;
use ferry_testenv::{REAL_ZONES, kubectl, wait_until};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{DeleteParams, ListParams};
use serde_json::json;

const ZONES: usize = 2;

/// Deletes the ExtendedStatefulSet as `kubectl delete` does and waits until its StatefulSets and
/// pods are gone (the garbage collector's work); returns its spec as it was.
async fn delete_and_wait_gone(harness: &Harness) -> ExtendedStatefulSet {
    let api = harness.ns.api::<ExtendedStatefulSet>();
    let live = api.get("web").await.unwrap();
    api.delete("web", &DeleteParams::background()).await.unwrap();
    let (sets, pods) = (harness.ns.api::<StatefulSet>(), harness.ns.api::<Pod>());
    wait_until("its StatefulSets and pods to go", 180, || async {
        let left = sets.list(&ListParams::default()).await.ok()?.items.len()
            + pods
                .list(&ListParams::default().labels("app=web"))
                .await
                .ok()?
                .items
                .len()
            + usize::from(api.get_opt("web").await.ok()?.is_some());
        (left == 0).then_some(())
    })
    .await
    .unwrap();
    // As applied again: the same spec, no status, a new UID.
    ExtendedStatefulSet::new("web", live.spec)
}

/// Whether the Invalid condition holds, and its message.
fn invalid(status: &ExtendedStatefulSetStatus) -> Option<(bool, String)> {
    let found = status.conditions.iter().find(|c| c.type_ == "Invalid")?;
    Some((found.status == "True", found.message.clone()))
}

async fn exec(harness: &Harness, pod: &str, script: &str) -> String {
    let (code, out, err) = kubectl(&["-n", &harness.ns.name, "exec", pod, "--", "sh", "-c", script])
        .await
        .unwrap();
    assert_eq!(code, 0, "{pod}: {script}: {err}");
    out.trim().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blue_green_extended_stateful_set_applied_again_runs_on_its_claims_or_refuses() {
    let harness = Harness::start("ests-applied-again").await;
    let mut ests = serde_json::to_value(zoned_with_volumes()).unwrap();
    ests["spec"]["replicas"] = json!(ZONES);
    ests["spec"]["zones"] = json!(&REAL_ZONES[..ZONES]);
    ests["spec"]["updateStrategy"] = json!({"type": "BlueGreen", "updateWatchTime": "5m"});
    create(&harness, &serde_json::from_value(ests).unwrap()).await;
    let sets = harness.ns.api::<StatefulSet>();
    for index in 0..ZONES {
        wait_ready(&sets, &format!("web-z{index}-v1"), 1, 180)
            .await
            .unwrap();
    }
    set_version(&harness, "2").await;
    wait_status(&harness, "web", "version 2 in every zone", 300, |s| {
        s.version == 2 && s.update_step.as_deref() == Some("Done") && s.handover.is_none()
    })
    .await;
    for index in 0..ZONES {
        wait_ready(&sets, &format!("web-z{index}-v2"), 1, 120)
            .await
            .unwrap();
        let pod = format!("web-z{index}-v2-0");
        exec(&harness, &pod, &format!("echo kept-{index} > /data/marker; sync")).await;
    }

    // Applied again as it was: version 2's StatefulSets start on version 2's claims.
    let again = delete_and_wait_gone(&harness).await;
    create(&harness, &again).await;
    let status = wait_status(&harness, "web", "version 2 again, every member Ready", 180, |s| {
        s.version == 2 && s.update_step.as_deref() == Some("Done") && s.ready_replicas == ZONES as i32
    })
    .await;
    assert_eq!(invalid(&status).map(|(holds, _)| holds), Some(false));
    let names: Vec<String> = sets
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    assert_eq!(names, ["web-z0-v2", "web-z1-v2"]);
    for index in 0..ZONES {
        let pod = format!("web-z{index}-v2-0");
        assert_eq!(
            exec(&harness, &pod, "cat /data/marker").await,
            format!("kept-{index}")
        );
        assert_eq!(
            exec(&harness, &pod, "cat /data/seed").await,
            format!("web-z{index}-v1-0")
        );
    }

    // Applied again with its zones swapped: each zone's replicas could not attach their volumes.
    let mut swapped = delete_and_wait_gone(&harness).await;
    swapped.spec.zones.reverse();
    create(&harness, &swapped).await;
    let refused = wait_status(&harness, "web", "the start refused", 60, |s| {
        invalid(s).is_some_and(|(holds, _)| holds)
    })
    .await;
    let (_, message) = invalid(&refused).unwrap();
    assert!(
        message.contains(&format!(
            "data-web-z0-v2-0's volume is in {}, zone 0 is now {}",
            REAL_ZONES[0], REAL_ZONES[1]
        )),
        "{message}"
    );
    assert!(
        sets.list(&ListParams::default()).await.unwrap().items.is_empty(),
        "nothing is made beside the claims"
    );
    harness.finish().await;
}
