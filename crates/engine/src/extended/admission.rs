//! An ExtendedStatefulSet's StatefulSet template checked at admission: its CRD keeps the template
//! as written (`x-kubernetes-preserve-unknown-fields`), so a misspelt field or a wrong value would
//! pass `kubectl apply` (and a GitOps sync) and fail only when Ferry makes the StatefulSet. The
//! webhook sends the API server a server-side dry run, with strict field validation, of the
//! StatefulSet the template describes, *as written* (the raw JSON: a typed decode would drop the
//! very fields that are misspelt), and refuses the ExtendedStatefulSet with the API server's words.

use serde_json::{Value, json};

/// The name prefix of the trial StatefulSet (`generateName`: it never meets a real one).
pub const TRIAL_PREFIX: &str = "ferry-admission-check-";

/// The StatefulSet to dry-run for an ExtendedStatefulSet as sent (`object`: the raw JSON), in
/// `namespace`; `None` when it has no `spec.template` (the CRD's schema refuses that).
pub fn trial_stateful_set(object: &Value, namespace: &str) -> Option<Value> {
    let template = object.pointer("/spec/template")?;
    let mut metadata = template.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let metadata_map = metadata.as_object_mut()?;
    metadata_map.remove("name");
    metadata_map.insert("generateName".into(), json!(TRIAL_PREFIX));
    metadata_map.insert("namespace".into(), json!(namespace));
    let mut spec = template.get("spec").cloned().unwrap_or_else(|| json!({}));
    // Replicas are the ExtendedStatefulSet's, spread over zones; none is started by a dry run.
    if let Some(spec) = spec.as_object_mut() {
        spec.insert("replicas".into(), json!(0));
    }
    Some(json!({
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": metadata,
        "spec": spec,
    }))
}

/// What the dry run's answer means for the ExtendedStatefulSet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplateCheck {
    /// The API server would make that StatefulSet.
    Valid,
    /// It would not: refuse, with this message.
    Invalid(String),
    /// The dry run told nothing (no permission, the API server busy): let it pass, with this
    /// warning (a check must never hold a write on a guess).
    Unchecked(String),
}

/// Reads the dry run's answer: `Ok` accepted; `Err((code, message))` the API server's refusal
/// (`code` 0 when it did not answer).
pub fn template_check(answer: Result<(), (u16, String)>) -> TemplateCheck {
    match answer {
        Ok(()) => TemplateCheck::Valid,
        // 400: not decodable (a misspelt field under strict validation, a wrong type);
        // 422: decoded but invalid (a missing container image, a selector that does not match).
        Err((400 | 422, message)) => TemplateCheck::Invalid(format!(
            "spec.template would not make a valid StatefulSet (a server-side dry run of it, with strict field validation, was refused): {message}"
        )),
        Err((_, message)) => TemplateCheck::Unchecked(format!(
            "Ferry could not check spec.template by a dry run of its StatefulSet: {message}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trial_is_the_template_as_written_under_a_generated_name_with_no_replicas() {
        let ests = json!({
            "metadata": {"name": "db"},
            "spec": {"replicas": 3, "template": {
                "metadata": {"name": "ignored", "labels": {"app": "db"}},
                "spec": {"serviceName": "db", "replicas": 7,
                         "selector": {"matchLabels": {"app": "db"}},
                         "template": {"spec": {"containers": [{"name": "c", "imagee": "x"}]}}},
            }},
        });
        let trial = trial_stateful_set(&ests, "team-a").unwrap();
        assert_eq!(trial["metadata"]["generateName"], TRIAL_PREFIX);
        assert_eq!(trial["metadata"]["namespace"], "team-a");
        assert!(trial["metadata"].get("name").is_none());
        assert_eq!(trial["metadata"]["labels"]["app"], "db");
        assert_eq!(trial["spec"]["replicas"], 0);
        // The misspelt field stays, for the API server to refuse.
        assert_eq!(trial["spec"]["template"]["spec"]["containers"][0]["imagee"], "x");
        assert_eq!(trial_stateful_set(&json!({"spec": {}}), "ns"), None);
    }

    #[test]
    fn only_the_api_servers_refusal_of_the_object_refuses_it() {
        assert_eq!(template_check(Ok(())), TemplateCheck::Valid);
        assert!(matches!(
            template_check(Err((400, "strict decoding error: unknown field".into()))),
            TemplateCheck::Invalid(message) if message.contains("unknown field")
        ));
        assert!(matches!(
            template_check(Err((
                422,
                "spec.template.spec.containers[0].image: Required value".into()
            ))),
            TemplateCheck::Invalid(_)
        ));
        for code in [0, 403, 429, 500, 503] {
            assert!(matches!(
                template_check(Err((code, "busy".into()))),
                TemplateCheck::Unchecked(_)
            ));
        }
    }
}
