//! `kubectl ferry version`: this plugin's version and the Ferry operators the cluster runs (pods
//! labelled `app.kubernetes.io/name=ferry`, as the chart and the manifests label them), or that
//! none runs: a VolumeResize made then would wait for one.

use serde::Serialize;

/// The label the chart and the manifests give the operator's pods.
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

/// What was seen of the operators.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operators {
    Found(Vec<OperatorPod>),
    /// The pods could not be listed (forbidden, unreachable): why.
    Unknown(String),
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Report<'a> {
    client_version: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    operators: Option<&'a [OperatorPod]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    operators_unknown: Option<&'a str>,
}

/// The version report as data (`-o json|yaml`).
pub fn report(client: &str, operators: Option<&Operators>) -> serde_json::Value {
    let report = Report {
        client_version: client,
        operators: match operators {
            Some(Operators::Found(pods)) => Some(pods),
            _ => None,
        },
        operators_unknown: match operators {
            Some(Operators::Unknown(why)) => Some(why),
            _ => None,
        },
    };
    serde_json::to_value(&report).unwrap_or_default()
}

/// The version report as text: the client, then each operator pod, or why there is none to show.
pub fn text(client: &str, operators: Option<&Operators>) -> String {
    let mut out = format!("Client Version: {client}\n");
    match operators {
        None => {}
        Some(Operators::Found(pods)) if pods.is_empty() => out.push_str(
            "Operator: none running (no pod labelled app.kubernetes.io/name=ferry in any namespace you can list); \
             a VolumeResize waits until one runs\n",
        ),
        Some(Operators::Found(pods)) => {
            for pod in pods {
                out.push_str(&format!(
                    "Operator Version: {} ({}/{}, {})\n",
                    pod.version.as_deref().unwrap_or("unknown"),
                    pod.namespace,
                    pod.name,
                    if pod.ready { "Ready" } else { "not Ready" }
                ));
            }
        }
        Some(Operators::Unknown(why)) => out.push_str(&format!("Operator: cannot tell ({why})\n")),
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
        let text = text("0.1.0", Some(&Operators::Found(vec![pod(true), pod(false)])));
        assert_eq!(
            text,
            "Client Version: 0.1.0\nOperator Version: 0.1.0 (ferry-system/ferry-0, Ready)\n\
             Operator Version: 0.1.0 (ferry-system/ferry-0, not Ready)\n"
        );
    }

    #[test]
    fn no_operator_and_an_unknown_one_are_said() {
        assert!(text("0.1.0", Some(&Operators::Found(vec![]))).contains("Operator: none running"));
        assert!(
            text("0.1.0", Some(&Operators::Unknown("forbidden".into()))).contains("cannot tell (forbidden)")
        );
        assert_eq!(text("0.1.0", None), "Client Version: 0.1.0\n");
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
        let found = report("0.1.0", Some(&Operators::Found(vec![pod(true)])));
        assert_eq!(found["clientVersion"], "0.1.0");
        assert_eq!(found["operators"][0]["version"], "0.1.0");
        let unknown = report("0.1.0", Some(&Operators::Unknown("forbidden".into())));
        assert_eq!(unknown["operatorsUnknown"], "forbidden");
        assert!(unknown.get("operators").is_none());
    }
}
