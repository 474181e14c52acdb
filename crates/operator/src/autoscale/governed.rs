//! Which claim templates of a StatefulSet autoscalers govern (the webhook keeps a shrink of those
//! aside: an autoscaler would only grow them back).

use ferry_api::VolumeAutoscaler;
use ferry_engine::trigger::template_edit::Governed;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::{Api, ResourceExt};
use std::time::Duration;

/// The templates of StatefulSet `name` (with `labels`) that the autoscalers given govern:
/// template → VolumeAutoscaler.
pub fn governed_templates(
    autoscalers: &[VolumeAutoscaler],
    name: &str,
    labels: &std::collections::BTreeMap<String, String>,
    owners: &[OwnerReference],
) -> std::collections::BTreeMap<String, String> {
    use kube::core::{Selector, SelectorExt};
    autoscalers
        .iter()
        .filter(
            |vas| match (&vas.spec.stateful_set_name, &vas.spec.selector, &vas.spec.owner) {
                (Some(named), _, _) => named == name,
                (None, Some(selector), _) => {
                    Selector::try_from(selector.clone()).is_ok_and(|selector| selector.matches(labels))
                }
                (None, None, Some(owner)) => super::observe::controlled_by(owners, &owner.kind, &owner.name),
                (None, None, None) => false,
            },
        )
        .flat_map(|vas| {
            vas.spec
                .volumes
                .iter()
                .map(|volume| (volume.name.clone(), vas.name_any()))
        })
        .collect()
}

/// The templates of a StatefulSet autoscalers govern, read from the API server; unknown (and a
/// warning in the log) if they cannot be read within 2 s: the webhook then keeps every shrink aside.
pub async fn governed_templates_of(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    labels: &std::collections::BTreeMap<String, String>,
    owners: &[OwnerReference],
) -> Governed {
    let api = Api::<VolumeAutoscaler>::namespaced(client.clone(), namespace);
    match tokio::time::timeout(Duration::from_secs(2), api.list(&Default::default())).await {
        Ok(Ok(list)) => Governed::Known(governed_templates(&list.items, name, labels, owners)),
        Ok(Err(error)) => {
            tracing::warn!(%error, "cannot read VolumeAutoscalers for a template edit; shrinks kept aside");
            Governed::Unknown(error.to_string())
        }
        Err(_) => {
            tracing::warn!("VolumeAutoscalers not read within 2s for a template edit; shrinks kept aside");
            Governed::Unknown("not read within 2 s".to_string())
        }
    }
}
