//! Turning `resize`/`plan` flags into a `VolumeResizeSpec`: pairing `--volume`, `--size` and
//! `--storage-class`, validating sizes locally, and checking the names against the StatefulSet's
//! volume claim templates. No I/O.
//!
//! Pairing rules (documented in docs/cli.md):
//! - `--volume NAME=SIZE` carries its own size;
//! - `--size` given once applies to every `--volume` without `=SIZE`; given several times, the
//!   sizes pair in order with the `--volume`s without `=SIZE` (the counts must match);
//! - `--storage-class NAME=CLASS` applies to that volume; a bare `--storage-class CLASS` given once
//!   applies to every other volume, given several times pairs in order with the `--volume`s;
//! - with no `--volume` at all, a single `--size`/`--storage-class` applies to the StatefulSet's
//!   only volume claim template;
//! - a volume with a StorageClass but no size keeps its current template size.

use crate::args::{ModeArg, RequestArgs, StrategyArg, VerifyArg};
use ferry_api::{Mode, MoverSettings, Strategy, Verify, VolumeChange, VolumeResizeSpec, parse_bytes};
use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum RequestError {
    #[error("{0}")]
    Usage(String),
    #[error("invalid size for volume {volume:?}: {reason}")]
    InvalidSize { volume: String, reason: String },
    #[error(
        "StatefulSet {stateful_set:?} has no volume claim template {name:?} (it has: {})",
        available_list(.available)
    )]
    TemplateNotFound {
        stateful_set: String,
        name: String,
        available: Vec<String>,
    },
}

fn available_list(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

/// One volume as asked for on the command line, before the StatefulSet is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeRequest {
    /// None: "the only template" (no `--volume` was given).
    pub name: Option<String>,
    pub size: Option<String>,
    pub storage_class: Option<String>,
    pub attributes_class: Option<String>,
}

/// A volume claim template of the StatefulSet: its name, requested size and class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pub name: String,
    pub size: Option<String>,
    pub storage_class: Option<String>,
}

/// The class flags of a request: `--storage-class` and `--attributes-class` values.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClassFlags<'a> {
    pub storage: &'a [String],
    pub attributes: &'a [String],
}

/// Pairs the flags into one request per volume, validating sizes with `ferry_api::parse_bytes`.
pub fn pair_volumes(
    volumes: &[String],
    sizes: &[String],
    classes: ClassFlags,
) -> Result<Vec<VolumeRequest>, RequestError> {
    let mut requests = named_volumes(volumes)?;
    let any_class = !classes.storage.is_empty() || !classes.attributes.is_empty();
    pair_sizes(&mut requests, sizes, any_class)?;
    pair_classes(&mut requests, classes.storage, STORAGE_CLASS_FLAG)?;
    pair_classes(&mut requests, classes.attributes, ATTRIBUTES_CLASS_FLAG)?;
    check_requests(&requests)?;
    Ok(requests)
}

/// A class flag: its name, what it names, and the request's field it fills.
struct ClassFlag {
    flag: &'static str,
    what: &'static str,
    field: fn(&mut VolumeRequest) -> &mut Option<String>,
}

const STORAGE_CLASS_FLAG: ClassFlag = ClassFlag {
    flag: "--storage-class",
    what: "StorageClasses",
    field: |request| &mut request.storage_class,
};

const ATTRIBUTES_CLASS_FLAG: ClassFlag = ClassFlag {
    flag: "--attributes-class",
    what: "VolumeAttributesClasses",
    field: |request| &mut request.attributes_class,
};

fn usage(message: String) -> RequestError {
    RequestError::Usage(message)
}

/// `--volume NAME[=SIZE]`, each once.
fn named_volumes(volumes: &[String]) -> Result<Vec<VolumeRequest>, RequestError> {
    let mut requests: Vec<VolumeRequest> = Vec::new();
    for volume in volumes {
        let (name, size) = match volume.split_once('=') {
            Some((name, size)) => (name.trim(), Some(size.trim().to_string())),
            None => (volume.trim(), None),
        };
        if name.is_empty() {
            return Err(usage(format!("--volume {volume:?}: the volume name is empty")));
        }
        if requests.iter().any(|r| r.name.as_deref() == Some(name)) {
            return Err(usage(format!("--volume {name:?} is given more than once")));
        }
        requests.push(VolumeRequest {
            name: Some(name.to_string()),
            size,
            storage_class: None,
            attributes_class: None,
        });
    }

    Ok(requests)
}

/// `--size`: the only volume's (none named), one for every volume without `=SIZE`, or one each in
/// order.
fn pair_sizes(
    requests: &mut Vec<VolumeRequest>,
    sizes: &[String],
    any_class: bool,
) -> Result<(), RequestError> {
    if requests.is_empty() {
        if sizes.len() > 1 {
            return Err(usage(
                "several --size values need a --volume for each".to_string(),
            ));
        }
        if sizes.is_empty() && !any_class {
            return Err(usage(
                "say what to change: --volume NAME=SIZE, or --volume NAME --size SIZE".to_string(),
            ));
        }
        requests.push(VolumeRequest {
            name: None,
            size: sizes.first().cloned(),
            storage_class: None,
            attributes_class: None,
        });
    } else {
        let without_size: Vec<usize> = (0..requests.len())
            .filter(|&i| requests[i].size.is_none())
            .collect();
        match sizes.len() {
            0 => {}
            1 => {
                if without_size.is_empty() {
                    return Err(usage(
                        "--size is given but every --volume already has =SIZE".to_string(),
                    ));
                }
                for &i in &without_size {
                    requests[i].size = Some(sizes[0].clone());
                }
            }
            n if n == without_size.len() => {
                for (&i, size) in without_size.iter().zip(sizes) {
                    requests[i].size = Some(size.clone());
                }
            }
            n => {
                return Err(usage(format!(
                    "{n} --size values for {} --volume(s) without =SIZE: give one size for all, \
                     or one per volume in order",
                    without_size.len()
                )));
            }
        }
    }

    Ok(())
}

/// A class flag (`--storage-class`, `--attributes-class`): `NAME=CLASS`, one for all, or one each
/// in order.
fn pair_classes(
    requests: &mut [VolumeRequest],
    classes: &[String],
    flag: ClassFlag,
) -> Result<(), RequestError> {
    let (named, bare): (Vec<&String>, Vec<&String>) = classes.iter().partition(|c| c.contains('='));
    for class in named {
        let (name, class) = class.split_once('=').unwrap_or_default();
        let Some(request) = requests
            .iter_mut()
            .find(|r| r.name.as_deref() == Some(name.trim()))
        else {
            return Err(usage(format!(
                "{} {name}={class}: {name:?} is not one of the --volume names",
                flag.flag
            )));
        };
        let field = (flag.field)(request);
        if field.is_some() {
            return Err(usage(format!("two {} for volume {name:?}", flag.what)));
        }
        *field = Some(class.trim().to_string());
    }
    let unnamed: Vec<usize> = (0..requests.len())
        .filter(|&i| (flag.field)(&mut requests[i]).is_none())
        .collect();
    match bare.len() {
        0 => {}
        1 => {
            for &i in &unnamed {
                *(flag.field)(&mut requests[i]) = Some(bare[0].trim().to_string());
            }
        }
        n if n == requests.len() && unnamed.len() == n => {
            for (&i, class) in unnamed.iter().zip(bare) {
                *(flag.field)(&mut requests[i]) = Some(class.trim().to_string());
            }
        }
        n => {
            return Err(usage(format!(
                "{n} {} values for {} --volume(s): give one class for all, one per \
                 volume in order, or NAME=CLASS",
                flag.flag,
                requests.len()
            )));
        }
    }

    Ok(())
}

/// Every request has a size that parses or a class, and no class is empty.
fn check_requests(requests: &[VolumeRequest]) -> Result<(), RequestError> {
    for request in requests {
        let label = request.name.clone().unwrap_or_else(|| "(the only volume)".into());
        match &request.size {
            Some(size) => {
                parse_bytes(size).map_err(|e| RequestError::InvalidSize {
                    volume: label.clone(),
                    reason: e.to_string(),
                })?;
            }
            None if request.storage_class.is_none() && request.attributes_class.is_none() => {
                return Err(usage(format!(
                    "no size for volume {label:?}: use --volume {label}=20Gi or --size 20Gi"
                )));
            }
            None => {}
        }
        if request.storage_class.as_deref() == Some("") {
            return Err(usage(format!("empty --storage-class for volume {label:?}")));
        }
        if request.attributes_class.as_deref() == Some("") {
            return Err(usage(format!("empty --attributes-class for volume {label:?}")));
        }
    }
    Ok(())
}

/// Checks the requests against the StatefulSet's templates and fills in what defaults from them.
pub fn resolve(
    stateful_set: &str,
    requests: &[VolumeRequest],
    templates: &[Template],
) -> Result<Vec<VolumeChange>, RequestError> {
    let available: Vec<String> = templates.iter().map(|t| t.name.clone()).collect();
    let mut changes = Vec::new();
    for request in requests {
        let template =
            match &request.name {
                Some(name) => templates.iter().find(|t| &t.name == name).ok_or_else(|| {
                    RequestError::TemplateNotFound {
                        stateful_set: stateful_set.to_string(),
                        name: name.clone(),
                        available: available.clone(),
                    }
                })?,
                None => match templates {
                    [only] => only,
                    _ => {
                        return Err(RequestError::Usage(format!(
                            "StatefulSet {stateful_set:?} has {} volume claim templates ({}); name one \
                         with --volume",
                            templates.len(),
                            available_list(&available)
                        )));
                    }
                },
            };
        let size = match (&request.size, &template.size) {
            (Some(size), _) => size.clone(),
            (None, Some(current)) => current.clone(),
            (None, None) => {
                return Err(RequestError::Usage(format!(
                    "volume {:?} has no size in its template; give one with --size",
                    template.name
                )));
            }
        };
        changes.push(VolumeChange {
            name: template.name.clone(),
            size,
            storage_class_name: request.storage_class.clone(),
            volume_attributes_class_name: request.attributes_class.clone(),
        });
    }
    Ok(changes)
}

/// Checks `--bandwidth-limit`: a positive quantity of bytes per second.
pub fn check_bandwidth_limit(limit: Option<&str>) -> Result<(), RequestError> {
    match limit.map(parse_bytes) {
        None | Some(Ok(1..)) => Ok(()),
        Some(Ok(0)) => Err(RequestError::Usage(
            "--bandwidth-limit must be more than 0 bytes per second".into(),
        )),
        Some(Err(e)) => Err(RequestError::Usage(format!("--bandwidth-limit: {e}"))),
    }
}

/// The spec for the request (volumes already resolved).
pub fn build_spec(args: &RequestArgs, volumes: Vec<VolumeChange>, dry_run: bool) -> VolumeResizeSpec {
    VolumeResizeSpec {
        stateful_set_name: args.stateful_set.clone(),
        volumes,
        strategy: match args.strategy {
            None | Some(StrategyArg::Auto) => Strategy::Auto,
            Some(StrategyArg::Inplace) => Strategy::InPlace,
            Some(StrategyArg::Copy) => Strategy::Copy,
        },
        mode: match args.mode {
            None | Some(ModeArg::Rolling) => Mode::Rolling,
            Some(ModeArg::Offline) => Mode::Offline,
        },
        warm_copy: !args.no_warm_copy,
        warm_copy_method: if args.clone {
            ferry_api::WarmCopyMethod::Clone
        } else {
            ferry_api::WarmCopyMethod::Mover
        },
        verify: match args.verify {
            None | Some(VerifyArg::Checksum) => Verify::Checksum,
            Some(VerifyArg::Metadata) => Verify::Metadata,
            Some(VerifyArg::None) => Verify::None,
        },
        retain_old_volumes: args.retain_old_volumes.clone(),
        dry_run,
        force: args.force,
        mover: args.bandwidth_limit.clone().map(|limit| MoverSettings {
            bandwidth_limit: Some(limit),
            ..MoverSettings::default()
        }),
        placement: None,
        timeout_seconds: None,
        owner_policy: if args.ignore_owner {
            ferry_api::OwnerPolicy::Ignore
        } else {
            ferry_api::OwnerPolicy::Through
        },
    }
}

/// `KIND/NAME` of the resource that owns the StatefulSet, when the argument names one
/// (`prometheus/k8s`); `statefulset/NAME` (and `sts/`, `statefulsets/`, `statefulset.apps/`) and a
/// bare name are the StatefulSet itself.
pub fn owner_reference(argument: &str) -> Option<(&str, &str)> {
    let (kind, name) = argument.split_once('/')?;
    let itself = [
        "statefulset",
        "statefulsets",
        "sts",
        "statefulset.apps",
        "statefulsets.apps",
    ];
    (!itself.contains(&kind.to_ascii_lowercase().as_str())).then_some((kind, name))
}

/// Whether an owner reference's `kind` (`Prometheus`) and `apiVersion` is what a user typed
/// (`prometheus`, `prometheuses`, `Prometheus`, `prometheus.monitoring.coreos.com`), as kubectl
/// takes resource names.
pub fn kind_matches(typed: &str, kind: &str, api_version: &str) -> bool {
    let typed = typed.to_ascii_lowercase();
    let kind = kind.to_ascii_lowercase();
    let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
    let (typed_kind, typed_group) = typed.split_once('.').unwrap_or((typed.as_str(), ""));
    let plural = |k: &str| {
        [
            format!("{k}s"),
            format!("{k}es"),
            k.strip_suffix('y').map(|s| format!("{s}ies")).unwrap_or_default(),
        ]
    };
    let kind_ok = typed_kind == kind || plural(&kind).iter().any(|p| p == typed_kind);
    kind_ok && (typed_group.is_empty() || typed_group == group)
}

/// `generateName` prefix for a VolumeResize of this StatefulSet (names stay within 253 chars).
pub fn generate_name(stateful_set: &str, plan: bool) -> String {
    // The API server appends 5 characters; the whole name must fit a label value (63).
    let stem: String = stateful_set.chars().take(50).collect();
    if plan {
        format!("{stem}-plan-")
    } else {
        format!("{stem}-resize-")
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn an_owner_is_named_as_kubectl_names_resources() {
        assert_eq!(owner_reference("prometheus/k8s"), Some(("prometheus", "k8s")));
        assert_eq!(owner_reference("sts/db"), None);
        assert_eq!(owner_reference("StatefulSet/db"), None);
        assert_eq!(owner_reference("db"), None);
        let v1 = "monitoring.coreos.com/v1";
        for typed in [
            "prometheus",
            "Prometheus",
            "prometheuses",
            "prometheus.monitoring.coreos.com",
        ] {
            assert!(kind_matches(typed, "Prometheus", v1), "{typed}");
        }
        assert!(!kind_matches("prometheus.example.com", "Prometheus", v1));
        assert!(!kind_matches("alertmanager", "Prometheus", v1));
        assert!(kind_matches(
            "rabbitmqclusters",
            "RabbitmqCluster",
            "rabbitmq.com/v1beta1"
        ));
        assert!(kind_matches(
            "elasticsearches",
            "Elasticsearch",
            "elasticsearch.k8s.elastic.co/v1"
        ));
        assert!(kind_matches("policies", "Policy", "example.com/v1"));
    }
    use super::*;

    fn s(values: &[&str]) -> Vec<String> {
        values.iter().map(|v| v.to_string()).collect()
    }

    fn req(name: &str, size: Option<&str>, class: Option<&str>) -> VolumeRequest {
        VolumeRequest {
            name: Some(name.into()),
            size: size.map(Into::into),
            storage_class: class.map(Into::into),
            attributes_class: None,
        }
    }

    /// `--storage-class` values only.
    fn storage(classes: &[String]) -> ClassFlags<'_> {
        ClassFlags {
            storage: classes,
            attributes: &[],
        }
    }

    #[test]
    fn inline_sizes() {
        let got = pair_volumes(&s(&["data=20Gi", "logs=1Gi"]), &[], storage(&[])).unwrap();
        assert_eq!(
            got,
            [req("data", Some("20Gi"), None), req("logs", Some("1Gi"), None)]
        );
    }

    #[test]
    fn one_size_applies_to_all_and_several_pair_in_order() {
        let got = pair_volumes(&s(&["data", "logs"]), &s(&["5Gi"]), storage(&[])).unwrap();
        assert_eq!(
            got,
            [req("data", Some("5Gi"), None), req("logs", Some("5Gi"), None)]
        );
        let got = pair_volumes(
            &s(&["data", "wal=3Gi", "logs"]),
            &s(&["5Gi", "1Gi"]),
            storage(&[]),
        )
        .unwrap();
        assert_eq!(
            got,
            [
                req("data", Some("5Gi"), None),
                req("wal", Some("3Gi"), None),
                req("logs", Some("1Gi"), None)
            ]
        );
    }

    #[test]
    fn mismatched_size_counts_are_usage_errors() {
        let error = pair_volumes(&s(&["a", "b", "c"]), &s(&["1Gi", "2Gi"]), storage(&[])).unwrap_err();
        assert!(matches!(error, RequestError::Usage(m) if m.contains("one per volume")));
        let error = pair_volumes(&s(&["a=1Gi"]), &s(&["2Gi"]), storage(&[])).unwrap_err();
        assert!(matches!(error, RequestError::Usage(_)));
    }

    #[test]
    fn storage_classes_named_bare_and_in_order() {
        let got = pair_volumes(&s(&["a=1Gi", "b=2Gi"]), &[], storage(&s(&["b=fast", "slow"]))).unwrap();
        assert_eq!(
            got,
            [
                req("a", Some("1Gi"), Some("slow")),
                req("b", Some("2Gi"), Some("fast"))
            ]
        );
        let got = pair_volumes(&s(&["a=1Gi", "b=2Gi"]), &[], storage(&s(&["x", "y"]))).unwrap();
        assert_eq!(
            got,
            [req("a", Some("1Gi"), Some("x")), req("b", Some("2Gi"), Some("y"))]
        );
        let error = pair_volumes(&s(&["a=1Gi"]), &[], storage(&s(&["zz=fast"]))).unwrap_err();
        assert!(matches!(error, RequestError::Usage(m) if m.contains("not one of the --volume")));
    }

    #[test]
    fn class_without_size_is_allowed_size_without_class_is_not() {
        let got = pair_volumes(&s(&["data"]), &[], storage(&s(&["fast"]))).unwrap();
        assert_eq!(got, [req("data", None, Some("fast"))]);
        let error = pair_volumes(&s(&["data"]), &[], storage(&[])).unwrap_err();
        assert!(matches!(error, RequestError::Usage(m) if m.contains("no size for volume \"data\"")));
    }

    /// `--attributes-class` alone is a change (the volume keeps its size), named or for all.
    #[test]
    fn attributes_classes_without_size_are_a_change() {
        let attributes = s(&["gold"]);
        let flags = ClassFlags {
            storage: &[],
            attributes: &attributes,
        };
        let got = pair_volumes(&[], &[], flags).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].attributes_class.as_deref(), Some("gold"));
        assert_eq!(got[0].size, None);
        let named = s(&["b=silver"]);
        let flags = ClassFlags {
            storage: &[],
            attributes: &named,
        };
        let error = pair_volumes(&s(&["a", "b"]), &[], flags).unwrap_err();
        assert!(matches!(error, RequestError::Usage(m) if m.contains("no size for volume \"a\"")));
        let empty = s(&[""]);
        let flags = ClassFlags {
            storage: &[],
            attributes: &empty,
        };
        let error = pair_volumes(&s(&["a"]), &[], flags).unwrap_err();
        assert!(matches!(error, RequestError::Usage(m) if m.contains("empty --attributes-class")));
    }

    #[test]
    fn invalid_sizes_are_caught_locally() {
        for bad in ["20GB", "-1Gi", "0", "lots"] {
            let error = pair_volumes(&s(&[&format!("data={bad}")]), &[], storage(&[])).unwrap_err();
            assert!(
                matches!(error, RequestError::InvalidSize { ref volume, .. } if volume == "data"),
                "{bad}: {error:?}"
            );
        }
        let error = pair_volumes(&s(&["data"]), &s(&["1.5Zi"]), storage(&[])).unwrap_err();
        assert!(error.to_string().contains("not a Kubernetes quantity"), "{error}");
    }

    #[test]
    fn duplicates_and_empty_names_are_refused() {
        assert!(pair_volumes(&s(&["a=1Gi", "a=2Gi"]), &[], storage(&[])).is_err());
        assert!(pair_volumes(&s(&["=1Gi"]), &[], storage(&[])).is_err());
        assert!(pair_volumes(&[], &[], storage(&[])).is_err());
    }

    fn templates() -> Vec<Template> {
        vec![
            Template {
                name: "data".into(),
                size: Some("1Gi".into()),
                storage_class: Some("std".into()),
            },
            Template {
                name: "logs".into(),
                size: Some("512Mi".into()),
                storage_class: None,
            },
        ]
    }

    #[test]
    fn unknown_template_lists_the_available_ones() {
        let requests = pair_volumes(&s(&["wal=1Gi"]), &[], storage(&[])).unwrap();
        let error = resolve("db", &requests, &templates()).unwrap_err();
        assert_eq!(
            error.to_string(),
            "StatefulSet \"db\" has no volume claim template \"wal\" (it has: data, logs)"
        );
    }

    #[test]
    fn no_volume_flag_means_the_only_template() {
        let requests = pair_volumes(&[], &s(&["9Gi"]), storage(&[])).unwrap();
        let only = &templates()[..1];
        let changes = resolve("db", &requests, only).unwrap();
        assert_eq!(
            changes,
            [VolumeChange {
                name: "data".into(),
                size: "9Gi".into(),
                storage_class_name: None,
                volume_attributes_class_name: None,
            }]
        );
        let error = resolve("db", &requests, &templates()).unwrap_err();
        assert!(error.to_string().contains("name one with --volume"), "{error}");
    }

    #[test]
    fn class_only_keeps_the_current_size() {
        let requests = pair_volumes(&s(&["logs"]), &[], storage(&s(&["fast"]))).unwrap();
        let changes = resolve("db", &requests, &templates()).unwrap();
        assert_eq!(
            changes,
            [VolumeChange {
                name: "logs".into(),
                size: "512Mi".into(),
                storage_class_name: Some("fast".into()),
                volume_attributes_class_name: None,
            }]
        );
    }

    #[test]
    fn spec_maps_every_flag() {
        let args = RequestArgs {
            stateful_set: "db".into(),
            mode: Some(ModeArg::Offline),
            strategy: Some(StrategyArg::Copy),
            no_warm_copy: true,
            verify: Some(VerifyArg::Metadata),
            retain_old_volumes: Some("7d".into()),
            bandwidth_limit: Some("50Mi".into()),
            force: true,
            ignore_owner: true,
            ..Default::default()
        };
        let spec = build_spec(&args, vec![], true);
        assert_eq!(spec.owner_policy, ferry_api::OwnerPolicy::Ignore);
        assert_eq!(
            spec.mover.and_then(|m| m.bandwidth_limit).as_deref(),
            Some("50Mi")
        );
        assert_eq!(spec.stateful_set_name, "db");
        assert_eq!(
            (spec.mode, spec.strategy, spec.verify),
            (Mode::Offline, Strategy::Copy, Verify::Metadata)
        );
        assert!(!spec.warm_copy && spec.dry_run && spec.force);
        assert_eq!(spec.retain_old_volumes.as_deref(), Some("7d"));
        let defaults = build_spec(&RequestArgs::default(), vec![], false);
        assert_eq!(
            (defaults.mode, defaults.strategy, defaults.verify),
            (Mode::Rolling, Strategy::Auto, Verify::Checksum)
        );
        assert!(defaults.warm_copy);
    }

    #[test]
    fn generated_names() {
        assert_eq!(generate_name("db", false), "db-resize-");
        assert_eq!(generate_name("db", true), "db-plan-");
    }

    #[test]
    fn generated_names_fit_a_label_value() {
        let long = "s".repeat(253);
        for plan in [false, true] {
            assert!(generate_name(&long, plan).len() + 5 <= 63);
        }
        assert_eq!(generate_name("db", false), "db-resize-");
    }

    #[test]
    fn bandwidth_limit_must_be_a_positive_quantity() {
        assert!(check_bandwidth_limit(None).is_ok());
        assert!(check_bandwidth_limit(Some("50Mi")).is_ok());
        for bad in ["0", "fast", "50MB/s"] {
            let error = check_bandwidth_limit(Some(bad)).unwrap_err().to_string();
            assert!(error.contains("--bandwidth-limit"), "{bad}: {error}");
        }
    }
}
