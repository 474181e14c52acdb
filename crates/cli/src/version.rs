//! `kubectl ferry version`: this plugin's version and the Ferry operators the cluster runs, or
//! that none runs (a VolumeResize made then would wait for one). An operator is known by what it
//! does, wherever it runs: its pods (labelled `app.kubernetes.io/name=ferry`, as the chart and the
//! manifests label them) and its leader Lease, which it labels the same and renews while it acts
//! (an operator run outside the cluster, as the demo runs it, has only the Lease).

use ferry_engine::webhook_probe::Reach;
use serde::Serialize;

/// The label the chart and the manifests give the operator's pods, and the operator its Lease.
pub const OPERATOR_SELECTOR: &str = "app.kubernetes.io/name=ferry";

/// One operator pod as seen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OperatorPod {
    pub namespace: String,
    pub name: String,
    /// `app.kubernetes.io/version`, else the tag of its image.
    pub version: Option<String>,
    pub ready: bool,
}

/// One operator's leader Lease as seen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OperatorLease {
    pub namespace: String,
    pub name: String,
    /// Who holds it (the operator's identity: its pod's name, or its host's).
    pub holder: Option<String>,
    /// Seconds since its holder last renewed it, by this machine's clock.
    pub renewed_seconds_ago: Option<i64>,
    /// How long it holds without a renewal.
    pub lease_seconds: Option<i32>,
}

impl OperatorLease {
    /// Held and renewed within twice its duration (a margin for the clocks of two machines): its
    /// holder is acting.
    pub fn held(&self) -> bool {
        let limit = i64::from(self.lease_seconds.unwrap_or(15)) * 2;
        self.holder.is_some() && self.renewed_seconds_ago.is_some_and(|ago| ago <= limit)
    }
}

/// What was seen of the operators.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operators {
    Found {
        pods: Vec<OperatorPod>,
        leases: Vec<OperatorLease>,
    },
    /// Neither pods nor Leases could be listed (forbidden, unreachable): why.
    Unknown(String),
}

impl Operators {
    /// Seen, and none runs: no operator pod and no Lease held.
    pub fn none_running(&self) -> bool {
        match self {
            Operators::Found { pods, leases } => pods.is_empty() && !leases.iter().any(OperatorLease::held),
            Operators::Unknown(_) => false,
        }
    }
}

/// Whether the API server called Ferry's validating webhook for a dry run in a namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookCheck {
    pub namespace: String,
    pub reach: Reach,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WebhookReport<'a> {
    namespace: &'a str,
    /// `true`: called and answered; `false`: not called; absent: the dry run told nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    called: Option<bool>,
    message: String,
}

impl WebhookCheck {
    fn report(&self) -> WebhookReport<'_> {
        WebhookReport {
            namespace: &self.namespace,
            called: match self.reach {
                Reach::Answered(_) => Some(true),
                Reach::NotCalled => Some(false),
                Reach::Unknown(_) => None,
            },
            message: self.line(),
        }
    }

    fn line(&self) -> String {
        let namespace = &self.namespace;
        match &self.reach {
            Reach::Answered(_) => format!(
                "called in namespace {namespace} (a dry-run VolumeResize for a missing StatefulSet was refused by Ferry's validating webhook)"
            ),
            Reach::NotCalled => format!(
                "NOT called in namespace {namespace}: the API server accepted a dry-run VolumeResize for a missing StatefulSet. Ferry's webhooks are not registered for this namespace, or the API server cannot reach the operator's pods (they fail open: docs/install.md, \"Webhooks on managed clusters\")"
            ),
            Reach::Unknown(why) => format!("cannot tell in namespace {namespace} ({why})"),
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Report<'a> {
    client_version: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    operators: Option<&'a [OperatorPod]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    operator_leases: Option<&'a [OperatorLease]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    operators_unknown: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    webhooks: Option<WebhookReport<'a>>,
}

/// The version report as data (`-o json|yaml`).
pub fn report(
    client: &str,
    operators: Option<&Operators>,
    webhooks: Option<&WebhookCheck>,
) -> serde_json::Value {
    let (pods, leases) = match operators {
        Some(Operators::Found { pods, leases }) => (Some(pods.as_slice()), Some(leases.as_slice())),
        _ => (None, None),
    };
    let report = Report {
        client_version: client,
        operators: pods,
        operator_leases: leases.filter(|leases| !leases.is_empty()),
        operators_unknown: match operators {
            Some(Operators::Unknown(why)) => Some(why),
            _ => None,
        },
        webhooks: webhooks.map(WebhookCheck::report),
    };
    serde_json::to_value(&report).unwrap_or_default()
}

/// The version report as text: the client, then each operator pod and held Lease, or why there is
/// none to show, then whether the webhooks are called.
pub fn text(client: &str, operators: Option<&Operators>, webhooks: Option<&WebhookCheck>) -> String {
    let mut out = format!("Client Version: {client}\n");
    match operators {
        None => {}
        Some(seen) if seen.none_running() => out.push_str(
            "Operator: none running (no pod labelled app.kubernetes.io/name=ferry and no leader Lease \
             so labelled renewed lately, in any namespace you can list); a VolumeResize waits until one runs\n",
        ),
        Some(Operators::Found { pods, leases }) => {
            for pod in pods {
                out.push_str(&format!(
                    "Operator Version: {} ({}/{}, {})\n",
                    pod.version.as_deref().unwrap_or("unknown"),
                    pod.namespace,
                    pod.name,
                    if pod.ready { "Ready" } else { "not Ready" }
                ));
            }
            for lease in leases.iter().filter(|lease| lease.held()) {
                out.push_str(&format!(
                    "Operator Lease: {}/{} held by {}, renewed {}s ago\n",
                    lease.namespace,
                    lease.name,
                    lease.holder.as_deref().unwrap_or_default(),
                    lease.renewed_seconds_ago.unwrap_or_default()
                ));
            }
        }
        Some(Operators::Unknown(why)) => out.push_str(&format!("Operator: cannot tell ({why})\n")),
    }
    if let Some(check) = webhooks {
        out.push_str(&format!("Webhooks: {}\n", check.line()));
    }
    out
}

/// The version a pod shows: its `app.kubernetes.io/version` label, else its first image's tag.
pub fn pod_version(
    labels: Option<&std::collections::BTreeMap<String, String>>,
    image: Option<&str>,
) -> Option<String> {
    labels
        .and_then(|labels| labels.get("app.kubernetes.io/version").cloned())
        .or_else(|| {
            let image = image?;
            let name = image.rsplit('/').next()?;
            name.split_once(':').map(|(_, tag)| tag.to_string())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(ready: bool) -> OperatorPod {
        OperatorPod {
            namespace: "ferry-system".into(),
            name: "ferry-0".into(),
            version: Some("0.1.0".into()),
            ready,
        }
    }

    #[test]
    fn each_operator_pod_is_shown_with_its_version_and_readiness() {
        let seen = Operators::Found {
            pods: vec![pod(true), pod(false)],
            leases: vec![],
        };
        let text = text("0.1.0", Some(&seen), None);
        assert_eq!(
            text,
            "Client Version: 0.1.0\nOperator Version: 0.1.0 (ferry-system/ferry-0, Ready)\n\
             Operator Version: 0.1.0 (ferry-system/ferry-0, not Ready)\n"
        );
    }

    fn lease(renewed_seconds_ago: i64) -> OperatorLease {
        OperatorLease {
            namespace: "demo".into(),
            name: "ferry-leader".into(),
            holder: Some("laptop".into()),
            renewed_seconds_ago: Some(renewed_seconds_ago),
            lease_seconds: Some(15),
        }
    }

    #[test]
    fn an_operator_outside_the_cluster_is_known_by_the_lease_it_renews() {
        let renewing = Operators::Found {
            pods: vec![],
            leases: vec![lease(2)],
        };
        assert!(!renewing.none_running());
        assert_eq!(
            text("0.1.0", Some(&renewing), None),
            "Client Version: 0.1.0\nOperator Lease: demo/ferry-leader held by laptop, renewed 2s ago\n"
        );
        let stale = Operators::Found {
            pods: vec![],
            leases: vec![lease(31)],
        };
        assert!(stale.none_running(), "not renewed for twice its duration");
        let released = Operators::Found {
            pods: vec![],
            leases: vec![OperatorLease {
                holder: None,
                ..lease(1)
            }],
        };
        assert!(released.none_running());
        assert_eq!(
            report("0.1.0", Some(&renewing), None)["operatorLeases"][0]["holder"],
            "laptop"
        );
    }

    #[test]
    fn no_operator_and_an_unknown_one_are_said() {
        let none = Operators::Found {
            pods: vec![],
            leases: vec![],
        };
        assert!(text("0.1.0", Some(&none), None).contains("Operator: none running"));
        assert!(
            text("0.1.0", Some(&Operators::Unknown("forbidden".into())), None)
                .contains("cannot tell (forbidden)")
        );
        assert_eq!(text("0.1.0", None, None), "Client Version: 0.1.0\n");
    }

    #[test]
    fn the_version_is_the_label_else_the_image_tag() {
        let labels = [("app.kubernetes.io/version".to_string(), "0.2.0".to_string())].into();
        assert_eq!(
            pod_version(Some(&labels), Some("ferry:0.1.0")).as_deref(),
            Some("0.2.0")
        );
        assert_eq!(
            pod_version(None, Some("localhost:5000/ferry:0.1.0")).as_deref(),
            Some("0.1.0")
        );
        assert_eq!(pod_version(None, Some("localhost:5000/ferry")), None);
    }

    #[test]
    fn the_report_as_data_names_the_operators_or_why_not() {
        let seen = Operators::Found {
            pods: vec![pod(true)],
            leases: vec![],
        };
        let found = report("0.1.0", Some(&seen), None);
        assert_eq!(found["clientVersion"], "0.1.0");
        assert_eq!(found["operators"][0]["version"], "0.1.0");
        let unknown = report("0.1.0", Some(&Operators::Unknown("forbidden".into())), None);
        assert_eq!(unknown["operatorsUnknown"], "forbidden");
        assert!(unknown.get("operators").is_none());
    }

    #[test]
    fn the_webhooks_are_said_called_not_called_or_unknown_in_text_and_data() {
        let check = |reach: Reach| WebhookCheck {
            namespace: "team-a".into(),
            reach,
        };
        let called = check(Reach::Answered("denied".into()));
        assert!(text("0.1.0", None, Some(&called)).contains("Webhooks: called in namespace team-a"));
        assert_eq!(report("0.1.0", None, Some(&called))["webhooks"]["called"], true);
        let not_called = check(Reach::NotCalled);
        assert!(text("0.1.0", None, Some(&not_called)).contains("Webhooks: NOT called in namespace team-a"));
        assert_eq!(
            report("0.1.0", None, Some(&not_called))["webhooks"]["called"],
            false
        );
        let unknown = report("0.1.0", None, Some(&check(Reach::Unknown("forbidden".into()))));
        assert!(unknown["webhooks"].get("called").is_none());
        assert!(
            unknown["webhooks"]["message"]
                .as_str()
                .unwrap()
                .contains("forbidden")
        );
    }
}
