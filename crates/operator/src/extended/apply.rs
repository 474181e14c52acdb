//! The ExtendedStatefulSet plan's actions, carried out in order, one `match`. What the API server
//! refuses (forbidden, invalid) is a problem for the status, not an error: the rest goes on.

use crate::context::Context;
use crate::resize_create::{Created, Origin, create_resize};
use crate::{Error, writes};
use ferry_api::ExtendedStatefulSet;
use ferry_api::names::FIELD_MANAGER;
use ferry_engine::extended::action::ExtendedAction;
use ferry_engine::extended::desired::LABEL_EXTENDED;
use ferry_engine::extended::versions::LABEL_VERSION;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Service;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, ResourceExt};

/// What carrying the actions out said: refusals (for the status) and Events (warning, reason,
/// message).
#[derive(Default)]
pub struct Applied {
    pub refused: Vec<String>,
    pub notices: Vec<(bool, &'static str, String)>,
}

pub async fn apply(
    ctx: &Context,
    ests: &ExtendedStatefulSet,
    namespace: &str,
    actions: &[ExtendedAction],
) -> Result<Applied, Error> {
    let sets = Api::<StatefulSet>::namespaced(ctx.client.clone(), namespace);
    let mut applied = Applied::default();
    for action in actions {
        let (what, result) = match action {
            ExtendedAction::CreateVolumeResize {
                stateful_set,
                name,
                spec,
            } => {
                let ests_name = ests.name_any();
                let origin = Origin {
                    trigger: "extended-stateful-set",
                    stateful_set,
                    asked_by: Some((LABEL_EXTENDED, &ests_name)),
                    annotations: Default::default(),
                };
                let created =
                    create_resize(&ctx.client, namespace, name, spec.as_ref().clone(), &origin).await?;
                if created == Created::New {
                    applied.notices.push((
                        false,
                        "VolumeResizeStarted",
                        format!("volume claim templates of {stateful_set} change: VolumeResize {name}"),
                    ));
                }
                continue;
            }
            ExtendedAction::CreateHookJob { job } => {
                let jobs = Api::<Job>::namespaced(ctx.client.clone(), namespace);
                let result = match jobs.create(&writes::create(), job).await {
                    Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
                    other => other.map(drop),
                };
                (job.name_any(), result)
            }
            ExtendedAction::ApplyStatefulSet { object } => {
                let mut body = serde_json::to_value(object).map_err(|source| Error::Serialize {
                    what: "StatefulSet",
                    source,
                })?;
                body["apiVersion"] = "apps/v1".into();
                body["kind"] = "StatefulSet".into();
                let params = PatchParams::apply(FIELD_MANAGER).force();
                let result = sets
                    .patch(&object.name_any(), &params, &Patch::Apply(&body))
                    .await;
                (object.name_any(), result.map(drop))
            }
            ExtendedAction::DrainStatefulSet { name } => {
                let drain = serde_json::json!({"spec": {"replicas": 0}});
                sets.patch(name, &writes::patch(), &Patch::Merge(&drain)).await?;
                continue;
            }
            ExtendedAction::DeleteStatefulSet { .. }
            | ExtendedAction::ShapeStatefulSet { .. }
            | ExtendedAction::Handover(_)
            | ExtendedAction::SelectVersion { .. } => {
                if let Some(refusal) = blue_green(ctx, namespace, action, &mut applied).await? {
                    applied.refused.push(refusal);
                }
                continue;
            }
        };
        if let Err(error) = result {
            let error = Error::from(error);
            match error.refusal() {
                Some(message) => applied.refused.push(format!("{what}: {message}")),
                None => return Err(error),
            }
        }
    }
    Ok(applied)
}

/// A StatefulSet deleted, and the blue/green writes: a StatefulSet's range, a step of a replica's
/// move, the Service's version. What the API server refused of the Service (for the status), else
/// nothing.
async fn blue_green(
    ctx: &Context,
    namespace: &str,
    action: &ExtendedAction,
    applied: &mut Applied,
) -> Result<Option<String>, Error> {
    match action {
        ExtendedAction::DeleteStatefulSet { name } => {
            Api::<StatefulSet>::namespaced(ctx.client.clone(), namespace)
                .delete(name, &DeleteParams::background())
                .await?;
        }
        ExtendedAction::ShapeStatefulSet {
            name,
            start,
            replicas,
        } => {
            let shape = serde_json::json!({"spec": {"replicas": replicas, "ordinals": {"start": start}}});
            Api::<StatefulSet>::namespaced(ctx.client.clone(), namespace)
                .patch(name, &writes::patch(), &Patch::Merge(&shape))
                .await?;
        }
        ExtendedAction::Handover(step) => super::handover::carry_out(&ctx.client, namespace, step).await?,
        ExtendedAction::SelectVersion { service, version } => {
            let select = serde_json::json!({"spec": {"selector": {LABEL_VERSION: version}}});
            let services = Api::<Service>::namespaced(ctx.client.clone(), namespace);
            if let Err(error) = services
                .patch(service, &writes::patch(), &Patch::Merge(&select))
                .await
            {
                let error = Error::from(error);
                return match error.refusal() {
                    Some(message) => Ok(Some(format!("{service}: {message}"))),
                    None => Err(error),
                };
            }
            applied.notices.push((
                false,
                "ServiceSwitched",
                match version {
                    Some(version) => format!("Service {service} now selects version {version}"),
                    None => format!("Service {service} no longer selects a version"),
                },
            ));
        }
        _ => {}
    }
    Ok(None)
}
