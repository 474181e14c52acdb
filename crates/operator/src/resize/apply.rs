//! The resize's actions, carried out: [`carry_out`] is the operator's one `match` over
//! [`ResizeAction`] (what an action is called, and on which object, is the engine's:
//! `ferry_engine::resize::action`). Each is idempotent: repeated after a crash, it changes nothing
//! more (creates tolerate "already exists", deletes are guarded by UID preconditions). The objects
//! and patches come from `objects`; here is only which API gets them.

pub(crate) mod objects;
mod owner;
pub mod stop;

use super::Resizing;
use crate::Error;
use crate::context::Context;
use crate::writes::{ignore_conflict, ignore_gone, with_uid_precondition};
use ferry_api::{VolumeResize, parse_bytes};
use ferry_engine::resize::action::{Pass, ResizeAction, waves};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod, PodSpec, Secret};
use kube::api::{DeleteParams, EvictParams, Patch, Preconditions};
use kube::{Api, ResourceExt};
use objects::{CopyJob, Owner, backup_name};

/// Carries out `actions` in order; within a wave side by side (a swap's two claim deletes: one
/// round trip, not two).
pub(super) async fn apply(
    ctx: &Resizing,
    resize: &VolumeResize,
    namespace: &str,
    stateful_set: Option<&StatefulSet>,
    actions: &[ResizeAction],
) -> Result<(), Error> {
    for wave in waves(actions) {
        for action in wave {
            tracing::info!(name = %resize.name_any(), namespace, reason = action.reason(), "{}", action.describe());
        }
        futures::future::try_join_all(
            wave.iter()
                .map(|action| execute(ctx, resize, namespace, stateful_set, action)),
        )
        .await?;
    }
    Ok(())
}

/// Carries out `action`; an API error says which action failed on which object.
pub(super) async fn execute(
    ctx: &Resizing,
    resize: &VolumeResize,
    namespace: &str,
    stateful_set: Option<&StatefulSet>,
    action: &ResizeAction,
) -> Result<(), Error> {
    carry_out(ctx, resize, namespace, stateful_set, action)
        .await
        .map_err(|error| match error {
            Error::Kube(source) => Error::Action {
                action: action.kind(),
                object: action.object(&resize.name_any(), &resize.spec.stateful_set_name),
                source,
            },
            other => other,
        })
}

async fn carry_out(
    ctx: &Resizing,
    resize: &VolumeResize,
    namespace: &str,
    stateful_set: Option<&StatefulSet>,
    action: &ResizeAction,
) -> Result<(), Error> {
    let client = ctx.client.clone();
    match action {
        ResizeAction::BackupStatefulSet => {
            let Some(sts) = stateful_set else {
                return Err(Error::Invariant(
                    "the StatefulSet vanished before it was backed up".into(),
                ));
            };
            let backup = objects::backup_config_map(
                &Owner::of(resize),
                &backup_name(resize),
                resize.namespace(),
                sts,
            )?;
            ignore_conflict(
                Api::<ConfigMap>::namespaced(client, namespace)
                    .create(&crate::writes::create(), &backup)
                    .await,
            )
        }
        ResizeAction::ExpandClaim { claim, bytes } => {
            Api::<PersistentVolumeClaim>::namespaced(client, namespace)
                .patch(
                    claim,
                    &crate::writes::patch(),
                    &Patch::Merge(objects::expand_claim_patch(*bytes)),
                )
                .await?;
            Ok(())
        }
        ResizeAction::ModifyClaim { claim, class } => {
            Api::<PersistentVolumeClaim>::namespaced(client, namespace)
                .patch(
                    claim,
                    &crate::writes::patch(),
                    &Patch::Merge(objects::attributes_class_patch(class.as_deref())),
                )
                .await?;
            Ok(())
        }
        ResizeAction::EvictPod { pod, uid } => {
            evict(&Api::<Pod>::namespaced(client, namespace), pod, uid).await
        }
        ResizeAction::PatchOwner { patch, .. } => owner::patch_owner(client, resize, namespace, patch).await,
        ResizeAction::OrphanDeleteStatefulSet => {
            let Some(sts) = stateful_set else { return Ok(()) };
            stop::keep_live_and_orphan_delete(client, namespace, &backup_name(resize), sts).await
        }
        ResizeAction::RestoreStatefulSet => {
            let backup = Api::<ConfigMap>::namespaced(client.clone(), namespace)
                .get(&backup_name(resize))
                .await?;
            let sts = objects::recreated_by(resize.uid().unwrap_or_default(), objects::restore(&backup)?);
            ignore_conflict(
                Api::<StatefulSet>::namespaced(client, namespace)
                    .create(&crate::writes::create(), &sts)
                    .await,
            )
        }
        ResizeAction::CreateTargetClaim {
            claim,
            source_claim,
            bytes,
            storage_class,
            attributes_class,
            clone_of,
            node,
        } => {
            let access_modes = Api::<PersistentVolumeClaim>::namespaced(client.clone(), namespace)
                .get_opt(source_claim)
                .await?
                .and_then(|c| c.spec.and_then(|s| s.access_modes))
                .unwrap_or_else(|| vec!["ReadWriteOnce".into()]);
            let target = objects::target_claim(
                &Owner::of(resize),
                claim,
                access_modes,
                objects::TargetShape {
                    shape: objects::ClaimShape {
                        bytes: *bytes,
                        storage_class: storage_class.clone(),
                        attributes_class: attributes_class.clone(),
                    },
                    clone_of: clone_of.clone(),
                    node: node.clone(),
                },
            );
            ignore_conflict(
                Api::<PersistentVolumeClaim>::namespaced(client, namespace)
                    .create(&crate::writes::create(), &target)
                    .await,
            )
        }
        ResizeAction::StartMover {
            pod,
            source,
            target,
            pass,
            capabilities,
            cloned_at,
            track_changes,
            from,
        } => {
            let placement = placement(ctx, resize, namespace).await?;
            let settings = resize.spec.mover.clone().unwrap_or_default();
            let copy = CopyJob {
                source,
                target,
                pass: *pass,
                verify: resize.spec.verify,
                threads: settings.threads,
                // The API server checked it is a positive quantity.
                bandwidth_limit: settings
                    .bandwidth_limit
                    .as_deref()
                    .and_then(|q| parse_bytes(q).ok()),
                resources: placement.resources.clone(),
                capabilities: capabilities.clone(),
                cloned_at: *cloned_at,
                track_changes: *track_changes,
                // The key is in the Secret named after the serving mover of the same claim.
                pull: from.as_ref().map(|from| objects::Pull {
                    from: &from.address,
                    key: from.key.clone(),
                    tracked: from.tracked,
                }),
            };
            let mut mover = objects::mover_pod(&Owner::of(resize), pod, &placement, &copy);
            let key = (copy.pass == Pass::Final)
                .then(|| ctx.direct_go.new_key())
                .flatten();
            if let Some(key) = &key {
                objects::with_go_line(&mut mover, &key.digest);
            }
            let created = Api::<Pod>::namespaced(client, namespace)
                .create(&crate::writes::create(), &mover)
                .await;
            // A mover already there keeps the key it was made with.
            if let (Ok(_), Some(key)) = (&created, key) {
                ctx.direct_go.remember(namespace, pod, key);
            }
            ignore_conflict(created)
        }
        ResizeAction::StartServer {
            pod,
            claim,
            key,
            capabilities,
            track_changes,
        } => {
            let placement = placement(ctx, resize, namespace).await?;
            let serving = objects::transport::serving_pod(
                &Owner::of(resize),
                pod,
                &placement,
                objects::transport::Served {
                    claim,
                    key,
                    track_changes: *track_changes,
                },
                capabilities,
            );
            start_server(client, namespace, &serving, key).await
        }
        ResizeAction::MeasureUsage { pod, claim } => {
            let placement = placement(ctx, resize, namespace).await?;
            let measure = objects::usage_pod(&Owner::of(resize), pod, &placement, claim);
            ignore_conflict(
                Api::<Pod>::namespaced(client, namespace)
                    .create(&crate::writes::create(), &measure)
                    .await,
            )
        }
        ResizeAction::DeleteMover { pod, exited: None } => ignore_gone(
            Api::<Pod>::namespaced(client, namespace)
                .delete(pod, &DeleteParams::default())
                .await
                .map(|_| ()),
        ),
        // Its container exited 0: nothing is left to stop, so the pod object goes now and the
        // claims it names are released without waiting for the kubelet's teardown.
        ResizeAction::DeleteMover {
            pod,
            exited: Some(uid),
        } => {
            let params = DeleteParams {
                grace_period_seconds: Some(0),
                preconditions: Some(Preconditions {
                    uid: Some(uid.clone()),
                    resource_version: None,
                }),
                ..DeleteParams::default()
            };
            ignore_gone(
                Api::<Pod>::namespaced(client, namespace)
                    .delete(pod, &params)
                    .await
                    .map(|_| ()),
            )
        }
        // The annotation is the record of the go; the line on the mover's stdin, after it, only
        // reaches the mover sooner.
        ResizeAction::StartFinalPass { pod, uid } => {
            let patch = with_uid_precondition(objects::final_pass_go_patch(), Some(uid));
            ignore_gone(
                Api::<Pod>::namespaced(client, namespace)
                    .patch(pod, &crate::writes::patch(), &Patch::Merge(patch))
                    .await
                    .map(|_| ()),
            )?;
            ctx.direct_go.give(namespace, pod).await;
            Ok(())
        }
        ResizeAction::Volume(write) => crate::volume_writes::carry_out(&client, namespace, write).await,
        ResizeAction::BindClaim {
            claim,
            template,
            volume,
            bytes,
            storage_class,
            attributes_class,
        } => {
            let backup = Api::<ConfigMap>::namespaced(client.clone(), namespace)
                .get(&backup_name(resize))
                .await?;
            let sts = objects::restore(&backup)?;
            let shape = objects::ClaimShape {
                bytes: *bytes,
                storage_class: storage_class.clone(),
                attributes_class: attributes_class.clone(),
            };
            let bound = objects::bound_claim(&sts, template, claim, volume, shape);
            ignore_conflict(
                Api::<PersistentVolumeClaim>::namespaced(client, namespace)
                    .create(&crate::writes::create(), &bound)
                    .await,
            )
        }
        ResizeAction::RecreateStatefulSet => {
            let backup = Api::<ConfigMap>::namespaced(client.clone(), namespace)
                .get(&backup_name(resize))
                .await?;
            let plan = resize.status.as_ref().map(|s| s.plan.clone()).unwrap_or_default();
            let sts = objects::recreated_by(
                resize.uid().unwrap_or_default(),
                objects::with_new_templates(objects::last_live(&backup)?, &resize.spec.volumes, &plan),
            );
            ignore_conflict(
                Api::<StatefulSet>::namespaced(client, namespace)
                    .create(&crate::writes::create(), &sts)
                    .await,
            )
        }
    }
}

/// Where a pod Ferry runs for `resize` goes: `spec.mover`'s placement over the operator's image,
/// with the replica's tolerations.
/// Creates serving mover `serving` (or finds it made before), then the Secret `key` with its copy's
/// key, owned by it; the pod waits for the Secret to mount it. Repeated, it makes neither again: a
/// Secret made before refuses the create as already there (no `get`: Ferry reads no Secret).
async fn start_server(client: kube::Client, namespace: &str, serving: &Pod, key: &str) -> Result<(), Error> {
    let pods = Api::<Pod>::namespaced(client.clone(), namespace);
    let made = match pods.create(&crate::writes::create(), serving).await {
        Ok(made) => made,
        Err(kube::Error::Api(status)) if status.code == 409 => pods.get(&serving.name_any()).await?,
        Err(error) => return Err(error.into()),
    };
    let secrets = Api::<Secret>::namespaced(client, namespace);
    let secret = objects::transport::key_secret(&made, key, objects::transport::copy_key()?)?;
    ignore_conflict(secrets.create(&crate::writes::create(), &secret).await)
}

async fn placement(
    ctx: &Context,
    resize: &VolumeResize,
    namespace: &str,
) -> Result<objects::Placement, Error> {
    // The precheck refused a VolumeResize naming another image; one edited since never runs it.
    let settings = resize.spec.mover.clone().unwrap_or_default();
    if let Some(refusal) = ctx.resize.mover_images().refusal(settings.image.as_deref()) {
        return Err(Error::Invariant(refusal));
    }
    let replica = replica_pod(ctx, resize, namespace).await?;
    let tolerations = (replica.as_ref())
        .and_then(|pod| pod.tolerations.clone())
        .unwrap_or_default();
    let constrained = crate::resize::limits::quota_resources(&ctx.client, namespace).await?;
    let resources = (settings.resources.clone()).or_else(|| ctx.resize.mover_resources.clone());
    let mut placement = objects::placement(
        &settings,
        &ctx.resize.mover_image,
        tolerations,
        &ctx.resize.mover_image_pull_secrets,
        objects::quota_resources::filled_for_quotas(resources, &constrained),
    );
    // Where no root pod is admitted, as the StatefulSet's own user (the precheck refused a copy
    // whose StatefulSet names none).
    let user = replica.as_ref().and_then(ferry_engine::pods::run_as);
    placement.run_as = crate::resize::limits::run_as_where_restricted(&ctx.client, namespace, user).await?;
    Ok(placement)
}

/// The StatefulSet's pod template (live, else as backed up while it is orphan-deleted): a mover
/// must run on its replica's node, which may be tainted for the database alone, and, where Pod
/// Security is `restricted`, as its user.
async fn replica_pod(
    ctx: &Context,
    resize: &VolumeResize,
    namespace: &str,
) -> Result<Option<PodSpec>, Error> {
    let live = Api::<StatefulSet>::namespaced(ctx.client.clone(), namespace)
        .get_opt(&resize.spec.stateful_set_name)
        .await?;
    let sts = match live {
        Some(sts) => Some(sts),
        None => Api::<ConfigMap>::namespaced(ctx.client.clone(), namespace)
            .get_opt(&backup_name(resize))
            .await?
            .map(|backup| objects::restore(&backup))
            .transpose()?,
    };
    Ok(sts.and_then(|sts| sts.spec).and_then(|spec| spec.template.spec))
}

/// Takes a pod down through the Eviction API, so the API server enforces PodDisruptionBudgets (and
/// only this UID). A refusal (429: the budget allows no disruption now) is not an error: the pod
/// stays, and the next reconcile asks again.
async fn evict(pods: &Api<Pod>, name: &str, uid: &str) -> Result<(), Error> {
    let params = EvictParams {
        delete_options: Some(DeleteParams {
            preconditions: Some(Preconditions {
                uid: Some(uid.to_string()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        }),
        ..EvictParams::default()
    };
    match pods.evict(name, &params).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 429 => {
            tracing::info!(
                pod = name,
                "eviction refused by a PodDisruptionBudget; asking again later"
            );
            Ok(())
        }
        other => ignore_gone(other.map(|_| ())),
    }
}
