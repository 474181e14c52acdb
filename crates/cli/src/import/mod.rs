//! `kubectl ferry import -f FILE`: the objects of the systems Ferry replaces, read from a file and
//! translated into Ferry's, with a note for everything that does not carry over and why.
//!
//! Reading ([`documents`]) and the cluster ([`apply`]) are I/O; recognising an object and
//! translating it ([`translate`], one module per system) is pure: the same file always gives the
//! same objects and notes, and without `--apply` nothing is sent anywhere.

mod apply;
mod autoresizer;
mod autoresizer_values;
mod claims;
mod documents;
mod fields;
mod model;
mod pong;
mod quarks;
mod quarks_fields;
mod render;
mod volmig;
mod vshn;
mod vshn_names;
mod vshn_state;
mod vshn_steps;

use crate::args::{GlobalArgs, ImportArgs, ImportFormat};
use crate::exit::{CliError, ExitCode};
use serde_json::Value;

pub use model::{ANNOTATION_IMPORTED_FROM, FerryObject, Report, Source, System, Translation, derived_name};

/// `kubectl ferry import`: reads, translates, then prints or (`--apply`) applies.
pub async fn run(global: &GlobalArgs, args: &ImportArgs) -> Result<ExitCode, CliError> {
    let text = documents::read(&args.filename)?;
    let file = if args.filename == "-" {
        "stdin"
    } else {
        &args.filename
    };
    let mut objects = documents::objects(&text, file)?;
    documents::default_namespace(&mut objects, global.namespace.as_deref())?;
    let report = translate(&objects, file)?;
    if args.apply {
        return apply::apply(global, &report).await;
    }
    match args.output.unwrap_or(ImportFormat::Yaml) {
        ImportFormat::Yaml => {
            crate::out!("{}", render::yaml(&report)?);
            eprintln!("{}", render::summary(&report));
        }
        ImportFormat::Json => {
            crate::out!("{}", render::json(&report)?);
            for line in render::note_lines(&report) {
                eprintln!("{line}");
            }
        }
    }
    Ok(ExitCode::Ok)
}

/// Translates every object of the file. A file with nothing Ferry imports is an error (bad
/// input); an object it does not know is a note.
pub fn translate(objects: &[Value], file: &str) -> Result<Report, CliError> {
    let context = Context {
        claims: claims::in_file(objects),
        classes: autoresizer::classes_in_file(objects),
    };
    let mut translations = Vec::new();
    for object in objects {
        translations.extend(translate_one(object, &context));
    }
    if translations.iter().all(|t| t.system.is_none()) {
        return Err(CliError::Usage(nothing_recognised(file, objects)));
    }
    Ok(Report {
        file: file.to_string(),
        translations,
    })
}

const WHAT_IS_IMPORTED: &str = "volmig VolumeResizes (storage.maurice.fr/v1alpha1), quarks \
ExtendedStatefulSets (fissile.cloudfoundry.org/v1alpha1), and StatefulSets with pong1013's \
annotations (resize-statefulset-operator/...) or the vshn controller's (sts-resize.vshn.net/...), \
and StatefulSets whose claims carry topolvm pvc-autoresizer's (resize.topolvm.io/...)";

fn nothing_recognised(file: &str, objects: &[Value]) -> String {
    let mut kinds: Vec<String> = objects.iter().map(|o| Source::of(o).kind).collect();
    kinds.sort();
    kinds.dedup();
    let found = if objects.is_empty() {
        "no object at all".to_string()
    } else {
        format!("{} object(s) of kind {}", objects.len(), kinds.join(", "))
    };
    format!("nothing in {file} is an object Ferry imports ({found}); Ferry imports {WHAT_IS_IMPORTED}")
}

/// The group of an `apiVersion` (`apps` of `apps/v1`, empty for the core `v1`).
fn group(api_version: &str) -> &str {
    api_version.split_once('/').map_or("", |(group, _)| group)
}

/// What the file says besides the object being translated.
struct Context {
    claims: Vec<claims::Claim>,
    classes: autoresizer::Classes,
}

fn translate_one(object: &Value, context: &Context) -> Vec<Translation> {
    let source = Source::of(object);
    match (group(&source.api_version), source.kind.as_str()) {
        (volmig::GROUP, "VolumeResize") => vec![volmig::translate(&source, object)],
        (group, "ExtendedStatefulSet") if quarks::GROUPS.contains(&group) => {
            vec![quarks::translate(&source, object)]
        }
        ("apps", "StatefulSet") => stateful_set(&source, object, context),
        // Read as the claims of the StatefulSets beside them (a vshn resize still pending,
        // pvc-autoresizer's annotations).
        ("", "PersistentVolumeClaim") => Vec::new(),
        ("storage.k8s.io", "StorageClass") => autoresizer::storage_class(&source, object),
        _ => vec![unknown(
            &source,
            format!("not an object of a system Ferry imports ({WHAT_IS_IMPORTED})"),
        )],
    }
}

/// A StatefulSet is the vshn controller's, pong1013's, pvc-autoresizer's (by its claims), several,
/// or none, by their annotations.
fn stateful_set(source: &Source, object: &Value, context: &Context) -> Vec<Translation> {
    let claims = context.claims.as_slice();
    let mut translations = Vec::new();
    if vshn::applies(object) {
        translations.push(vshn::translate(source, object, claims));
    }
    if pong::applies(object) {
        translations.push(pong::translate(source, object));
    }
    if autoresizer::applies(source, object, claims) {
        translations.push(autoresizer::translate(source, object, claims, &context.classes));
    }
    // A plain StatefulSet is context (a cluster has many): said only when its claims lag.
    if translations.is_empty()
        && let Some(note) = drift(source, object, claims)
    {
        translations.push(unknown(source, note));
    }
    translations
}

/// The vshn controller marks only the StatefulSets it has resized; one it never touched may
/// still have claims smaller than its template, a resize it would have made.
fn drift(source: &Source, object: &Value, claims: &[claims::Claim]) -> Option<String> {
    let pending = claims::pending_of(object, &source.name, source.namespace.as_deref(), claims);
    let changes: Vec<String> = pending
        .changes
        .iter()
        .map(|c| format!("{} to {}", c.name, c.size))
        .collect();
    (!changes.is_empty()).then(|| {
        format!(
            "no annotation of pong1013's operator or of the vshn controller, but its claims in the \
             file are smaller than its template ({}): if vshn's controller watched it, that is a \
             resize it had not begun; Ferry makes it with the annotation ferry.dev/sync-claims: \
             \"true\" on the StatefulSet (or kubectl ferry resize)",
            changes.join(", ")
        )
    })
}

fn unknown(source: &Source, note: String) -> Translation {
    Translation {
        source: source.clone(),
        system: None,
        objects: Vec::new(),
        notes: vec![note],
    }
}

#[cfg(test)]
mod tests;
