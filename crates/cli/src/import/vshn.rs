//! vshn's statefulset-resize-controller, by the state it keeps on a StatefulSet. A resize it has
//! under way is never imported (its steps, the data's whereabouts and the way to finish or roll
//! back are in the note); an idle StatefulSet gives a VolumeResize only when its claims in the
//! file are still smaller than its template, which is what the controller would have resized.

use super::claims::{self, Claim};
use super::vshn_state::{self, Stage};
use super::vshn_steps::{self, Subject};
use super::{FerryObject, Source, System, Translation, derived_name};
use ferry_api::{Mode, Strategy, VolumeResize, VolumeResizeSpec};
use serde_json::Value;
use std::collections::BTreeMap;

pub fn applies(object: &Value) -> bool {
    !matches!(vshn_state::read(object), Ok(None))
}

fn replicas(value: &Value) -> Option<i32> {
    value.as_i64().and_then(|n| i32::try_from(n).ok())
}

pub fn translate(source: &Source, object: &Value, claims: &[Claim]) -> Translation {
    let mut translation = Translation::new(source, System::Vshn);
    let marks = match vshn_state::read(object) {
        Ok(Some(marks)) => marks,
        Ok(None) => return translation,
        Err(why) => {
            translation.note(format!(
                "not imported: {why}; the controller's state cannot be told, so nothing may start \
                 again from the claims: look at the StatefulSet and its claims by hand"
            ));
            return translation;
        }
    };
    let spec_replicas = replicas(&object["spec"]["replicas"]);
    let subject = Subject {
        name: &source.name,
        namespace: source.namespace.as_deref(),
        marks: &marks,
        replicas: marks.original_replicas.or(spec_replicas.filter(|n| *n > 0)),
        spec_replicas,
    };
    let stage = vshn_state::stage(&marks, spec_replicas, replicas(&object["status"]["replicas"]));
    match stage {
        Stage::BackingUp => translation.note(vshn_steps::backing_up(&subject)),
        Stage::Restoring => translation.note(vshn_steps::restoring(&subject)),
        Stage::Failed => translation.note(vshn_steps::failed(&subject)),
        Stage::ScaledDown => translation.note(vshn_steps::scaled_down(&subject)),
        Stage::ScalingUp { running } => translation.note(vshn_steps::scaling_up(&subject, running)),
        Stage::Idle { leftovers } => {
            if leftovers {
                translation.note(vshn_steps::leftovers(&subject));
            }
            idle(source, object, claims, marks.in_place, &mut translation);
        }
    }
    translation
}

/// Nothing under way: a VolumeResize for the claims still smaller than the template.
fn idle(source: &Source, object: &Value, claims: &[Claim], in_place: bool, translation: &mut Translation) {
    translation.note(
        "vshn resized claims whenever the template asked for more (after an orphan delete and a \
         re-apply); Ferry does that with the annotation ferry.dev/sync-claims: \"true\" on the \
         StatefulSet, and takes a template edit directly through its admission webhook",
    );
    let replicas = claims::replicas(object);
    let pending = claims::pending_of(object, &source.name, source.namespace.as_deref(), claims);
    if !pending.scaled_down.is_empty() {
        translation.note(format!(
            "not carried over: the resize of {}, claims of replicas not running (at or above \
             {replicas}), because Ferry resizes the claims of running replicas only; they keep their \
             size until those replicas come back",
            pending.scaled_down.join(", ")
        ));
    }
    if pending.seen == 0 {
        translation.note(
            "nothing to resize as far as the file tells: it holds no claim of this StatefulSet, so a \
             resize still pending cannot be seen; export the claims with it (kubectl get sts,pvc -o \
             yaml) and import again",
        );
        return;
    }
    if pending.changes.is_empty() {
        translation.note("nothing to resize: the claims of its running replicas have the template's size");
        return;
    }
    let (strategy, mode, how) = if in_place {
        (
            Strategy::InPlace,
            Mode::Rolling,
            "strategy InPlace, as vshn's in-place mode",
        )
    } else {
        (
            Strategy::Auto,
            Mode::Offline,
            "mode Offline, all replicas stopped as vshn did (Rolling keeps the others serving), and \
             strategy Auto (in place where the class can expand; vshn always copied)",
        )
    };
    let changes: Vec<String> = pending
        .changes
        .iter()
        .map(|c| format!("{} to {}", c.name, c.size))
        .collect();
    let name = derived_name(&source.name, "import-vshn", 63);
    let mut spec = VolumeResizeSpec::for_volumes(&source.name, pending.changes);
    spec.strategy = strategy;
    spec.mode = mode;
    translation.note(format!(
        "claims in the file are smaller than the template (or of another class): a VolumeResize \
         resizes {}, {how}",
        changes.join(", ")
    ));
    let mut resize = VolumeResize::new(&name, spec);
    resize.metadata = source.metadata(name, BTreeMap::new());
    translation
        .objects
        .push(FerryObject::VolumeResize(Box::new(resize)));
}
