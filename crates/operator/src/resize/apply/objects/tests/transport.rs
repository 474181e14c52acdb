//! A copy to another node: the serving pod, the pulling mover, the copy's key.

use super::*;
use crate::resize::apply::objects::transport as across;

fn pulled(pass: Pass) -> CopyJob<'static> {
    CopyJob {
        pass,
        pull: Some(Pull {
            from: "10.2.0.7:7443",
            key: "data-db-0-ferry-abc-key-0".into(),
            tracked: false,
        }),
        ..final_copy()
    }
}

fn spec_of(pod: &Pod) -> Value {
    serde_json::to_value(pod.spec.as_ref().unwrap()).unwrap()
}

#[test]
fn a_serving_mover_reads_its_claim_only_holds_the_copys_key_and_stays_on_a_cordoned_node() {
    let pod = across::serving_pod(
        &owner(),
        "data-db-0-ferry-abc-serve",
        &placed(),
        across::Served {
            claim: "data-db-0",
            key: "data-db-0-ferry-abc-key-0",
            track_changes: false,
        },
        &["DAC_OVERRIDE".to_string()],
    );
    assert_eq!(labels(&pod)[LABEL_MOVER_PASS], SERVING_PASS);
    let spec = spec_of(&pod);
    let container = &spec["containers"][0];
    assert_eq!(
        container["command"],
        json!([
            "ferry-mover",
            "serve",
            "--source",
            "/source",
            "--tls",
            "/tls",
            "--listen",
            "0.0.0.0:7443"
        ])
    );
    assert_eq!(
        container["volumeMounts"],
        json!([{"name": "source", "mountPath": "/source", "readOnly": true},
               {"name": "tls", "mountPath": "/tls", "readOnly": true}])
    );
    assert_eq!(
        spec["volumes"],
        json!([{"name": "source", "persistentVolumeClaim": {"claimName": "data-db-0", "readOnly": true}},
               {"name": "tls", "secret": {"secretName": "data-db-0-ferry-abc-key-0", "defaultMode": 0o400}}])
    );
    let tolerations = spec["tolerations"].as_array().unwrap();
    assert!(tolerations.contains(
        &json!({"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"})
    ));
    assert!(
        tolerations.contains(&json!({"key": "db", "operator": "Exists", "effect": "NoSchedule"})),
        "the replica's own"
    );
    assert_eq!(
        container["securityContext"]["capabilities"]["add"],
        json!(["DAC_OVERRIDE"])
    );
}

#[test]
fn a_pulling_mover_mounts_only_the_new_volume_and_the_key_and_the_final_one_stops_the_server_on_its_go() {
    let warm = mover_pod(&owner(), "w", &placed(), &pulled(Pass::Warm));
    let spec = spec_of(&warm);
    assert_eq!(
        spec["containers"][0]["command"],
        json!([
            "ferry-mover",
            "pull",
            "--from",
            "10.2.0.7:7443",
            "--tls",
            "/tls",
            "--target",
            "/target",
            "--delete",
            "--verify",
            "checksum",
            "--progress",
            "json",
            "--connect-wait",
            "60",
            "--bwlimit",
            (50u64 << 20).to_string()
        ])
    );
    let names: Vec<&str> = (spec["volumes"].as_array().unwrap().iter())
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["target", "tls"], "the old volume is not mounted here");
    assert_eq!(
        spec["volumes"][1]["secret"]["secretName"],
        "data-db-0-ferry-abc-key-0"
    );

    let last = mover_pod(&owner(), "f", &placed(), &pulled(Pass::Final));
    let command = spec_of(&last)["containers"][0]["command"].clone();
    let command: Vec<&str> = command
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(
        command.ends_with(&["--strict", "--stop-server", "--wait-for", "/signal/go"]),
        "{command:?}"
    );
    assert_eq!(
        last.annotations()[ANNOTATION_FINAL_PASS],
        "",
        "on standby until its go"
    );
    let none = CopyJob {
        verify: Verify::None,
        ..pulled(Pass::Warm)
    };
    assert!(
        across::pull_command(&none, "a:1")
            .windows(2)
            .any(|w| w == ["--verify", "none"])
    );
}

/// The serving mover of claim `c` with key `k`.
fn serving(track_changes: bool) -> Pod {
    across::serving_pod(
        &owner(),
        "s",
        &placed(),
        across::Served {
            claim: "c",
            key: "k",
            track_changes,
        },
        &[],
    )
}

/// A tracking serving mover records changes from its start; every pull marks its pass, and the
/// final one reads only what changed since the last that passed.
#[test]
fn with_change_tracking_the_server_records_every_pull_marks_and_the_final_one_reads_the_changes() {
    let serving = serving(true);
    let command = spec_of(&serving)["containers"][0]["command"].clone();
    assert_eq!(command.as_array().unwrap().last().unwrap(), "--track-changes");
    let tracked = |pass| CopyJob {
        pull: Some(Pull {
            from: "10.2.0.7:7443",
            key: "k".into(),
            tracked: true,
        }),
        ..pulled(pass)
    };
    let warm = across::pull_command(&tracked(Pass::Warm), "a:1");
    assert!(warm.contains(&"--track-changes".to_string()), "{warm:?}");
    assert!(!warm.contains(&"--changes".to_string()), "{warm:?}");
    let last = across::pull_command(&tracked(Pass::Final), "a:1");
    assert!(
        last.windows(2).any(|w| w == ["--track-changes", "--changes"]),
        "{last:?}"
    );
    let untracked = across::pull_command(&pulled(Pass::Final), "a:1");
    assert!(!untracked.iter().any(|a| a.contains("changes")), "{untracked:?}");
}

#[test]
fn each_copy_has_a_key_of_its_own_which_goes_with_its_serving_mover() {
    let (one, two) = (across::copy_key().unwrap(), across::copy_key().unwrap());
    for key in [&one, &two] {
        assert_eq!(key.keys().collect::<Vec<_>>(), ["ca.crt", "tls.crt", "tls.key"]);
        assert!(key["ca.crt"].starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(key["tls.key"].contains("PRIVATE KEY"));
    }
    assert_ne!(one["ca.crt"], two["ca.crt"], "an authority per copy");
    assert!(!one.values().any(|pem| pem == &two["tls.key"]));

    let mut serving = serving(false);
    assert!(
        across::key_secret(&serving, "k", one.clone()).is_err(),
        "no owner without a UID"
    );
    serving.metadata.uid = Some("pod-uid".into());
    let secret = across::key_secret(&serving, "k", one).unwrap();
    assert_eq!(secret.metadata.name.as_deref(), Some("k"));
    let owners = secret.metadata.owner_references.unwrap();
    assert_eq!(
        (owners.len(), owners[0].uid.as_str(), owners[0].kind.as_str()),
        (1, "pod-uid", "Pod")
    );
    assert_eq!(owners[0].controller, None);
}
