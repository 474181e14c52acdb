//! The driver as the sidecars and the kubelet call it: its own binary on a unix socket, real loop
//! devices, file systems and mounts (these tests need root, as the real node does), every call
//! repeated, the driver killed and restarted in the middle, bytes checked after.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod harness;

use ferry_csi_driver::proto::csi::*;
use harness::*;
use tonic::Code;

const MIB: i64 = 1 << 20;

#[tokio::test]
async fn a_volume_is_a_real_file_system_that_grows_online_and_survives_a_restart() {
    let mut driver = Driver::start("block.csi.ferry.dev", false).await;
    let info = driver
        .identity()
        .get_plugin_info(GetPluginInfoRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(info.name, "block.csi.ferry.dev");
    let probe = driver
        .identity()
        .probe(ProbeRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(probe.ready, Some(true));

    let made = driver.create("pvc-a", 300 * MIB, "xfs", "online").await.unwrap();
    assert_eq!(made.capacity_bytes, 300 * MIB);
    assert_eq!(
        made.accessible_topology[0].segments["topology.kubernetes.io/zone"],
        ZONE
    );
    // Repeated: the same volume; bigger: ALREADY_EXISTS.
    assert_eq!(
        driver.create("pvc-a", 300 * MIB, "xfs", "online").await.unwrap(),
        made
    );
    assert_eq!(
        code(driver.create("pvc-a", 1024 * MIB, "xfs", "online").await),
        Code::AlreadyExists
    );

    let volume = driver.paths("pvc-a");
    for _ in 0..2 {
        driver.stage("pvc-a", &volume, "xfs").await.unwrap();
        driver.publish("pvc-a", &volume, false).await.unwrap();
    }
    let total = df_total(&volume.target);
    // XFS keeps a 64 MiB log and its metadata out of what df shows.
    assert!(
        (200 * MIB..=300 * MIB).contains(&total),
        "df shows {total} bytes for a 300 MiB volume"
    );

    let kept = write_file(&volume.target.join("kept"), 100 * MIB as usize);
    assert_eq!(
        fill_until_full(&volume.target.join("filler")),
        ENOSPC,
        "writing past the size"
    );
    std::fs::remove_file(volume.target.join("filler")).unwrap();

    let stats = driver.stats("pvc-a", &volume.target).await.unwrap();
    let bytes = stats
        .usage
        .iter()
        .find(|u| u.unit == volume_usage::Unit::Bytes as i32)
        .unwrap();
    assert_eq!(bytes.total, total);
    assert!(
        bytes.used >= 100 * MIB,
        "used {} bytes after writing 100 MiB",
        bytes.used
    );
    assert!(
        stats
            .usage
            .iter()
            .any(|u| u.unit == volume_usage::Unit::Inodes as i32 && u.used > 0)
    );

    assert_eq!(
        code(driver.delete("pvc-a").await),
        Code::FailedPrecondition,
        "deleting a staged volume"
    );

    for _ in 0..2 {
        let grown = driver.controller_expand("pvc-a", 600 * MIB).await.unwrap();
        assert_eq!(grown.capacity_bytes, 600 * MIB);
        assert!(grown.node_expansion_required);
        driver.node_expand("pvc-a", &volume).await.unwrap();
    }
    assert!(
        df_total(&volume.target) > 500 * MIB,
        "df after growth: {}",
        df_total(&volume.target)
    );

    // Killed and started again: it finds the volume, repeated calls change nothing, the bytes are there.
    driver.restart().await;
    driver.stage("pvc-a", &volume, "xfs").await.unwrap();
    driver.publish("pvc-a", &volume, false).await.unwrap();
    assert_eq!(checksum(&volume.target.join("kept")), kept);
    driver.stats("pvc-a", &volume.target).await.unwrap();

    for _ in 0..2 {
        driver.unpublish("pvc-a", &volume).await.unwrap();
        driver.unstage("pvc-a", &volume).await.unwrap();
    }
    assert!(!volume.target.exists());
    assert!(
        loop_device_of(&driver.image("pvc-a")).is_none(),
        "the loop device is detached"
    );
    for _ in 0..2 {
        driver.delete("pvc-a").await.unwrap();
    }
    assert!(!driver.image("pvc-a").exists(), "the disk is freed");
    assert_eq!(
        code(driver.controller_expand("pvc-a", 700 * MIB).await),
        Code::NotFound
    );
}

#[tokio::test]
async fn bad_requests_get_the_codes_the_spec_names() {
    let driver = Driver::start("block.csi.ferry.dev", false).await;
    assert_eq!(
        code(driver.create("pvc-huge", 1 << 50, "xfs", "online").await),
        Code::OutOfRange
    );
    assert_eq!(
        code(driver.create("../escape", 300 * MIB, "xfs", "online").await),
        Code::InvalidArgument
    );
    assert_eq!(
        code(driver.create("pvc-b", 300 * MIB, "btrfs", "online").await),
        Code::InvalidArgument
    );
    assert_eq!(
        code(driver.create("pvc-b", 300 * MIB, "ext4", "online").await),
        Code::InvalidArgument
    );
    assert_eq!(
        code(driver.create("pvc-b", 300 * MIB, "xfs", "sometimes").await),
        Code::InvalidArgument
    );
    let volume = driver.paths("pvc-missing");
    assert_eq!(
        code(driver.stage("pvc-missing", &volume, "xfs").await),
        Code::NotFound
    );
    assert_eq!(
        code(driver.controller_expand("pvc-missing", 400 * MIB).await),
        Code::NotFound
    );
    driver.delete("pvc-missing").await.unwrap();

    driver.create("pvc-c", 300 * MIB, "xfs", "online").await.unwrap();
    let volume = driver.paths("pvc-c");
    assert_eq!(
        code(driver.publish("pvc-c", &volume, false).await),
        Code::FailedPrecondition,
        "publish before stage"
    );
    assert_eq!(
        code(driver.stage("pvc-c", &volume, "ext4").await),
        Code::InvalidArgument
    );
    assert_eq!(
        code(driver.node_expand("pvc-c", &volume).await),
        Code::FailedPrecondition,
        "expand unstaged"
    );
    driver.delete("pvc-c").await.unwrap();
}

#[tokio::test]
async fn a_fixed_ext4_volume_has_its_size_and_refuses_growth() {
    let driver = Driver::start("block.csi.ferry.dev", false).await;
    driver
        .create("pvc-fixed", 64 * MIB, "ext4", "none")
        .await
        .unwrap();
    let volume = driver.paths("pvc-fixed");
    driver.stage("pvc-fixed", &volume, "ext4").await.unwrap();
    driver.publish("pvc-fixed", &volume, false).await.unwrap();
    let total = df_total(&volume.target);
    assert!(
        (48 * MIB..=64 * MIB).contains(&total),
        "df shows {total} bytes for a 64 MiB ext4 volume"
    );
    assert_eq!(fill_until_full(&volume.target.join("filler")), ENOSPC);
    assert_eq!(
        code(driver.controller_expand("pvc-fixed", 128 * MIB).await),
        Code::FailedPrecondition
    );
    driver.unpublish("pvc-fixed", &volume).await.unwrap();
    driver.unstage("pvc-fixed", &volume).await.unwrap();
    driver.delete("pvc-fixed").await.unwrap();
}

/// Unstaging a loop device that something still holds open (udev probing it after the unmount,
/// a backup tool) only marks it to detach on last close; NodeUnstageVolume answers once it is
/// really gone, so DeleteVolume right after never finds it staged.
#[tokio::test]
async fn unstage_returns_only_when_the_loop_device_is_gone() {
    let driver = Driver::start("block.csi.ferry.dev", false).await;
    driver
        .create("pvc-held", 300 * MIB, "xfs", "online")
        .await
        .unwrap();
    let volume = driver.paths("pvc-held");
    driver.stage("pvc-held", &volume, "xfs").await.unwrap();
    driver.publish("pvc-held", &volume, false).await.unwrap();
    driver.unpublish("pvc-held", &volume).await.unwrap();
    let device = loop_device_of(&driver.image("pvc-held")).unwrap();
    let holder = std::fs::File::open(&device).unwrap();
    let released = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(1500));
        drop(holder);
    });
    driver.unstage("pvc-held", &volume).await.unwrap();
    assert_eq!(
        loop_device_of(&driver.image("pvc-held")),
        None,
        "unstage answered while {device} was still attached"
    );
    driver.delete("pvc-held").await.unwrap();
    released.join().unwrap();
}

#[tokio::test]
async fn an_offline_volume_grows_only_while_unstaged() {
    let driver = Driver::start("block.csi.ferry.dev", false).await;
    driver
        .create("pvc-off", 300 * MIB, "xfs", "offline")
        .await
        .unwrap();
    let volume = driver.paths("pvc-off");
    driver.stage("pvc-off", &volume, "xfs").await.unwrap();
    driver.publish("pvc-off", &volume, false).await.unwrap();
    let kept = write_file(&volume.target.join("kept"), 50 * MIB as usize);
    // In use: FAILED_PRECONDITION, which the external-resizer reads as "wait until no pod uses it".
    assert_eq!(
        code(driver.controller_expand("pvc-off", 500 * MIB).await),
        Code::FailedPrecondition
    );
    driver.unpublish("pvc-off", &volume).await.unwrap();
    driver.unstage("pvc-off", &volume).await.unwrap();
    driver.controller_expand("pvc-off", 500 * MIB).await.unwrap();
    // The pod starts again: staged, published, then the kubelet grows the file system.
    driver.stage("pvc-off", &volume, "xfs").await.unwrap();
    driver.publish("pvc-off", &volume, false).await.unwrap();
    assert!(
        df_total(&volume.target) < 300 * MIB,
        "the file system has not grown yet"
    );
    driver.node_expand("pvc-off", &volume).await.unwrap();
    assert!(
        df_total(&volume.target) > 400 * MIB,
        "df after growth: {}",
        df_total(&volume.target)
    );
    assert_eq!(checksum(&volume.target.join("kept")), kept);
    driver.unpublish("pvc-off", &volume).await.unwrap();
    driver.unstage("pvc-off", &volume).await.unwrap();
    driver.delete("pvc-off").await.unwrap();
}

#[tokio::test]
async fn an_attached_volume_is_staged_only_where_attached_and_detached_only_when_unstaged() {
    let driver = Driver::start("attach.csi.ferry.dev", true).await;
    let mut controller = driver.controller();
    let capabilities = controller.controller_get_capabilities(ControllerGetCapabilitiesRequest {});
    let capabilities = capabilities.await.unwrap().into_inner().capabilities;
    assert!(capabilities.iter().any(|c| matches!(
        &c.r#type,
        Some(controller_service_capability::Type::Rpc(rpc))
            if rpc.r#type == controller_service_capability::rpc::Type::PublishUnpublishVolume as i32
    )));
    driver
        .create("pvc-att", 300 * MIB, "xfs", "online")
        .await
        .unwrap();
    let volume = driver.paths("pvc-att");
    assert_eq!(
        code(driver.stage("pvc-att", &volume, "xfs").await),
        Code::FailedPrecondition,
        "stage before attach"
    );
    assert_eq!(
        code(driver.attach("pvc-att", "node-elsewhere").await),
        Code::NotFound
    );
    for _ in 0..2 {
        driver.attach("pvc-att", NODE).await.unwrap();
    }
    driver.stage("pvc-att", &volume, "xfs").await.unwrap();
    driver.publish("pvc-att", &volume, false).await.unwrap();
    assert_eq!(
        code(driver.detach("pvc-att").await),
        Code::FailedPrecondition,
        "detach while staged"
    );
    assert_eq!(
        code(driver.delete("pvc-att").await),
        Code::FailedPrecondition,
        "delete while attached"
    );
    driver.unpublish("pvc-att", &volume).await.unwrap();
    driver.unstage("pvc-att", &volume).await.unwrap();
    assert_eq!(
        code(driver.delete("pvc-att").await),
        Code::FailedPrecondition,
        "delete while attached"
    );
    for _ in 0..2 {
        driver.detach("pvc-att").await.unwrap();
    }
    driver.delete("pvc-att").await.unwrap();
}

/// A snapshot of a mounted volume (its file system frozen for the copy) restores into a bigger
/// volume that holds the same bytes and grows to its size when staged; a clone of the mounted
/// volume is staged beside it (XFS with the same UUID, mounted `nouuid`). Repeats give the same,
/// other sources ALREADY_EXISTS, missing ones NOT_FOUND, and deleting a snapshot twice is fine.
#[tokio::test]
async fn snapshots_and_clones_copy_the_bytes_of_a_mounted_volume() {
    use volume_content_source::{SnapshotSource, Type, VolumeSource};
    let driver = Driver::start("block.csi.ferry.dev", false).await;
    driver
        .create("pvc-src", 300 * MIB, "xfs", "online")
        .await
        .unwrap();
    driver
        .create("pvc-other", 300 * MIB, "xfs", "online")
        .await
        .unwrap();
    let source = driver.paths("pvc-src");
    driver.stage("pvc-src", &source, "xfs").await.unwrap();
    driver.publish("pvc-src", &source, false).await.unwrap();
    let sum = write_file(&source.target.join("kept"), 20 << 20);

    let taken = driver.snapshot("snap-1", "pvc-src").await.unwrap();
    assert!(taken.ready_to_use);
    assert_eq!(taken.size_bytes, 300 * MIB);
    assert_eq!(taken.source_volume_id, "pvc-src");
    assert_eq!(driver.snapshot("snap-1", "pvc-src").await.unwrap(), taken);
    assert_eq!(
        code(driver.snapshot("snap-1", "pvc-other").await),
        Code::AlreadyExists
    );
    assert_eq!(
        code(driver.snapshot("snap-2", "pvc-missing").await),
        Code::NotFound
    );
    // The source still takes writes: it was thawed.
    write_file(&source.target.join("after"), 1 << 20);

    let from_snapshot = Type::Snapshot(SnapshotSource {
        snapshot_id: "snap-1".into(),
    });
    let restored = driver
        .create_from("pvc-restored", 400 * MIB, from_snapshot.clone())
        .await
        .unwrap();
    assert_eq!(restored.capacity_bytes, 400 * MIB);
    assert_eq!(
        restored.content_source.clone().unwrap().r#type,
        Some(from_snapshot.clone())
    );
    assert_eq!(
        driver
            .create_from("pvc-restored", 400 * MIB, from_snapshot.clone())
            .await
            .unwrap(),
        restored
    );
    let from_clone = Type::Volume(VolumeSource {
        volume_id: "pvc-src".into(),
    });
    assert_eq!(
        code(
            driver
                .create_from("pvc-restored", 400 * MIB, from_clone.clone())
                .await
        ),
        Code::AlreadyExists
    );
    let copy = driver.paths("pvc-restored");
    driver.stage("pvc-restored", &copy, "xfs").await.unwrap();
    driver.publish("pvc-restored", &copy, false).await.unwrap();
    assert_eq!(checksum(&copy.target.join("kept")), sum);
    assert!(
        !copy.target.join("after").exists(),
        "the snapshot is of its moment"
    );
    let total = df_total(&copy.target);
    assert!(
        total > 330 * MIB,
        "a restore grows to its volume's size: df shows {total}"
    );

    let cloned = driver
        .create_from("pvc-clone", 300 * MIB, from_clone)
        .await
        .unwrap();
    assert_eq!(cloned.capacity_bytes, 300 * MIB);
    let clone = driver.paths("pvc-clone");
    driver.stage("pvc-clone", &clone, "xfs").await.unwrap();
    driver.publish("pvc-clone", &clone, false).await.unwrap();
    assert_eq!(checksum(&clone.target.join("kept")), sum);
    assert!(clone.target.join("after").exists());

    driver.delete_snapshot("snap-1").await.unwrap();
    driver.delete_snapshot("snap-1").await.unwrap();
    assert_eq!(
        code(driver.create_from("pvc-late", 300 * MIB, from_snapshot).await),
        Code::NotFound
    );
    for (id, paths) in [
        ("pvc-src", &source),
        ("pvc-restored", &copy),
        ("pvc-clone", &clone),
    ] {
        driver.unpublish(id, paths).await.unwrap();
        driver.unstage(id, paths).await.unwrap();
        driver.delete(id).await.unwrap();
    }
}

/// ControllerModifyVolume applies the one mutable parameter at once: the staged file system turns
/// read-only (a write through the published path fails with EROFS) and stays so when staged again,
/// then writable; an unknown parameter is INVALID_ARGUMENT and changes nothing.
#[tokio::test]
async fn the_read_only_parameter_is_applied_to_the_mounted_file_system() {
    let driver = Driver::start("block.csi.ferry.dev", false).await;
    driver.create("pvc-ro", 300 * MIB, "xfs", "online").await.unwrap();
    let paths = driver.paths("pvc-ro");
    driver.stage("pvc-ro", &paths, "xfs").await.unwrap();
    driver.publish("pvc-ro", &paths, false).await.unwrap();
    let sum = write_file(&paths.target.join("before"), 1 << 20);

    driver.modify("pvc-ro", &[("readOnly", "true")]).await.unwrap();
    driver.modify("pvc-ro", &[("readOnly", "true")]).await.unwrap();
    let refused = std::fs::write(paths.target.join("during"), b"x").unwrap_err();
    assert_eq!(refused.raw_os_error(), Some(EROFS));
    assert_eq!(checksum(&paths.target.join("before")), sum);
    driver.unpublish("pvc-ro", &paths).await.unwrap();
    driver.unstage("pvc-ro", &paths).await.unwrap();
    driver.stage("pvc-ro", &paths, "xfs").await.unwrap();
    driver.publish("pvc-ro", &paths, false).await.unwrap();
    let refused = std::fs::write(paths.target.join("during"), b"x").unwrap_err();
    assert_eq!(
        refused.raw_os_error(),
        Some(EROFS),
        "staged again, still read-only"
    );

    assert_eq!(
        code(driver.modify("pvc-ro", &[("iops", "9000")]).await),
        Code::InvalidArgument
    );
    driver.modify("pvc-ro", &[("readOnly", "false")]).await.unwrap();
    std::fs::write(paths.target.join("after"), b"x").unwrap();
    driver.unpublish("pvc-ro", &paths).await.unwrap();
    driver.unstage("pvc-ro", &paths).await.unwrap();
    driver.delete("pvc-ro").await.unwrap();
}

const EROFS: i32 = 30;

/// The external-provisioner's requirement for a pod the scheduler put on `node` (in `zone`): every
/// node's segment as requisite, the selected one first in preferred.
fn scheduled_on(node: &str, zone: &str) -> TopologyRequirement {
    let segment = |node: &str, zone: &str| Topology {
        segments: [
            ("topology.kubernetes.io/zone", zone),
            ("kubernetes.io/hostname", node),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect(),
    };
    TopologyRequirement {
        requisite: vec![segment(NODE, ZONE), segment("node-two", "zone-two")],
        preferred: vec![segment(node, zone)],
    }
}

/// Two instances of one driver on one state, as each real node of the test bed runs one: a volume
/// is made in the zone (or, with `binding: node`, on the node) the request prefers, is staged only
/// from there, and a clone stays where its source lives.
#[tokio::test]
async fn a_volume_lives_in_its_zone_or_on_its_node_and_is_staged_only_there() {
    let first = Driver::start("block.csi.ferry.dev", false).await;
    let second = first.on_another_node("node-two", "zone-two").await;
    let info = second
        .node()
        .node_get_info(NodeGetInfoRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(info.node_id, "node-two");
    let reported = info.accessible_topology.unwrap().segments;
    assert_eq!(reported["topology.kubernetes.io/zone"], "zone-two");
    assert_eq!(reported["kubernetes.io/hostname"], "node-two");

    let zoned = first
        .create_volume(CreateVolumeRequest {
            accessibility_requirements: Some(scheduled_on("node-two", "zone-two")),
            ..create_request("pvc-zoned", 300 * MIB, "xfs", "online")
        })
        .await
        .unwrap();
    assert_eq!(
        zoned.accessible_topology[0].segments,
        [("topology.kubernetes.io/zone".to_string(), "zone-two".to_string())].into()
    );
    let mut node_bound = create_request("pvc-local", 300 * MIB, "xfs", "online");
    node_bound.parameters.insert("binding".into(), "node".into());
    node_bound.accessibility_requirements = Some(scheduled_on("node-two", "zone-two"));
    let local = first.create_volume(node_bound).await.unwrap();
    assert_eq!(
        local.accessible_topology[0].segments,
        [("kubernetes.io/hostname".to_string(), "node-two".to_string())].into()
    );

    for id in ["pvc-zoned", "pvc-local"] {
        assert_eq!(
            code(first.stage(id, &first.paths(id), "xfs").await),
            Code::FailedPrecondition,
            "{id} staged outside its place"
        );
        assert!(loop_device_of(&first.image(id)).is_none(), "{id} left attached");
        let there = second.paths(id);
        second.stage(id, &there, "xfs").await.unwrap();
        second.unstage(id, &there).await.unwrap();
    }

    // A clone where the requisite allows only the first node's zone: refused; with none, it is
    // made beside its source.
    let mut elsewhere = create_request("pvc-clone", 300 * MIB, "xfs", "online");
    elsewhere.volume_content_source = Some(VolumeContentSource {
        r#type: Some(volume_content_source::Type::Volume(
            volume_content_source::VolumeSource {
                volume_id: "pvc-zoned".into(),
            },
        )),
    });
    let mut requirement = scheduled_on(NODE, ZONE);
    requirement.requisite.truncate(1);
    elsewhere.accessibility_requirements = Some(requirement);
    assert_eq!(
        code(first.create_volume(elsewhere.clone()).await),
        Code::ResourceExhausted
    );
    elsewhere.accessibility_requirements = None;
    let clone = first.create_volume(elsewhere).await.unwrap();
    assert_eq!(
        clone.accessible_topology[0].segments["topology.kubernetes.io/zone"],
        "zone-two"
    );
    for id in ["pvc-clone", "pvc-local", "pvc-zoned"] {
        first.delete(id).await.unwrap();
    }
}

/// An attaching driver attaches a volume only to a node that can reach it.
#[tokio::test]
async fn a_volume_is_attached_only_to_a_node_of_its_zone() {
    let first = Driver::start("attach.csi.ferry.dev", true).await;
    let second = first.on_another_node("node-two", "zone-two").await;
    first
        .create_volume(CreateVolumeRequest {
            accessibility_requirements: Some(scheduled_on(NODE, ZONE)),
            ..create_request("pvc-here", 300 * MIB, "xfs", "online")
        })
        .await
        .unwrap();
    assert_eq!(
        code(first.attach("pvc-here", "node-two").await),
        Code::FailedPrecondition
    );
    first.attach("pvc-here", NODE).await.unwrap();
    assert_eq!(
        code(second.stage("pvc-here", &second.paths("pvc-here"), "xfs").await),
        Code::FailedPrecondition
    );
    first.detach("pvc-here").await.unwrap();
    first.delete("pvc-here").await.unwrap();
}
