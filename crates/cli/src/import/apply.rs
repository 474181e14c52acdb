//! `--apply`: every object is first checked by the API server (a server-side dry run, admission
//! included), and only when all pass are they applied, server-side, under the field manager
//! `kubectl-ferry` — a migration is never left half applied by one object the API server refuses.

use super::{FerryObject, Report, render};
use crate::args::GlobalArgs;
use crate::exit::{CliError, ExitCode};
use crate::kube_io::{Action, Cluster, classify, connect};
use kube::Api;
use kube::api::{DynamicObject, Patch, PatchParams};

pub async fn apply(global: &GlobalArgs, report: &Report) -> Result<ExitCode, CliError> {
    for line in render::note_lines(report) {
        eprintln!("{line}");
    }
    let objects: Vec<&FerryObject> = report.objects().collect();
    if objects.is_empty() {
        eprintln!("import: no Ferry object to apply (see the notes above)");
        return Ok(ExitCode::Ok);
    }
    let cluster = connect(global).await?;
    let mut refused = Vec::new();
    for object in &objects {
        if let Err(error) = send(&cluster, object, true).await {
            refused.push((object.reference(), error));
        }
    }
    if let Some((_, first)) = refused.first() {
        for (reference, error) in &refused {
            eprintln!("error: {reference}: {error}");
        }
        eprintln!(
            "import: nothing applied: the API server refused {} of {} object(s)",
            refused.len(),
            objects.len()
        );
        return Ok(first.exit_code());
    }
    for object in &objects {
        send(&cluster, object, false).await.map_err(|error| {
            CliError::Failed(format!(
                "{}: {error} (the objects before it were applied)",
                object.reference()
            ))
        })?;
        crate::outln!("{} serverside-applied", object.reference());
    }
    Ok(ExitCode::Ok)
}

/// Applies `object` server-side, or (`dry_run`) has the API server check it and keep nothing.
async fn send(cluster: &Cluster, object: &FerryObject, dry_run: bool) -> Result<(), CliError> {
    let resource = object.resource();
    let namespace = object.namespace().unwrap_or_else(|| cluster.namespace.clone());
    let api: Api<DynamicObject> = Api::namespaced_with(cluster.client.clone(), &namespace, &resource);
    let mut params = PatchParams::apply(crate::FIELD_MANAGER);
    params.dry_run = dry_run;
    let name = object.name();
    match api
        .patch(&name, &params, &Patch::Apply(&object.to_value()?))
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 && status.message.starts_with("namespaces ") => {
            Err(CliError::NotFound(format!(
                "namespace {namespace:?} does not exist"
            )))
        }
        Err(kube::Error::Api(status)) if status.code == 404 => Err(CliError::CrdMissing(format!(
            "the {} CRD ({}.{}) is not installed in this cluster; install Ferry first (ferry crd | \
             kubectl apply -f -, or its chart), then import again",
            resource.kind, resource.plural, resource.group
        ))),
        Err(error) => Err(classify(
            &error,
            Action::named("apply", &resource.plural, &name),
            &namespace,
            &cluster.server,
        )),
    }
}
