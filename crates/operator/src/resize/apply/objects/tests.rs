use super::*;
use k8s_openapi::api::apps::v1::StatefulSet;
use serde_json::{Value, json};

mod transport;

fn owner() -> Owner {
    let mut resize = VolumeResize::new(
        "grow",
        serde_json::from_value(
            json!({"statefulSetName": "db", "volumes": [{"name": "data", "size": "2Gi"}]}),
        )
        .unwrap(),
    );
    resize.metadata.namespace = Some("ns".into());
    resize.metadata.uid = Some("uid-1".into());
    Owner::of(&resize)
}

fn owner_reference() -> Value {
    json!({"apiVersion": "ferry.dev/v1alpha1", "kind": "VolumeResize", "name": "grow", "uid": "uid-1", "controller": true})
}

fn toleration(key: &str) -> Toleration {
    Toleration {
        key: Some(key.into()),
        operator: Some("Exists".into()),
        effect: Some("NoSchedule".into()),
        ..Toleration::default()
    }
}

/// `spec.mover` with an image, a node selector and a toleration; the replica tolerates the same
/// and one more.
fn placed() -> Placement {
    let mover = MoverSettings {
        image: Some("registry.example/ferry:1".into()),
        node_selector: Some([("disk".to_string(), "ssd".to_string())].into()),
        tolerations: Some(vec![toleration("dedicated")]),
        ..MoverSettings::default()
    };
    placement(
        &mover,
        "ghcr.io/ferry-dev/ferry:0",
        vec![toleration("dedicated"), toleration("db")],
        &[],
        None,
    )
}

fn final_copy() -> CopyJob<'static> {
    CopyJob {
        source: "data-db-0",
        target: "data-db-0-ferry-abc",
        pass: Pass::Final,
        verify: Verify::Checksum,
        threads: Some(8),
        bandwidth_limit: Some(50 << 20),
        resources: Some(ResourceRequirements {
            requests: Some([("cpu".to_string(), Quantity("100m".into()))].into()),
            ..ResourceRequirements::default()
        }),
        // (Data of other owners: the planner chose these from what was measured.)
        capabilities: vec!["CHOWN".into(), "FOWNER".into(), "DAC_OVERRIDE".into()],
        cloned_at: None,
        track_changes: false,
        pull: None,
    }
}

fn stateful_set() -> StatefulSet {
    serde_json::from_value(json!({
        "metadata": {"name": "db", "namespace": "ns", "uid": "sts-uid", "resourceVersion": "7",
                     "labels": {"app": "db"}, "annotations": {"note": "kept"}},
        "spec": {
            "selector": {"matchLabels": {"app": "db"}},
            "serviceName": "db",
            "template": {"metadata": {"labels": {"app": "db"}}},
            "volumeClaimTemplates": [
                {"metadata": {"name": "data", "labels": {"kind": "data"}},
                 "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}},
                {"metadata": {"name": "data-log", "labels": {"kind": "log"}},
                 "spec": {"accessModes": ["ReadWriteOncePod"]}},
            ],
        },
        "status": {"replicas": 1},
    }))
    .unwrap()
}

fn labels(pod: &Pod) -> &BTreeMap<String, String> {
    pod.metadata.labels.as_ref().unwrap()
}

fn spec(pod: &Pod) -> &PodSpec {
    pod.spec.as_ref().unwrap()
}

#[test]
fn a_mover_pod_is_labelled_as_the_resizes_mover_of_its_pass() {
    let pod = mover_pod(&owner(), "data-db-0-ferry-abc-final", &placed(), &final_copy());
    assert_eq!(pod.metadata.name.as_deref(), Some("data-db-0-ferry-abc-final"));
    let labels = labels(&pod);
    assert_eq!(labels[LABEL_VOLUME_RESIZE], "grow");
    assert_eq!(labels[LABEL_MANAGED_BY], MANAGED_BY_VALUE);
    assert_eq!(labels[LABEL_MOVER], "true");
    assert_eq!(labels[LABEL_MOVER_PASS], "final");
    let warm = mover_pod(
        &owner(),
        "w",
        &placed(),
        &CopyJob {
            pass: Pass::Warm,
            ..final_copy()
        },
    );
    assert_eq!(labels_of(&warm)[LABEL_MOVER_PASS], "warm");
    let owners = pod.metadata.owner_references.as_ref().unwrap();
    assert_eq!(owners.len(), 1);
    assert_eq!(owners[0].uid, "uid-1");
    assert_eq!(owners[0].controller, Some(true));
}

fn labels_of(pod: &Pod) -> BTreeMap<String, String> {
    labels(pod).clone()
}

/// Where Pod Security `restricted` admits no root pod: the mover, its serving peer and the measuring
/// pod run as the StatefulSet's own user and groups, non-root, with every capability dropped and
/// none added (what `restricted` admits), whatever the data would need as root.
#[test]
fn in_a_restricted_namespace_ferrys_pods_run_as_the_stateful_sets_user_with_no_capability() {
    let mut placement = placed();
    placement.run_as = Some(ferry_engine::pods::RunAs {
        user: 999,
        group: Some(999),
        fs_group: Some(2000),
        supplemental_groups: vec![3000],
        fs_group_change_policy: Some("OnRootMismatch".into()),
    });
    let served = super::transport::Served {
        claim: "data-db-0",
        key: "k",
        track_changes: false,
    };
    let pods = [
        mover_pod(&owner(), "m", &placement, &final_copy()),
        usage_pod(&owner(), "u", &placement, "data-db-0"),
        super::transport::serving_pod(&owner(), "s", &placement, served, &["CHOWN".to_string()]),
    ];
    for pod in &pods {
        let spec = spec(pod);
        let security = spec.security_context.as_ref().unwrap();
        assert_eq!(security.run_as_non_root, Some(true));
        assert_eq!(security.run_as_user, Some(999));
        assert_eq!(security.run_as_group, Some(999));
        assert_eq!(security.fs_group, Some(2000));
        assert_eq!(security.supplemental_groups, Some(vec![3000]));
        assert_eq!(security.fs_group_change_policy.as_deref(), Some("OnRootMismatch"));
        assert_eq!(security.seccomp_profile.as_ref().unwrap().type_, "RuntimeDefault");
        let container = spec.containers[0].security_context.as_ref().unwrap();
        assert_eq!(container.allow_privilege_escalation, Some(false));
        let capabilities = container.capabilities.as_ref().unwrap();
        assert_eq!(capabilities.drop, Some(vec!["ALL".to_string()]));
        assert_eq!(capabilities.add, Some(Vec::new()), "{:?}", pod.metadata.name);
    }
}

/// Least privilege, whichever the pass: no token, no service links, root only with the runtime's
/// seccomp profile, no escalation, a read-only root file system, only the capabilities needed.
#[test]
fn a_mover_pod_runs_with_least_privilege_and_a_read_only_source() {
    for pass in [Pass::Warm, Pass::Final] {
        let copy = CopyJob { pass, ..final_copy() };
        let pod = mover_pod(&owner(), "m", &placed(), &copy);
        let spec = spec(&pod);
        assert_eq!(spec.automount_service_account_token, Some(false));
        assert_eq!(spec.enable_service_links, Some(false));
        assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
        let pod_security = spec.security_context.as_ref().unwrap();
        assert_eq!(pod_security.run_as_user, Some(0));
        assert_eq!(pod_security.run_as_group, Some(0));
        assert_eq!(
            pod_security.seccomp_profile.as_ref().unwrap().type_,
            "RuntimeDefault"
        );
        assert_eq!(spec.containers.len(), 1);
        let container = &spec.containers[0];
        assert_eq!(container.name, MOVER_CONTAINER);
        assert_eq!(container.image.as_deref(), Some("registry.example/ferry:1"));
        assert_eq!(container.termination_message_policy.as_deref(), Some("File"));
        let security = container.security_context.as_ref().unwrap();
        assert_eq!(security.allow_privilege_escalation, Some(false));
        assert_eq!(security.read_only_root_filesystem, Some(true));
        assert_eq!(security.privileged, None);
        let capabilities = security.capabilities.as_ref().unwrap();
        assert_eq!(capabilities.drop, Some(vec!["ALL".to_string()]));
        assert_eq!(
            capabilities.add,
            Some(["CHOWN", "FOWNER", "DAC_OVERRIDE"].map(String::from).to_vec()),
            "only what the copy's data needs"
        );
        // The source is read-only twice over (mount and claim); the target is written.
        let mounts = container.volume_mounts.as_ref().unwrap();
        assert_eq!(
            (
                mounts[0].name.as_str(),
                mounts[0].mount_path.as_str(),
                mounts[0].read_only
            ),
            ("source", "/source", Some(true))
        );
        assert_eq!(
            (
                mounts[1].name.as_str(),
                mounts[1].mount_path.as_str(),
                mounts[1].read_only
            ),
            ("target", "/target", None)
        );
        let volumes = spec.volumes.as_ref().unwrap();
        let source = volumes[0].persistent_volume_claim.as_ref().unwrap();
        assert_eq!(
            (source.claim_name.as_str(), source.read_only),
            ("data-db-0", Some(true))
        );
        let target = volumes[1].persistent_volume_claim.as_ref().unwrap();
        assert_eq!(
            (target.claim_name.as_str(), target.read_only),
            ("data-db-0-ferry-abc", None)
        );
        assert_eq!(container.resources, final_copy().resources);
    }
}

#[test]
fn a_mover_pod_carries_the_node_selector_and_every_toleration_once() {
    let pod = mover_pod(&owner(), "m", &placed(), &final_copy());
    let spec = spec(&pod);
    assert_eq!(
        spec.node_selector,
        Some([("disk".to_string(), "ssd".to_string())].into())
    );
    assert_eq!(
        spec.tolerations,
        Some(vec![toleration("dedicated"), toleration("db")])
    );
    // No `spec.mover`: the operator's image, the replica's tolerations, no node selector.
    let plain = placement(
        &MoverSettings::default(),
        "ghcr.io/ferry-dev/ferry:0",
        vec![toleration("db")],
        &[],
        None,
    );
    assert_eq!(plain.image, "ghcr.io/ferry-dev/ferry:0");
    assert_eq!(plain.node_selector, None);
    assert_eq!(plain.tolerations, vec![toleration("db")]);
}

#[test]
fn the_mover_command_follows_the_copy_settings() {
    let command = mover_command(&final_copy());
    assert_eq!(
        command,
        [
            "ferry-mover",
            "sync",
            "--source",
            "/source",
            "--target",
            "/target",
            "--delete",
            "--verify",
            "checksum",
            "--progress",
            "json",
            "--threads",
            "8",
            "--bwlimit",
            "52428800",
            "--strict",
            "--wait-for",
            "/signal/go",
        ]
    );
    let warm = mover_command(&CopyJob {
        pass: Pass::Warm,
        verify: Verify::Metadata,
        threads: None,
        bandwidth_limit: Some(0),
        ..final_copy()
    });
    assert_eq!(
        warm,
        [
            "ferry-mover",
            "sync",
            "--source",
            "/source",
            "--target",
            "/target",
            "--delete",
            "--verify",
            "metadata",
            "--progress",
            "json",
            "--bwlimit",
            "1",
            "--chunk-record",
        ]
    );
    let cloned = mover_command(&CopyJob {
        cloned_at: Some(1_764_000_000),
        ..final_copy()
    });
    assert_eq!(
        cloned[cloned.len() - 5..],
        [
            "--cloned-at",
            "1764000000",
            "--strict",
            "--wait-for",
            "/signal/go"
        ]
    );
}

/// A final mover tracking changes watches the source on standby and is Ready once it has caught
/// up: its probe checks the file it creates then, on a volume of its own (the root file system is
/// read-only). Nothing of that on a final mover that does not track, or on a warm one.
#[test]
fn a_tracking_final_mover_says_through_its_readiness_probe_when_it_is_armed() {
    let tracking = CopyJob {
        track_changes: true,
        ..final_copy()
    };
    let command = mover_command(&tracking);
    assert_eq!(
        command[command.len() - 6..],
        [
            "--strict",
            "--wait-for",
            "/signal/go",
            "--track-changes",
            "--ready-file",
            "/ready/armed"
        ]
    );
    let pod = serde_json::to_value(mover_pod(&owner(), "f", &placed(), &tracking)).unwrap();
    let container = &pod["spec"]["containers"][0];
    assert_eq!(
        container["readinessProbe"],
        json!({"exec": {"command": ["ferry-mover", "ready", "/ready/armed"]},
               "periodSeconds": 1, "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 1})
    );
    assert!(
        container["volumeMounts"]
            .as_array()
            .unwrap()
            .contains(&json!({"name": "ready", "mountPath": "/ready"}))
    );
    assert!(
        pod["spec"]["volumes"]
            .as_array()
            .unwrap()
            .contains(&json!({"name": "ready", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}}))
    );
    let warm = CopyJob {
        pass: Pass::Warm,
        ..tracking
    };
    for copy in [final_copy(), warm] {
        let pod = mover_pod(&owner(), "m", &placed(), &copy);
        assert_eq!(spec(&pod).containers[0].readiness_probe, None, "{:?}", copy.pass);
        assert!(!mover_command(&copy).contains(&"--track-changes".to_string()));
        let volumes = spec(&pod).volumes.as_ref().unwrap();
        assert!(volumes.iter().all(|v| v.name != "ready"));
    }
}

#[test]
fn a_usage_pod_reads_its_claim_read_only_with_one_capability() {
    let pod = usage_pod(&owner(), "data-db-0-ferry-abc-usage", &placed(), "data-db-0");
    let labels = labels(&pod);
    assert_eq!(labels[LABEL_MOVER], "true");
    assert_eq!(labels[LABEL_MOVER_PASS], "usage");
    assert_eq!(labels[LABEL_VOLUME_RESIZE], "grow");
    let spec = spec(&pod);
    assert_eq!(spec.automount_service_account_token, Some(false));
    let container = &spec.containers[0];
    assert_eq!(
        container.command,
        Some(vec!["ferry-mover".into(), "usage".into(), "/source".into()])
    );
    let security = container.security_context.as_ref().unwrap();
    assert_eq!(security.read_only_root_filesystem, Some(true));
    assert_eq!(
        security.capabilities.as_ref().unwrap().add,
        Some(vec!["DAC_OVERRIDE".to_string()])
    );
    assert_eq!(container.resources, None);
    let mounts = container.volume_mounts.as_ref().unwrap();
    assert_eq!(mounts.len(), 1);
    assert_eq!(mounts[0].read_only, Some(true));
    let claim = spec.volumes.as_ref().unwrap()[0]
        .persistent_volume_claim
        .as_ref()
        .unwrap();
    assert_eq!(
        (claim.claim_name.as_str(), claim.read_only),
        ("data-db-0", Some(true))
    );
    // And a cordon: its volume may be on a node being drained.
    assert_eq!(
        spec.tolerations,
        Some(vec![
            toleration("dedicated"),
            toleration("db"),
            toleration("node.kubernetes.io/unschedulable")
        ])
    );
}

#[test]
fn a_target_claim_is_the_resizes_at_the_new_size_and_class() {
    let claim = target_claim(
        &owner(),
        "data-db-0-ferry-abc",
        vec!["ReadWriteOncePod".into()],
        TargetShape {
            shape: ClaimShape {
                bytes: 3 << 29,
                storage_class: Some("fast".into()),
                attributes_class: Some("gold".into()),
            },
            clone_of: Some("data-db-0".into()),
            node: None,
        },
    );
    assert_eq!(claim.metadata.name.as_deref(), Some("data-db-0-ferry-abc"));
    let labels = claim.metadata.labels.as_ref().unwrap();
    assert_eq!(labels[LABEL_VOLUME_RESIZE], "grow");
    assert_eq!(labels[LABEL_MANAGED_BY], MANAGED_BY_VALUE);
    assert!(!labels.contains_key(LABEL_MOVER));
    assert_eq!(claim.metadata.owner_references.as_ref().unwrap()[0].uid, "uid-1");
    let spec = claim.spec.unwrap();
    assert_eq!(spec.storage_class_name.as_deref(), Some("fast"));
    assert_eq!(spec.volume_attributes_class_name.as_deref(), Some("gold"));
    assert_eq!(spec.access_modes, Some(vec!["ReadWriteOncePod".to_string()]));
    assert_eq!(spec.volume_name, None);
    let source = spec.data_source.clone().unwrap();
    assert_eq!(
        (source.kind.as_str(), source.name.as_str()),
        ("PersistentVolumeClaim", "data-db-0")
    );
    assert_eq!(
        spec.resources.unwrap().requests.unwrap()["storage"],
        Quantity("1536Mi".into())
    );
}

/// Templates `data` and `data-log`: the claim `data-log-db-0` is made from `data-log`, never
/// from `data` (whose name is a prefix of it).
#[test]
fn a_bound_claim_is_made_from_its_own_template() {
    let claim = bound_claim(
        &stateful_set(),
        "data-log",
        "data-log-db-0",
        "pv-1",
        ClaimShape {
            bytes: 1 << 30,
            storage_class: None,
            attributes_class: Some("gold".into()),
        },
    );
    let labels = claim.metadata.labels.unwrap();
    assert_eq!(labels.get("kind").map(String::as_str), Some("log"));
    assert_eq!(labels.get("app").map(String::as_str), Some("db"));
    // The StatefulSet's claim from now on: neither Ferry's labels nor an owner.
    assert!(!labels.contains_key(LABEL_VOLUME_RESIZE));
    assert_eq!(claim.metadata.owner_references, None);
    let spec = claim.spec.unwrap();
    assert_eq!(spec.access_modes, Some(vec!["ReadWriteOncePod".to_string()]));
    assert_eq!(spec.volume_name.as_deref(), Some("pv-1"));
    assert_eq!(spec.storage_class_name, None);
    assert_eq!(spec.volume_attributes_class_name.as_deref(), Some("gold"));
    assert_eq!(
        spec.resources.unwrap().requests.unwrap()["storage"],
        Quantity("1Gi".into())
    );
}

#[test]
fn the_backup_keeps_the_statefulset_and_its_uid() {
    let backup =
        backup_config_map(&owner(), "ferry-grow-backup", Some("ns".into()), &stateful_set()).unwrap();
    assert_eq!(backup.metadata.name.as_deref(), Some("ferry-grow-backup"));
    assert_eq!(backup.metadata.namespace.as_deref(), Some("ns"));
    assert_eq!(
        backup.metadata.annotations.as_ref().unwrap()[ANNOTATION_BACKED_UP_UID],
        "sts-uid"
    );
    assert_eq!(
        backup.metadata.labels.as_ref().unwrap()[LABEL_VOLUME_RESIZE],
        "grow"
    );
    let data = backup.data.as_ref().unwrap();
    assert_eq!(data.keys().collect::<Vec<_>>(), [BACKUP_KEY]);
    // Kept: spec and the user's metadata; not the UID, resourceVersion or status.
    let kept: StatefulSet = serde_json::from_str(&data[BACKUP_KEY]).unwrap();
    assert_eq!(kept.metadata.uid, None);
    assert_eq!(kept.metadata.resource_version, None);
    assert_eq!(kept.status, None);
    assert_eq!(kept.metadata.annotations.as_ref().unwrap()["note"], "kept");
    assert_eq!(kept.spec, stateful_set().spec);
    assert_eq!(restore(&backup).unwrap(), kept);
}

#[test]
fn a_rollback_restores_the_live_spec_with_the_original_templates() {
    let mut backup =
        backup_config_map(&owner(), "ferry-grow-backup", Some("ns".into()), &stateful_set()).unwrap();
    let mut live = stateful_set();
    let live_spec = live.spec.as_mut().unwrap();
    live_spec.replicas = Some(3);
    live_spec.volume_claim_templates = None;
    let patch = live_backup_patch(serialize_kept(&live).unwrap());
    let text = patch["data"][LIVE_KEY].as_str().unwrap().to_string();
    backup.data.as_mut().unwrap().insert(LIVE_KEY.into(), text);
    let restored = restore(&backup).unwrap();
    let spec = restored.spec.as_ref().unwrap();
    assert_eq!(spec.replicas, Some(3));
    assert_eq!(
        spec.volume_claim_templates,
        stateful_set().spec.unwrap().volume_claim_templates
    );
    assert_eq!(last_live(&backup).unwrap().spec.unwrap().replicas, Some(3));
    let marked = recreated_by("uid-1".into(), restored);
    assert_eq!(marked.annotations()[ANNOTATION_RECREATED_BY], "uid-1");
}

#[test]
fn a_recreated_statefulset_has_the_new_size_of_planned_templates_only() {
    let changes: Vec<VolumeChange> = serde_json::from_value(json!([
        {"name": "data", "size": "2Gi", "storageClassName": "fast"},
        {"name": "data-log", "size": "5Gi"},
    ]))
    .unwrap();
    let plan: Vec<VolumePlan> = serde_json::from_value(json!([
        {"replica": 0, "volume": "data", "claimName": "data-db-0", "targetSize": "2Gi", "strategy": "Copy"},
        {"replica": 0, "volume": "data-log", "claimName": "data-log-db-0", "targetSize": "5Gi"},
    ]))
    .unwrap();
    let sts = with_new_templates(stateful_set(), &changes, &plan);
    let templates = sts.spec.unwrap().volume_claim_templates.unwrap();
    let data = templates[0].spec.as_ref().unwrap();
    assert_eq!(
        data.resources.as_ref().unwrap().requests.as_ref().unwrap()["storage"],
        Quantity("2Gi".into())
    );
    assert_eq!(data.storage_class_name.as_deref(), Some("fast"));
    // No strategy in the plan: untouched.
    assert_eq!(templates[1].spec.as_ref().unwrap().resources, None);
}

#[test]
fn the_patches_are_the_merge_patches_ferry_always_sent() {
    assert_eq!(
        expand_claim_patch(2 << 30),
        json!({"spec": {"resources": {"requests": {"storage": "2Gi"}}}})
    );
    assert_eq!(
        live_backup_patch("{}".into()),
        json!({"data": {"live.json": "{}"}})
    );
}

/// What the earlier `json!` + `from_json` code built, for the same inputs: its JSON, deserialized as
/// it was, is what went to the API server.
fn as_sent<T: serde::de::DeserializeOwned + serde::Serialize>(old: Value) -> Value {
    serde_json::to_value(serde_json::from_value::<T>(old).unwrap()).unwrap()
}

/// The typed builders send exactly what the `json!` code they replace sent: each expected body is
/// written out, and the old construction (kept here verbatim for these inputs) is checked against
/// it too, so the equivalence is tested rather than assumed.
#[test]
fn the_typed_objects_serialize_as_the_json_ones_did() {
    let owner_ref = owner_reference();
    let labels = json!({"ferry.dev/volume-resize": "grow", "app.kubernetes.io/managed-by": "ferry"});
    let tolerations = json!([
        {"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "db", "operator": "Exists", "effect": "NoSchedule"},
    ]);
    let pod_spec = |container: Value, volumes: Value| {
        json!({
            "restartPolicy": "Never",
            "automountServiceAccountToken": false,
            "enableServiceLinks": false,
            "nodeSelector": {"disk": "ssd"},
            "tolerations": tolerations,
            "securityContext": {"runAsUser": 0, "runAsGroup": 0, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [container],
            "volumes": volumes,
        })
    };

    // Mover pod, final pass.
    let mover_container = json!({
        "name": "mover",
        "image": "registry.example/ferry:1",
        "terminationMessagePolicy": "File",
        "command": ["ferry-mover", "sync", "--source", "/source", "--target", "/target", "--delete",
                    "--verify", "checksum", "--progress", "json", "--threads", "8",
                    "--bwlimit", "52428800", "--strict", "--wait-for", "/signal/go"],
        "resources": {"requests": {"cpu": "100m"}},
        "securityContext": {
            "allowPrivilegeEscalation": false,
            "readOnlyRootFilesystem": true,
            "capabilities": {"drop": ["ALL"], "add": ["CHOWN", "FOWNER", "DAC_OVERRIDE"]},
        },
        "volumeMounts": [
            {"name": "source", "mountPath": "/source", "readOnly": true},
            {"name": "target", "mountPath": "/target"},
            {"name": "signal", "mountPath": "/signal", "readOnly": true},
        ],
    });
    let mover_volumes = json!([
        {"name": "source", "persistentVolumeClaim": {"claimName": "data-db-0", "readOnly": true}},
        {"name": "target", "persistentVolumeClaim": {"claimName": "data-db-0-ferry-abc"}},
        {"name": "signal", "downwardAPI": {"items": [
            {"path": "go", "fieldRef": {"fieldPath": "metadata.annotations['ferry.dev/final-pass']"}},
        ]}},
    ]);
    let expected_mover = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "data-db-0-ferry-abc-final",
            "labels": {"ferry.dev/volume-resize": "grow", "app.kubernetes.io/managed-by": "ferry",
                       "ferry.dev/mover": "true", "ferry.dev/mover-pass": "final"},
            "annotations": {"ferry.dev/final-pass": ""},
            "ownerReferences": [owner_ref],
        },
        "spec": pod_spec(mover_container, mover_volumes),
    });
    // The old construction: `owned_metadata`, then `ferry_pod` adding labels, image and policy.
    let mut old_metadata =
        json!({"name": "data-db-0-ferry-abc-final", "labels": labels, "ownerReferences": [owner_ref]});
    old_metadata["labels"][LABEL_MOVER] = json!("true");
    old_metadata["labels"][LABEL_MOVER_PASS] = json!("final");
    old_metadata["annotations"] = json!({"ferry.dev/final-pass": ""});
    let mut old_container = json!({
        "name": MOVER_CONTAINER,
        "command": ["ferry-mover", "sync", "--source", "/source", "--target", "/target", "--delete",
                    "--verify", "checksum", "--progress", "json", "--threads", "8",
                    "--bwlimit", "52428800", "--strict", "--wait-for", "/signal/go"],
        "resources": final_copy().resources,
        "securityContext": {
            "allowPrivilegeEscalation": false,
            "readOnlyRootFilesystem": true,
            "capabilities": {"drop": ["ALL"], "add": ["CHOWN", "FOWNER", "DAC_OVERRIDE"]},
        },
        "volumeMounts": [
            {"name": "source", "mountPath": "/source", "readOnly": true},
            {"name": "target", "mountPath": "/target"},
            {"name": "signal", "mountPath": "/signal", "readOnly": true},
        ],
    });
    old_container["image"] = json!("registry.example/ferry:1");
    old_container["terminationMessagePolicy"] = json!("File");
    let old_mover = json!({
        "metadata": old_metadata,
        "spec": {
            "restartPolicy": "Never",
            "automountServiceAccountToken": false,
            "enableServiceLinks": false,
            "nodeSelector": {"disk": "ssd"},
            "tolerations": [toleration("dedicated"), toleration("db")],
            "securityContext": {"runAsUser": 0, "runAsGroup": 0, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [old_container],
            "volumes": [
                {"name": "source", "persistentVolumeClaim": {"claimName": "data-db-0", "readOnly": true}},
                {"name": "target", "persistentVolumeClaim": {"claimName": "data-db-0-ferry-abc"}},
                {"name": "signal", "downwardAPI": {"items": [
                    {"path": "go", "fieldRef": {"fieldPath": "metadata.annotations['ferry.dev/final-pass']"}},
                ]}},
            ],
        },
    });
    let mover = mover_pod(&owner(), "data-db-0-ferry-abc-final", &placed(), &final_copy());
    assert_eq!(serde_json::to_value(&mover).unwrap(), expected_mover);
    assert_eq!(as_sent::<Pod>(old_mover), expected_mover);

    // Usage pod: no resources; with no `spec.mover`, no node selector and the operator's image.
    let usage_placement = placement(
        &MoverSettings::default(),
        "ghcr.io/ferry-dev/ferry:0",
        vec![],
        &[],
        None,
    );
    let expected_usage = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "data-db-0-ferry-abc-usage",
            "labels": {"ferry.dev/volume-resize": "grow", "app.kubernetes.io/managed-by": "ferry",
                       "ferry.dev/mover": "true", "ferry.dev/mover-pass": "usage"},
            "ownerReferences": [owner_ref],
        },
        "spec": {
            "restartPolicy": "Never",
            "automountServiceAccountToken": false,
            "enableServiceLinks": false,
            "tolerations": [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}],
            "securityContext": {"runAsUser": 0, "runAsGroup": 0, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{
                "name": "usage",
                "image": "ghcr.io/ferry-dev/ferry:0",
                "terminationMessagePolicy": "File",
                "command": ["ferry-mover", "usage", "/source"],
                "securityContext": {
                    "allowPrivilegeEscalation": false,
                    "readOnlyRootFilesystem": true,
                    "capabilities": {"drop": ["ALL"], "add": ["DAC_OVERRIDE"]},
                },
                "volumeMounts": [{"name": "source", "mountPath": "/source", "readOnly": true}],
            }],
            "volumes": [{"name": "source", "persistentVolumeClaim": {"claimName": "data-db-0", "readOnly": true}}],
        },
    });
    let mut old_metadata =
        json!({"name": "data-db-0-ferry-abc-usage", "labels": labels, "ownerReferences": [owner_ref]});
    old_metadata["labels"][LABEL_MOVER] = json!("true");
    old_metadata["labels"][LABEL_MOVER_PASS] = json!("usage");
    let mut old_container = json!({
        "name": "usage",
        "command": ["ferry-mover", "usage", "/source"],
        "securityContext": {
            "allowPrivilegeEscalation": false,
            "readOnlyRootFilesystem": true,
            "capabilities": {"drop": ["ALL"], "add": ["DAC_OVERRIDE"]},
        },
        "volumeMounts": [{"name": "source", "mountPath": "/source", "readOnly": true}],
    });
    old_container["image"] = json!("ghcr.io/ferry-dev/ferry:0");
    old_container["terminationMessagePolicy"] = json!("File");
    let old_usage = json!({
        "metadata": old_metadata,
        "spec": {
            "restartPolicy": "Never",
            "automountServiceAccountToken": false,
            "enableServiceLinks": false,
            "nodeSelector": null,
            "tolerations": [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}],
            "securityContext": {"runAsUser": 0, "runAsGroup": 0, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [old_container],
            "volumes": [{"name": "source", "persistentVolumeClaim": {"claimName": "data-db-0", "readOnly": true}}],
        },
    });
    let usage = usage_pod(
        &owner(),
        "data-db-0-ferry-abc-usage",
        &usage_placement,
        "data-db-0",
    );
    assert_eq!(serde_json::to_value(&usage).unwrap(), expected_usage);
    assert_eq!(as_sent::<Pod>(old_usage), expected_usage);

    // Target claim, with and without a class.
    for class in [Some("fast"), None] {
        let mut expected_spec = json!({
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "2Gi"}},
        });
        if let Some(class) = class {
            expected_spec["storageClassName"] = json!(class);
        }
        let expected = json!({
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data-db-0-ferry-abc", "labels": labels, "ownerReferences": [owner_ref]},
            "spec": expected_spec,
        });
        let old = json!({
            "metadata": {"name": "data-db-0-ferry-abc", "labels": labels, "ownerReferences": [owner_ref]},
            "spec": {
                "accessModes": vec!["ReadWriteOnce".to_string()],
                "storageClassName": class,
                "resources": {"requests": {"storage": format_bytes(2 << 30)}},
            },
        });
        let claim = target_claim(
            &owner(),
            "data-db-0-ferry-abc",
            vec!["ReadWriteOnce".into()],
            TargetShape {
                shape: ClaimShape {
                    bytes: 2 << 30,
                    storage_class: class.map(String::from),
                    attributes_class: None,
                },
                clone_of: None,
                node: None,
            },
        );
        assert_eq!(serde_json::to_value(&claim).unwrap(), expected);
        assert_eq!(as_sent::<PersistentVolumeClaim>(old), expected);
    }

    // Bound claim.
    let expected_bound = json!({
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data-db-0", "labels": {"kind": "data", "app": "db"}},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "fast",
            "volumeName": "pv-1",
            "resources": {"requests": {"storage": "2Gi"}},
        },
    });
    let old_bound = json!({
        "metadata": {"name": "data-db-0", "labels": {"kind": "data", "app": "db"}},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": Some("fast"),
            "volumeName": "pv-1",
            "resources": {"requests": {"storage": format_bytes(2 << 30)}},
        },
    });
    let bound = bound_claim(
        &stateful_set(),
        "data",
        "data-db-0",
        "pv-1",
        ClaimShape {
            bytes: 2 << 30,
            storage_class: Some("fast".into()),
            attributes_class: None,
        },
    );
    assert_eq!(serde_json::to_value(&bound).unwrap(), expected_bound);
    assert_eq!(as_sent::<PersistentVolumeClaim>(old_bound), expected_bound);

    // Backup ConfigMap (typed before, too: its body must not have changed either).
    let backup =
        backup_config_map(&owner(), "ferry-grow-backup", Some("ns".into()), &stateful_set()).unwrap();
    let mut value = serde_json::to_value(&backup).unwrap();
    let text = value["data"]["statefulset.json"].take();
    assert_eq!(
        value,
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "ferry-grow-backup",
                "namespace": "ns",
                "annotations": {"ferry.dev/stateful-set-uid": "sts-uid"},
                "labels": labels,
                "ownerReferences": [owner_ref],
            },
            "data": {"statefulset.json": null},
        })
    );
    let kept: Value = serde_json::from_str(text.as_str().unwrap()).unwrap();
    assert_eq!(
        kept["metadata"],
        json!({"name": "db", "namespace": "ns", "labels": {"app": "db"}, "annotations": {"note": "kept"}})
    );
    assert_eq!(kept.get("status"), None);
}

#[test]
fn mover_and_usage_pods_pull_with_the_operators_pull_secrets_and_name_none_without() {
    let secrets = ["registry-a".to_string(), "registry-b".to_string()];
    let with = placement(
        &MoverSettings::default(),
        "private.example/ferry:1",
        vec![],
        &secrets,
        None,
    );
    let pull_secrets = |pod: &Pod| serde_json::to_value(pod).unwrap()["spec"]["imagePullSecrets"].clone();
    let expected = json!([{"name": "registry-a"}, {"name": "registry-b"}]);
    assert_eq!(
        pull_secrets(&mover_pod(&owner(), "m", &with, &final_copy())),
        expected
    );
    assert_eq!(
        pull_secrets(&usage_pod(&owner(), "u", &with, "data-db-0")),
        expected
    );
    // None configured: the field is left out, not sent as an empty list.
    let without = mover_pod(&owner(), "m", &placed(), &final_copy());
    assert_eq!(pull_secrets(&without), serde_json::Value::Null);
}

#[test]
fn a_final_mover_with_a_key_keeps_its_stdin_open_and_is_told_the_keys_digest() {
    let mut pod = mover_pod(&owner(), "data-db-0-ferry-abc-final", &placed(), &final_copy());
    let plain = spec(&pod).containers[0].clone();
    assert_eq!(plain.stdin, None, "no stdin without a key");
    let digest = "ab".repeat(32);
    with_go_line(&mut pod, &digest);
    let container = &spec(&pod).containers[0];
    assert_eq!((container.stdin, container.stdin_once), (Some(true), Some(false)));
    let command = container.command.clone().unwrap();
    assert_eq!(command[..command.len() - 2], plain.command.unwrap()[..]);
    assert_eq!(
        command[command.len() - 2..],
        ["--go-key-sha256".to_string(), digest]
    );
}
